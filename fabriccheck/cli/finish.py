"""The end of every scan: judge what was collected under the settled gate, write the report and the other outputs
together, and choose the exit code.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 the check could not be completed (bad
input, bad usage, or an incomplete collection); 130 interrupted (Ctrl-C), with nothing written.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer

from fabriccheck.cli.app import STARTED, say, write
from fabriccheck.cli.options import FailOn, Format, ScanOptions
from fabriccheck.stdout import write_stdout

if TYPE_CHECKING:
    from fabriccheck.gate import Settled
    from fabriccheck.inventory import Inventory
    from fabriccheck.report import Report
    from fabriccheck.sources.common import Outputs


def loaded(where: object, load: Callable[[], Inventory]) -> Inventory:
    """`load()` of the input `where` (a dump folder, a plan, a saved inventory): a value in it nested too deeply for
    Python, even to quote in an error, is one line naming it."""
    from fabriccheck.sources.common import reading

    with reading(str(where)):
        return load()


def finish(inventory: Inventory, scan: ScanOptions, settled: Settled) -> NoReturn:
    """Judge `inventory` with the options and --fail-on `settled` (gate.settle) found, write the report (and the
    saved inventory and baseline, when asked), then exit with the code the report earns."""
    import time

    from fabriccheck import flow, gate
    from fabriccheck.errors import FabricCheckError
    from fabriccheck.sources.common import API_CALLS, Outputs

    options, fail_on = settled.options, FailOn(settled.fail_on)
    # Every file this run writes is staged, and all are put in place together once the report is out: a run
    # stopped before that (SIGTERM, Ctrl-C, an error) leaves none of them (the inventory stands alone only when
    # judging fails: what was collected is kept).
    outputs = Outputs()
    try:
        if scan.save_inventory is not None:
            from fabriccheck.sources.snapshot import snapshot_of

            outputs.add(scan.save_inventory, snapshot_of(inventory), "--save-inventory")
        report: Report = flow.run(inventory, options)
    except FabricCheckError:
        outputs.commit()
        raise
    except BaseException:
        outputs.discard()
        raise
    try:
        if settled.write_baseline is not None:
            gate.write_baseline(report, settled.write_baseline, options, outputs)
        report.duration_seconds = round(time.perf_counter() - STARTED[-1], 3) if STARTED else None
        report.api_calls = API_CALLS.value
        if settled.previous is not None:
            from fabriccheck import trend

            where, previous = settled.previous
            report.trend = trend.compare(previous, report, where)
        write_report(report, scan.fmt, scan.output, fail_on, scan.verbose, outputs)
        outputs.commit()
    except BaseException:
        outputs.discard()
        raise
    tag = options.cluster_tag
    if tag is not None and _untagged(inventory, tag):
        # After the report is out, so that a run that fails is still one line on stderr.
        say(f"fabriccheck: warning: no node carries the tag {tag}; grouping by the usual signals")
    exit_for(report, fail_on, scan.allow_incomplete)


def write_report(
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
        write(output, text, "--output")
    else:
        write_stdout(text)


def exit_for(report: Report, fail_on: FailOn, allow_incomplete: bool = False) -> NoReturn:
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


def _untagged(inventory: Inventory, tag: str) -> bool:
    """--cluster-tag names a key that no node carries (so the usual grouping signals apply to every node)."""
    return bool(inventory.nodes) and not any(tag in node.tags for node in inventory.nodes)
