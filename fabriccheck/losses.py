"""What the judged clusters lose, added up: the cost figures of a report's summary (one run's, or a merge's).

Each cluster's `penalty.Penalty` says what it loses out of the GPU-hours it is paid for, from the findings its
rules are certain of; `possible` holds what it would lose if the findings marked possibly wrong hold too. The
headline adds up the first only; the possible figure is what the second would add on top, so that a rule that may
be wrong never inflates the number people quote.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fabriccheck.penalty import Penalty, Range

HOURS_PER_DAY = 24.0


def _sum(ranges: Sequence[Range]) -> Range:
    return Range(low=sum(r.low for r in ranges), high=sum(r.high for r in ranges))


def added_by_possible(p: Penalty) -> tuple[Range, Range | None] | None:
    """The GPU-hours (and dollars) a day the cluster's possible findings would lose on top of the headline, or
    None when they change nothing that was estimated."""
    more = p.possible
    if more is None or p.lost_gpu_hours_per_day is None or more.lost_gpu_hours_per_day is None:
        return None
    base, worse = p.lost_gpu_hours_per_day, more.lost_gpu_hours_per_day
    hours = Range(low=max(0.0, worse.low - base.low), high=max(0.0, worse.high - base.high))
    dollars = None
    if p.price_per_gpu_hour is not None:
        dollars = Range(low=hours.low * p.price_per_gpu_hour, high=hours.high * p.price_per_gpu_hour)
    return hours, dollars


def _per_machine(members: Sequence[tuple[Range | None, frozenset[str]]]) -> Range | None:
    """What clusters on shared machines lose together: each cluster's loss spread over its machines, each machine
    at the most any of its clusters loses there (the same GPU-hours cannot be lost twice), summed."""
    found = [(r, keys) for r, keys in members if r is not None]
    if not found:
        return None
    low: dict[str, float] = {}
    high: dict[str, float] = {}
    alone = Range(low=0.0, high=0.0)
    for r, keys in found:
        if not keys:
            alone = Range(low=alone.low + r.low, high=alone.high + r.high)
        for key in keys:
            low[key] = max(low.get(key, 0.0), r.low / len(keys))
            high[key] = max(high.get(key, 0.0), r.high / len(keys))
    return Range(low=alone.low + sum(low.values()), high=alone.high + sum(high.values()))


def _groups(hosts: Sequence[frozenset[str]]) -> list[list[int]]:
    """Clusters joined by the machines they share (a Kubernetes workload and the cloud node group it runs on), as
    lists of their indexes; a cluster sharing none is a group of its own."""
    parent = list(range(len(hosts)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[str, int] = {}
    for index, keys in enumerate(hosts):
        for key in keys:
            parent[root(index)] = root(first.setdefault(key, index))
    grouped: dict[int, list[int]] = {}
    for index in range(len(hosts)):
        grouped.setdefault(root(index), []).append(index)
    return list(grouped.values())


def _paid_gpus(members: Sequence[tuple[int, frozenset[str]]]) -> float:
    """GPUs of the distinct machines a group of clusters names, each machine once (at the most GPUs any of its
    clusters gives it)."""
    per_machine: dict[str, float] = {}
    for gpus, keys in members:
        share = gpus / len(keys) if keys else 0.0
        for key in keys:
            per_machine[key] = max(per_machine.get(key, 0.0), share)
    return sum(per_machine.values()) + sum(gpus for gpus, keys in members if not keys)


def totals(clusters: Sequence[tuple[int, Penalty]], hosts: Sequence[frozenset[str]] | None = None) -> dict[str, Any]:
    """The summary's cost fields from each reported cluster's (GPUs, penalty). `hosts`, one per cluster, names the
    machines it runs on: clusters that share machines (a Kubernetes workload on a cloud node group's instances) are
    paid for once, and each machine loses what the most of its clusters loses there, not the sum (the same
    GPU-hours cannot be lost twice)."""
    hosts = hosts if hosts is not None else [frozenset({f"cluster:{i}"}) for i in range(len(clusters))]
    paid = 0.0
    lost: list[Range] = []
    dollars: list[Range] = []
    added: list[Range] = []
    added_dollars: list[Range] = []
    for group in _groups(hosts):
        paid += _paid_gpus([(clusters[i][0], hosts[i]) for i in group])
        members = [(clusters[i][1], hosts[i]) for i in group]
        more = [(added_by_possible(p), keys) for p, keys in members]
        for into, found in (
            (lost, [(p.lost_gpu_hours_per_day if p.estimated else None, keys) for p, keys in members]),
            (dollars, [(p.lost_dollars_per_day if p.estimated else None, keys) for p, keys in members]),
            (added, [(a[0] if a else None, keys) for a, keys in more]),
            (added_dollars, [(a[1] if a else None, keys) for a, keys in more]),
        ):
            together = _per_machine(found)
            if together is not None:
                into.append(together)
    return {
        "gpu_hours_per_day": paid * HOURS_PER_DAY,
        "lost_gpu_hours_per_day": _sum(lost),
        "lost_dollars_per_day": _sum(dollars) if dollars else None,
        "clusters_cannot_run": sum(1 for _, p in clusters if p.cannot_run),
        "possible_lost_gpu_hours_per_day": _sum(added) if added else None,
        "possible_lost_dollars_per_day": _sum(added_dollars) if added_dollars else None,
    }
