"""The command line: parse options, run the flow, print, choose the exit code.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 the check could not be completed
(bad input, bad usage, or an incomplete collection); 130 interrupted (Ctrl-C), with nothing written. Cloud
SDKs and the engine are imported inside the commands, so `fabriccheck --help` stays fast.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from fabriccheck.stdout import write_stdout as _stdout

if TYPE_CHECKING:
    from fabriccheck import gate
    from fabriccheck.flow import Options
    from fabriccheck.inventory import Inventory
    from fabriccheck.report import Report
    from fabriccheck.sources.common import Outputs


class Format(StrEnum):
    text = "text"
    json = "json"
    sarif = "sarif"
    junit = "junit"
    markdown = "markdown"
    prometheus = "prometheus"


class FailOn(StrEnum):
    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


def _price(value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise typer.BadParameter(f"{value}: not a price (a finite number of dollars, 0 or more)")
    return value


def _cluster_tag(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise typer.BadParameter("an empty tag key groups nothing (give the key, e.g. --cluster-tag job)")
    return value


FormatOpt = Annotated[
    Format,
    typer.Option(
        "--format", "-f", metavar="FORMAT", help="Report format: text, json, sarif, junit, markdown or prometheus."
    ),
]
OutputOpt = Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write the report to FILE.")]
FailOnOpt = Annotated[
    FailOn,
    typer.Option(
        metavar="SEVERITY", help="Exit 1 when a finding is at or above this severity: error, warning, info or never."
    ),
]
WorkloadOpt = Annotated[
    str,
    typer.Option(
        metavar="NAME|FILE",
        help="Workload for the penalty: a preset (llm-70b-fsdp, llm-8b-ddp, llm-175b-3d) or your own in a .yaml/.toml"
        " file (the fields of estimate --workload-file).",
    ),
]
PriceOpt = Annotated[
    float | None,
    typer.Option(metavar="N", callback=_price, help="Dollars per GPU-hour, to price the GPU-hours the penalty loses."),
]
RulesDirOpt = Annotated[
    list[Path] | None, typer.Option("--rules-dir", metavar="DIR", help="Add rules from DIR (repeatable).")
]
SelectOpt = Annotated[
    list[str] | None,
    typer.Option(metavar="RULE", help="Run only these rule ids, id prefixes or categories (repeatable)."),
]
IgnoreOpt = Annotated[
    list[str] | None,
    typer.Option(metavar="RULE", help="Skip these rule ids, id prefixes or categories (repeatable)."),
]
VerboseOpt = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="Text: list every clean and skipped cluster and every resource (live runs: log each scope on stderr).",
    ),
]
SaveOpt = Annotated[Path | None, typer.Option(metavar="FILE", help="Also save the collected inventory to FILE (JSON).")]


def _concurrency(value: int | None) -> int | None:
    from fabriccheck.sources.fleet import MAX_CONCURRENCY

    if value is not None and not 1 <= value <= MAX_CONCURRENCY:
        raise typer.BadParameter(f"{value}: give 1 to {MAX_CONCURRENCY} scopes at once")
    return value


ConcurrencyOpt = Annotated[
    int | None,
    typer.Option(
        metavar="N",
        callback=_concurrency,
        help="Collect N scopes (account x region, subscription, project) at once (default 16).",
    ),
]
AllowIncompleteOpt = Annotated[
    bool,
    typer.Option(
        "--allow-incomplete",
        help="An incomplete collection does not by itself exit 2: the findings decide (the report still says so).",
    ),
]
ClusterTagOpt = Annotated[
    str | None,
    typer.Option(metavar="KEY", callback=_cluster_tag, help="Group nodes that share this tag's value into a cluster."),
]


# The gate's own options (config.py, waivers.py, baseline.py). Every scanning command takes them; `_options` reads
# them from the command's context (with the config file and FABRICCHECK_* variables under them, and the shared
# options above over them) through `_configured`, and `_finish` uses what it settled. A new scanning command (plan)
# gets the whole layer by taking these options and calling `_options` and `_finish` like the others.
ConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config",
        metavar="FILE",
        help="Config file (default: ./fabriccheck.toml, else ./pyproject.toml's "
        "[tool.fabriccheck]; see: fabriccheck config).",
    ),
]
IsolatedOpt = Annotated[
    bool,
    typer.Option(
        "--isolated",
        envvar="FABRICCHECK_ISOLATED",
        help="Read no config file (FABRICCHECK_ISOLATED=1 too): only defaults, FABRICCHECK_* variables and flags.",
    ),
]
WaiversOpt = Annotated[
    Path | None,
    typer.Option(metavar="FILE", help="Waivers (YAML or TOML): findings reported as waived, not failing the gate."),
]
BaselineOpt = Annotated[
    Path | None, typer.Option(metavar="FILE", help="Fail only on findings this baseline does not hold.")
]
WriteBaselineOpt = Annotated[
    Path | None,
    typer.Option(metavar="FILE", help="Record this run's findings as the baseline in FILE (and judge against it)."),
]
SeverityOverrideOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--severity", metavar="RULE=LEVEL", help="Report a rule (or category) at error, warning or info (repeatable)."
    ),
]
RoleOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--role", metavar="CLUSTER=ROLE", help="Cluster id (glob) is training, inference or ignore (repeatable)."
    ),
]


class _Flag:
    """Coerces a flag's value by leaving it as it is (see _PlainHelp)."""

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        return value


class _PlainHelp:
    """Typer coerces every option's value through a pydantic TypeAdapter, built on first use, and the
    `--help` flag of the app is processed (value unset) before any command runs: `fabriccheck azure --help`
    imported pydantic (a third of its start-up) to coerce nothing. A flag needs no coercion. Typer versions
    without per-option coercion (no `_runtime_param`) are left alone."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None and getattr(option, "_runtime_param", False) is None:
            option._runtime_param = _Flag()
        return option


class _Group(_PlainHelp, typer.core.TyperGroup):
    pass


class _Command(_PlainHelp, typer.core.TyperCommand):
    """Help in plain words: `check [OPTIONS] FILE` and `FILE  Inventory saved ...`, not `{FILE}` and
    `FILE <path>` (the options carry their own plain metavars)."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces: list[str] = super().collect_usage_pieces(ctx)
        return [p[1:-1] if p.startswith("{") and p.endswith("}") else p for p in pieces]

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments: list[tuple[str, str]] = []
        options: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                arguments.append((param.metavar or (param.name or "").upper(), record[1]))
            else:
                options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


