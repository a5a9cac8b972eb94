"""The report's Penalty: a slowdown turned into the share of each GPU-hour lost, GPU-hours and dollars."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from fabriccheck.penalty.estimates import Slowdown
from fabriccheck.penalty.workloads import Workload


class Range(BaseModel):
    low: float
    high: float


class Penalty(BaseModel):
    workload: str
    estimated: bool
    reason: str | None = None  # why nothing was estimated, or what limits the estimate
    # Peers cannot reach each other over the fabric: NCCL fails or hangs at start, so there is no ratio (slowdown
    # is null) and every reserved GPU-hour is lost.
    cannot_run: bool = False
    slowdown: Range | None = Range(low=1.0, high=1.0)
    # What is lost out of what is paid for (DESIGN.md): a step `slowdown` times as long does 1/slowdown of the
    # work, so 1 - 1/slowdown of every GPU-hour is lost (1.0 when the job cannot run); never more than the
    # cluster's own GPUs x 24 GPU-hours a day (`gpu_hours_per_day`). None when nothing was estimated.
    gpu_hours_per_day: float | None = None
    lost_share: Range | None = None
    lost_gpu_hours_per_day: Range | None = None
    lost_dollars_per_day: Range | None = None
    price_per_gpu_hour: float | None = None
    healthy_step_seconds: float | None = None
    degraded_step_seconds: Range | None = None
    inter_node_gbytes_per_s: dict[str, float] | None = None  # healthy, degraded best, degraded worst
    # What the step's compute time rests on, said beside the slowdown: the accelerator's MFU prior (published or
    # assumed, fabriccheck/data/accelerators.yaml) or the workload file's measured step. None when not estimated.
    compute_prior: str | None = None
    # A figure the slowdown rests on that is extrapolated, not measured (today the per-GPU NIC cap,
    # links.GPU_NET_GBYTES, beyond the GB300 RoCE run it was fitted on), said beside the price; None otherwise.
    extrapolated: str | None = None
    # The penalty if the findings their rules mark `confidence: possible` hold too (flow.cluster_cost); not
    # counted in the headline figures above.
    possible: Penalty | None = None


def lost_share(slowdown: float) -> float:
    """The share of each GPU-hour a step `slowdown` times as long loses: 1 - 1/slowdown, within [0, 1]."""
    return min(1.0, max(0.0, 1.0 - 1.0 / slowdown)) if slowdown > 0 else 1.0


def penalty_of(
    slowdown: Slowdown, workload: Workload, total_gpus: int, price_per_gpu_hour: float | None = None
) -> Penalty:
    """The report's Penalty: the slowdown, the share of each GPU-hour it loses, and of the `total_gpus` x 24
    GPU-hours a day paid for, those lost and, given a price, their dollars. Peers that cannot reach each other
    lose every GPU-hour."""
    if not slowdown.estimated:
        return Penalty(workload=slowdown.workload or workload.name, estimated=False, reason=slowdown.reason)
    paid = total_gpus * 24.0
    if slowdown.cannot_run:
        share = Range(low=1.0, high=1.0)
    else:
        share = Range(low=lost_share(slowdown.low), high=lost_share(slowdown.high))
    lost = Range(low=paid * share.low, high=paid * share.high)
    dollars = None
    if price_per_gpu_hour is not None:
        dollars = Range(low=lost.low * price_per_gpu_hour, high=lost.high * price_per_gpu_hour)
    figures: dict[str, Any] = {
        "gpu_hours_per_day": paid,
        "lost_share": share,
        "lost_gpu_hours_per_day": lost,
        "lost_dollars_per_day": dollars,
    }
    if slowdown.cannot_run:
        return Penalty(
            workload=slowdown.workload or workload.name,
            estimated=True,
            reason=slowdown.reason,
            cannot_run=True,
            slowdown=None,
            price_per_gpu_hour=price_per_gpu_hour,
            **figures,
        )
    degraded = None
    if slowdown.degraded_step_seconds_low is not None and slowdown.degraded_step_seconds_high is not None:
        degraded = Range(low=slowdown.degraded_step_seconds_low, high=slowdown.degraded_step_seconds_high)
    bandwidth = {
        key: value
        for key, value in (
            ("healthy", slowdown.healthy_gbytes_per_s),
            ("degraded_best", slowdown.degraded_best_gbytes_per_s),
            ("degraded_worst", slowdown.degraded_worst_gbytes_per_s),
        )
        if value is not None
    }
    return Penalty(
        workload=slowdown.workload or workload.name,
        estimated=True,
        reason=slowdown.reason,
        slowdown=Range(low=slowdown.low, high=slowdown.high),
        price_per_gpu_hour=price_per_gpu_hour,
        healthy_step_seconds=slowdown.healthy_step_seconds,
        degraded_step_seconds=degraded,
        inter_node_gbytes_per_s=bandwidth or None,
        compute_prior=slowdown.compute_prior,
        **figures,
    )
