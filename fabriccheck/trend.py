"""What changed since an earlier report: findings new, fixed and unchanged (by fingerprint, baseline.py) and the
change in what the clusters lose a day. `--previous OLD.json` records it in a scan's report (`trend`), which the
text and HTML reports show (reports/changes.py words it); `fabriccheck diff OLD.json NEW.json` prints it on its
own."""

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
    """How each end of the estimate moved, as a range low to high: the high end may move down more than the low
    end does (a fix that narrows the estimate), and "-187 to -26" reads as a range where "-26 to -187" did not."""
    zero = Range(low=0.0, high=0.0)
    before, now = previous or zero, current or zero
    low, high = sorted((now.low - before.low, now.high - before.high))
    return Change(previous=previous, current=current, change=Range(low=low, high=high))


def _lost(report: Report) -> dict[str, Range | None]:
    return {c.id: c.penalty.lost_gpu_hours_per_day if c.penalty.estimated else None for c in report.clusters}


def _clusters(previous: Report, current: Report) -> list[ClusterChange]:
    before, now = _lost(previous), _lost(current)
    changes = [
        ClusterChange(id=cluster, lost_gpu_hours_per_day=_change(before.get(cluster), now.get(cluster)))
        for cluster in dict.fromkeys([*now, *before])
    ]
    changed = [c for c in changes if c.lost_gpu_hours_per_day.change != Range(low=0.0, high=0.0)]
    # The most moved first: the larger of the two ends' moves (the high end's, before the ends were put in order).
    return sorted(changed, key=lambda c: (-_moved(c.lost_gpu_hours_per_day.change), c.id))


def _moved(change: Range) -> float:
    return max(abs(change.low), abs(change.high))


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