app = typer.Typer(
    name="fabriccheck",
    help="Find cloud GPU-cluster settings that leave the training fabric (EFA, InfiniBand, GPUDirect) "
    "unused, and estimate what they cost.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    cls=_Group,
)


def _version(value: bool) -> None:
    if value:
        from fabriccheck import __version__

        _stdout(f"fabriccheck {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_version, help="Print the version and exit."),
    ] = False,
) -> None:
    """The options before the command (the app's help text is its `help=` above)."""
    import time

    _STARTED.append(time.perf_counter())  # the scan's duration in the report counts from here


_STARTED: list[float] = []


AWS_EXTRA = "fabriccheck aws needs the AWS extra: pip install 'fabriccheck[aws]'"
AZURE_EXTRA = "fabriccheck azure needs the Azure extra: pip install 'fabriccheck[azure]'"
GCP_EXTRA = "fabriccheck gcp needs the GCP extra: pip install 'fabriccheck[gcp]'"
_EXTRAS = {"boto3": AWS_EXTRA, "botocore": AWS_EXTRA, "azure": AZURE_EXTRA, "google": GCP_EXTRA}


@contextmanager
def _cloud_sdk() -> Iterator[None]:
    """A cloud SDK that is not installed is the missing extra, named with how to install it (one line)."""
    try:
        yield
    except ModuleNotFoundError as exc:
        message = _EXTRAS.get((exc.name or "").partition(".")[0])
        if message is None:
            raise
        from fabriccheck.errors import FabricCheckError

        raise FabricCheckError(message) from None


def _same_file(a: Path, b: Path) -> bool:
    from fabriccheck.gate import same_file

    return same_file(a, b)


def _loaded(where: object, load: Callable[[], Inventory]) -> Inventory:
    """`load()` of the input `where` (a dump folder, a plan, a saved inventory): a value in it nested too deeply for
    Python, even to quote in an error, is one line naming it."""
    from fabriccheck.sources.common import reading

    with reading(str(where)):
        return load()


def _write(path: Path, text: str, option: str) -> None:
    from fabriccheck.sources.common import write_atomic

    write_atomic(path, text.encode(), option)


def _options(
    workload: str,
    price: float | None,
    cluster_tag: str | None,
    rules_dir: list[Path] | None,
    select: list[str] | None,
    ignore: list[str] | None,
) -> Options:
    from fabriccheck.flow import Options

    options = Options(
        workload=workload,
        price_per_gpu_hour=price,
        cluster_tag=cluster_tag,
        rules_dirs=rules_dir or [],
        select=select or [],
        ignore=ignore or [],
    )
    # Settle the config, waivers and baseline now, before any collection: a bad file fails in a second, not
    # after a long scan. _finish uses what this found.
    from fabriccheck import gate

    ctx = _context()
    if ctx is not None:
        ctx.meta[_GATE] = gate.settle(_invocation(ctx))
    return options


_GATE = "fabriccheck.gate"


def _finish(
    inventory: Inventory,
    options: Options,
    fmt: Format,
    output: Path | None,
    fail_on: FailOn,
    save: Path | None,
    verbose: bool = False,
    allow_incomplete: bool = False,
) -> NoReturn:
    import time

    from fabriccheck import flow, gate
    from fabriccheck.errors import FabricCheckError
    from fabriccheck.sources.common import API_CALLS, Outputs

    ctx = _context()
    settled = (ctx.meta.get(_GATE) if ctx is not None else None) or gate.settle(_invocation(ctx))
    options, fail_on, write_baseline = settled.options, FailOn(settled.fail_on), settled.write_baseline
    # Every file this run writes is staged, and all are put in place together once the report is out: a run
    # stopped before that (SIGTERM, Ctrl-C, an error) leaves none of them (the inventory stands alone only when
    # judging fails: what was collected is kept).
    outputs = Outputs()
    try:
        if save is not None:
            from fabriccheck.sources.snapshot import snapshot_of

            outputs.add(save, snapshot_of(inventory), "--save-inventory")
        report: Report = flow.run(inventory, options)
    except FabricCheckError:
        outputs.commit()
        raise
    except BaseException:
        outputs.discard()
        raise
    try:
        if write_baseline is not None:
            gate.write_baseline(report, write_baseline, options, outputs)
        report.duration_seconds = round(time.perf_counter() - _STARTED[-1], 3) if _STARTED else None
        report.api_calls = API_CALLS.value
        _write_report(report, fmt, output, fail_on, verbose, outputs)
        outputs.commit()
    except BaseException:
        outputs.discard()
        raise
    tag = options.cluster_tag
    if tag is not None and _untagged(inventory, tag):
        # After the report is out, so that a run that fails is still one line on stderr.
        _say(f"fabriccheck: warning: no node carries the tag {tag}; grouping by the usual signals")
    _exit_for(report, fail_on, allow_incomplete)


def _write_report(
    report: Report, fmt: Format, output: Path | None, fail_on: FailOn, verbose: bool, outputs: Outputs | None = None
) -> None:
    """The report on stdout, or in --output FILE (staged in `outputs` when given, else written at once)."""
    from fabriccheck import reports

    tty = sys.stdout is not None and sys.stdout.isatty()
    color = output is None and fmt is Format.text and tty and "NO_COLOR" not in os.environ
    # A file gets a fixed width; the terminal's own width applies to what goes to the terminal.
    width = 100 if output is not None else None
    text = reports.render(report, fmt.value, color, verbose=verbose, fail_on=fail_on.value, width=width)
    if output is not None and outputs is not None:
        outputs.add(output, text.encode(), "--output")
    elif output is not None:
        _write(output, text, "--output")
    else:
        _stdout(text)


