"""The options more than one command takes, each declared once: its flag, metavar, default and help.

Two groups gather them: `ScanOptions` (report, gate and judging options of every scanning command, and the report
options of the evidence commands) and `FabricOptions` (the fabric `estimate` and `nccl-tests` compare with).
`options(name, Group, ...)` puts a group's options in place of a command's parameter `name`, and calls the command
with them gathered into one `Group` value."""

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Collection, Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from fabriccheck.settings import BY_PARAM, ISOLATED_ENV, BadSetting, FailOn

if TYPE_CHECKING:
    from fabriccheck.gate import Invocation, Settled
    from fabriccheck.targets import Target


class Format(StrEnum):
    text = "text"
    json = "json"
    sarif = "sarif"
    junit = "junit"
    markdown = "markdown"
    prometheus = "prometheus"
    html = "html"


def gate_option(param: str) -> Any:
    """The flag of a gate setting, as the settings table declares it (fabriccheck.settings.KEYS): its name,
    placeholder, help and, for a single value, its one validator run as the flag is read (a list or a map given
    as flags is checked with the config file and variables: config.resolve)."""
    key = BY_PARAM[param]

    def check(value: Any) -> Any:
        if value is None or key.kind not in ("text", "number"):
            return value
        try:
            key.validate(value.value if isinstance(value, StrEnum) else value)
        except BadSetting as exc:
            raise typer.BadParameter(exc.message) from None
        return value

    return typer.Option(key.flag, metavar=key.metavar, help=key.help, callback=check)


def _pushgateway(value: str | None) -> str | None:
    """An http(s) URL with a host, and nothing the push would drop or send in the clear (credentials, a query)."""
    from urllib.parse import urlsplit

    if value is None:
        return value
    try:
        url = urlsplit(value)
        _ = url.port  # a port that is not a number raises here
    except ValueError as exc:
        raise typer.BadParameter(f"{value}: not a URL ({exc})") from None
    if url.scheme not in ("http", "https") or not url.hostname:
        raise typer.BadParameter(f"{value}: give the gateway's http:// or https:// URL, e.g. http://pushgateway:9091")
    if url.username is not None or url.password is not None:
        raise typer.BadParameter(f"{url.hostname}: credentials in the URL are not sent (give the gateway's plain URL)")
    if url.query or url.fragment:
        raise typer.BadParameter(f"{value}: a query or fragment has no place in the gateway's URL")
    return value


def _job(value: str) -> str:
    if not value.strip():
        raise typer.BadParameter("an empty job name groups nothing (the default is fabriccheck)")
    return value


def _concurrency(value: int | None) -> int | None:
    from fabriccheck.sources.fleet import MAX_CONCURRENCY

    if value is not None and not 1 <= value <= MAX_CONCURRENCY:
        raise typer.BadParameter(f"{value}: give 1 to {MAX_CONCURRENCY} scopes at once")
    return value


# ---------------------------------------------------------------------------------- report, judging and the gate
# The gate settings' flags come from the settings table (fabriccheck.settings.KEYS), with the config file and the
# FABRICCHECK_* variables; the rest are the command's own.

