"""`fabriccheck nccl-tests` and `fabriccheck nccl-log`: options in, one evidence report and an exit code out.

The CLI only declares the options and calls `run`. A command that cannot run (bad usage, an unknown model,
unreadable input) prints its one line on stderr, exit 2, and in the json and sarif formats still writes a
report whose `errors[]` carries the failure's code (`failures`), so a pipeline reading the report sees why.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fabriccheck.errors import FabricCheckError
from fabriccheck.evidence import bandwidth, expect, failures, gate, judge, report
from fabriccheck.evidence import nccl_log as reader
from fabriccheck.evidence import nccl_tests as parser
from fabriccheck.evidence.expect import FabricOptions
from fabriccheck.evidence.judge import Evidence
from fabriccheck.model import PROVIDERS
from fabriccheck.rulebook import EvidenceRule
from fabriccheck.sources.common import write_atomic
from fabriccheck.stdout import write_stdout

if TYPE_CHECKING:
    from fabriccheck.flow import Options
    from fabriccheck.gate import Settled

FORMATS = ("text", "json", "sarif", "junit", "markdown")
ERROR_REPORT_FORMATS = ("json", "sarif")


@dataclass(frozen=True)
class Output:
    fmt: str
    path: Path | None
    fail_on: str
    verbose: bool


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:  # one of them does not exist (yet)
        return a.resolve() == b.resolve()


def check_input(path: Path, out: Output, provider: str | None) -> None:
    if out.fmt not in FORMATS:
        raise failures.usage(f"--format {out.fmt}: evidence is shown as text, json, sarif, junit or markdown")
    if provider is not None and provider not in PROVIDERS:
        raise failures.usage(f"--provider {provider}: choose from {', '.join(PROVIDERS)}")
    if out.path is not None and _same_file(out.path, path):
        raise failures.usage(f"--output {out.path} is the file being read: write the report elsewhere")
    if not path.is_file():
        raise failures.unreadable(f"{path}: no such file" if not path.exists() else f"{path}: not a regular file")


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
    return bandwidth.judge_tests(parsed, fabric, nodes, provider or implied, op, log, rules)


def nccl_log(path: Path, provider: str | None, rules: list[EvidenceRule] | None = None) -> Evidence:
    return judge.judge_log(reader.read_file(path), provider, rules=rules)


def failed(kind: str, path: Path, error: FabricCheckError) -> Evidence:
    """The report of a command that could not run: incomplete, with the failure in `errors[]`."""
    detail = error.detail if isinstance(error, failures.EvidenceError) else str(error)
    ev = Evidence(kind, str(path), judge.UNKNOWN_PROVIDER, complete=False)
    ev.errors.append({"code": failures.code_of(error), "message": detail})
    return ev


def _emit(ev: Evidence, out: Output) -> None:
    text = report.render(ev, out.fmt, out.fail_on, out.verbose)
    if out.path is not None:
        write_atomic(out.path, text.encode(), "--output")
    else:
        write_stdout(text)


def _defaults() -> Options:
    from fabriccheck.flow import Options  # the judging flow's settings: loaded only by a library caller's run

    return Options()


def run(
    kind: str,
    path: Path,
    out: Output,
    provider: str | None,
    judged: Callable[[list[EvidenceRule]], Evidence],
    settle: Callable[[], Settled] | None = None,
) -> int:
    """Check the input, settle the gate (`settle`: gate.settle of the command as run; None: the defaults), judge
    with the rules it leaves on, apply its severity overrides, waivers and baseline, write the report; the exit
    code. A failure raises (its one line, exit 2) after its report is written in the formats that carry errors,
    never over the file being read."""
    try:
        check_input(path, out, provider)
        settled = settle() if settle is not None else None
        options = settled.options if settled is not None else _defaults()
        chosen = gate.rules_for(kind, options)
        ev = judged(chosen)
        write_baseline = settled.write_baseline if settled is not None else None
        recorded = gate.apply(ev, options, write_baseline, chosen)
    except FabricCheckError as error:
        if out.fmt in ERROR_REPORT_FORMATS and (out.path is None or not _same_file(out.path, path)):
            with contextlib.suppress(FabricCheckError):  # the failure itself is the line to print
                _emit(failed(kind, path, error), out)
        raise
    if settled is not None:
        out = dataclasses.replace(out, fail_on=settled.fail_on)  # --fail-on, or the config file's
    if write_baseline is not None and recorded is not None:
        write_atomic(write_baseline, recorded, "--write-baseline")
    _emit(ev, out)
    return report.exit_code(ev, out.fail_on)