def _exit_for(report: Report, fail_on: FailOn, allow_incomplete: bool = False) -> NoReturn:
    """The exit code contract: 2 when the check could not see everything (unless --allow-incomplete: then the
    findings decide), 1 for findings at --fail-on."""
    from fabriccheck.findings import SEVERITY_RANK

    if not allow_incomplete and not report.fully_judged():
        # A gate that could not see (facts not collected, or a cluster some rule could not judge, findings or
        # not) is not green.
        raise typer.Exit(2)
    worst = report.worst_severity()
    if fail_on is not FailOn.never and worst is not None and SEVERITY_RANK[worst] >= SEVERITY_RANK[fail_on.value]:
        raise typer.Exit(1)
    raise typer.Exit(0)


def _context() -> Any:
    import importlib

    try:  # newer typer carries its own copy of click
        return importlib.import_module("typer._click.globals").get_current_context(silent=True)
    except ImportError:
        return importlib.import_module("click").get_current_context(silent=True)


def _untagged(inventory: Inventory, tag: str) -> bool:
    """--cluster-tag names a key that no node carries (so the usual grouping signals apply to every node)."""
    return bool(inventory.nodes) and not any(tag in node.tags for node in inventory.nodes)


def _print_privilege(
    ctx: typer.Context,
    flag: str,
    what: str,
    document: Callable[[], dict[str, Any]],
    output: Path | None,
    shaping: tuple[str, ...] = (),
) -> NoReturn:
    """`--print-iam-policy` / `--print-role`: the least privilege the command needs, printed or written to
    --output FILE, then exit 0. Any other option given with it would be ignored, so it is an error instead."""
    import json

    from fabriccheck.errors import FabricCheckError

    name = flag.removeprefix("--").replace("-", "_")
    # `shaping` options change what is printed (AWS: the roles a fleet run assumes); any other is an error.
    keep = (name, "output", *shaping)
    others = [_option_name(p) for p in ctx.command.params if p.name not in keep and _given(ctx, p.name)]
    if others:
        raise FabricCheckError(
            f"{flag} and {', '.join(others)} cannot be used together "
            f"(it prints the {what} and exits; --output FILE writes it there)"
        )
    text = json.dumps(document(), indent=2) + "\n"
    if output is None:
        _stdout(text)
    else:
        _write(output, text, "--output")
    raise typer.Exit(0)


@app.command(cls=_Command)
def aws(
    ctx: typer.Context,
    region: Annotated[
        list[str] | None,
        typer.Option("--region", "-r", metavar="REGION", help="Region to audit (repeatable)."),
    ] = None,
    all_regions: Annotated[bool, typer.Option("--all-regions", help="Audit every enabled region.")] = False,
    profile: Annotated[str | None, typer.Option(metavar="PROFILE", help="AWS profile from the shared config.")] = None,
    endpoint_url: Annotated[
        str | None, typer.Option(metavar="URL", help="EC2 endpoint (VPC endpoint, emulator).")
    ] = None,
    from_dump: Annotated[
        Path | None,
        typer.Option(
            "--from-dump",
            metavar="DIR",
            help="Read `aws ec2 describe-* --output json` files from DIR (--region: the region of a flat DIR).",
        ),
    ] = None,
    topology: Annotated[
        bool, typer.Option("--topology", help="Also call DescribeInstanceTopology (one call per 100 instances).")
    ] = False,
    print_iam_policy: Annotated[
        bool,
        typer.Option(
            "--print-iam-policy", help="Print the least-privilege IAM policy (or write it to --output FILE) and exit."
        ),
    ] = False,
    role_arn: Annotated[
        str | None, typer.Option(metavar="ARN", help="Assume this IAM role and audit its account.")
    ] = None,
    org_role: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="Audit every active account of the organization (organizations:ListAccounts) through the role "
            "NAME in each.",
        ),
    ] = None,
    external_id: Annotated[
        str | None, typer.Option(metavar="ID", help="External id sent with AssumeRole (--role-arn, --org-role).")
    ] = None,
    accounts: Annotated[
        list[str] | None,
        typer.Option(metavar="IDS", help="With --org-role: only these account ids (repeatable, or comma-separated)."),
    ] = None,
    exclude_accounts: Annotated[
        list[str] | None,
        typer.Option(metavar="IDS", help="With --org-role: skip these account ids (repeatable, or comma-separated)."),
    ] = None,
    concurrency: ConcurrencyOpt = None,
    allow_incomplete: AllowIncompleteOpt = False,
    cluster_tag: ClusterTagOpt = None,
    fmt: FormatOpt = Format.text,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    workload: WorkloadOpt = "llm-70b-fsdp",
    price_per_gpu_hour: PriceOpt = None,
    rules_dir: RulesDirOpt = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    verbose: VerboseOpt = False,
    save_inventory: SaveOpt = None,
    config: ConfigOpt = None,
    isolated: IsolatedOpt = False,
    waivers: WaiversOpt = None,
    baseline: BaselineOpt = None,
    write_baseline: WriteBaselineOpt = None,
    severity: SeverityOverrideOpt = None,
    role: RoleOpt = None,
) -> None:
    """Audit AWS: EFA interfaces, security groups, placement groups and launch templates."""

    from fabriccheck.endpoints import AWS_CREDENTIAL, check_endpoint_url
    from fabriccheck.errors import FabricCheckError
    from fabriccheck.providers.aws.fleet import Fleet, split_ids

    plan = Fleet(role_arn, org_role, external_id, split_ids(accounts), split_ids(exclude_accounts))
    if print_iam_policy:
        from fabriccheck.providers.aws.collect import iam_policy

        shaping = ("role_arn", "org_role", "external_id", "accounts", "exclude_accounts")
        _print_privilege(ctx, "--print-iam-policy", "policy", lambda: iam_policy(plan), output, shaping)
    if from_dump is not None:
        live_only = {
            "--role-arn": (role_arn is not None, "a dump makes no AWS call"),
            "--org-role": (org_role is not None, "a dump makes no AWS call"),
            "--concurrency": (concurrency is not None, "a dump makes no AWS call"),
            "--profile": (profile is not None, "a dump makes no AWS call"),
            "--endpoint-url": (endpoint_url is not None, "a dump makes no AWS call"),
            "--all-regions": (all_regions, "a dump holds the regions it has, one folder each"),
            "--topology": (topology, "a dump's topology is its describe-instance-topology.json"),
        }
        for name, (used, why) in live_only.items():
            if used:
                raise FabricCheckError(f"--from-dump and {name} cannot be used together ({why})")
        if region and len(region) > 1:
            raise FabricCheckError(
                f"--from-dump takes one --region (the region of a flat dump folder), not {len(region)}: a dump "
                "of several regions keeps each in a folder named after it"
            )
    check_endpoint_url(endpoint_url, AWS_CREDENTIAL)
    options = _options(workload, price_per_gpu_hour, cluster_tag, rules_dir, select, ignore)
    with _cloud_sdk():
        from fabriccheck.providers.aws import collect, dump
        from fabriccheck.sources.fleet import DEFAULT_CONCURRENCY

        if from_dump is not None:
            inventory = _loaded(from_dump, lambda: dump.load_dump(from_dump, region[0] if region else None))
        else:
            with _progress(verbose) as progress:
                inventory = collect.collect_live(
                    region or [],
                    profile=profile,
                    endpoint_url=endpoint_url,
                    every_region=all_regions,
                    topology=topology,
                    progress=progress,
                    accounts=plan,
                    concurrency=concurrency or DEFAULT_CONCURRENCY,
                )
        _finish(inventory, options, fmt, output, fail_on, save_inventory, verbose, allow_incomplete)


