"""The slowdown of a workload on a set of nodes in their fabric states: the penalty core's entry point.

A node's fabric state changes its inter-node link (no fabric -> TCP over the ordinary NIC on its socket path, k
of N NICs, GPUDirect RDMA off, looser placement, a job spread over more NVLink domains than it needs); the
slowdown is the ratio of degraded to healthy step time, as a range: low, the modelled overlap with the state's best
link; high, the extra traffic of its worst link fully exposed. One node uses no inter-node fabric: its step is
still priced (so that scaling ratios can be formed) and it loses nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from fabriccheck import catalog
from fabriccheck.penalty.collectives import Units, units
from fabriccheck.penalty.links import (
    GB,
    SPLIT_ONE_MORE,
    FabricDescription,
    FabricState,
    Link,
    bottleneck,
    degraded_link_of,
    domain_nodes,
    healthy_ends,
    healthy_link_of,
    nccl_sockets,
    ring_rails,
)
from fabriccheck.penalty.memory import fitted
from fabriccheck.penalty.steps import StepTimes, degraded_step_range, step_times
from fabriccheck.penalty.workloads import WORKLOADS, Workload

# Peers that cannot reach each other over the fabric do not fall back to TCP one pair at a time: NCCL picks its
# network at start, and on EFA a blocked security group or a cross-zone peer fails the connection ("Unable to
# insert remote address into address vector", aws/aws-ofi-nccl#663) or hangs (fabric-requirements A5, A6, A8).
CANNOT_CONNECT = "peers cannot reach each other over the fabric: NCCL fails or hangs at start"
CANNOT_RUN = f"{CANNOT_CONNECT}, every reserved GPU-hour is lost"
ONE_NODE = "a single node does not use the inter-node fabric"


@dataclass(frozen=True)
class Slowdown:
    """Degraded over healthy step time for one workload on a set of nodes; 1.0 when not estimated."""

    estimated: bool
    reason: str | None = None  # why nothing was estimated, or what limits the estimate
    cannot_run: bool = False  # some peers cannot reach each other: the job does not run at all
    low: float = 1.0
    high: float = 1.0
    healthy_step_seconds: float | None = None
    degraded_step_seconds_low: float | None = None
    degraded_step_seconds_high: float | None = None
    healthy_gbytes_per_s: float | None = None  # inter-node link, one direction
    degraded_best_gbytes_per_s: float | None = None
    degraded_worst_gbytes_per_s: float | None = None
    workload: str | None = None  # the named workload priced in place of one that does not fit (penalty.memory)
    compute_prior: str | None = None  # what the step's compute rests on (compute_prior): said beside the figure


@dataclass(frozen=True)
class _Links:
    """The cluster's bottleneck links: healthy and in the state, each at the best and worst end. A fabric whose
    healthy link has a range itself (no GPUDirect RDMA, or TCP) is compared end with end: the uncertainty of the
    healthy path is no cost of the state."""

    healthy: Link
    healthy_worst: Link
    best: Link
    worst: Link


def estimate_members(members: Sequence[tuple[FabricDescription, FabricState]], workload: Workload) -> Slowdown:
    """Slowdown of `workload` on one node per member. Nodes may differ (mixed types, some degraded): the
    cluster runs at the bottleneck link, with the fewest GPUs per node and the first node's accelerator."""
    return estimate_distinct(tuple(dict.fromkeys(members)), len(members), workload)  # identical nodes once


def estimate_distinct(
    distinct: tuple[tuple[FabricDescription, FabricState], ...], nodes: int, workload: Workload
) -> Slowdown:
    """`estimate_members` for `nodes` nodes whose distinct (fabric, state) pairs are `distinct`, first node's
    first."""
    return _estimate_distinct(distinct, nodes, workload)


def estimate(fabric: FabricDescription, nodes: int, state: FabricState, workload: Workload) -> Slowdown:
    """Slowdown of `workload` on `nodes` identical nodes, all in `state`."""
    return estimate_distinct(((fabric, state),), max(0, nodes), workload)


def _accelerator(
    distinct: Sequence[tuple[FabricDescription, FabricState]],
) -> catalog.Accelerator | str:
    name = distinct[0][0].accelerator
    accel = catalog.accelerator(name)
    if accel is None:
        return f"no sourced peak throughput for {name or '?'} accelerators"
    if accel.missing:
        return f"no sourced {' or '.join(accel.missing)} for {name} accelerators"
    return accel


