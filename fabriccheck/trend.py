"""What changed since an earlier report: findings new, fixed and unchanged (by fingerprint, baseline.py) and the
change in what the clusters lose a day. `--previous OLD.json` records it in a scan's report (`trend`), which the
text and HTML reports show; `fabriccheck diff OLD.json NEW.json` prints it on its own."""

from __future__ import annotations

from fabriccheck.baseline import fingerprint
from fabriccheck.findings import SEVERITY_RANK, Finding
from fabriccheck.penalty import Range
from fabriccheck.report import Change, ClusterChange, Report, Trend, TrendFinding


def _key(finding: Finding) -> str:
    return finding.fingerprint or fingerprint(finding)


def _named(finding: Finding) -> TrendFinding:
    return TrendFinding(
        fingerprint=_key(finding),
        rule=finding.rule,
        severity=finding.severity,
        category=finding.category,
        title=finding.title,
        provider=finding.provider,
        account=finding.account,
        cluster=finding.cluster,
        resources=finding.resources,
        gates=finding.gates,
    )


def _change(previous: Range | None, current: Range | None) -> Change:
    zero = Range(low=0.0, high=0.0)
    before, now = previous or zero, current or zero
    return Change(
        previous=previous, current=current, change=Range(low=now.low - before.low, high=now.high - before.high)
    )


def _lost(report: Report) -> dict[str, Range | None]:
    return {c.id: c.penalty.lost_gpu_hours_per_day if c.penalty.estimated else None for c in report.clusters}


def _clusters(previous: Report, current: Report) -> list[ClusterChange]:
    before, now = _lost(previous), _lost(current)
    changes = [
        ClusterChange(id=cluster, lost_gpu_hours_per_day=_change(before.get(cluster), now.get(cluster)))
        for cluster in dict.fromkeys([*now, *before])
    ]
    changed = [c for c in changes if c.lost_gpu_hours_per_day.change != Range(low=0.0, high=0.0)]
    return sorted(changed, key=lambda c: (-abs(c.lost_gpu_hours_per_day.change.high), c.id))


def _order(found: list[TrendFinding]) -> list[TrendFinding]:
    return sorted(found, key=lambda f: (-SEVERITY_RANK.get(f.severity, 0), f.rule, f.cluster or "", f.resources))


def compare(previous: Report, current: Report, where: str) -> Trend:
    """The trend from `previous` (read from `where`) to `current`."""
    before = {_key(f): f for f in previous.findings}
    now = {_key(f): f for f in current.findings}
    notes = []
    if previous.workload.get("name") != current.workload.get("name"):
        notes.append(
            f"the earlier report assumed workload {previous.workload.get('name')}, this one "
            f"{current.workload.get('name')}: the change in cost mixes the two"
        )
    dollars = None
    old_dollars, new_dollars = previous.summary.lost_dollars_per_day, current.summary.lost_dollars_per_day
    if old_dollars is not None and new_dollars is not None:
        dollars = _change(old_dollars, new_dollars)
    return Trend(
        previous=where,
        previous_generated_at=previous.generated_at,
        new=_order([_named(f) for k, f in now.items() if k not in before]),
        fixed=_order([_named(f) for k, f in before.items() if k not in now]),
        unchanged=_order([_named(f) for k, f in now.items() if k in before]),
        lost_gpu_hours_per_day=_change(previous.summary.lost_gpu_hours_per_day, current.summary.lost_gpu_hours_per_day),
        lost_dollars_per_day=dollars,
        clusters=_clusters(previous, current),
        notes=notes,
    )


def fails(trend: Trend, fail_on: str) -> bool:
    """A new finding that fails the gate (not waived, not in a baseline) is at or above `fail_on`."""
    if fail_on == "never":
        return False
    return any(f.gates and SEVERITY_RANK[f.severity] >= SEVERITY_RANK[fail_on] for f in trend.new)


def span_text(r: Range | None) -> str:
    if r is None:
        return "not estimated"
    return f"{r.low:,.0f}" if round(r.low) == round(r.high) else f"{r.low:,.0f}-{r.high:,.0f}"


def signed(r: Range) -> str:
    low, high = f"{r.low:+,.0f}", f"{r.high:+,.0f}"
    return low if low == high else f"{low} to {high}"


def finding_line(f: TrendFinding) -> str:
    where = f.cluster or f.account
    waived = "" if f.gates else " (waived or in the baseline)"
    return f"{f.severity} {f.rule} {where}: {f.title}{waived} [{', '.join(f.resources[:3])}]"


def render(trend: Trend, current: str, markdown: bool = False) -> str:
    """The trend for people: counts, the change in cost, then the new and fixed findings (new first)."""
    from fabriccheck.reports.safe import md_text, visible

    show = md_text if markdown else visible
    head = ("# " if markdown else "") + (
        f"fabriccheck diff: {show(trend.previous)} ({show(trend.previous_generated_at)}) -> {show(current)}"
    )
    return "\n".join([head, "", *lines(trend, markdown)]) + "\n"


def lines(trend: Trend, markdown: bool = False) -> list[str]:
    """The trend's body (render's, and the text report's section under --previous): every value from a report
    escaped for plain text, or for markdown."""
    from fabriccheck.reports.safe import md_text, visible

    def show(text: str) -> str:
        return md_text(text) if markdown else visible(text)

    lost = trend.lost_gpu_hours_per_day
    out = [
        f"{len(trend.new)} new, {len(trend.fixed)} fixed, {len(trend.unchanged)} unchanged findings.",
        f"Lost GPU-hours a day: {span_text(lost.previous)} -> {span_text(lost.current)} ({signed(lost.change)}).",
    ]
    if trend.lost_dollars_per_day is not None:
        d = trend.lost_dollars_per_day
        out.append(f"Lost dollars a day: {span_text(d.previous)} -> {span_text(d.current)} ({signed(d.change)}).")
    out += [f"Note: {show(n)}" for n in trend.notes]
    bullet = "- " if markdown else "  "
    for title, found in (("New findings", trend.new), ("Fixed findings", trend.fixed)):
        if found:
            out += ["", ("## " if markdown else "") + f"{title} ({len(found)})"]
            out += [bullet + show(finding_line(f)) for f in found]
    if trend.clusters:
        out += ["", ("## " if markdown else "") + "Clusters whose lost GPU-hours changed"]
        for c in trend.clusters:
            out.append(f"{bullet}{show(c.id)}: {signed(c.lost_gpu_hours_per_day.change)} a day")
    return out
