"""`fabriccheck slurm`: does the scheduler place jobs where the fabric is? From a dump of read-only Slurm commands
(`--print-commands` prints them) or, without --from-dump, the same commands run here on a login node; joined to the
cloud dump underneath (`--cloud-dump`)."""

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from fabriccheck.cli.app import Command, app, emit
from fabriccheck.cli.finish import finish, loaded
from fabriccheck.cli.options import ScanOptions, options
from fabriccheck.errors import FabricCheckError


@dataclasses.dataclass(frozen=True)
class SlurmSource:
    """Where the Slurm cluster's view comes from, and the cloud underneath it."""

    from_dump: Annotated[
        Path | None,
        typer.Option(
            "--from-dump",
            metavar="DIR",
            help="Without it, run the read-only commands below here, on a login node (scontrol, sinfo and squeue on "
            "PATH). "
            "Read the Slurm dump in DIR: nodes.json (scontrol show nodes --json; before Slurm 23.02 sinfo.json: "
            "sinfo --json), and where saved partitions.json (scontrol show partitions --json; or partitions.txt, its "
            "text), jobs.json (squeue --json), topology.txt (scontrol show topology), topology.conf, topology.yaml, "
            "slurm.conf, gres.conf. --print-commands prints how.",
        ),
    ] = None
    cloud_dump: Annotated[
        Path | None,
        typer.Option(
            "--cloud-dump",
            metavar="DIR",
            help="The AWS, Azure or GCP dump of the instances under the Slurm nodes (what fabriccheck aws|azure|gcp "
            "--from-dump reads): each node is joined by its InstanceId, its NodeAddr (private IP), else its name.",
        ),
    ] = None
    scripts: Annotated[
        list[Path] | None,
        typer.Option(
            "--scripts",
            metavar="PATH",
            help="A job script (sbatch) to judge on the partition its #SBATCH --partition names: NCCL / libfabric "
            "settings that turn the fabric off (repeatable).",
        ),
    ] = None
    slurmrestd: Annotated[
        str | None,
        typer.Option(
            "--slurmrestd",
            metavar="URL",
            help="Read the cluster from slurmrestd at URL (https://, or http:// to this machine only) with the JWT in "
            "SLURM_JWT (export $(scontrol token)); the token is never printed. Nodes, partitions and jobs only: the "
            "REST API serves no topology or config files.",
        ),
    ] = None
    slurm_user: Annotated[
        str | None,
        typer.Option(
            "--slurm-user",
            metavar="NAME",
            help="The user slurmrestd is told (X-SLURM-USER-NAME); by default the one SLURM_JWT names (sun claim).",
        ),
    ] = None
    print_commands: Annotated[
        bool,
        typer.Option("--print-commands", help="Print the read-only commands that save a Slurm dump, and exit."),
    ] = False


def _commands() -> str:
    from fabriccheck.providers.slurm.files import COMMANDS

    lines = ["# On a login node, in an empty folder (read-only: no scontrol update, no write to the cluster):"]
    return "\n".join([*lines, *COMMANDS.values()]) + "\n"


@app.command(cls=Command)
@options("scan", ScanOptions)
@options("source", SlurmSource)
def slurm(*, source: SlurmSource, scan: ScanOptions) -> None:
    """Audit a Slurm cluster (ParallelCluster, slurm-gcp, CycleCloud ...): do its topology and partitions match the
    cloud fabric underneath?"""
    if source.print_commands:
        given = [scan.invocation.flags[n] for n in scan.invocation.given if n not in ("print_commands", "output")]
        if given:
            raise FabricCheckError(f"--print-commands and {given[0]} cannot be used together (it prints and exits)")
        outputs = scan.output or []
        if len(outputs) > 1:
            raise FabricCheckError(f"--print-commands writes one text: give one --output FILE, not {len(outputs)}")
        emit(_commands(), outputs[0] if outputs else None)
        raise typer.Exit(0)
    settled = scan.settle()
    from_dump, cloud_dump, scripts = source.from_dump, source.cloud_dump, list(source.scripts or [])
    if from_dump is not None and source.slurmrestd is not None:
        raise FabricCheckError("--from-dump and --slurmrestd cannot be used together: give one source")
    if source.slurm_user is not None and source.slurmrestd is None:
        raise FabricCheckError("--slurm-user is only for --slurmrestd URL")
    if from_dump is None:
        from fabriccheck.providers.slurm.live import load_live

        # On a login node: the read-only commands the dump documents, run here, or slurmrestd (providers/slurm/).
        restd, user = source.slurmrestd, source.slurm_user
        inventory = loaded("slurm live", lambda: load_live(cloud_dump, scripts, slurmrestd=restd, user=user))
    else:
        from fabriccheck.providers.slurm.dump import load_dump

        inventory = loaded(from_dump, lambda: load_dump(from_dump, None, cloud_dump, scripts))
    finish(inventory, scan, settled)