def _links(distinct: Sequence[tuple[FabricDescription, FabricState]], accel: catalog.Accelerator) -> _Links | str:
    healthy_of: list[dict[FabricDescription, Link]] = [{}, {}]
    sides: list[list[Link]] = [[], []]
    for fabric, state in distinct:
        ends = healthy_ends(fabric, accel, state)
        for side, best in enumerate((True, False)):
            healthy = ends[side]
            if isinstance(healthy, str):
                return healthy
            healthy_of[side].setdefault(fabric, healthy)
            degraded = degraded_link_of(fabric, accel, state, healthy, best)
            if isinstance(degraded, str):
                return degraded
            sides[side].append(degraded)
    healthy_best, healthy_worst = (bottleneck(list(of.values())) for of in healthy_of)
    return _Links(healthy_best, healthy_worst, bottleneck(sides[0]), bottleneck(sides[1]))


def _estimate_distinct(
    distinct: Sequence[tuple[FabricDescription, FabricState]], nodes: int, workload: Workload
) -> Slowdown:
    """`estimate_members` for `nodes` nodes whose distinct (fabric, state) pairs are `distinct`, first node first."""
    distinct = [(fabric, job_sockets(fabric, state, workload)) for fabric, state in distinct]
    if not distinct or nodes < 1:
        return Slowdown(estimated=False, reason="no nodes")
    gpus = min(fabric.gpus_per_node for fabric, _ in distinct)
    if gpus <= 0:
        return Slowdown(estimated=False, reason="no accelerators: not a training cluster")
    if nodes >= 2 and any(state.fabric == "unreachable" for _, state in distinct):
        return Slowdown(estimated=True, cannot_run=True, reason=CANNOT_RUN)  # known whatever the accelerator
    accel = _accelerator(distinct)
    if isinstance(accel, str):
        return Slowdown(estimated=False, reason=ONE_NODE if nodes < 2 else accel)
    if nodes < 2:
        step = one_node_step(distinct[0][0], workload)
        return Slowdown(estimated=False, reason=ONE_NODE, healthy_step_seconds=step)
    priced, fit = fitted(workload, nodes, gpus, accel)
    if priced is None:
        return Slowdown(estimated=False, reason=fit)
    if priced is not workload:
        found = _estimate_distinct(distinct, nodes, priced)
        if not found.estimated:
            return found  # what stops the estimate is the line to read, not which workload it would have priced
        return replace(found, workload=priced.name, reason="; ".join(r for r in (fit, found.reason) if r))
    links = _links(distinct, accel)
    if isinstance(links, str):
        return Slowdown(estimated=False, reason=links)
    fabric = distinct[0][0]
    per_domain = domain_nodes(fabric, accel)
    # The degraded side's domains: one node each when any node's multi-node NVLink is down (NVLINK_DOWN).
    down = any(not s.multi_node_nvlink for _, s in distinct)
    asked = _domains_asked(distinct)
    scale = compute_scale(fabric, workload, accel)
    made: dict[Units, StepTimes] = {}  # the four ends often share links: each step priced once

    def steps_on(link: Link, domains: int | None, per: int = per_domain) -> StepTimes:
        group = units(nodes, gpus, link, per, domains, ring_rails(fabric))
        found = made.get(group)
        if found is None:
            found = made[group] = step_times(
                workload, group.count, group.gpus, accel, group.link, scale, group.nodes_per_unit > 1
            )
        return found

    healthy, healthy_worst = steps_on(links.healthy, None), steps_on(links.healthy_worst, None)
    degraded_per = 1 if down else per_domain
    best, worst = steps_on(links.best, asked, degraded_per), steps_on(links.worst, asked, degraded_per)
    healthy_step, low, _ = degraded_step_range(healthy, best, best)
    worst_base, _, high = degraded_step_range(healthy_worst, worst, worst)
    slow_low, slow_high = low / healthy_step, high / worst_base
    slow_high = max(slow_low, slow_high)
    return Slowdown(
        estimated=True,
        reason=_placement_note(distinct, slow_high),
        low=slow_low,
        high=slow_high,
        healthy_step_seconds=healthy_step,
        degraded_step_seconds_low=healthy_step * slow_low,
        degraded_step_seconds_high=healthy_step * slow_high,
        healthy_gbytes_per_s=links.healthy.bandwidth / GB,
        degraded_best_gbytes_per_s=links.best.bandwidth / GB,
        degraded_worst_gbytes_per_s=links.worst.bandwidth / GB,
        compute_prior=compute_prior(accel, workload),
    )


def compute_prior(accel: catalog.Accelerator, workload: Workload) -> str:
    """What a step's compute time rests on, in a few words for a report: the workload's measured step, or the
    accelerator's MFU prior and whether a published run gives it (fabriccheck/data/accelerators.yaml)."""
    if workload.measured_step_seconds > 0 and workload.measured_nodes >= 1:
        return f"compute from the measured step ({workload.measured_step_seconds:g} s on {workload.measured_nodes})"
    kind = "assumed" if "mfu" in accel.assumed else "published"
    return f"compute at {accel.name}'s MFU prior of {accel.mfu or 0:.0%} ({kind})"


