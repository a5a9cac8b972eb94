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


def totals(clusters: Sequence[tuple[int, Penalty]]) -> dict[str, Any]:
    """The summary's cost fields from each reported cluster's (GPUs, penalty)."""
    penalties = [p for _, p in clusters]
    lost = [p.lost_gpu_hours_per_day for p in penalties if p.estimated and p.lost_gpu_hours_per_day is not None]
    dollars = [p.lost_dollars_per_day for p in penalties if p.estimated and p.lost_dollars_per_day is not None]
    added = [a for a in map(added_by_possible, penalties) if a is not None]
    added_dollars = [d for _, d in added if d is not None]
    return {
        "gpu_hours_per_day": sum(gpus for gpus, _ in clusters) * HOURS_PER_DAY,
        "lost_gpu_hours_per_day": _sum(lost),
        "lost_dollars_per_day": _sum(dollars) if dollars else None,
        "clusters_cannot_run": sum(1 for p in penalties if p.cannot_run),
        "possible_lost_gpu_hours_per_day": _sum([h for h, _ in added]) if added else None,
        "possible_lost_dollars_per_day": _sum(added_dollars) if added_dollars else None,
    }