FormatOpt = Annotated[
    Format,
    typer.Option(
        "--format",
        "-f",
        metavar="FORMAT",
        case_sensitive=False,  # -f JSON as -f json
        help="Report format: text, json, sarif, junit, markdown, prometheus or html (of stdout, and of an --output "
        "whose name has no suffix).",
    ),
]
# One file (estimate, diff, schema); `-` is stdout.
OutputOpt = Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write to FILE (- is stdout).")]
# A report's outputs: as many as wanted, each in the format its suffix names (fabriccheck.targets has the rule).
OutputsOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--output",
        "-o",
        metavar="FILE",
        help="Write the report to FILE (repeatable; - is stdout), in the format its suffix names: .json, .sarif, "
        ".xml (JUnit), .md, .prom, .html, .txt; else in --format.",
    ),
]
PushgatewayOpt = Annotated[
    str | None,
    typer.Option(
        metavar="URL",
        callback=_pushgateway,
        help="Also push the Prometheus metrics to this Pushgateway (replacing the job's previous push).",
    ),
]
JobOpt = Annotated[
    str,
    typer.Option(metavar="NAME", callback=_job, help="The job label the push is grouped under (with --pushgateway)."),
]
PreviousOpt = Annotated[
    Path | None,
    typer.Option(
        metavar="OLD.json",
        help="An earlier JSON report (--format json): the text, HTML and JSON reports add what changed since (new, "
        "fixed and unchanged findings, lost GPU-hours); - reads stdin.",
    ),
]
FailOnOpt = Annotated[FailOn, gate_option("fail_on")]
WorkloadOpt = Annotated[str, gate_option("workload")]
PriceOpt = Annotated[float | None, gate_option("price_per_gpu_hour")]
RulesDirOpt = Annotated[list[Path] | None, gate_option("rules_dir")]
SelectOpt = Annotated[list[str] | None, gate_option("select")]
IgnoreOpt = Annotated[list[str] | None, gate_option("ignore")]
VerboseOpt = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="Text: list every clean and skipped cluster, every resource, and the nodes in no reported cluster "
        "(live runs: log each scope on stderr).",
    ),
]
SaveOpt = Annotated[Path | None, typer.Option(metavar="FILE", help="Also save the collected inventory to FILE (JSON).")]
AllowIncompleteOpt = Annotated[
    bool,
    typer.Option(
        "--allow-incomplete",
        help="An incomplete collection does not by itself exit 2: the findings decide (the report still says so).",
    ),
]
ClusterTagOpt = Annotated[str | None, gate_option("cluster_tag")]
# The gate's own options (config.py, waivers.py, baseline.py): gate.settle reads them, with the config file and
# FABRICCHECK_* variables under them, from the command's Invocation.
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
        envvar=ISOLATED_ENV,
        help="Read no config file (FABRICCHECK_ISOLATED=1 too): only defaults, FABRICCHECK_* variables and flags.",
    ),
]
WaiversOpt = Annotated[Path | None, gate_option("waivers")]
BaselineOpt = Annotated[
    Path | None, typer.Option(metavar="FILE", help="Fail only on findings this baseline does not hold.")
]
WriteBaselineOpt = Annotated[
    Path | None,
    typer.Option(metavar="FILE", help="Record this run's findings as the baseline in FILE (and judge against it)."),
]
SeverityOverrideOpt = Annotated[list[str] | None, gate_option("severity")]
RoleOpt = Annotated[list[str] | None, gate_option("role")]


def _invocation(**fields: Any) -> "Invocation":
    from fabriccheck.gate import Invocation

    return Invocation(**fields)


@dataclasses.dataclass(frozen=True)
class ScanOptions:
    """The options every scanning command takes (a command may leave some out: `demo` --allow-incomplete), in the
    order its help lists them. The judging and gate options are settled by `gate.settle(invocation)`, with the
    config file and FABRICCHECK_* variables; the report options are used as given."""

    cluster_tag: ClusterTagOpt = None
    fmt: FormatOpt = Format.text
    output: OutputsOpt = None
    pushgateway: PushgatewayOpt = None
    job: JobOpt = "fabriccheck"
    previous: PreviousOpt = None
    fail_on: FailOnOpt = FailOn.error
    workload: WorkloadOpt = "llm-70b-fsdp"
    price_per_gpu_hour: PriceOpt = None
    rules_dir: RulesDirOpt = None
    select: SelectOpt = None
    ignore: IgnoreOpt = None
    verbose: VerboseOpt = False
    save_inventory: SaveOpt = None
    config: ConfigOpt = None
    isolated: IsolatedOpt = False
    waivers: WaiversOpt = None
    baseline: BaselineOpt = None
    write_baseline: WriteBaselineOpt = None
    severity: SeverityOverrideOpt = None
    role: RoleOpt = None
    allow_incomplete: AllowIncompleteOpt = False
    # Not an option: the command as run (every parameter, which were given), for the gate.
    invocation: "Invocation" = dataclasses.field(default_factory=_invocation)

    def settle(self) -> "Settled":
        """The gate of this run, settled before anything is collected (gate.settle): the config file, the
        FABRICCHECK_* variables and these options resolved, the waivers and baseline read, the rule names and the
        outputs checked, so that a bad file fails in a second, not after a long scan."""
        from fabriccheck import gate

        return dataclasses.replace(gate.settle(self.invocation), targets=self.targets())

    def targets(
        self, formats: Collection[str] | None = None, written_as: str = "reports are written as"
    ) -> list["Target"]:
        """Where the report goes (--output, else stdout) and in which format (fabriccheck.targets.resolve), every
        folder checked; `formats`: those the command writes (default: every report format). --job without
        --pushgateway names nothing: an error."""
        from fabriccheck import reports, targets
        from fabriccheck.errors import FabricCheckError

        if self.invocation.was_given("job") and self.pushgateway is None:
            raise FabricCheckError("--job names the push to a Pushgateway: give --pushgateway URL too")
        given = self.invocation.was_given("fmt")
        chosen = reports.FORMATS if formats is None else formats
        return targets.resolve(self.output, self.fmt.value, given, chosen, written_as)


