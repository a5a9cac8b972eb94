"""`fabriccheck nccl-tests` and `fabriccheck nccl-log`: options in, one evidence report and an exit code out.

The CLI only declares the options and calls `run`. A command that cannot run (bad usage, an unknown model,
unreadable input) prints its one line on stderr, exit 2, and in the json and sarif formats still writes a
report whose `errors[]` carries the failure's code (`failures`), so a pipeline reading the report sees why.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fabriccheck.errors import FabricCheckError
from fabriccheck.evidence import bandwidth, expect, failures, judge, report
from fabriccheck.evidence import nccl_log as reader
from fabriccheck.evidence import nccl_tests as parser
from fabriccheck.evidence.judge import Evidence
from fabriccheck.model import PROVIDERS
from fabriccheck.sources.common import Outputs
from fabriccheck.stdout import write_stdout
from fabriccheck.targets import Target, resolve

FORMATS = ("text", "json", "sarif", "junit", "markdown")
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
            return resolve(self.paths, self.fmt, self.fmt_given, FORMATS, "evidence is shown as")
        except failures.EvidenceError:
            raise
        except FabricCheckError as exc:
            raise failures.usage(str(exc)) from None


@dataclass(frozen=True)
class FabricOptions:
    """The fabric the nccl-tests options describe (`expect.fabric_from_options`)."""

    instance_type: str | None = None
    gpu: str | None = None
    gpus_per_node: int | None = None
    nics: int | None = None
    nic_gbps: float | None = None
    transport: str | None = None
    no_gdr: bool = False
    ethernet_gbps: float | None = None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:  # one of them does not exist (yet)
        return a.resolve() == b.resolve()


def check_input(path: Path, out: Output, provider: str | None) -> list[Target]:
    """The report's targets, once the input and the options are checked."""
    targets = out.targets()
    if provider is not None and provider not in PROVIDERS:
        raise failures.usage(f"--provider {provider}: choose from {', '.join(PROVIDERS)}")
    for target in targets:
        if target.path is not None and _same_file(target.path, path):
            raise failures.usage(f"--output {target.path} is the file being read: write the report elsewhere")
    if not path.is_file():
        raise failures.unreadable(f"{path}: no such file" if not path.exists() else f"{path}: not a regular file")
    return targets


def nccl_tests(
    path: Path, fabric_options: FabricOptions, nodes: int | None, op: str | None, provider: str | None
) -> Evidence:
    """Judge an nccl-tests file: its tables against the fabric, and the NCCL lines it holds."""
    if op is not None and op not in parser.OPS:
        raise failures.usage(f"--op {op}: choose from {', '.join(parser.OPS)}")
    o = fabric_options
    fabric, implied = expect.fabric_from_options(
        o.instance_type, o.gpu, o.gpus_per_node, o.nics, o.nic_gbps, o.transport, o.no_gdr, o.ethernet_gbps
    )
    if fabric is None and nodes is not None:
        raise failures.usage(
            "--nodes needs a fabric to compare with: add --instance-type T (or --gpu ... --transport ...)"
        )
    parsed = parser.parse_file(path)
    log = reader.read_file(path, required=False)
    return bandwidth.judge_tests(parsed, fabric, nodes, provider or implied, op, log)


def nccl_log(path: Path, provider: str | None) -> Evidence:
    return judge.judge_log(reader.read_file(path), provider)


def failed(kind: str, path: Path, error: FabricCheckError) -> Evidence:
    """The report of a command that could not run: incomplete, with the failure in `errors[]`."""
    detail = error.detail if isinstance(error, failures.EvidenceError) else str(error)
    ev = Evidence(kind, str(path), judge.UNKNOWN_PROVIDER, complete=False)
    ev.errors.append({"code": failures.code_of(error), "message": detail})
    return ev


def _emit(ev: Evidence, out: Output, targets: list[Target]) -> None:
    """The report in every target: each format rendered once, the files put in place together, stdout first."""
    rendered: dict[str, str] = {}
    outputs = Outputs()
    try:
        for target in targets:
            if target.fmt not in rendered:
                rendered[target.fmt] = report.render(ev, target.fmt, out.fail_on, out.verbose)
            if target.path is not None:
                outputs.add(target.path, rendered[target.fmt].encode(), "--output")
        for target in targets:
            if target.path is None:
                write_stdout(rendered[target.fmt])
        outputs.commit()
    except BaseException:
        outputs.discard()
        raise


def _error_targets(out: Output, path: Path) -> list[Target]:
    """Where a failed run's report goes: the targets in a format that carries errors, none over the input; none
    at all when the options themselves are what failed."""
    try:
        targets = out.targets()
    except FabricCheckError:
        return []
    return [
        t
        for t in targets
        if t.fmt in ERROR_REPORT_FORMATS and (t.path is None or not _same_file(t.path, path))
    ]


def run(kind: str, path: Path, out: Output, provider: str | None, judged: Callable[[], Evidence]) -> int:
    """Check the input, judge it, write the report; the exit code. A failure raises (its one line, exit 2) after
    its report is written in the formats that carry errors, never over the file being read."""
    try:
        targets = check_input(path, out, provider)
        ev = judged()
    except FabricCheckError as error:
        with contextlib.suppress(FabricCheckError):  # the failure itself is the line to print
            chosen = _error_targets(out, path)
            if chosen:
                _emit(failed(kind, path, error), out, chosen)
        raise
    _emit(ev, out, targets)
    return report.exit_code(ev, out.fail_on)
