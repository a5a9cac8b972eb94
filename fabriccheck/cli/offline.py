"""The commands that judge no inventory: `merge` (saved reports), `estimate` (a hypothetical cluster), `nccl-tests`
and `nccl-log` (evidence from a running cluster), `rules` (the rule book) and `config` (the settings in effect)."""

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from fabriccheck.bounds import MAX_NODES
from fabriccheck.cli.app import Command, app, emit
from fabriccheck.cli.finish import exit_for, push, write_reports
from fabriccheck.cli.mode import MODE
from fabriccheck.cli.options import (
    EVIDENCE,
    PUSH,
    REPORT,
    FabricOptions,
    FailOnOpt,
    OutputOpt,
    PriceOpt,
    ProviderOpt,
    RulesDirOpt,
    ScanOptions,
    WorkloadOpt,
    options,
)
from fabriccheck.settings import FailOn
from fabriccheck.stdout import write_stdout

if TYPE_CHECKING:
    from fabriccheck.errors import FabricCheckError
    from fabriccheck.estimate import EstimateReport
    from fabriccheck.evidence.judge import Evidence
    from fabriccheck.jobs import EvidenceKind
    from fabriccheck.rulebook import EvidenceRule


def _lowered(value: str) -> str:
    return value.lower()  # -f JSON as -f json, as every command's --format


TextOrJson = Annotated[str, typer.Option("--format", "-f", metavar="FORMAT", help="text or json.", callback=_lowered)]


@app.command(cls=Command)
@options("scan", ScanOptions, only=(*REPORT, *PUSH, "allow_incomplete"))
def merge(
    reports: Annotated[
        list[Path], typer.Argument(metavar="FILE", help="JSON reports (--format json) of separate runs; - reads stdin.")
    ],
    *,
    scan: ScanOptions,
) -> None:
    """Merge the JSON reports of separately run jobs (one per account, subscription or project) into one
    report. It is complete only if every part is; the exit code follows the same rules as a single run."""
    from fabriccheck import gate
    from fabriccheck.errors import FabricCheckError
    from fabriccheck.merge import merge_files
    from fabriccheck.outputs import same_file

    targets = scan.targets()
    for target in targets:
        if target.path is not None and any(str(r) != "-" and same_file(target.path, r) for r in reports):
            raise FabricCheckError(f"--output {target.path} is one of the reports being merged: write it elsewhere")
    report = merge_files(reports)
    report.gate = gate.with_exit_flags(scan.invocation, report.gate)
    write_reports(report, targets, scan.fail_on, scan.verbose)
    push(report, scan)
    exit_for(report, scan.fail_on, scan.allow_incomplete)


@app.command(cls=Command)
@options("fabric", FabricOptions)
def estimate(
    nodes: Annotated[int, typer.Option(metavar="N", help="Nodes in the cluster.")],
    fabric: FabricOptions,
    state: Annotated[
        str,
        typer.Option(
            metavar="STATE",
            help="healthy, tcp, nics=K, no-gdr, no-placement or unreachable, then comma-separated modifiers: host,"
            " pod or overlay (how NCCL's sockets reach the network), sockets=N, mtu=N, cross-zone, domains=K.",
        ),
    ] = "healthy",
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
    calibrate: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="nccl-tests output from this fabric (multi-node runs, 128 MiB and up): its healthy baseline is"
            " recalibrated to what was measured, and every state priced from it.",
        ),
    ] = None,
    nccl_version: Annotated[
        str | None,
        typer.Option(
            metavar="VERSION",
            help="The NCCL release the job runs (2.21, 2.21.5): it decides the algorithm NCCL picks at 2 nodes."
            " Default: the model's, named in every estimate; a workload file's nccl_version otherwise.",
        ),
    ] = None,
    fmt: TextOrJson = "text",
    output: OutputOpt = None,
) -> None:
    """What a fabric should do (nccl-tests bandwidths) and what a fabric state costs, for a catalog type or a
    fabric described by hand (unless told otherwise: 8 GPUs and 8 NICs of 400 Gbps per node, over ib)."""
    from fabriccheck import estimate as estimating
    from fabriccheck import gate
    from fabriccheck.errors import FabricCheckError, usage

    if fmt not in ("text", "json"):
        raise usage(f"--format {fmt}: estimates are shown as text or json")
    named_file = Path(workload) if workload.endswith((".yaml", ".yml", ".toml")) else None
    read = [
        ("the workload file being read (--workload-file)", workload_file),
        ("the workload file being read (--workload)", named_file),
        ("the nccl-tests output being read (--calibrate)", calibrate),
    ]
    gate.check_output_reads(output, read)
    try:
        result = _estimate(nodes, fabric, state, workload, workload_file, price_per_gpu_hour, calibrate, nccl_version)
    except FabricCheckError as error:
        # A script reading the JSON sees why there is no estimate: the same errors[].code as the evidence reports.
        if fmt == "json" and (output is None or str(output) == "-"):  # stdout: a file is not written over
            emit(_failed_estimate(error), None)
        raise
    emit(result.model_dump_json(indent=2) + "\n" if fmt == "json" else _fitted(estimating.render_text(result)), output)