# The report options alone (merge), the evidence commands' (the report, and the gate a scan has), the push (merge).
REPORT = ("fmt", "output", "fail_on", "verbose")
EVIDENCE = (
    *REPORT,
    "previous",
    "select",
    "ignore",
    "severity",
    "config",
    "isolated",
    "waivers",
    "baseline",
    "write_baseline",
)
PUSH = ("pushgateway", "job")


# ------------------------------------------------------------------------------------------- a cloud's own

ConcurrencyOpt = Annotated[
    int | None,
    typer.Option(
        metavar="N",
        callback=_concurrency,
        help="Collect N scopes (account x region, subscription, project) at once (default 16).",
    ),
]


@dataclasses.dataclass(frozen=True)
class CloudOptions:
    """The options of every cloud command beside its live ones: read a dump instead, or print the least privilege
    (one option, two spellings: each cloud's documents call it a policy (AWS) or a role (Azure, Google Cloud))."""

    from_dump: Annotated[
        Path | None,
        typer.Option(
            "--from-dump",
            metavar="DIR",
            help="Read the cloud CLI's own JSON (aws ec2 describe-*, az, gcloud compute) from DIR instead of calling "
            "the cloud; one folder per region, subscription or project allowed.",
        ),
    ] = None
    print_role: Annotated[
        bool,
        typer.Option(
            "--print-role",
            help="Print the least-privilege IAM policy (AWS) or custom role (Azure, Google Cloud) the command needs, "
            "or write it to --output FILE, and exit.",
        ),
    ] = False
    print_iam_policy: Annotated[bool, typer.Option("--print-iam-policy", help="The same as --print-role.")] = False


EndpointOpt = Annotated[
    str | None,
    typer.Option(
        metavar="URL",
        help="The cloud API's endpoint (a VPC endpoint, sovereign cloud, Azure Stack, Private Service Connect or an "
        "emulator): https://, or http:// to this machine only.",
    ),
]
ProviderOpt = Annotated[
    str | None,
    typer.Option(
        metavar="PROVIDER", help="The cloud the run was on (aws, azure, gcp), when the evidence does not say."
    ),
]


# ---------------------------------------------------------------------------------- a fabric, by type or by hand

CORRECTS = "with --instance-type: corrects the catalog"