def job_sockets(fabric: FabricDescription, state: FabricState, workload: Workload) -> FabricState:
    """The state with the job's own socket settings (NCCL_SOCKET_NTHREADS, NCCL_NSOCKS_PERTHREAD, channels) and
    NCCL release where the state does not give its own."""
    threads, each, channels = workload.socket_threads, workload.sockets_per_thread, workload.socket_channels
    if state.sockets is None and (threads is not None or each is not None):
        state = replace(state, sockets=nccl_sockets(threads, each, fabric.provider, state.socket_path))
    if state.channels is None and channels:
        state = replace(state, channels=channels)
    if state.nccl_version is None and workload.nccl_version is not None:
        state = replace(state, nccl_version=workload.nccl_version)
    return state


def _domains_asked(distinct: Sequence[tuple[FabricDescription, FabricState]]) -> int | None:
    """The NVLink domains the states say the job spans: the most any names, SPLIT_ONE_MORE when one only says it
    is split, None when none says."""
    named = [s.nvlink_domains for _, s in distinct if s.nvlink_domains is not None]
    counted = [d for d in named if d > 0]
    if counted:
        return max(counted)
    return SPLIT_ONE_MORE if named else None


def _placement_note(distinct: Sequence[tuple[FabricDescription, FabricState]], high: float) -> str | None:
    states = [state for _, state in distinct]
    if any(s.loose_placement for s in states) and all(s.fabric == "healthy" for s in states):
        # No cloud publishes what looser placement costs RDMA bandwidth (penalty-model F: AWS, Azure, GCP alike).
        return f"loose placement: no published bandwidth cost; latency-only estimate, {high:.3f}x at most"
    return None


def one_node_step(fabric: FabricDescription, workload: Workload) -> float | None:
    """Seconds of one step of `workload` on one node of `fabric` (NVLink only), or None without the figures."""
    accel = catalog.accelerator(fabric.accelerator)
    if accel is None or accel.missing or fabric.gpus_per_node <= 0:
        return None
    scale = compute_scale(fabric, workload, accel)
    return step_times(workload, 1, fabric.gpus_per_node, accel, Link(1.0, 0.0), scale).step(overlap=True)


def compute_scale(fabric: FabricDescription, workload: Workload, accel: catalog.Accelerator) -> float:
    """How much longer (or shorter) the job's compute is than the MFU prior says: 1.0 unless the workload carries
    a step time measured on `measured_nodes` healthy nodes, which this reproduces."""
    nodes = workload.measured_nodes
    if workload.measured_step_seconds <= 0 or nodes < 1 or fabric.gpus_per_node <= 0:
        return 1.0
    link = healthy_link_of(fabric, accel)
    if isinstance(link, str) and nodes > 1:
        return 1.0
    link = link if isinstance(link, Link) else Link(1.0, 0.0)
    if workload.nccl_version is not None:
        link = replace(link, nccl_version=workload.nccl_version)
    group = units(nodes, fabric.gpus_per_node, link, domain_nodes(fabric, accel), None, ring_rails(fabric))
    modelled = step_times(workload, group.count, group.gpus, accel, group.link, domain=group.nodes_per_unit > 1)
    communication = modelled.step(overlap=True) - modelled.compute
    compute = workload.measured_step_seconds - communication
    return max(0.05, compute / modelled.compute) if modelled.compute > 0 else 1.0


@dataclass(frozen=True)
class Scaling:
    """Per-GPU throughput on `nodes` nodes in a state, over one healthy node's (weak or strong scaling alike)."""

    one_node_step_seconds: float
    low: float  # at the degraded step's high end
    high: float  # at its low end


def scaling(fabric: FabricDescription, nodes: int, state: FabricState, workload: Workload) -> Scaling | None:
    """The scaling efficiency of `workload` from one node to `nodes` nodes of `fabric` in `state`, or None."""
    if nodes < 1:
        return None
    found = estimate(fabric, nodes, state, workload) if nodes > 1 else None
    if found is not None and found.workload is not None:
        workload = WORKLOADS[found.workload]  # one that fits was priced: scale that one from one node
    one = one_node_step(fabric, workload)
    if one is None:
        return None
    if found is None:
        return Scaling(one, 1.0, 1.0)
    if not found.estimated or found.cannot_run or found.degraded_step_seconds_low is None:
        return None
    assert found.degraded_step_seconds_high is not None
    work = _work_ratio(workload, nodes)
    return Scaling(
        one,
        one * work / found.degraded_step_seconds_high,
        one * work / found.degraded_step_seconds_low,
    )


def _work_ratio(workload: Workload, nodes: int) -> float:
    """Per-GPU work on `nodes` nodes over one node's: 1 under weak scaling (tokens per GPU), 1/nodes under strong
    scaling (a global batch shared by more GPUs)."""
    return 1.0 if workload.tokens_per_gpu else 1.0 / nodes