def _given(ctx: typer.Context, name: str | None) -> bool:
    source = ctx.get_parameter_source(name) if name else None
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


def _invocation(ctx: Any) -> gate.Invocation:
    """The running command as the gate reads it (gate.Invocation), from its click context."""
    from fabriccheck import gate

    params = [p for p in ctx.command.params if p.name] if ctx is not None else []
    return gate.Invocation(
        params=dict(ctx.params) if ctx is not None else {},
        given=tuple(p.name for p in params if _given(ctx, p.name)),
        defaults={p.name: p.default for p in params},
        flags={p.name: _option_name(p) for p in params},
    )


def _option_name(param: Any) -> str:
    return str(max(param.opts, key=len))


@app.command(cls=_Command)
def azure(
    ctx: typer.Context,
    subscription: Annotated[
        list[str] | None,
        typer.Option(
            "--subscription", "-s", metavar="ID", help="Subscription to audit (repeatable; default: every one listed)."
        ),
    ] = None,
    resource_group: Annotated[
        list[str] | None,
        typer.Option("--resource-group", "-g", metavar="RG", help="Only these resource groups (repeatable)."),
    ] = None,
    endpoint_url: Annotated[
        str | None,
        typer.Option(metavar="URL", help="Resource Manager endpoint (sovereign cloud, Azure Stack, emulator)."),
    ] = None,
    cloud: Annotated[str, typer.Option(metavar="CLOUD", help="Azure cloud: public, usgov or china.")] = "public",
    from_dump: Annotated[
        Path | None,
        typer.Option(
            "--from-dump",
            metavar="DIR",
            help="Read `az ... -o json` files from DIR (one folder per subscription allowed).",
        ),
    ] = None,
    print_role: Annotated[
        bool,
        typer.Option(
            "--print-role", help="Print the least-privilege custom role (or write it to --output FILE) and exit."
        ),
    ] = False,
    management_group: Annotated[
        str | None,
        typer.Option(metavar="ID", help="Audit every subscription under this management group (nested included)."),
    ] = None,
    concurrency: ConcurrencyOpt = None,
    allow_incomplete: AllowIncompleteOpt = False,
    cluster_tag: ClusterTagOpt = None,
    fmt: FormatOpt = Format.text,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    workload: WorkloadOpt = "llm-70b-fsdp",
    price_per_gpu_hour: PriceOpt = None,
    rules_dir: RulesDirOpt = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    verbose: VerboseOpt = False,
    save_inventory: SaveOpt = None,
    config: ConfigOpt = None,
    isolated: IsolatedOpt = False,
    waivers: WaiversOpt = None,
    baseline: BaselineOpt = None,
    write_baseline: WriteBaselineOpt = None,
    severity: SeverityOverrideOpt = None,
    role: RoleOpt = None,
) -> None:
    """Audit Azure: InfiniBand sizes, scale sets, availability sets, drivers and virtual networks."""

    from fabriccheck.errors import FabricCheckError

    if print_role:
        from fabriccheck.providers.azure.collect import role_for

        _print_privilege(ctx, "--print-role", "role", lambda: role_for(management_group), output, ("management_group",))
    if cloud not in ("public", "usgov", "china"):
        raise FabricCheckError(f"--cloud {cloud}: choose from public, usgov, china")
    if from_dump is not None:
        for name in ("endpoint_url", "cloud", "resource_group", "management_group", "concurrency"):
            if _given(ctx, name):
                raise FabricCheckError(
                    f"--from-dump and --{name.replace('_', '-')} cannot be used together (a dump makes no Azure call)"
                )
    options = _options(workload, price_per_gpu_hour, cluster_tag, rules_dir, select, ignore)
    with _cloud_sdk():
        if from_dump is not None:
            from fabriccheck.providers.azure.dump import load_dump

            inventory = _loaded(from_dump, lambda: load_dump(from_dump, subscription))
        else:
            from fabriccheck.providers.azure import collect
            from fabriccheck.sources.fleet import DEFAULT_CONCURRENCY

            with _progress(verbose) as progress:
                inventory = collect.collect_live(
                    subscription or [],
                    resource_groups=resource_group,
                    endpoint_url=endpoint_url,
                    cloud=cloud,
                    progress=progress,
                    management_group=management_group,
                    concurrency=concurrency or DEFAULT_CONCURRENCY,
                )
        _finish(inventory, options, fmt, output, fail_on, save_inventory, verbose, allow_incomplete)


