"""The end of every scan: judge what was collected under the settled gate, write the report and the other outputs
together, and choose the exit code.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 the check could not be completed (bad
input, bad usage, or an incomplete collection) or, the reports written, the --pushgateway push failed; 130
interrupted (Ctrl-C), with nothing written.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

import typer

from fabriccheck.cli.app import STARTED, warn
from fabriccheck.cli.mode import MODE, color_allowed
from fabriccheck.cli.options import ScanOptions
from fabriccheck.settings import FailOn
from fabriccheck.stdout import write_stdout

if TYPE_CHECKING:
    from fabriccheck.gate import Settled
    from fabriccheck.inventory import Inventory
    from fabriccheck.outputs import Outputs
    from fabriccheck.report import Report
    from fabriccheck.targets import Target


def loaded(where: object, load: Callable[[], Inventory]) -> Inventory:
    """`load()` of the input `where` (a dump folder, a plan, a saved inventory): a value in it nested too deeply for
    Python, even to quote in an error, is one line naming it."""
    from fabriccheck.jsonfiles import reading

    with reading(str(where)):
        return load()


def finish(inventory: Inventory, scan: ScanOptions, settled: Settled) -> NoReturn:
    """Judge `inventory` with the options and --fail-on `settled` (gate.settle) found, write the report (and the
    saved inventory and baseline, when asked), then exit with the code the report earns."""
    import time

    from fabriccheck import flow, gate
    from fabriccheck.errors import FabricCheckError
    from fabriccheck.gcpause import paused_gc
    from fabriccheck.outputs import Outputs
    from fabriccheck.sources.progress import API_CALLS

    options, fail_on = settled.options, FailOn(settled.fail_on)
    # Every file this run writes is staged, and all are put in place together once the report is out: a run
    # stopped before that (SIGTERM, Ctrl-C, an error) leaves none of them (the inventory stands alone only when
    # judging fails: what was collected is kept).
    outputs = Outputs()
    try:
        if scan.save_inventory is not None:
            from fabriccheck.sources.snapshot import snapshot_of

            outputs.add(scan.save_inventory, snapshot_of(inventory), "--save-inventory")
        # The command writes the report and exits: what the run made lives until then, and freezing it (before the
        # collector is back) spares the collector walking it while the report is written (5-7% of a 50,000-node
        # command). The inventory was settled before (a dump reader's freeze, a live collection's settle_gc).
        with paused_gc(freeze=True):
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
        with_trend(report, settled)
        write_reports(report, settled.targets, fail_on, scan.verbose, outputs)
        outputs.commit()
    except BaseException:
        outputs.discard()
        raise
    tag = options.cluster_tag
    if tag is not None and _untagged(inventory, tag):
        # After the report is out, so that a run that fails is still one line on stderr.
        warn(f"fabriccheck: warning: no node carries the tag {tag}; grouping by the usual signals")
    push(report, scan)
    exit_for(report, fail_on, scan.allow_incomplete)


def with_trend(report: Report, settled: Settled) -> None:
    """With --previous: what changed since the earlier report, in `report.trend` (a scan's or an evidence
    command's), or, when the two cannot be compared, a note and a warning saying why."""
    if settled.previous is None:
        return
    from fabriccheck import trend

    where, previous = settled.previous
    mismatch = trend.other_scope(previous, report, f"--previous {where}")
    if mismatch is None:
        report.trend = trend.compare(previous, report, where)
    else:  # no trend rather than one that calls another account's findings fixed
        report.notes.append(f"no change since the earlier report is shown: {mismatch}")
        warn(f"fabriccheck: warning: {mismatch}")


def write_reports(
    report: Report,
    targets: list[Target],
    fail_on: FailOn,
    verbose: bool,
    outputs: Outputs | None = None,
) -> None:
    """The report in every target (fabriccheck.targets): each format rendered once, the files staged in `outputs`
    (put in place by the caller's commit, with the run's other files) or, without `outputs`, put in place here all
    together; stdout written first."""
    from fabriccheck import reports
    from fabriccheck.outputs import Outputs
    from fabriccheck.reports.wording import quiet_text

    tty = sys.stdout is not None and sys.stdout.isatty()
    rendered: dict[tuple[str, bool], str] = {}
    staged = outputs if outputs is not None else Outputs()
    stdout: str | None = None
    try:
        for target in targets:
            key = (target.fmt, target.to_stdout)
            if key not in rendered:
                color = target.to_stdout and target.fmt == "text" and tty and color_allowed()
                # A file gets a fixed width; the terminal's own width applies to what goes to the terminal.
                width = None if target.to_stdout else 100
                if MODE.quiet and target.to_stdout and target.fmt == "text":  # --quiet: the verdict alone
                    rendered[key] = quiet_text(report)
                else:
                    rendered[key] = reports.render(
                        report, target.fmt, color, verbose=verbose, fail_on=fail_on.value, width=width
                    )
            if target.path is None:
                stdout = rendered[key]
            else:
                staged.add(target.path, rendered[key].encode(), "--output")
        if stdout is not None:
            write_stdout(stdout)
        if outputs is None:
            staged.commit()
    except BaseException:
        staged.discard()
        raise


def push(report: Report, scan: ScanOptions) -> None:
    """With --pushgateway: the report's metrics (the textfile's, reports.prometheus.registry_of) pushed under --job,
    after every file is in place. A push that fails is one line and exit 2 (FabricCheckError): a dashboard that was
    not fed must not look like a clean audit."""
    if scan.pushgateway is not None:
        from fabriccheck.pushgateway import push as push_metrics
        from fabriccheck.reports.prometheus import registry_of

        push_metrics(registry_of(report), scan.pushgateway, scan.job)


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
