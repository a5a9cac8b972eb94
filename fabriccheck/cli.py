"""The command line: parse options, run the flow, print, choose the exit code.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 the check could not be completed
(bad input, bad usage, or an incomplete collection). Cloud SDKs and the engine are imported inside the
commands, so `fabriccheck --help` stays fast.
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

if TYPE_CHECKING:
    from fabriccheck.flow import Options, Report
    from fabriccheck.inventory import Inventory

app = typer.Typer(
    name="fabriccheck",
    help="Find cloud GPU-cluster settings that leave the training fabric (EFA, InfiniBand, GPUDirect) "
    "unused, and estimate what they cost.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


class Format(StrEnum):
    text = "text"
    json = "json"
    sarif = "sarif"
    junit = "junit"
    markdown = "markdown"


class FailOn(StrEnum):
    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Report format.")]
OutputOpt = Annotated[Path | None, typer.Option("--output", "-o", help="Write the report to FILE.")]
FailOnOpt = Annotated[FailOn, typer.Option(help="Exit 1 when a finding is at or above this severity.")]
WorkloadOpt = Annotated[
    str, typer.Option(help="Workload preset for the penalty: llm-70b-fsdp, llm-8b-ddp, llm-175b-3d.")
]
PriceOpt = Annotated[float | None, typer.Option(min=0.0, help="Price of one GPU-hour, for dollars in the penalty.")]
RulesDirOpt = Annotated[list[Path] | None, typer.Option("--rules-dir", help="Add rules from DIR (repeatable).")]
SelectOpt = Annotated[list[str] | None, typer.Option(help="Run only these rule ids, id prefixes or categories.")]
IgnoreOpt = Annotated[list[str] | None, typer.Option(help="Skip these rule ids, id prefixes or categories.")]
SaveOpt = Annotated[Path | None, typer.Option(help="Also save the collected inventory to FILE (JSON).")]
ClusterTagOpt = Annotated[str | None, typer.Option(help="Group nodes that share this tag's value into a cluster.")]


def _options(
    workload: str,
    price: float | None,
    cluster_tag: str | None,
    rules_dir: list[Path] | None,
    select: list[str] | None,
    ignore: list[str] | None,
) -> Options:
    from fabriccheck.flow import Options

    return Options(
        workload=workload,
        price_per_gpu_hour=price,
        cluster_tag=cluster_tag,
        rules_dirs=rules_dir or [],
        select=select or [],
        ignore=ignore or [],
    )


def _finish(
    inventory: Inventory, options: Options, fmt: Format, output: Path | None, fail_on: FailOn, save: Path | None
) -> NoReturn:
    from fabriccheck import flow, reports
    from fabriccheck.engine import SEVERITY_RANK
    from fabriccheck.sources.snapshot import save_inventory

    if save is not None:
        save_inventory(inventory, save)
    report: Report = flow.run(inventory, options)
    color = output is None and fmt is Format.text and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    text = reports.render(report, fmt.value, color)
    if output is not None:
        try:
            output.write_text(text)
        except OSError as exc:
            from fabriccheck.errors import FabricCheckError

            raise FabricCheckError(f"--output {output}: cannot write ({exc.strerror})") from None
    else:
        sys.stdout.write(text)
    if not report.complete:
        raise typer.Exit(2)
    worst = report.worst_severity()
    if fail_on is not FailOn.never and worst is not None and SEVERITY_RANK[worst] >= SEVERITY_RANK[fail_on.value]:
        raise typer.Exit(1)
    raise typer.Exit(0)


@app.command()
def aws(
    region: Annotated[list[str] | None, typer.Option("--region", "-r", help="Region to audit (repeatable).")] = None,
    all_regions: Annotated[bool, typer.Option("--all-regions", help="Audit every enabled region.")] = False,
    profile: Annotated[str | None, typer.Option(help="AWS profile from the shared config.")] = None,
    endpoint_url: Annotated[str | None, typer.Option(help="EC2 endpoint (VPC endpoint, emulator).")] = None,
    from_dump: Annotated[
        Path | None, typer.Option("--from-dump", help="Read `aws ec2 describe-* --output json` files from DIR.")
    ] = None,
    topology: Annotated[
        bool, typer.Option(help="Also call DescribeInstanceTopology (one call per 100 instances).")
    ] = False,
    print_iam_policy: Annotated[
        bool, typer.Option("--print-iam-policy", help="Print the least-privilege IAM policy and exit.")
    ] = False,
    cluster_tag: ClusterTagOpt = None,
    fmt: FormatOpt = Format.text,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    workload: WorkloadOpt = "llm-70b-fsdp",
    price_per_gpu_hour: PriceOpt = None,
    rules_dir: RulesDirOpt = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    save_inventory: SaveOpt = None,
) -> None:
    """Audit AWS: EFA interfaces, security groups, placement groups and launch templates."""
    import json

    from fabriccheck.providers.aws import collect, dump

    if print_iam_policy:
        sys.stdout.write(json.dumps(collect.iam_policy(), indent=2) + "\n")
        raise typer.Exit(0)
    options = _options(workload, price_per_gpu_hour, cluster_tag, rules_dir, select, ignore)
    if from_dump is not None:
        inventory = dump.load_dump(from_dump, region[0] if region and len(region) == 1 else None)
    else:
        with _progress() as progress:
            inventory = collect.collect_live(
                region or [],
                profile=profile,
                endpoint_url=endpoint_url,
                every_region=all_regions,
                topology=topology,
                progress=progress,
            )
    _finish(inventory, options, fmt, output, fail_on, save_inventory)


@app.command()
def demo(
    cluster_tag: ClusterTagOpt = None,
    fmt: FormatOpt = Format.text,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.never,
    workload: WorkloadOpt = "llm-70b-fsdp",
    price_per_gpu_hour: PriceOpt = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    save_inventory: SaveOpt = None,
) -> None:
    """Run the AWS audit on a bundled example account (no credentials, no network)."""
    from fabriccheck.providers.aws.dump import load_dump

    options = _options(workload, price_per_gpu_hour, cluster_tag, None, select, ignore)
    _finish(load_dump(demo_dir() / "aws"), options, fmt, output, fail_on, save_inventory)


@app.command()
def check(
    inventory_file: Annotated[Path, typer.Argument(metavar="FILE", help="Inventory saved with --save-inventory.")],
    cluster_tag: ClusterTagOpt = None,
    fmt: FormatOpt = Format.text,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    workload: WorkloadOpt = "llm-70b-fsdp",
    price_per_gpu_hour: PriceOpt = None,
    rules_dir: RulesDirOpt = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
) -> None:
    """Judge a saved inventory (from --save-inventory) without calling any cloud."""
    from fabriccheck.sources.snapshot import load_inventory

    options = _options(workload, price_per_gpu_hour, cluster_tag, rules_dir, select, ignore)
    _finish(load_inventory(inventory_file), options, fmt, output, fail_on, None)


@app.command()
def rules(
    rule_id: Annotated[str | None, typer.Argument(metavar="[ID]", help="Explain one rule.")] = None,
    rules_dir: RulesDirOpt = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="text or json.")] = "text",
    facts: Annotated[bool, typer.Option("--facts", help="List the facts rule conditions may read.")] = False,
    provider: Annotated[str, typer.Option(help="With --facts: aws, azure or gcp.")] = "aws",
) -> None:
    """List the rules, or explain one with its passing and failing examples."""
    from fabriccheck import engine
    from fabriccheck.errors import FabricCheckError
    from fabriccheck.reports import rules as rules_report

    if fmt not in ("text", "json"):
        raise FabricCheckError(f"--format {fmt}: rules are shown as text or json")
    if facts:
        from fabriccheck import facts as derived
        from fabriccheck.model import PROVIDERS

        if provider not in PROVIDERS:
            raise FabricCheckError(f"--provider {provider}: choose from {', '.join(PROVIDERS)}")
        node, cluster = derived.described(provider)
        sys.stdout.write(rules_report.facts(provider, node, cluster, fmt))
        return
    loaded = engine.load_rules(rules_dir or [])
    if rule_id is None:
        sys.stdout.write(rules_report.listing(loaded, fmt))
        return
    match = [r for r in loaded if rule_id.upper() in r.finding_ids()]
    if not match:
        raise FabricCheckError(f"no rule {rule_id} (see: fabriccheck rules)")
    sys.stdout.write(rules_report.explain(match[0], fmt))


def demo_dir() -> Path:
    from importlib import resources

    packaged = Path(str(resources.files("fabriccheck") / "demo"))
    return packaged if packaged.is_dir() else Path(__file__).resolve().parent.parent / "fixtures" / "demo"


class _progress:
    """A status line on stderr while collecting, only when stderr is a terminal."""

    def __enter__(self) -> Any:
        from fabriccheck.sources.common import Progress

        self.status = None
        if sys.stderr.isatty():
            from rich.console import Console

            self.status = Console(stderr=True).status("collecting")
            self.status.start()
            status = self.status
            return Progress(step=lambda scope, what: status.update(f"collecting: {scope} {what}"))
        return Progress()

    def __exit__(self, *exc: object) -> None:
        if self.status is not None:
            self.status.stop()


def main(argv: list[str] | None = None) -> int:
    """Entry point: every failure is one line on stderr and exit code 2, never a traceback."""
    import importlib

    try:  # newer typer carries its own copy of click
        click_errors: Any = importlib.import_module("typer._click.exceptions")
    except ImportError:  # typer releases that use click itself
        click_errors = importlib.import_module("click.exceptions")

    from fabriccheck.errors import FabricCheckError

    command = typer.main.get_command(app)
    try:
        result = command.main(args=argv, prog_name="fabriccheck", standalone_mode=False)
        return int(result) if isinstance(result, int) else 0
    except typer.Exit as exc:
        return int(exc.exit_code)
    except click_errors.NoArgsIsHelpError as exc:
        sys.stdout.write(exc.ctx.get_help() + "\n")
        return 0
    except click_errors.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "fabriccheck"
        sys.stderr.write(f"fabriccheck: error: {exc.format_message()} (see: {where} --help)\n")
        return 2
    except typer.Abort:
        sys.stderr.write("fabriccheck: aborted\n")
        return 2
    except FabricCheckError as exc:
        sys.stderr.write(f"fabriccheck: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("fabriccheck: interrupted\n")
        return 130
    except Exception as exc:  # the promise is one line, never a traceback; FABRICCHECK_DEBUG=1 shows it
        if os.environ.get("FABRICCHECK_DEBUG"):
            raise
        sys.stderr.write(
            f"fabriccheck: internal error: {type(exc).__name__}: {exc} (set FABRICCHECK_DEBUG=1 for details)\n"
        )
        return 2