def _fitted(text: str) -> str:
    """A text output with every line fitted to COLUMNS (reports.columns)."""
    from fabriccheck.reports.columns import fit_all

    return fit_all(text.splitlines())


def _failed_estimate(error: "FabricCheckError") -> str:
    import json

    from fabriccheck.errors import error_entry

    failure = {"kind": "estimate", "complete": False, "errors": [error_entry(error)]}
    return json.dumps(failure, indent=2) + "\n"


def _estimate(
    nodes: int,
    fabric: FabricOptions,
    state: str,
    workload: str,
    workload_file: Path | None,
    price_per_gpu_hour: float | None,
    calibrate: Path | None,
    nccl_version: str | None = None,
) -> "EstimateReport":
    from fabriccheck import estimate as estimating
    from fabriccheck.errors import usage
    from fabriccheck.flow import workload_named

    f = fabric
    if (f.instance_type is None) == (f.gpu is None):
        raise usage("give --instance-type TYPE, or describe the fabric with --gpu NAME (and --nics ...)")
    if f.instance_type is not None:
        described = estimating.with_overrides(estimating.fabric_of_type(f.instance_type), f.ethernet_gbps, f.no_gdr)
    else:
        described = estimating.custom_fabric(
            estimating.accelerator_named(f.gpu or ""),
            8 if f.gpus_per_node is None else f.gpus_per_node,
            8 if f.nics is None else f.nics,
            400.0 if f.nic_gbps is None else f.nic_gbps,
            f.transport or "ib",
            not f.no_gdr,
            f.ethernet_gbps,
        )
    chosen = estimating.workload_from_file(workload_file) if workload_file else workload_named(workload)
    measured: list[str] = []
    if calibrate is not None:
        from fabriccheck.calibrate import calibrated

        described, measured = calibrated(described, calibrate)
    return estimating.run(described, nodes, state, chosen, price_per_gpu_hour, measured, nccl_version)


@app.command("nccl-tests", cls=Command)
@options("scan", ScanOptions, only=EVIDENCE)
@options("fabric", FabricOptions)
def nccl_tests(
    file: Annotated[
        Path, typer.Argument(metavar="FILE", help="Output of all_reduce_perf and friends (- reads standard input).")
    ],
    fabric: FabricOptions,
    nodes: Annotated[
        int | None,
        typer.Option(
            metavar="N", min=1, max=MAX_NODES, help="Nodes the test ran on (default: the hosts the file names)."
        ),
    ] = None,
    op: Annotated[
        str | None,
        typer.Option(metavar="OP", help="The collective, when the file does not say: all_reduce, all_gather, ..."),
    ] = None,
    provider: ProviderOpt = None,
    *,
    scan: ScanOptions,
) -> None:
    """Compare nccl-tests bus bandwidth with what the fabric should give (TCP fallback, slower than expected), and
    judge the NCCL lines the same file holds."""
    import dataclasses

    from fabriccheck.cli import evidence as command
    from fabriccheck.evidence import expect

    described = expect.FabricOptions(**dataclasses.asdict(fabric))
    _evidence(
        "nccl-tests",
        file,
        scan,
        provider,
        lambda path, rules: command.nccl_tests(path, described, nodes, op, provider, rules),
    )


@app.command("nccl-log", cls=Command)
@options("scan", ScanOptions, only=EVIDENCE)
def nccl_log(
    file: Annotated[
        Path, typer.Argument(metavar="FILE", help="A log of a run with NCCL_DEBUG=INFO (- reads standard input).")
    ],
    provider: ProviderOpt = None,
    *,
    scan: ScanOptions,
) -> None:
    """Report the transport each NCCL rank used (IB, EFA/OFI, sockets), GPUDirect RDMA and plugin failures."""
    from fabriccheck.cli import evidence as command

    _evidence("nccl-log", file, scan, provider, lambda path, rules: command.nccl_log(path, provider, rules))


def _evidence(
    kind: "EvidenceKind",
    file: Path,
    scan: ScanOptions,
    provider: str | None,
    judged: Callable[[Path, list["EvidenceRule"]], "Evidence"],
) -> NoReturn:
    from fabriccheck import gate
    from fabriccheck.cli import evidence as command

    given = scan.invocation.was_given("fmt")
    out = command.Output(scan.fmt.value, scan.output, scan.fail_on.value, scan.verbose, given)
    # gate.settle, not scan.settle: the evidence command resolves its outputs itself, so that a bad --output is a
    # usage error its error report (json, sarif) names.
    raise typer.Exit(command.run(kind, file, out, provider, judged, lambda: gate.settle(scan.invocation)))


