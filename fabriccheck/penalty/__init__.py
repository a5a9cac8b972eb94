"""What a degraded fabric costs: slower steps, the GPU-hours and dollars they lose.

The model (reference: penalty-model.md and docs/cost-model.md; calibration: data/calibration.yaml) is a package by
stage: `links` (what one node's inter-node path carries per transport and state: the fabric, the host-staged path
without GPUDirect RDMA, NCCL's socket transport, RoCE at scale), `collectives` (NCCL's algorithms and protocols,
nccl-tests' bandwidths, multi-node NVLink domains), `steps` (a step of data, tensor, pipeline and expert
parallelism, and what of its communication hides), `estimates` (the slowdown of a workload in a fabric state, and
its scaling from one node), `report` (the report's Penalty) and `workloads` (the named workloads).

The core is pure: `estimate` / `estimate_members` take fabric descriptions and states (no clusters, findings
or inventories) and return a `Slowdown`; `penalty_of` turns that into the report's `Penalty`.
"""

from fabriccheck.penalty.collectives import (
    COLLECTIVES,
    LL_BANDWIDTH_FRACTION,
    SIMPLE_STARTUP_HOPS,
    CollectiveEstimate,
    algorithm,
    bus_factor,
    collective_bandwidth,
    collective_estimate,
    collective_seconds,
    intra_bandwidth,
    two_node_trees,
)
from fabriccheck.penalty.estimates import (
    CANNOT_RUN,
    ONE_NODE,
    Scaling,
    Slowdown,
    estimate,
    estimate_distinct,
    estimate_members,
    one_node_step,
    scaling,
)
from fabriccheck.penalty.links import (
    EFFICIENCY,
    GB,
    INTRA_LATENCY_S,
    INTRA_RING_EFFICIENCY,
    LATENCY_S,
    LOOSE_PLACEMENT_LATENCY_FACTOR,
    NVLINK_DOWN,
    NVLINK_SPLIT,
    PCIE_ACS,
    RDMA_TRANSPORTS,
    TCP_LATENCY_S,
    FabricDescription,
    FabricHealth,
    FabricState,
    Link,
    SocketPath,
    degraded_link,
    healthy_link,
)
from fabriccheck.penalty.report import Penalty, Range, lost_share, penalty_of
from fabriccheck.penalty.steps import Phase, StepTimes, degraded_step_range, step_times
from fabriccheck.penalty.workloads import (
    DDP_BUCKET_BYTES,
    DEFAULT_WORKLOAD,
    FSDP_WRAPS,
    WORKLOADS,
    FsdpWrap,
    Strategy,
    Workload,
    is_workload_file,
    layout_line,
)

__all__ = [
    "CANNOT_RUN",
    "COLLECTIVES",
    "DDP_BUCKET_BYTES",
    "DEFAULT_WORKLOAD",
    "EFFICIENCY",
    "FSDP_WRAPS",
    "GB",
    "INTRA_LATENCY_S",
    "INTRA_RING_EFFICIENCY",
    "LATENCY_S",
    "LL_BANDWIDTH_FRACTION",
    "LOOSE_PLACEMENT_LATENCY_FACTOR",
    "NVLINK_DOWN",
    "NVLINK_SPLIT",
    "ONE_NODE",
    "PCIE_ACS",
    "RDMA_TRANSPORTS",
    "SIMPLE_STARTUP_HOPS",
    "TCP_LATENCY_S",
    "WORKLOADS",
    "CollectiveEstimate",
    "FabricDescription",
    "FabricHealth",
    "FabricState",
    "FsdpWrap",
    "Link",
    "Penalty",
    "Phase",
    "Range",
    "Scaling",
    "Slowdown",
    "SocketPath",
    "StepTimes",
    "Strategy",
    "Workload",
    "algorithm",
    "bus_factor",
    "collective_bandwidth",
    "collective_estimate",
    "collective_seconds",
    "degraded_link",
    "degraded_step_range",
    "estimate",
    "estimate_distinct",
    "estimate_members",
    "healthy_link",
    "intra_bandwidth",
    "is_workload_file",
    "layout_line",
    "lost_share",
    "one_node_step",
    "penalty_of",
    "scaling",
    "step_times",
    "two_node_trees",
]