@app.command(cls=_Command)
def gcp(
    ctx: typer.Context,
    project: Annotated[
        list[str] | None,
        typer.Option("--project", "-p", metavar="PROJECT", help="Project to audit (repeatable; default: the ADC one)."),
    ] = None,
    zone: Annotated[
        list[str] | None,
        typer.Option("--zone", "-z", metavar="ZONE", help="Zone to audit (repeatable; default: every zone)."),
    ] = None,
    endpoint_url: Annotated[
        str | None,
        typer.Option(metavar="URL", help="Compute API endpoint (Private Service Connect, emulator); http:// as given."),
    ] = None,
    from_dump: Annotated[
        Path | None,
        typer.Option(
            "--from-dump",
            metavar="DIR",
            help="Read `gcloud compute ... list --format=json` files from DIR (one folder per project allowed).",
        ),
    ] = None,
    print_role: Annotated[
        bool,
        typer.Option(
            "--print-role", help="Print the least-privilege custom role (or write it to --output FILE) and exit."
        ),
    ] = False,
    organization: Annotated[
        str | None,
        typer.Option(metavar="ID", help="Audit every active project of this organization (numeric id), folders too."),
    ] = None,
    folder: Annotated[
        str | None, typer.Option(metavar="ID", help="Audit every active project under this folder (numeric id).")
    ] = None,
    concurrency: ConcurrencyOpt = None,
    allow_incomplete: AllowIncompleteOpt = False,
    cluster_tag: ClusterTagOpt = None,
    fmt: FormatOpt = Format.text,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    workload: WorkloadOpt = "llm-70b-fsdp",
    price_per_gpu_hour: PriceOpt = None,
    rules_dir: RulesDirOpt = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    verbose: VerboseOpt = False,
    save_inventory: SaveOpt = None,
    config: ConfigOpt = None,
    isolated: IsolatedOpt = False,
    waivers: WaiversOpt = None,
    baseline: BaselineOpt = None,
    write_baseline: WriteBaselineOpt = None,
    severity: SeverityOverrideOpt = None,
    role: RoleOpt = None,
) -> None:
    """Audit Google Cloud: GPU NICs (TCPX, TCPXO, RDMA), their networks and firewalls, placement policies."""

    from fabriccheck.endpoints import GCP_CREDENTIAL, check_endpoint_url
    from fabriccheck.errors import FabricCheckError

    if print_role:
        from fabriccheck.providers.gcp.collect import custom_role

        listing = organization is not None or folder is not None
        _print_privilege(ctx, "--print-role", "role", lambda: custom_role(listing), output, ("organization", "folder"))
    if from_dump is not None:
        live_only = {
            "--project": (len(project or ()) > 1, "one --project names the project of a flat dump folder"),
            "--zone": (bool(zone), "a dump holds the zones it has"),
            "--endpoint-url": (endpoint_url is not None, "a dump makes no Google Cloud call"),
            "--organization": (organization is not None, "a dump holds the projects it has, one folder each"),
            "--folder": (folder is not None, "a dump holds the projects it has, one folder each"),
            "--concurrency": (concurrency is not None, "a dump makes no Google Cloud call"),
        }
        for name, (used, why) in live_only.items():
            if used:
                raise FabricCheckError(f"--from-dump and {name} cannot be used together ({why})")
    check_endpoint_url(endpoint_url, GCP_CREDENTIAL)
    options = _options(workload, price_per_gpu_hour, cluster_tag, rules_dir, select, ignore)
    with _cloud_sdk():
        if from_dump is not None:
            from fabriccheck.providers.gcp.dump import load_dump

            inventory = _loaded(from_dump, lambda: load_dump(from_dump, project[0] if project else None))
        else:
            from fabriccheck.providers.gcp import collect
            from fabriccheck.sources.fleet import DEFAULT_CONCURRENCY

            with _progress(verbose) as progress:
                inventory = collect.collect_live(
                    project or [],
                    zones=zone or [],
                    endpoint_url=endpoint_url,
                    progress=progress,
                    organization=organization,
                    folder=folder,
                    concurrency=concurrency or DEFAULT_CONCURRENCY,
                )
        _finish(inventory, options, fmt, output, fail_on, save_inventory, verbose, allow_incomplete)


@app.command(cls=_Command)
def demo(
    cluster_tag: ClusterTagOpt = None,
    fmt: FormatOpt = Format.text,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.never,
    workload: WorkloadOpt = "llm-70b-fsdp",
    price_per_gpu_hour: PriceOpt = None,
    rules_dir: RulesDirOpt = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    verbose: VerboseOpt = False,
    save_inventory: SaveOpt = None,
    config: ConfigOpt = None,
    isolated: IsolatedOpt = False,
    waivers: WaiversOpt = None,
    baseline: BaselineOpt = None,
    write_baseline: WriteBaselineOpt = None,
    severity: SeverityOverrideOpt = None,
    role: RoleOpt = None,
    plans: Annotated[
        bool,
        typer.Option(
            "--plan", help="Judge the bundled Terraform plans instead: a wrong plan beside a correct one per cloud."
        ),
    ] = False,
) -> None:
    """Run the audit on the bundled example accounts of every cloud (no credentials, no network)."""
    options = _options(workload, price_per_gpu_hour, cluster_tag, rules_dir, select, ignore)
    with _cloud_sdk():
        inventory = demo_plan_inventory() if plans else demo_inventory()
        _finish(inventory, options, fmt, output, fail_on, save_inventory, verbose)


def demo_plan_inventory() -> Inventory:
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


def demo_inventory() -> Inventory:
    """The bundled demo: one folder of dump files per cloud, each read by its provider's own dump reader."""
    import importlib

    from fabriccheck.inventory import Inventory
    from fabriccheck.model import PROVIDERS

    inventory = Inventory(source="demo")
    for provider in PROVIDERS:
        folder = demo_dir() / provider
        if folder.is_dir():
            reader = importlib.import_module(f"fabriccheck.providers.{provider}.dump")
            inventory.merge(reader.load_dump(folder))
    inventory.source = f"demo ({demo_dir()})"
    return inventory