@app.command(cls=Command)
def rules(
    rule_id: Annotated[str | None, typer.Argument(metavar="ID", help="Explain one rule.")] = None,
    rules_dir: RulesDirOpt = None,
    fmt: TextOrJson = "text",
    facts: Annotated[bool, typer.Option("--facts", help="List the facts rule conditions may read.")] = False,
    provider: Annotated[str, typer.Option(metavar="PROVIDER", help="With --facts: aws, azure or gcp.")] = "aws",
    show_examples: Annotated[
        bool, typer.Option("--examples", help="With ID: also show its passing and failing examples, run now.")
    ] = False,
) -> None:
    """List the rules, or explain one (with --examples: its passing and failing examples too)."""
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
        write_stdout(rules_report.facts(provider, node, cluster, fmt))
        return
    if show_examples and rule_id is None:
        raise FabricCheckError("--examples shows one rule's examples: give its ID (fabriccheck rules ID --examples)")
    loaded = examples.load_book(rules_dir or []).every
    if rule_id is None:
        write_stdout(rules_report.listing(loaded, fmt))
        return
    match = [r for r in loaded if rule_id.upper() in r.finding_ids()]
    if not match:
        raise FabricCheckError(f"no rule {rule_id} (see: fabriccheck rules)")
    write_stdout(rules_report.explain(match[0], fmt, show_examples))


# The settings a scan would use (the gate's, without the report and the baselines).
_SETTINGS = ("config", "isolated", "fail_on", "select", "ignore", "severity", "cluster_tag", "role", "workload")


@app.command("config", cls=Command)
@options("scan", ScanOptions, only=(*_SETTINGS, "price_per_gpu_hour", "rules_dir", "waivers"))
def show_config(*, scan: ScanOptions, fmt: TextOrJson = "text") -> None:
    """Print the settings a scan run here would use, and where each came from (default, config file,
    FABRICCHECK_* variable, flag). The waivers file they name is read and checked too."""
    import json

    from fabriccheck import config as settings
    from fabriccheck import gate
    from fabriccheck import waivers as waiving
    from fabriccheck.errors import FabricCheckError

    if fmt not in ("text", "json"):
        raise FabricCheckError(f"--format {fmt}: the config is shown as text or json")
    effective, _ = gate.effective(scan.invocation)
    path: Path | None = effective.value("waivers")
    loaded = waiving.load(path) if path is not None else []
    gate.check_rule_names(effective, loaded, path)
    if fmt == "json":
        document = effective.as_dict() | {"waivers": [w.model_dump(mode="json") for w in loaded]}
        write_stdout(json.dumps(document, indent=2) + "\n")
        return
    text = settings.render_text(effective)
    if path is not None:
        text += f"waivers file {path}: {len(loaded)} waiver{'s' if len(loaded) != 1 else ''}, valid\n"
    write_stdout(_fitted(text))


DiffFormat = Annotated[
    str, typer.Option("--format", "-f", metavar="FORMAT", help="text, json or markdown.", callback=_lowered)
]


@app.command(cls=Command)
def diff(
    previous: Annotated[Path, typer.Argument(metavar="OLD", help="The earlier JSON report (--format json).")],
    current: Annotated[Path, typer.Argument(metavar="NEW", help="The later JSON report.")],
    fmt: DiffFormat = "text",
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    allow_incomplete: Annotated[
        bool, typer.Option(help="Let the new findings decide even when NEW could not see everything.")
    ] = False,
) -> None:
    """What changed between two JSON reports: new, fixed and unchanged findings (by fingerprint) and the change in
    lost GPU-hours. Exit 1 when a new finding that fails the gate is at or above --fail-on; 2 when NEW is
    incomplete (unless --allow-incomplete), since what it did not see cannot be called fixed."""
    from fabriccheck import gate, trend
    from fabriccheck.errors import FabricCheckError
    from fabriccheck.report import load_report
    from fabriccheck.reports import changes

    if fmt not in ("text", "json", "markdown"):
        raise FabricCheckError(f"--format {fmt}: diff writes text, json or markdown")
    gate.check_output_reads(output, [("the earlier report (OLD)", previous), ("the later report (NEW)", current)])
    old, new = load_report(previous), load_report(current)
    mismatch = trend.other_scope(old, new, str(previous))
    if mismatch is not None:  # "9 fixed, 19 new" between an AWS account and a GCP project says nothing true
        raise FabricCheckError(mismatch.replace("this report", f"{current}", 1))
    found = trend.compare(old, new, str(previous))
    if fmt == "json":
        emit(found.model_dump_json(indent=2) + "\n", output)
    elif fmt == "text" and MODE.quiet and (output is None or str(output) == "-"):  # --quiet: the counts alone
        emit(f"fabriccheck diff: {changes.lines(found)[0]}\n", None)
    else:
        emit(changes.render(found, str(current), markdown=fmt == "markdown"), output)
    if not allow_incomplete and not new.fully_judged():
        raise typer.Exit(2)
    raise typer.Exit(1 if trend.fails(found, fail_on.value) else 0)


@app.command(cls=Command)
def schema(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write the schema to FILE.")
    ] = None,
) -> None:
    """Print the JSON Schema (draft 2020-12) of the JSON report (--format json), made from the report's own models.
    Its version is the report's schema_version."""
    import json

    from fabriccheck.schema import report_schema

    emit(json.dumps(report_schema(), indent=2) + "\n", output)