@dataclasses.dataclass(frozen=True)
class FabricOptions:
    """The fabric `estimate` and `nccl-tests` compare with: a catalog type, or one described by hand."""

    instance_type: Annotated[
        str | None,
        typer.Option(metavar="TYPE", help="Instance type / VM size / machine type of the nodes, from the catalog."),
    ] = None
    gpu: Annotated[str | None, typer.Option(metavar="NAME", help="Custom fabric: accelerator, e.g. H100.")] = None
    gpus_per_node: Annotated[int | None, typer.Option(metavar="N", help="Custom fabric: GPUs per node.")] = None
    nics: Annotated[int | None, typer.Option(metavar="N", help="Custom fabric: fabric NICs per node.")] = None
    nic_gbps: Annotated[float | None, typer.Option(metavar="GBPS", help="Custom fabric: Gbps per fabric NIC.")] = None
    transport: Annotated[
        str | None, typer.Option(metavar="KIND", help="Custom fabric: ib, roce, efa, tcpx, tcpxo or tcp.")
    ] = None
    no_gdr: Annotated[bool, typer.Option("--no-gdr", help=f"Without GPUDirect RDMA ({CORRECTS}).")] = False
    ethernet_gbps: Annotated[
        float | None,
        typer.Option(metavar="GBPS", help=f"Gbps of the ordinary NIC NCCL sockets would use ({CORRECTS})."),
    ] = None


# --------------------------------------------------------------------------------------------- the decorator

_CONTEXT = "fabriccheck_context"  # the context parameter `options` adds for a group's invocation
Command = TypeVar("Command", bound=Callable[..., Any])


def invocation_of(ctx: Any) -> "Invocation":
    """The running command as the gate reads it (gate.Invocation), from its click context."""
    params = [p for p in ctx.command.params if p.name]

    def given(name: str) -> bool:
        source = ctx.get_parameter_source(name)
        return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")

    return _invocation(
        params=dict(ctx.params),
        given=tuple(p.name for p in params if given(p.name)),
        defaults={p.name: p.default for p in params},
        flags={p.name: str(max(p.opts, key=len)) for p in params},
    )


_HINTS: dict[type[Any], dict[str, Any]] = {}


def _hints(group: type[Any]) -> dict[str, Any]:
    """The types of the group's options (evaluated once, for a group declared under postponed annotations)."""
    if group not in _HINTS:
        types = {f.name: f.type for f in dataclasses.fields(group) if f.name != "invocation"}
        postponed = any(isinstance(t, str) for t in types.values())
        _HINTS[group] = typing.get_type_hints(group, include_extras=True) if postponed else types
    return _HINTS[group]


def options(
    name: str,
    group: type[Any],
    *,
    only: Iterable[str] | None = None,
    without: Iterable[str] = (),
    defaults: Mapping[str, Any] | None = None,
) -> Callable[[Command], Command]:
    """Put the options of `group` (a dataclass whose fields are typer options; `only` some of them, or all
    `without` some) in place of the command's parameter `name`, with `defaults` over the group's own, and call the
    command with them gathered into one `group` value. A group with an `invocation` field gets the command as run
    (from its context)."""
    hints = _hints(group)
    only, without = None if only is None else tuple(only), tuple(without)
    chosen = [
        f
        for f in dataclasses.fields(group)
        if f.name != "invocation" and (only is None or f.name in only) and f.name not in without
    ]
    wants_invocation = any(f.name == "invocation" for f in dataclasses.fields(group))

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command, eval_str=True)
        added = [
            inspect.Parameter(
                f.name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=hints[f.name],
                default=(defaults or {}).get(f.name, f.default),
            )
            for f in chosen
        ]
        if wants_invocation:
            added.append(inspect.Parameter(_CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context))
        own = list(signature.parameters.values())
        clash = {p.name for p in own} & {p.name for p in added}
        if clash:
            raise TypeError(f"{command.__name__}: {', '.join(sorted(clash))} is both its own and {group.__name__}'s")
        at = [p.name for p in own].index(name)
        kinds = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]
        parameters = [*kinds[:at], *added, *kinds[at + 1 :]]

        @functools.wraps(command)
        def run(**kwargs: Any) -> Any:
            values = {f.name: kwargs.pop(f.name) for f in chosen}
            if wants_invocation:
                values["invocation"] = invocation_of(kwargs.pop(_CONTEXT))
            return command(**kwargs, **{name: group(**values)})

        run.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": signature.return_annotation}
        return typing.cast(Command, run)

    return decorate