@app.command(cls=_Command)
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
    verbose: VerboseOpt = False,
    config: ConfigOpt = None,
    isolated: IsolatedOpt = False,
    waivers: WaiversOpt = None,
    baseline: BaselineOpt = None,
    write_baseline: WriteBaselineOpt = None,
    severity: SeverityOverrideOpt = None,
    role: RoleOpt = None,
    allow_incomplete: AllowIncompleteOpt = False,
) -> None:
    """Judge a saved inventory (from --save-inventory) without calling any cloud."""
    from fabriccheck.sources.snapshot import load_inventory

    options = _options(workload, price_per_gpu_hour, cluster_tag, rules_dir, select, ignore)
    with _cloud_sdk():
        inventory = _loaded(inventory_file, lambda: load_inventory(inventory_file))
        _finish(inventory, options, fmt, output, fail_on, None, verbose, allow_incomplete)


@app.command(cls=_Command)
def plan(
    plan_file: Annotated[
        str, typer.Argument(metavar="FILE", help="JSON of terraform show -json PLANFILE (or tofu); - reads stdin.")
    ],
    terraform_dir: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="The configuration's root: findings name the file and line of each block."),
    ] = None,
    cluster_tag: ClusterTagOpt = None,
    fmt: FormatOpt = Format.text,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    workload: WorkloadOpt = "llm-70b-fsdp",
    price_per_gpu_hour: PriceOpt = None,
    rules_dir: RulesDirOpt = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    verbose: VerboseOpt = False,
    config: ConfigOpt = None,
    isolated: IsolatedOpt = False,
    waivers: WaiversOpt = None,
    baseline: BaselineOpt = None,
    write_baseline: WriteBaselineOpt = None,
    severity: SeverityOverrideOpt = None,
    role: RoleOpt = None,
    allow_incomplete: AllowIncompleteOpt = False,
) -> None:
    """Judge a Terraform or OpenTofu plan before apply: the same rules as a live scan, on what it would launch."""
    from fabriccheck.sources.terraform import load_plan

    options = _options(workload, price_per_gpu_hour, cluster_tag, rules_dir, select, ignore)
    inventory = _loaded(plan_file, lambda: load_plan(plan_file, terraform_dir))
    _finish(inventory, options, fmt, output, fail_on, None, verbose, allow_incomplete)


@app.command(cls=_Command)
def merge(
    reports: Annotated[
        list[Path], typer.Argument(metavar="FILE", help="JSON reports (--format json) of separate runs.")
    ],
    fmt: FormatOpt = Format.text,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    verbose: VerboseOpt = False,
    allow_incomplete: AllowIncompleteOpt = False,
) -> None:
    """Merge the JSON reports of separately run jobs (one per account, subscription or project) into one
    report. It is complete only if every part is; the exit code follows the same rules as a single run."""
    from fabriccheck import gate
    from fabriccheck.errors import FabricCheckError
    from fabriccheck.merge import merge_files

    if output is not None and any(_same_file(output, r) for r in reports):
        raise FabricCheckError(f"--output {output} is one of the reports being merged: write it elsewhere")
    report = merge_files(reports)
    report.gate = gate.with_exit_flags(_invocation(_context()), report.gate)
    _write_report(report, fmt, output, fail_on, verbose)
    _exit_for(report, fail_on, allow_incomplete)


def _evidence(
    kind: str, file: Path, fmt: Format, output: Path | None, fail_on: FailOn, verbose: bool, provider: str | None,
    judged: Any,
) -> NoReturn:  # fmt: skip
    from fabriccheck.evidence import command

    out = command.Output(fmt.value, output, fail_on.value, verbose)
    raise typer.Exit(command.run(kind, file, out, provider, judged))


ProviderOpt = Annotated[
    str | None,
    typer.Option(
        metavar="PROVIDER", help="The cloud the run was on (aws, azure, gcp), when the evidence does not say."
    ),
]


@app.command(cls=_Command)
def estimate(
    nodes: Annotated[int, typer.Option(metavar="N", help="Nodes in the cluster.")],
    instance_type: Annotated[
        str | None, typer.Option(metavar="TYPE", help="An instance type / VM size / machine type from the catalog.")
    ] = None,
    state: Annotated[
        str, typer.Option(metavar="STATE", help="healthy, tcp, nics=K, no-gdr, no-placement or unreachable.")
    ] = "healthy",
    gpu: Annotated[str | None, typer.Option(metavar="NAME", help="Custom fabric: accelerator, e.g. H100.")] = None,
    gpus_per_node: Annotated[int, typer.Option(metavar="N", help="Custom fabric: GPUs per node.")] = 8,
    nics: Annotated[int, typer.Option(metavar="N", help="Custom fabric: fabric NICs per node.")] = 8,
    nic_gbps: Annotated[float, typer.Option(metavar="GBPS", help="Custom fabric: Gbps per NIC.")] = 400.0,
    transport: Annotated[
        str, typer.Option(metavar="KIND", help="Custom fabric: ib, roce, efa, tcpx, tcpxo or tcp.")
    ] = "ib",
    no_gdr: Annotated[bool, typer.Option("--no-gdr", help="GPUDirect RDMA is off (or absent).")] = False,
    ethernet_gbps: Annotated[
        float | None, typer.Option(metavar="GBPS", help="The ordinary NIC NCCL sockets would use (tcp state).")
    ] = None,
    workload: WorkloadOpt = "llm-70b-fsdp",
    workload_file: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Your workload (YAML or TOML): parameters, layers, hidden, seq_len, tokens_per_gpu, micro_batches,"
            " parallelism (ddp, zero1-3, fsdp, 3d), tensor/pipeline/expert_parallel, precision. Replaces --workload.",
        ),
    ] = None,
    price_per_gpu_hour: PriceOpt = None,
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="FORMAT", help="text or json.")] = "text",
    output: OutputOpt = None,
) -> None:
    """What a fabric should do (nccl-tests bandwidths) and what a fabric state costs, for a catalog type or a
    fabric described by hand."""
    from fabriccheck import estimate as estimating
    from fabriccheck.evidence.failures import usage
    from fabriccheck.flow import workload_named

    if fmt not in ("text", "json"):
        raise usage(f"--format {fmt}: estimates are shown as text or json")
    if (instance_type is None) == (gpu is None):
        raise usage("give --instance-type TYPE, or describe the fabric with --gpu NAME (and --nics ...)")
    if instance_type is not None:
        fabric = estimating.with_overrides(estimating.fabric_of_type(instance_type), ethernet_gbps, no_gdr)
    else:
        fabric = estimating.custom_fabric(
            estimating.accelerator_named(gpu or ""), gpus_per_node, nics, nic_gbps, transport, not no_gdr, ethernet_gbps
        )
    chosen = estimating.workload_from_file(workload_file) if workload_file else workload_named(workload)
    result = estimating.run(fabric, nodes, state, chosen, price_per_gpu_hour)
    text = result.model_dump_json(indent=2) + "\n" if fmt == "json" else estimating.render_text(result)
    if output is not None:
        _write(output, text, "--output")
    else:
        _stdout(text)


