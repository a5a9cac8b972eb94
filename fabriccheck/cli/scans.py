"""The scan commands that call no cloud: `demo` (the bundled example accounts and plans), `check` (a saved
inventory) and `plan` (a Terraform or OpenTofu plan). Each settles the gate in one call, reads its input, finishes."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from fabriccheck.cli.app import Command, app
from fabriccheck.cli.finish import finish, loaded
from fabriccheck.cli.options import ScanOptions, options
from fabriccheck.provider import cloud_sdk
from fabriccheck.settings import FailOn

if TYPE_CHECKING:
    from fabriccheck.inventory import Inventory


@app.command(cls=Command)
@options("scan", ScanOptions, without=("allow_incomplete",), defaults={"fail_on": FailOn.never})
def demo(
    plans: Annotated[
        bool,
        typer.Option(
            "--plan", help="Judge the bundled Terraform plans instead: a wrong plan beside a correct one per cloud."
        ),
    ] = False,
    *,
    scan: ScanOptions,
) -> None:
    """Run the audit on the bundled example accounts of every cloud (no credentials, no network)."""
    settled = scan.settle()
    with cloud_sdk():
        inventory = demo_plan_inventory() if plans else demo_inventory()
        finish(inventory, scan, settled)


@app.command(cls=Command)
@options("scan", ScanOptions, without=("save_inventory",))
def check(
    inventory_file: Annotated[Path, typer.Argument(metavar="FILE", help="Inventory saved with --save-inventory.")],
    *,
    scan: ScanOptions,
) -> None:
    """Judge a saved inventory (from --save-inventory) without calling any cloud."""
    from fabriccheck.sources.snapshot import load_inventory

    settled = scan.settle()
    with cloud_sdk():
        inventory = loaded(inventory_file, lambda: load_inventory(inventory_file))
        finish(inventory, scan, settled)


@app.command(cls=Command)
@options("scan", ScanOptions, without=("save_inventory",))
def plan(
    plan_file: Annotated[
        str, typer.Argument(metavar="FILE", help="JSON of terraform show -json PLANFILE (or tofu); - reads stdin.")
    ],
    terraform_dir: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="The configuration's root: findings name the file and line of each block."),
    ] = None,
    reservation_topology: Annotated[
        str | None,
        typer.Option(
            metavar="FILE",
            help="aws ec2 describe-capacity-reservation-topology --output json: where the Capacity Reservations and "
            "Blocks the plan names sit, judged (network layers, UltraServers) before apply.",
        ),
    ] = None,
    *,
    scan: ScanOptions,
) -> None:
    """Judge a Terraform or OpenTofu plan before apply: the same rules as a live scan, on what it would launch."""
    from fabriccheck.sources.terraform import load_plan

    settled = scan.settle()
    inventory = loaded(plan_file, lambda: load_plan(plan_file, terraform_dir))
    if reservation_topology is not None:
        from fabriccheck.providers.aws.dump import add_reservation_topology

        loaded(reservation_topology, lambda: add_reservation_topology(inventory, reservation_topology))
    finish(inventory, scan, settled)


def demo_dir() -> Path:
    from importlib import resources

    packaged = Path(str(resources.files("fabriccheck") / "demo"))
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[2] / "fixtures" / "demo"


def demo_plan_inventory() -> "Inventory":
    """The bundled plans (fixtures/demo/plans/*.json), each with its configuration folder when there is one."""
    from fabriccheck.inventory import Inventory
    from fabriccheck.sources.terraform import load_plan

    folder = demo_dir() / "plans"
    inventory = Inventory()
    for path in sorted(folder.glob("*.json")):
        configuration = path.with_suffix("")
        inventory.merge(load_plan(str(path), configuration if configuration.is_dir() else None))
    inventory.source = f"demo plans ({folder})"
    return inventory


def demo_inventory() -> "Inventory":
    """The bundled demo: one folder of dump files per provider, each read by its provider's own dump reader; a
    scheduler's cluster is joined to the cloud dump its declaration names (the Slurm ParallelCluster,
    tools/build_demo_slurm.py, to the demo's AWS account under it)."""
    from fabriccheck.inventory import Inventory
    from fabriccheck.provider import declarations

    inventory = Inventory(source="demo")
    for declared in declarations():
        folder = demo_dir() / declared.name
        if folder.is_dir():
            cloud = {"cloud_dump": demo_dir() / declared.demo_runs_on} if declared.demo_runs_on else {}
            inventory.merge(declared.load_dump(folder, **cloud))
    inventory.source = f"demo ({demo_dir()})"
    return inventory
