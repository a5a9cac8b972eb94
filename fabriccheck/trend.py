"""What changed since an earlier report: findings new, fixed and unchanged (by fingerprint, baseline.py) and the
change in what the clusters lose a day. `--previous OLD.json` records it in a scan's report (`trend`), which the
text and HTML reports show (reports/changes.py words it); `fabriccheck diff OLD.json NEW.json` prints it on its
own."""

from __future__ import annotations

from fabriccheck import losses
from fabriccheck.baseline import fingerprint
from fabriccheck.findings import SEVERITY_RANK, Finding
from fabriccheck.penalty import Range
from fabriccheck.report import Change, ClusterChange, Report, Trend, TrendFinding, machines


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


# ---------------------------------------------------------------------------------------------- scopes
# A report's scope is what it read facts of ("provider:account:region", Report.scanned) and the kind of input it
# judged (a Terraform plan, Kubernetes manifests, or what runs). Findings are compared only where both reports looked:
# a finding of a region the later report never scanned is not "fixed", and two reports with no scope in common, or
# of different kinds, are not compared at all ("9 fixed, 19 new" between an AWS account and a GCP project).

_KINDS = (("terraform plan", "a Terraform plan"), ("k8s manifests", "Kubernetes manifests"))


def kind(report: Report) -> str:
    """What the report judged: an NCCL log or nccl-tests output (its `evidence`), a Terraform plan, Kubernetes
    manifests, or what runs (its `source` says which)."""
    if report.evidence is not None:
        return f"{report.evidence} evidence"
    return next((name for prefix, name in _KINDS if report.source.startswith(prefix)), "what runs")


def _scope(provider: str, account: str, cluster: str | None) -> tuple[str, str, str | None]:
    """(provider, account, region or None) of a finding or cluster; a cluster id starts provider:account:region."""
    parts = (cluster or "").split(":")
    region = parts[2] if len(parts) > 3 and parts[0] == provider and parts[1] == account else None
    return provider, account.lower(), region


def _scanned(report: Report) -> set[tuple[str, str, str | None]]:
    found: set[tuple[str, str, str | None]] = set()
    for scope in report.scanned:
        provider, account, region = [*scope.split(":", 2), "", ""][:3]
        found.add((provider, account.lower(), region))
    return found


def _within(scope: tuple[str, str, str | None], scanned: set[tuple[str, str, str | None]]) -> bool:
    provider, account, region = scope
    return any(p == provider and a == account and (region is None or r == region) for p, a, r in scanned)


def other_scope(previous: Report, current: Report, where: str) -> str | None:
    """Why `previous` (read from `where`) cannot be compared with `current`: another kind of input, or no scope in
    common; None when they can be (a report made before `scanned` existed is taken as comparable)."""
    if kind(previous) != kind(current):
        return f"{where} judged {kind(previous)} and this report {kind(current)}: there is nothing to compare"
    before, now = set(previous.scanned), set(current.scanned)
    if before and now and not before & now:
        return (
            f"{where} scanned {_listed(before)}, and this report {_listed(now)}: no scope in common, so no finding "
            "is new or fixed between them"
        )
    return None


def _listed(scopes: set[str]) -> str:
    shown = sorted(scopes)
    return ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")


def _unscanned(previous: Report, current: Report) -> tuple[set[str], list[str]]:
    """The fingerprints of the earlier findings in scopes the later report did not scan, and a note saying so."""
    scanned = _scanned(current)
    if not scanned:
        return set(), []
    left = {_key(f) for f in previous.findings if not _within(_scope(f.provider, f.account, f.cluster), scanned)}
    if not left:
        return set(), []
    scopes = sorted(set(previous.scanned) - set(current.scanned))
    where = f" ({_listed(set(scopes))})" if scopes else ""
    return left, [
        f"{len(left)} finding(s) of the earlier report are in scopes this report did not scan{where}: not called "
        "fixed (nobody looked), and what their clusters lose is left out of the change in cost"
    ]


def _order(found: list[TrendFinding]) -> list[TrendFinding]:
    return sorted(found, key=lambda f: (-SEVERITY_RANK.get(f.severity, 0), f.rule, f.cluster or "", f.resources))


def compare(previous: Report, current: Report, where: str) -> Trend:
    """The trend from `previous` (read from `where`) to `current`."""
    unseen, notes = _unscanned(previous, current)
    before = {_key(f): f for f in previous.findings if _key(f) not in unseen}
    now = {_key(f): f for f in current.findings}
    if previous.workload.get("name") != current.workload.get("name"):
        notes.append(
            f"the earlier report assumed workload {previous.workload.get('name')}, this one "
            f"{current.workload.get('name')}: the change in cost mixes the two"
        )
    # Findings of scopes the later report did not scan are not fixed (_unscanned), nor is what their clusters lose.
    old_hours, old_dollars = _lost_where(previous, current)
    new_hours, new_dollars = current.summary.lost_gpu_hours_per_day, current.summary.lost_dollars_per_day
    dollars = None
    if old_dollars is not None and new_dollars is not None:
        dollars = _change(old_dollars, new_dollars)
    return Trend(
        previous=where,
        previous_generated_at=previous.generated_at,
        new=_order([_named(f) for k, f in now.items() if k not in before]),
        fixed=_order([_named(f) for k, f in before.items() if k not in now]),
        unchanged=_order([_named(f) for k, f in now.items() if k in before]),
        lost_gpu_hours_per_day=_change(old_hours, new_hours),
        lost_dollars_per_day=dollars,
        clusters=[c for c in _clusters(previous, current) if _looked(c.id, current)],
        notes=notes,
    )


def _lost_where(report: Report, other: Report) -> tuple[Range, Range | None]:
    """What `report`'s clusters lose a day (GPU-hours, dollars) in the scopes `other` scanned: a cluster the later
    report did not look at again got no better (an AWS-only scan after the demo's is not 2,800 GPU-hours saved)."""
    kept = [c for c in report.clusters if _looked(c.id, other)]
    if len(kept) == len(report.clusters):
        return report.summary.lost_gpu_hours_per_day, report.summary.lost_dollars_per_day
    sums = losses.totals([(c.gpus, c.penalty) for c in kept], [machines(c) for c in kept])
    return sums["lost_gpu_hours_per_day"], sums["lost_dollars_per_day"]


def _looked(cluster: str, current: Report) -> bool:
    """The later report scanned the cluster's scope (or says nothing of what it scanned)."""
    scanned = _scanned(current)
    provider, account = ([*cluster.split(":", 2), ""])[:2]
    return not scanned or _within(_scope(provider, account, cluster), scanned)


def fails(trend: Trend, fail_on: str) -> bool:
    """A new finding that fails the gate (not waived, not in a baseline) is at or above `fail_on`."""
    if fail_on == "never":
        return False
    return any(f.gates and SEVERITY_RANK[f.severity] >= SEVERITY_RANK[fail_on] for f in trend.new)