@app.command("nccl-tests", cls=_Command)
def nccl_tests(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="Output of all_reduce_perf and friends.")],
    instance_type: Annotated[
        str | None, typer.Option(metavar="TYPE", help="Instance type / VM size / machine type of the nodes.")
    ] = None,
    nodes: Annotated[
        int | None, typer.Option(metavar="N", min=1, help="Nodes the test ran on (default: the hosts the file names).")
    ] = None,
    gpu: Annotated[
        str | None, typer.Option(metavar="GPU", help="Custom fabric: accelerator (H100, A100, ...).")
    ] = None,
    gpus_per_node: Annotated[int | None, typer.Option(metavar="K", help="Custom fabric: GPUs per node.")] = None,
    nics: Annotated[int | None, typer.Option(metavar="M", help="Custom fabric: fabric NICs per node.")] = None,
    nic_gbps: Annotated[float | None, typer.Option(metavar="X", help="Custom fabric: Gbps per fabric NIC.")] = None,
    transport: Annotated[
        str | None, typer.Option(metavar="T", help="Custom fabric: ib, roce, efa, tcpx, tcpxo or tcp.")
    ] = None,
    no_gdr: Annotated[bool, typer.Option("--no-gdr", help="Custom fabric: without GPUDirect RDMA.")] = False,
    ethernet_gbps: Annotated[
        float | None, typer.Option(metavar="G", help="Custom fabric: the ordinary NIC NCCL sockets would use.")
    ] = None,
    op: Annotated[
        str | None,
        typer.Option(metavar="OP", help="The collective, when the file does not say: all_reduce, all_gather, ..."),
    ] = None,
    provider: ProviderOpt = None,
    fmt: FormatOpt = Format.text,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    verbose: VerboseOpt = False,
) -> None:
    """Compare nccl-tests bus bandwidth with what the fabric should give (TCP fallback, slower than expected), and
    judge the NCCL lines the same file holds."""
    from fabriccheck.evidence import command

    fabric = command.FabricOptions(instance_type, gpu, gpus_per_node, nics, nic_gbps, transport, no_gdr, ethernet_gbps)
    _evidence("nccl-tests", file, fmt, output, fail_on, verbose, provider,
              lambda: command.nccl_tests(file, fabric, nodes, op, provider))  # fmt: skip


@app.command("nccl-log", cls=_Command)
def nccl_log(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A log of a run with NCCL_DEBUG=INFO.")],
    provider: ProviderOpt = None,
    fmt: FormatOpt = Format.text,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    verbose: VerboseOpt = False,
) -> None:
    """Report the transport each NCCL rank used (IB, EFA/OFI, sockets), GPUDirect RDMA and plugin failures."""
    from fabriccheck.evidence import command

    _evidence("nccl-log", file, fmt, output, fail_on, verbose, provider, lambda: command.nccl_log(file, provider))


@app.command(cls=_Command)
def rules(
    rule_id: Annotated[str | None, typer.Argument(metavar="ID", help="Explain one rule.")] = None,
    rules_dir: RulesDirOpt = None,
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="FORMAT", help="text or json.")] = "text",
    facts: Annotated[bool, typer.Option("--facts", help="List the facts rule conditions may read.")] = False,
    provider: Annotated[str, typer.Option(metavar="PROVIDER", help="With --facts: aws, azure or gcp.")] = "aws",
) -> None:
    """List the rules, or explain one with its passing and failing examples."""
    from fabriccheck import examples
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
        _stdout(rules_report.facts(provider, node, cluster, fmt))
        return
    loaded = examples.load_rules(rules_dir or [])
    if rule_id is None:
        _stdout(rules_report.listing(loaded, fmt))
        return
    match = [r for r in loaded if rule_id.upper() in r.finding_ids()]
    if not match:
        raise FabricCheckError(f"no rule {rule_id} (see: fabriccheck rules)")
    _stdout(rules_report.explain(match[0], fmt))


@app.command("config", cls=_Command)
def show_config(
    config: ConfigOpt = None,
    isolated: IsolatedOpt = False,
    fail_on: FailOnOpt = FailOn.error,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    severity: SeverityOverrideOpt = None,
    cluster_tag: ClusterTagOpt = None,
    role: RoleOpt = None,
    workload: WorkloadOpt = "llm-70b-fsdp",
    price_per_gpu_hour: PriceOpt = None,
    rules_dir: RulesDirOpt = None,
    waivers: WaiversOpt = None,
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="FORMAT", help="text or json.")] = "text",
) -> None:
    """Print the settings a scan run here would use, and where each came from (default, config file,
    FABRICCHECK_* variable, flag). The waivers file they name is read and checked too."""
    import json

    from fabriccheck import config as settings
    from fabriccheck import gate
    from fabriccheck import waivers as waiving
    from fabriccheck.errors import FabricCheckError

    if fmt not in ("text", "json"):
        raise FabricCheckError(f"--format {fmt}: the config is shown as text or json")
    effective, _ = gate.effective(_invocation(_context()))
    path: Path | None = effective.value("waivers")
    loaded = waiving.load(path) if path is not None else []
    gate.check_rule_names(effective, loaded, path)
    if fmt == "json":
        document = effective.as_dict() | {"waivers": [w.model_dump(mode="json") for w in loaded]}
        _stdout(json.dumps(document, indent=2) + "\n")
        return
    text = settings.render_text(effective)
    if path is not None:
        text += f"waivers file {path}: {len(loaded)} waiver{'s' if len(loaded) != 1 else ''}, valid\n"
    _stdout(text)


