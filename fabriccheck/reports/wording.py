"""Phrases the text and markdown reports share: counts, ranges, what a cluster loses (its penalty line and
table cells) and the summary's cost lines. Plain text: each report escapes it its own way."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fabriccheck.findings import Finding
from fabriccheck.penalty import Penalty
from fabriccheck.report import Report


def plural(count: int, word: str, many: str | None = None) -> str:
    """`1 training cluster`, `2 training clusters`, `3 info` (with many="info")."""
    return f"{count:,} {word if count == 1 else (many if many is not None else word + 's')}"


def node_types(nodes: int, types: str, untyped: int, gpus: int) -> str:
    """`2 nodes × p5.48xlarge, 16 accelerators`, with `types` already escaped for the report; nodes whose instance
    type is unknown are said to be (a Slurm node joined to no cloud instance), not shown as `× , 0 accelerators`."""
    if not types or untyped >= nodes:
        return f"{plural(nodes, 'node')} of an unknown instance type, accelerators unknown"
    if untyped:
        return (
            f"{plural(nodes, 'node')}: {nodes - untyped:,} × {types} ({plural(gpus, 'accelerator')}) and {untyped:,} "
            "of an unknown instance type"
        )
    return f"{plural(nodes, 'node')} × {types}, {plural(gpus, 'accelerator')}"


def verdict_line(report: Report) -> str:
    """The report in one line (--quiet): the findings by severity, the clusters they are in, the GPU-hours a day
    lost, and whether the run can pass a gate."""
    s = report.summary
    counts = ", ".join(plural(s.findings.get(sev, 0), sev, "info" if sev == "info" else None) for sev in SEVERITIES)
    cannot_pass = "" if report.fully_judged() else "; INCOMPLETE: this result cannot pass a gate"
    if report.evidence:  # a job measured: nothing priced
        jobs = f"{plural(s.clusters, 'job')} on {plural(s.nodes, 'node')}"
        return f"fabriccheck {report.evidence}: {counts} in {jobs}{cannot_pass}"
    lost = s.lost_gpu_hours_per_day
    line = (
        f"fabriccheck: {counts} in {plural(s.clusters, 'training cluster')} of {plural(s.nodes, 'node')}; "
        f"{span(lost.low, lost.high)} GPU-hours a day lost"
    )
    return line + cannot_pass


SEVERITIES = ("error", "warning", "info")
QUIET_ERRORS = 10  # collection errors listed under the verdict line with --quiet


def quiet_text(report: Report) -> str:
    """--quiet's text: the verdict line, then the facts that could not be collected (what makes a run incomplete),
    one a line; every value from the cloud escaped (reports.safe.visible)."""
    from fabriccheck.reports.safe import visible

    lines = [verdict_line(report)]
    for e in report.errors[:QUIET_ERRORS]:
        where = " ".join(w for w in (e.provider, e.account, e.region or "") if w)
        lines.append(visible(f"error: {e.call} in {where}: {e.code}: {e.message}"))
    if len(report.errors) > QUIET_ERRORS:
        lines.append(f"… and {len(report.errors) - QUIET_ERRORS:,} more errors (--format json lists them all)")
    return "\n".join(lines) + "\n"


def span(low: float, high: float, form: str = "{:,.0f}") -> str:
    """`low–high` in `form`, or one figure when both ends read the same."""
    a, b = form.format(low), form.format(high)
    return a if a == b else f"{a}–{b}"


def penalty_line(p: Penalty) -> str:
    """What the cluster loses: its slowdown and, out of the GPU-hours it is paid for, the share and hours lost."""
    if not p.estimated:
        return f"not estimated: {p.reason}"
    lost, share, paid = p.lost_gpu_hours_per_day, p.lost_share, p.gpu_hours_per_day
    money = ""
    if p.lost_dollars_per_day is not None:
        money = f", {span(p.lost_dollars_per_day.low, p.lost_dollars_per_day.high, '${:,.0f}')}"
    if p.cannot_run or p.slowdown is None:
        counted = paid is not None and (lost is None or lost.high > 0)  # a test job counts none (cost._as_test_job)
        every = f"; loses all {paid:,.0f} of its GPU-hours a day{money}" if counted else ""
        return f"cannot run: {p.reason}{every}"
    # What the slowdown rests on closes the line, after the reason a test job gives (never between them).
    prior = f"; {p.compute_prior}" if p.compute_prior else ""
    rests = f"; the price rests on: {p.extrapolated}" if p.extrapolated else ""
    if p.slowdown.high >= 1.005 and lost is not None and lost.high == 0 and p.reason:
        return f"{span(p.slowdown.low, p.slowdown.high, '{:.2f}x')} slower steps: {p.reason}{prior}"  # a test job
    if p.slowdown.high < 1.005 or lost is None or share is None or paid is None:
        if p.possible is not None and lost_hours(p.possible) >= 0.5:
            # A finding that may be wrong says the fabric may not be used: "fully used" would contradict it.
            return p.reason or "no slowdown from the findings certain to hold (a possible one may cost, below)"
        return p.reason or "no slowdown (the fabric is fully used)"
    return (
        f"{span(p.slowdown.low, p.slowdown.high, '{:.2f}x')} slower steps: loses "
        f"{span(share.low, share.high, '{:.0%}')} of its {paid:,.0f} GPU-hours a day "
        f"({span(lost.low, lost.high)}{money}){prior}{rests}"
    )


def possible_line(p: Penalty, rules: Sequence[str]) -> str | None:
    """What the cluster would lose if the findings marked possible hold too, or None when they add nothing."""
    more = p.possible
    if more is None or not more.estimated or lost_hours(more) - lost_hours(p) < 0.5:
        return None
    verb = "holds" if len(rules) == 1 else "hold"
    return f"if {', '.join(rules)} {verb} (possible, not counted above): {penalty_line(more)}"


def lost_hours(p: Penalty) -> float:
    """The high end of the GPU-hours a day the penalty loses (0 when not estimated)."""
    return p.lost_gpu_hours_per_day.high if p.estimated and p.lost_gpu_hours_per_day is not None else 0.0


def slowdown_cell(p: Penalty) -> str:
    """The high end of the slowdown, for tables."""
    if not p.estimated:
        return "unknown"
    if p.cannot_run or p.slowdown is None:
        return "cannot run"
    return "—" if p.slowdown.high < 1.005 else f"{p.slowdown.high:.2f}x"


def lost_cell(p: Penalty) -> str:
    """The high end of the GPU-hours a day lost, for tables; `*` when findings marked possible would add more."""
    hours = lost_hours(p)
    cell = "—" if hours < 0.5 else f"{hours:,.0f}"
    more = p.possible
    return cell + "*" if more is not None and more.estimated and lost_hours(more) - hours >= 0.5 else cell


def possible_rules(findings: Iterable[Finding]) -> list[str]:
    return sorted({f.rule for f in findings if f.confidence == "possible"})


def cost_lines(report: Report) -> list[str]:
    """The summary's cost: what the clusters lose out of what is paid for, then, apart, what the findings marked
    possible would add. Nothing when nothing is lost."""
    return [line for line in (lost_line(report), possible_cost_line(report)) if line]


def lost_line(report: Report) -> str | None:
    """What the clusters lose out of what is paid for, or None when nothing is lost."""
    s = report.summary
    lost = s.lost_gpu_hours_per_day
    unpriced = sum(1 for c in report.clusters if not c.penalty.estimated)
    if not (s.gpu_hours_per_day > 0 and (lost.high >= 0.5 or s.clusters_cannot_run)):
        return None
    share = span(lost.low / s.gpu_hours_per_day, lost.high / s.gpu_hours_per_day, "{:.0%}")
    line = (
        f"Lost to the fabric: {span(lost.low, lost.high)} GPU-hours a day ({share}) of the "
        f"{s.gpu_hours_per_day:,.0f} the judged clusters are paid for"
    )
    if s.lost_dollars_per_day is not None:
        line += f", {span(s.lost_dollars_per_day.low, s.lost_dollars_per_day.high, '${:,.0f}')} a day"
    if s.clusters_cannot_run:
        line += f"; {plural(s.clusters_cannot_run, 'cluster')} cannot run at all"
    if unpriced:
        line += f"; {plural(unpriced, 'cluster')} not estimated"
    return line + ("." if s.lost_dollars_per_day is not None else ". Pass --price-per-gpu-hour for dollars.")


def possible_cost_line(report: Report) -> str | None:
    """What the findings marked possible would add (counted apart: their rules say they may be wrong), or None."""
    s = report.summary
    more = s.possible_lost_gpu_hours_per_day
    if more is None or more.high < 0.5:
        return None
    rules = possible_rules(report.findings)
    money = s.possible_lost_dollars_per_day
    priced = f" ({span(money.low, money.high, '${:,.0f}')})" if money is not None else ""
    return (
        f"Possibly lost as well: {span(more.low, more.high)} GPU-hours a day more{priced} if "
        + ("the finding" if s.possible_findings == 1 else f"the {s.possible_findings:,} findings")
        + f" marked possible ({', '.join(rules)}) {'holds' if s.possible_findings == 1 else 'hold'}; "
        "their rules say they may be wrong, so they are not counted above."
    )
