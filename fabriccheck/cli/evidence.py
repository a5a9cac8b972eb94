"""`fabriccheck nccl-tests` and `fabriccheck nccl-log`: options in, the report (report.Report, evidence.reported)
and an exit code out, written by the writers every command uses (cli.finish.write_reports), in every format.

The CLI only declares the options and calls `run`. A command that cannot run (bad usage, an unknown model,
unreadable input) prints its one line on stderr, exit 2, and in the json and sarif formats still writes a
report whose `errors[]` carries the failure's code (`errors.error_entry`), so a pipeline reading the report sees
why. With --previous, the report says what changed since an earlier report of the same evidence (trend.compare).
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fabriccheck import errors, gate, reports
from fabriccheck.cli.finish import with_trend, write_reports
from fabriccheck.errors import STDIN_NAME, FabricCheckError
from fabriccheck.evidence import bandwidth, expect, judge, reported
from fabriccheck.evidence import nccl_log as reader
from fabriccheck.evidence import nccl_tests as parser
from fabriccheck.evidence.expect import FabricOptions
from fabriccheck.evidence.judge import Evidence
from fabriccheck.findings import SEVERITY_RANK
from fabriccheck.jobs import EvidenceKind
from fabriccheck.model import PROVIDERS
from fabriccheck.outputs import Outputs, same_file
from fabriccheck.report import Report
from fabriccheck.rulebook import EvidenceRule
from fabriccheck.settings import FailOn
from fabriccheck.targets import Target, resolve

if TYPE_CHECKING:
    from fabriccheck.flow import Options
    from fabriccheck.gate import Settled

FORMATS = tuple(reports.FORMATS)  # every report format: the report is the one every command writes
STDIN = "-"  # the evidence file argument that means standard input
ERROR_REPORT_FORMATS = ("json", "sarif")


@dataclass(frozen=True)
class Output:
    """The report options: --format, the --output files (none: stdout), --fail-on, --verbose, and whether --format
    was given (an output's suffix decides its format otherwise: fabriccheck.targets)."""

    fmt: str
    paths: list[Path] | None
    fail_on: str
    verbose: bool
    fmt_given: bool = False

    def targets(self) -> list[Target]:
        try:
            return resolve(self.paths, self.fmt, self.fmt_given, FORMATS, "reports are written as")
        except errors.EvidenceError:
            raise
        except FabricCheckError as exc:
            raise errors.usage(str(exc)) from None


def check_input(path: Path, out: Output, provider: str | None) -> list[Target]:
    """The report's targets, once the input and the options are checked."""
    targets = out.targets()
    if provider is not None and provider not in PROVIDERS:
        raise errors.usage(f"--provider {provider}: choose from {', '.join(PROVIDERS)}")
    if str(path) == STDIN:
        return targets
    for target in targets:
        if target.path is not None and same_file(target.path, path):
            raise errors.usage(f"--output {target.path} is the file being read: write the report elsewhere")
    if not path.is_file():
        raise errors.unreadable(f"{path}: no such file" if not path.exists() else f"{path}: not a regular file")
    return targets


def nccl_tests(
    path: Path,
    fabric_options: FabricOptions,
    nodes: int | None,
    op: str | None,
    provider: str | None,
    rules: list[EvidenceRule] | None = None,
) -> Evidence:
    """Judge an nccl-tests file: its tables against the fabric, and the NCCL lines it holds."""
    if op is not None and op not in parser.OPS:
        raise errors.usage(f"--op {op}: choose from {', '.join(parser.OPS)}")
    o = fabric_options
    fabric, implied = expect.fabric_from_options(
        o.instance_type, o.gpu, o.gpus_per_node, o.nics, o.nic_gbps, o.transport, o.no_gdr, o.ethernet_gbps
    )
    if fabric is None and nodes is not None:
        raise errors.usage(
            "--nodes needs a fabric to compare with: add --instance-type T (or --gpu ... --transport ...)"
        )
    parsed = parser.parse_file(path)
    log = reader.read_file(path, required=False)
    return bandwidth.judge_tests(parsed, fabric, nodes, provider or implied, op, log, rules)


def nccl_log(path: Path, provider: str | None, rules: list[EvidenceRule] | None = None) -> Evidence:
    return judge.judge_log(reader.read_file(path), provider, rules=rules)


def _emit(report: Report, out: Output, targets: list[Target], baseline: tuple[Path, bytes] | None = None) -> None:
    """The report in every target, by the writers every command uses; the files (and the baseline
    --write-baseline records) put in place together, stdout first."""
    outputs = Outputs()
    try:
        if baseline is not None:
            outputs.add(baseline[0], baseline[1], "--write-baseline")
        write_reports(report, targets, FailOn(out.fail_on), out.verbose, outputs)
        outputs.commit()
    except BaseException:
        outputs.discard()
        raise


def exit_code(report: Report, fail_on: str) -> int:
    """DESIGN.md's exit codes: 2 when the report is incomplete, 1 for a finding at --fail-on that gates, else 0."""
    if not report.fully_judged():
        return 2
    worst = report.worst_severity()
    failing = fail_on != "never" and worst is not None and SEVERITY_RANK[worst] >= SEVERITY_RANK[fail_on]
    return 1 if failing else 0


def _error_targets(out: Output, path: Path) -> list[Target]:
    """Where a failed run's report goes: the targets in a format that carries errors, none over the input; none
    at all when the options themselves are what failed."""
    try:
        targets = out.targets()
    except FabricCheckError:
        return []
    return [t for t in targets if t.fmt in ERROR_REPORT_FORMATS and (t.path is None or not same_file(t.path, path))]


@contextlib.contextmanager
def _readable(path: Path) -> Iterator[Path]:
    """The file to read: `path`, or for `-` standard input copied to a file named `-` in a folder of its own (the
    readers stream a file, nccl-tests reads it twice, and a log may be larger than memory), removed after."""
    if str(path) != STDIN:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="fabriccheck-stdin-") as folder:
        copy = Path(folder) / STDIN
        with copy.open("wb") as out:
            shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
        yield copy