def demo_dir() -> Path:
    from importlib import resources

    packaged = Path(str(resources.files("fabriccheck") / "demo"))
    return packaged if packaged.is_dir() else Path(__file__).resolve().parent.parent / "fixtures" / "demo"


class _progress:
    """While collecting: on a terminal, a status line on stderr (scopes done and failed, nodes found, the call
    under way); elsewhere, with --verbose, one log line on stderr per scope as it finishes. Nothing else."""

    def __init__(self, verbose: bool = False) -> None:
        self.verbose = verbose

    def __enter__(self) -> Any:
        from fabriccheck.sources.common import Progress
        from fabriccheck.sources.fleet import Tally

        self.status = None
        tally = Tally()
        if sys.stderr.isatty():
            from rich.console import Console

            self.status = Console(stderr=True).status("collecting")
            self.status.start()
            status = self.status

            def step(scope: str, what: str) -> None:
                done = f"{tally.line()} · " if tally.total else ""
                status.update(f"collecting: {done}{scope} {what}")

            def planned(total: int) -> None:
                tally.total = total

            def finished(scope: Any) -> None:
                tally.add(scope)
                status.update(f"collecting: {tally.line()}")

            return Progress(step=step, planned=planned, finished=finished)
        if self.verbose:

            def log(scope: Any) -> None:
                tally.add(scope)
                where = " ".join(w for w in (scope.provider, scope.account, scope.region or "") if w)
                how = "complete" if scope.complete else f"INCOMPLETE ({scope.reason})"
                _say(
                    f"fabriccheck: {where}: {how}, {scope.nodes:,} nodes, {scope.api_calls:,} API requests, "
                    f"{scope.retries:,} retries [{tally.line()}]"
                )

            return Progress(planned=lambda total: setattr(tally, "total", total), finished=log)
        return Progress()

    def __exit__(self, *exc: object) -> None:
        if self.status is not None:
            self.status.stop()


def _say(line: str) -> None:
    """One line on stderr: credentials masked and control characters written out (`\\x1b`, `\\n`), so that a value it
    quotes (a key holding ESC[2J or a newline) can neither clear the screen nor forge a second line."""
    from fabriccheck.reports.safe import visible
    from fabriccheck.sources.common import redact

    with suppress(OSError, ValueError, AttributeError):  # no stderr left to say it on: nothing more to do
        sys.stderr.write(visible(redact(line)) + "\n")
        sys.stderr.flush()


def main(argv: list[str] | None = None) -> int:
    """Entry point (fabriccheck.console, argv None; tests and library callers pass argv): every failure is one line
    on stderr and exit code 2, never a traceback; SIGTERM and Ctrl-C at any moment are one line and exit 143 or 130
    (fabriccheck.stopping), with nothing written."""
    from fabriccheck import stopping

    previous = stopping.install()
    try:
        with stopping.running():
            code = _run(argv)
    except (stopping.Terminated, KeyboardInterrupt) as exc:  # it landed outside _run's own handlers
        code = stopping.TERMINATED if isinstance(exc, stopping.Terminated) else stopping.INTERRUPTED
        _say(stopping.LINES[code].strip())
    if argv is None and code in stopping.LINES:
        # The process itself: leave at once. Tearing down an interpreter that has loaded a cloud SDK takes most of a
        # second, and a stopped run has nothing left to finish or write.
        with suppress(OSError, ValueError, AttributeError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    if argv is not None:
        stopping.restore(previous)  # a caller's own process: its handlers as they were
    return code


def _run(argv: list[str] | None) -> int:
    import importlib

    from fabriccheck.errors import FabricCheckError
    from fabriccheck.stopping import INTERRUPTED, TERMINATED, Terminated

    try:  # newer typer carries its own copy of click
        click_errors: Any = importlib.import_module("typer._click.exceptions")
    except ImportError:  # typer releases that use click itself
        click_errors = importlib.import_module("click.exceptions")
    try:
        command = typer.main.get_command(app)
        result = command.main(args=argv, prog_name="fabriccheck", standalone_mode=False)
        code = int(result) if isinstance(result, int) else 0
        if code == INTERRUPTED:  # typer answers Ctrl-C with Exit(130), which non-standalone mode returns
            _say("fabriccheck: interrupted")
        return code
    except typer.Exit as exc:
        return int(exc.exit_code)
    except click_errors.NoArgsIsHelpError as exc:
        with suppress(FabricCheckError):  # nowhere to show the help: nothing more to say
            _stdout(exc.ctx.get_help() + "\n")
        return 0
    except click_errors.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "fabriccheck"
        _say(f"fabriccheck: error: {exc.format_message()} (see: {where} --help)")
        return 2
    except typer.Abort:
        _say("fabriccheck: aborted")
        return 2
    except FabricCheckError as exc:
        _say(f"fabriccheck: error: {exc}")
        return 2
    except KeyboardInterrupt:
        _say("fabriccheck: interrupted")
        return INTERRUPTED
    except Terminated:
        _say("fabriccheck: terminated")
        return TERMINATED
    except Exception as exc:  # the promise is one line, never a traceback; FABRICCHECK_DEBUG=1 shows it
        if os.environ.get("FABRICCHECK_DEBUG"):
            raise
        _say(f"fabriccheck: internal error: {type(exc).__name__}: {exc} (set FABRICCHECK_DEBUG=1 for details)")
        return 2
