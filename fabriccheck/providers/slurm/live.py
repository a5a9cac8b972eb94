"""`fabriccheck slurm` without --from-dump, on a login node: the read-only commands the dump documents
(files.COMMANDS), run here, their output put in a private folder as the dump files and read by the dump's own reader.

Only the argv in ALLOWED is ever run (a test checks it): no `scontrol update`, nothing that writes. Each command
has a timeout. nodes.json is required (its command and its fallback, `sinfo --json`, both failing is one line, exit
2); every other command failing, or a config file that cannot be read, is a collection error: the run is
incomplete, and cannot pass a gate.

Config files are read from the folder of the slurm.conf that `scontrol show config` names on its `SLURM_CONF = PATH`
line (SchedMD/slurm src/api/config_info.c adds the pair "SLURM_CONF" default_slurm_config_file); topology.conf,
topology.yaml and gres.conf live beside it (slurm.conf(5), topology.conf(5), gres.conf(5): "in the same directory
as the slurm.conf file").
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.model import CollectionError
from fabriccheck.redaction import redact
from fabriccheck.sources.scope import MISSING_DUMP, UNREACHABLE

TIMEOUT_SECONDS = 60.0
CONFIG = ("scontrol", "show", "config")
# dump file -> the argv that makes it. The only commands a live run starts (ALLOWED), all read-only.
RUNS: dict[str, tuple[str, ...]] = {
    "nodes.json": ("scontrol", "show", "nodes", "--json"),
    "partitions.json": ("scontrol", "show", "partitions", "--json"),
    "jobs.json": ("squeue", "--json"),
    "topology.txt": ("scontrol", "show", "topology"),
}
# Where the first command fails, the file the same facts come from instead. Before Slurm 23.02 scontrol has no
# --json (Debian 12's 22.05.8: "scontrol: unrecognized option '--json'"); sinfo --json (21.08+) lists the nodes and
# the text of scontrol show partitions gives MaxNodes on every version (files.py reads both).
FALLBACKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "nodes.json": ("sinfo.json", ("sinfo", "--json")),
    "partitions.json": ("partitions.txt", ("scontrol", "show", "partitions")),
}
ALLOWED = frozenset({*RUNS.values(), *(argv for _, argv in FALLBACKS.values()), CONFIG})
CONFIG_FILES = ("slurm.conf", "topology.conf", "topology.yaml", "gres.conf")
_SLURM_CONF = re.compile(r"^SLURM_CONF\s*=\s*(\S.*?)\s*$", re.MULTILINE)


class CommandFailed(Exception):
    """A command that could not run, exited non-zero or did not answer in time: its one line."""


def shown(argv: Sequence[str]) -> str:
    return " ".join(argv)


def run(argv: tuple[str, ...], timeout: float = TIMEOUT_SECONDS) -> str:
    """The standard output of one allowed read-only command; CommandFailed with one line otherwise."""
    if argv not in ALLOWED:  # a programming error, never a user's: only the documented commands run
        raise FabricCheckError(f"refused to run `{shown(argv)}`: not one of fabriccheck slurm's read-only commands")
    try:
        done = subprocess.run(  # argv is one of ALLOWED, and no shell
            list(argv), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False
        )
    except FileNotFoundError:
        where = "run on a login node, or give --from-dump DIR"
        raise CommandFailed(f"`{shown(argv)}`: {argv[0]} is not on PATH: {where}") from None
    except subprocess.TimeoutExpired:
        raise CommandFailed(f"`{shown(argv)}`: no answer in {timeout:g} s") from None
    except OSError as exc:
        raise CommandFailed(f"`{shown(argv)}`: could not start: {exc.strerror or exc}") from None
    if done.returncode != 0:
        said = next((line.strip() for line in done.stderr.splitlines() if line.strip()), "no message")
        raise CommandFailed(f"`{shown(argv)}` failed (exit {done.returncode}): {redact(said)[:300]}")
    return done.stdout


def _error(call: str, code: str, message: str) -> CollectionError:
    return CollectionError(provider="slurm", account="slurm", call=call, code=code, message=message)


def _config_files(folder: Path, timeout: float, errors: list[CollectionError]) -> None:
    """slurm.conf and the files beside it, copied into `folder` as a dump has them."""
    try:
        text = run(CONFIG, timeout)
    except CommandFailed as exc:
        errors.append(_error(shown(CONFIG), UNREACHABLE, f"{exc}: slurm.conf, topology.conf and gres.conf not read"))
        return
    found = _SLURM_CONF.search(text)
    if found is None:
        errors.append(_error(shown(CONFIG), MISSING_DUMP, "it names no SLURM_CONF: slurm.conf was not read"))
        return
    where = Path(found.group(1)).parent
    for name in CONFIG_FILES:
        path = where / name
        if not path.exists():
            if name == "slurm.conf":
                errors.append(_error(str(path), MISSING_DUMP, f"{path} (SLURM_CONF) does not exist: not read"))
            continue  # topology.conf, topology.yaml and gres.conf are optional, as in a dump
        try:
            (folder / name).write_bytes(path.read_bytes())
        except OSError as exc:
            errors.append(_error(str(path), UNREACHABLE, f"{path}: {exc.strerror or exc}: not read"))


def _saved(folder: Path, name: str, argv: tuple[str, ...], timeout: float) -> None:
    """One command's output saved as `name`, else its fallback's (FALLBACKS); CommandFailed naming both."""
    try:
        (folder / name).write_text(run(argv, timeout), encoding="utf-8")
        return
    except CommandFailed as exc:
        if name not in FALLBACKS:
            raise
        first = exc
    other, instead = FALLBACKS[name]
    try:
        (folder / other).write_text(run(instead, timeout), encoding="utf-8")
    except CommandFailed as exc:
        raise CommandFailed(f"{first}; {exc}") from None


def collect(folder: Path, timeout: float = TIMEOUT_SECONDS) -> list[CollectionError]:
    """Run the commands and save their output in `folder` as the dump files; what could not be collected."""
    errors: list[CollectionError] = []
    for name, argv in RUNS.items():
        try:
            _saved(folder, name, argv, timeout)
        except CommandFailed as exc:
            if name == "nodes.json":
                raise FabricCheckError(str(exc)) from None
            errors.append(_error(shown(argv), UNREACHABLE, f"{exc}: {name} not collected"))
    _config_files(folder, timeout, errors)
    return errors


def load_live(
    cloud_dump: Path | None,
    scripts: list[Path],
    timeout: float = TIMEOUT_SECONDS,
    slurmrestd: str | None = None,
    user: str | None = None,
) -> Inventory:
    """The live cluster (the commands run here, or slurmrestd at `slurmrestd`), read as its dump would be: each node
    joined to `cloud_dump` when given."""
    from fabriccheck.providers.slurm import restd
    from fabriccheck.providers.slurm.dump import load_dump

    with tempfile.TemporaryDirectory(prefix="fabriccheck-slurm-") as private:
        folder = Path(private) / "slurm"  # the cluster's name when neither nodes.json nor slurm.conf gives one
        folder.mkdir(mode=0o700)
        if slurmrestd is not None:
            errors, names = restd.collect(folder, slurmrestd, user)
            source = f"slurmrestd {redact(slurmrestd)}"
        else:
            errors = collect(folder, timeout)
            names = {name: f"`{shown(argv)}`" for name, argv in RUNS.items()}
            names.update({name: f"`{shown(argv)}`" for name, argv in FALLBACKS.values()})
            names.update({name: f"{name} (from `{shown(CONFIG)}`)" for name in CONFIG_FILES})
            source = "slurm live"
        try:
            inventory = load_dump(folder, None, cloud_dump, scripts)
        except FabricCheckError as exc:  # name the command or request, not the private folder that held its answer
            message = str(exc)
            for name, said in names.items():
                message = message.replace(str(folder / name), said)
            raise FabricCheckError(message) from None
    inventory.source = source + inventory.source.partition(str(folder))[2]
    inventory.errors.extend(errors)
    return inventory