def _judged(path: Path, judged: Callable[[Path, list[EvidenceRule]], Evidence], rules: list[EvidenceRule]) -> Evidence:
    """The evidence judged from `path` (`-`: standard input, named so in the report and in any error)."""
    with _readable(path) as readable:
        if readable == path:
            return judged(path, rules)
        try:
            ev = judged(readable, rules)
        except errors.EvidenceError as error:
            raise errors.EvidenceError(error.code, error.detail.replace(str(readable), STDIN_NAME)) from None
        except FabricCheckError as error:
            raise FabricCheckError(str(error).replace(str(readable), STDIN_NAME)) from None
    ev.job.file = STDIN
    return ev


def _defaults() -> Options:
    from fabriccheck.flow import Options  # the judging flow's settings: loaded only by a library caller's run

    return Options()


def run(
    kind: EvidenceKind,
    path: Path,
    out: Output,
    provider: str | None,
    judged: Callable[[Path, list[EvidenceRule]], Evidence],
    settle: Callable[[], Settled] | None = None,
) -> int:
    """Check the input, settle the gate (`settle`: gate.settle of the command as run; None: the defaults), judge
    with the rules it leaves on, apply its severity overrides, waivers and baseline, write the report (with what
    changed since --previous); the exit code. A failure raises (its one line, exit 2) after its report is written in
    the formats that carry errors, never over the file being read."""
    try:
        targets = check_input(path, out, provider)
        settled = settle() if settle is not None else None
        options = settled.options if settled is not None else _defaults()
        chosen = gate.evidence_rules(kind, options)
        ev = _judged(path, judged, chosen)
        write_baseline = settled.write_baseline if settled is not None else None
        recorded = gate.apply_to_evidence(ev, options, write_baseline, chosen)
    except FabricCheckError as error:
        if isinstance(error, errors.OutputOverInput):  # its report would land on the file being read
            raise
        with contextlib.suppress(FabricCheckError):  # the failure itself is the line to print
            error_targets = _error_targets(out, path)
            if error_targets:
                _emit(reported.failed(kind, path, error), out, error_targets)
        raise
    report = reported.report_of(ev, [r.id for r in chosen], options.gate)
    if settled is not None:
        out = dataclasses.replace(out, fail_on=settled.fail_on)  # --fail-on, or the config file's
        with_trend(report, settled)
    baseline = (write_baseline, recorded) if write_baseline is not None and recorded is not None else None
    _emit(report, out, targets, baseline)
    return exit_code(report, out.fail_on)
