"""What a degraded fabric costs: slower steps, the GPU-hours and dollars they lose.

The model (reference: penalty-model.md; calibration: data/calibration.yaml) prices the collectives a workload runs
per step the way NCCL runs them: inside one node at the accelerator's measured single-node busbw (NVLink / NVLS);
across nodes it picks, per operation, size and node count, the faster of a ring (every byte crosses each node
boundary once, so busbw is the node's achieved NIC bandwidth) and a double binary tree (log latency; at 2 nodes
each node moves the buffer once, which is why 2-node busbw can exceed the line rate), as NCCL's tuning model does
(NVIDIA/nccl src/graph/tuning.cc). The node's achieved bandwidth is its NIC count x per-NIC rate x a measured
efficiency per transport, less when GPUDirect RDMA is absent. Compute time comes from 6·N·T and an MFU prior per
accelerator. Communication hides only behind the compute that is independent of it (forward gathers behind the
forward pass, gradient traffic behind the backward pass), and only up to that compute.

A node's fabric state changes its inter-node link (no fabric -> TCP over the ordinary NIC, k of N NICs, GPUDirect
RDMA off, looser placement); the slowdown is the ratio of degraded to healthy step time, as a range: low, the
modelled overlap; high, the extra traffic fully exposed. Every constant names its source.

The core is pure: `estimate` / `estimate_members` take fabric descriptions and states (no clusters, findings
or inventories) and return a `Slowdown`; `penalty_of` turns that into the report's `Penalty`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel

from fabriccheck import catalog
from fabriccheck.model import Capability, FabricKind

GB = 1e9

# Achieved fraction of nominal inter-node bandwidth, by transport, fitted on the calibration rows not marked
# held_out (data/calibration.yaml): ring busbw at 4+ nodes, or algbw at 2 nodes, over the node's line rate.
EFFICIENCY = {
    # EFA: 2-node all_reduce algbw over 4 x 100 Gbps (50 GB/s): p4de 41.78 (penalty-model B row 5), p4d VMs 41.55
    # and p4d on EKS 41.25 (skypilot examples/aws_efa): 0.836, 0.831, 0.825; their mean.
    FabricKind.EFA: 0.83,
    # InfiniBand: ring busbw over line rate at 4+ nodes: Voltage Park 4 x 8 H100 330.93 of 400 GB/s (row 15) = 0.83,
    # DGX-A100 8 x 200 Gbps 192 of 200 (row 11) = 0.96, Dell XE9680 4 x 8 H100 365.84 of 400 (NVIDIA/nccl-tests#309)
    # = 0.91, DGX-1 4 x 100 Gbps 47 of 50 (NVIDIA/nccl#307) = 0.94; their mean.
    FabricKind.INFINIBAND: 0.91,
    # RoCE/MRDMA: tuned RoCE performs within about 1% of InfiniBand at equal line rate (penalty-model D).
    FabricKind.RDMA: 0.91,
    # GPUDirect-TCPXO: a3-megagpu-8g ~340 GB/s busbw at 2 nodes (row 1) = algbw 181 GB/s of 200 GB/s = 0.91.
    FabricKind.TCPXO: 0.91,
    # GPUDirect-TCPX: a3-highgpu-8g, algbw 35 GB/s of 100 (skypilot examples/gcp_gpu_direct_tcpx, 65.72 busbw at
    # 2 nodes) and "up to 50" (dstackai/dstack#2447): their geometric mean.
    FabricKind.TCPX: 0.42,
}
# Transports that move GPU memory by RDMA: without GPUDirect RDMA they stage every byte through host memory.
RDMA_TRANSPORTS = frozenset({FabricKind.EFA, FabricKind.INFINIBAND, FabricKind.RDMA})
# NCCL over TCP sockets on the ordinary NIC, as a fraction of that NIC's line rate. Best: 2 x p4d VMs over one
# 100 Gbps ENA, 8.20 GB/s busbw (skypilot examples/aws_efa; A100 over sockets runs rings at 2 nodes, so busbw is the
# link) = 0.66. Worst: ~4 GB/s busbw (2.13 GB/s algbw, an NVLSTree) on a 200 Gbps host NIC when TCPXO falls back
# (row 1) = 0.085. In between: NCCL 2.3.7 reached 41 Gbps of 100 (NVIDIA/nccl#209, row 7), p4d on EKS 0.33,
# a3-highgpu-8g without TCPX 0.41. Socket throughput depends on NCCL_NSOCKS_PERTHREAD / NCCL_SOCKET_NTHREADS and
# on host networking (pods vs VMs), hence a wide range.
TCP_EFFICIENCY = (0.66, 0.085)  # (best, worst)
# Latency of one all_reduce between 2 nodes (8-byte nccl-tests rows): p5 EFA 65-74 us (row 4), IB ~30 us
# (row 16), TCPXO ~123 us (penalty-model A.2). TCP: no published NCCL socket figure; assumed above p4de EFA's
# 161 us (row 5).
LATENCY_S = {
    FabricKind.EFA: 70e-6,
    FabricKind.INFINIBAND: 30e-6,
    FabricKind.RDMA: 30e-6,
    FabricKind.TCPXO: 123e-6,
    FabricKind.TCPX: 123e-6,
}
TCP_LATENCY_S = 200e-6
# One collective inside a DGX H100 node: about 13 us (penalty-model A.2).
INTRA_LATENCY_S = 13e-6
# Loose placement: no published bandwidth cost (penalty-model F); modelled as doubled latency on the high side.
LOOSE_PLACEMENT_LATENCY_FACTOR = 2.0
# GPUDirect RDMA off: the fabric still carries the traffic, but GPU buffers are staged through host memory.
# Fraction of the fabric's busbw kept, (best, worst). Best, 0.83: NVIDIA/nccl#1579 (2x GH200, 4x200 Gbps, NCCL
# 2.24.3, all_reduce busbw at 2 GB: 79.72 GB/s without GDR vs 96.07 with). Worst, 0.5: an assumption (estimate):
# NCCL maintainers say GDR matters most when NIC and GPU share a PCIe switch (NVIDIA/nccl#465, #685); no published
# busbw pair for such a node was found. A fabric that never had GPUDirect RDMA (first-generation EFA on p3dn,
# p5.4xlarge, g5) is healthy at the best end: 2 x p3dn EFA reached ~10 GB/s algbw of 12.5 (NVIDIA/nccl#235,
# a held-out calibration row).
GPUDIRECT_OFF_EFFICIENCY = (0.83, 0.5)  # (best, worst)
# Single-node all_reduce busbw over NVLink rings, as a fraction of nominal NVLink, for accelerators without a
# measured figure: A100 231.58 of 300 (0.77) and GB200 679.61 of 900 (0.76) (Azure/AI-benchmarking-guide).
INTRA_RING_EFFICIENCY = 0.77
# NCCL's protocols (tuning.cc): LL keeps the small-message latency at a fraction of the bandwidth; Simple reaches
# full bandwidth after a start-up. Fitted on the mid-size rows of data/calibration.yaml: 2 x p5 all_reduce reaches
# 0.23 of its large-message algbw at 8 MiB and 2 x p4de 0.17 at 1 MiB (LL), and Simple's start-up is ~300 us on
# p5 (4.3 x its 70 us latency) and ~600 us on p4de (3.7 x 161 us).
LL_BANDWIDTH_FRACTION = 0.2
SIMPLE_STARTUP_HOPS = 4.0
# PyTorch DDP default gradient bucket (bucket_cap_mb=25, pytorch/pytorch#118421).
DDP_BUCKET_BYTES = 25e6

Strategy = Literal["fsdp", "ddp", "3d"]


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    parameters: float
    layers: int
    hidden: int
    seq_len: int
    strategy: Strategy  # ddp also stands for ZeRO-1/2 (same traffic), fsdp for ZeRO-3
    tokens_per_gpu: int = 0  # fsdp/ddp (weak scaling): tokens per GPU per optimizer step
    global_batch: int = 0  # 3d: sequences per optimizer step
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    micro_batch: int = 1  # 3d: sequences per micro-batch
    bytes_per_value: int = 2  # BF16 parameters and gradients
    source: str = ""
    micro_batches: int = 1  # fsdp/ddp: gradient-accumulation steps per optimizer step (FSDP re-gathers in each)
    expert_parallel: int = 1  # MoE: GPUs an expert all-to-all spans
    top_k: int = 2  # MoE: experts each token is routed to
    active_parameters: float = 0.0  # MoE: parameters one token uses (FLOPs); 0 = all of them


WORKLOADS = {
    w.name: w
    for w in (
        Workload(
            "llm-70b-fsdp",
            "70B-class dense LLM, FSDP (ZeRO-3) over all GPUs",
            70e9,
            80,
            8192,
            8192,
            "fsdp",
            tokens_per_gpu=16384,
            source="Llama-3.1-70B shape; batch of penalty-model C.5 (256 x 8192 tokens on 128 GPUs)",
            micro_batches=2,
        ),
        Workload(
            "llm-8b-ddp",
            "8B-class dense LLM, DDP / ZeRO-1 (one gradient all-reduce per step)",
            8e9,
            32,
            4096,
            8192,
            "ddp",
            tokens_per_gpu=8192,
            source="Llama-3-8B shape; local batch 1 x 8192 as in pytorch/torchtitan docs/performance.md",
        ),
        Workload(
            "llm-175b-3d",
            "175B-class dense LLM, tensor parallel 8 inside the node, pipeline 8 and data parallel across nodes",
            175e9,
            96,
            12288,
            2048,
            "3d",
            global_batch=1536,
            tensor_parallel=8,
            pipeline_parallel=8,
            source="GPT-3 175B shape and 1,536 x 2,048-token batch; Megatron-LM 3D layout",
        ),
    )
}
DEFAULT_WORKLOAD = "llm-70b-fsdp"


def is_workload_file(name: str) -> bool:
    """A --workload value that names a user's workload file (YAML or TOML) rather than a preset."""
    return name.lower().endswith((".yaml", ".yml", ".toml"))


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
    # The penalty if the findings their rules mark `confidence: possible` hold too (flow.cluster_cost); not
    # counted in the headline figures above.
    possible: Penalty | None = None


# ---------------------------------------------------------------------------------------------- model


@dataclass(frozen=True)
class Link:
    """One direction of a node's inter-node path: achieved bandwidth (bytes/s) and the latency of a 2-node
    all_reduce (two inter-node steps)."""

    bandwidth: float
    latency: float
    # The fabric's NCCL plugin ships a tuner that picks tree algorithms for large all_reduces on few nodes:
    # aws-ofi-nccl (EFA) does (aws/aws-ofi-nccl src/tuner/nccl_ofi_regions.cpp); NCCL's own model on its own
    # picks rings at 2 nodes unless NVLSTree applies (tuning.cc).
    tuned_trees: bool = False


def bus_factor(op: str, ranks: int) -> float:
    """nccl-tests' bus bandwidth factor on `ranks` ranks (nccl-tests doc/PERFORMANCE.md): busbw = algbw x it."""
    if ranks <= 1:
        return 1.0 if op in ("broadcast", "reduce") else 0.0
    if op == "all_reduce":
        return 2 * (ranks - 1) / ranks
    if op in ("all_gather", "reduce_scatter", "alltoall"):
        return (ranks - 1) / ranks
    return 1.0


def intra_bandwidth(accel: catalog.Accelerator) -> float:
    """Bytes/s a collective reaches inside one node: the measured single-node busbw, else NVLink x ring efficiency
    (0 when the accelerator has neither figure: callers check `Accelerator.missing` first)."""
    measured = accel.allreduce_busbw_gbytes
    return (measured if measured else (accel.nvlink_gbytes or 0.0) * INTRA_RING_EFFICIENCY) * GB


def algorithm(
    op: str, size: float, nodes: int, gpus: int, link: Link, intra: float, two_node_tree: bool = True
) -> tuple[str, float]:
    """The algorithm NCCL would pick for one collective of `size` bytes and its time in seconds.

    One node: the NVLink domain at its measured busbw. Across nodes, alltoall is point-to-point; the others take
    the faster of
    - ring: 2(N-1) (all_reduce) or N-1 inter-node steps; every byte crosses each node boundary once, so busbw is
      the node's achieved NIC bandwidth (or NVLink, if slower);
    - tree (all_reduce only; double binary tree): log2(N) latency; each node sends and receives the buffer once
      at 2 nodes and twice beyond, while the chain inside the node moves 2(g-1)/g of it over NVLink.
    Trees win small messages at scale; at 2 nodes they also win large ones, where NCCL runs them: with NVLSTree
    (NVLS accelerators) or a plugin's tuner (`two_node_tree`); otherwise NCCL's model keeps rings there."""
    ranks = nodes * gpus
    factor = bus_factor(op, ranks)
    if ranks <= 1 or size <= 0:
        return "none", 0.0
    if nodes <= 1:
        return "nvlink", _protocol(INTRA_LATENCY_S, INTRA_LATENCY_S, factor * size / intra)
    steps = 2 * (nodes - 1) if op == "all_reduce" else nodes - 1
    if op == "alltoall":
        # Point-to-point sends, no ring: each GPU sends (N-1)/N of its buffer off the node, so the node's NICs
        # carry g x (N-1)/N x size and busbw is N/(N-1) x the per-GPU share of the NICs (NVIDIA/nccl-tests#130).
        off_node = gpus * (nodes - 1) / nodes * size / link.bandwidth
        on_node = (gpus - 1) / ranks * size / intra if gpus > 1 else 0.0
        return "p2p", _protocol(steps * link.latency / 2, link.latency, max(off_node, on_node))
    ring_bandwidth = min(link.bandwidth, intra) if gpus > 1 else link.bandwidth
    ring = _protocol(steps * link.latency / 2, link.latency, factor * size / ring_bandwidth)
    if op != "all_reduce":
        return "ring", ring
    if nodes == 2 and not two_node_tree:
        return "ring", ring
    inter = (1.0 if nodes == 2 else 2.0) * size / link.bandwidth
    chain = 2 * (gpus - 1) / gpus * size / intra if gpus > 1 else 0.0
    tree = _protocol(link.latency * math.log2(nodes), link.latency, max(inter, chain))
    return ("tree", tree) if tree < ring else ("ring", ring)


def _protocol(latency: float, hop: float, transfer: float) -> float:
    """Seconds for an algorithm whose latency is `latency` and whose bytes take `transfer` at full bandwidth, under
    the faster of NCCL's protocols (tuning.cc): LL, at the measured small-message latency but a fraction of the
    bandwidth, or Simple, at full bandwidth after a start-up of a few per-hop latencies (`hop`)."""
    return latency + min(transfer / LL_BANDWIDTH_FRACTION, SIMPLE_STARTUP_HOPS * hop + transfer)


def collective_seconds(
    op: str, size: float, nodes: int, gpus: int, link: Link, intra: float, two_node_tree: bool = True
) -> float:
    """Seconds one collective of `size` bytes takes on `nodes` x `gpus` ranks (see `algorithm`)."""
    return algorithm(op, size, nodes, gpus, link, intra, two_node_tree)[1]


def two_node_trees(accel: catalog.Accelerator, link: Link) -> bool:
    """Whether NCCL runs a tree for large all_reduces at 2 nodes: NVLSTree on NVLS accelerators, or a tuner."""
    return accel.nvls or link.tuned_trees


@dataclass(frozen=True)
class Phase:
    """Communication that can hide behind `window` seconds of compute independent of it, and no more."""

    comm: float
    window: float


@dataclass(frozen=True)
class StepTimes:
    compute: float
    critical: float  # communication nothing hides (pipeline sends, expert all-to-all, the last gradient bucket)
    phases: tuple[Phase, ...] = ()

    @property
    def overlappable(self) -> float:
        return sum(p.comm for p in self.phases)

    @property
    def communication(self) -> float:
        return self.critical + self.overlappable

    def step(self, overlap: bool) -> float:
        """Step time; with overlap, each phase's communication hides behind its own window, up to that window."""
        if not overlap:
            return self.compute + self.communication
        return self.compute + self.critical + sum(max(0.0, p.comm - p.window) for p in self.phases)


def degraded_step_range(healthy: StepTimes, best: StepTimes, worst: StepTimes) -> tuple[float, float, float]:
    """(healthy step, degraded low, degraded high). Low: healthy and degraded traffic both overlap as modelled.
    High: the extra traffic the degraded fabric causes is fully exposed (penalty-model A.5: phi = 0 as the
    upper bound)."""
    base = healthy.step(overlap=True)
    low = best.step(overlap=True)
    high = base + max(0.0, worst.communication - healthy.communication)
    return base, max(base, low), max(base, low, high)


def _expert_all_to_all(w: Workload, tokens: float, gpus: int, link: Link, intra: float) -> float:
    """MoE: four all-to-alls (dispatch and combine, forward and backward) per layer over the expert group."""
    if w.expert_parallel <= 1:
        return 0.0
    ep_nodes = max(1, math.ceil(w.expert_parallel / gpus))
    ep_gpus = min(gpus, w.expert_parallel)
    size = tokens * w.hidden * w.bytes_per_value * w.top_k
    return 4 * w.layers * collective_seconds("alltoall", size, ep_nodes, ep_gpus, link, intra)


def step_times(w: Workload, nodes: int, gpus: int, accel: catalog.Accelerator, link: Link) -> StepTimes:
    n = nodes * gpus
    assert accel.peak_tflops is not None and accel.mfu is not None  # _estimate_distinct checks `missing`
    flops_per_gpu = accel.peak_tflops * 1e12 * accel.mfu
    intra = intra_bandwidth(accel)
    trees = two_node_trees(accel, link)
    size = w.parameters * w.bytes_per_value
    # Model FLOPs per token: 6·N plus attention 12·L·h·s (PaLM appendix B, as torchtitan computes it;
    # penalty-model C.1 and C.4). MoE: N is the parameters one token uses.
    flops_per_token = 6 * (w.active_parameters or w.parameters) + 12 * w.layers * w.hidden * w.seq_len
    if w.strategy in ("fsdp", "ddp"):
        compute = flops_per_token * w.tokens_per_gpu / flops_per_gpu
        m = max(1, w.micro_batches)
        forward, backward = compute / 3, 2 * compute / 3  # backward does twice the forward's FLOPs
        experts = m * _expert_all_to_all(w, w.tokens_per_gpu / m, gpus, link, intra)
        if w.strategy == "ddp":
            # One all-reduce per step (no_sync while accumulating), bucket by bucket during the last backward;
            # the last bucket is reduced after the backward pass ends.
            buckets = max(1, math.ceil(size / DDP_BUCKET_BYTES))
            bucket = collective_seconds("all_reduce", size / buckets, nodes, gpus, link, intra, trees)
            return StepTimes(compute, experts + bucket, (Phase((buckets - 1) * bucket, backward / m),))
        # FSDP: each layer's parameters are gathered before its forward and again before its backward, in every
        # micro-batch; gradients are reduce-scattered once per step. The first layer's gather has nothing to
        # hide behind.
        gather = collective_seconds("all_gather", size / w.layers, nodes, gpus, link, intra)
        scatter = w.layers * collective_seconds("reduce_scatter", size / w.layers, nodes, gpus, link, intra)
        fwd = Phase(m * (w.layers - 1) * gather, forward)
        bwd = Phase(m * w.layers * gather + scatter, backward)
        return StepTimes(compute, experts + m * gather, (fwd, bwd))
    # 3D: each node holds one pipeline stage (tensor parallel inside the node)
    stages = max(1, min(w.pipeline_parallel, nodes))
    replicas = max(1, nodes // stages)
    sequences = w.global_batch or max(1, w.tokens_per_gpu * n // max(1, w.seq_len))
    compute = flops_per_token * sequences * w.seq_len / (n * flops_per_gpu)
    microbatches = max(1, sequences // (w.micro_batch * replicas))
    last_backward = 2 * compute / 3 / microbatches  # Megatron overlaps the gradient reduce with the last backward
    compute *= 1 + (stages - 1) / microbatches  # 1F1B pipeline bubble (A.7), present when healthy too
    stage_bytes = size / stages  # a node's share of the gradients, all-reduced across replicas
    dp = collective_seconds("all_reduce", stage_bytes, replicas, gpus, link, intra, trees) if replicas > 1 else 0.0
    activation = w.micro_batch * w.seq_len * w.hidden * w.bytes_per_value
    sends = 2 * (microbatches + stages - 1) if stages > 1 else 0  # forward activations + backward gradients
    pp = sends * (link.latency + activation / link.bandwidth)
    tokens_per_gpu = sequences * w.seq_len / n
    experts = microbatches * _expert_all_to_all(w, tokens_per_gpu / microbatches, gpus, link, intra)
    return StepTimes(compute=compute, critical=pp + experts, phases=(Phase(dp, last_backward),))


# Peers that cannot reach each other over the fabric do not fall back to TCP one pair at a time: NCCL picks its
# network at start, and on EFA a blocked security group or a cross-zone peer fails the connection ("Unable to
# insert remote address into address vector", aws/aws-ofi-nccl#663) or hangs (fabric-requirements A5, A6, A8).
CANNOT_RUN = (
    "peers cannot reach each other over the fabric: NCCL fails or hangs at start, every reserved GPU-hour is lost"
)

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce")


@dataclass(frozen=True)
class CollectiveEstimate:
    algorithm: str  # nvlink (one node), ring, tree or p2p (alltoall)
    algbw: float  # GB/s, 1e9 bytes/s
    busbw: float


def collective_estimate(
    fabric: FabricDescription,
    nodes: int,
    op: str,
    size_bytes: float,
    state: FabricState | None = None,
    worst: bool = False,
) -> CollectiveEstimate | None:
    """One collective over `nodes` nodes of `fabric` in `state` (the best end of its range, or the worst), as
    nccl-tests reports it for a buffer of `size_bytes`, with the algorithm NCCL would run; None when the model
    cannot say (unknown accelerator or bandwidth, peers unreachable). Same model as the step times of `estimate`."""
    accel = catalog.accelerator(fabric.accelerator)
    if accel is None or not accel.nvlink_gbytes or op not in COLLECTIVES:
        return None  # no figure for the links inside the node: nothing to say
    if fabric.gpus_per_node <= 0 or nodes < 1 or size_bytes <= 0:
        return None
    state = state or FabricState.healthy()
    if state.fabric == "unreachable" and nodes > 1:
        return None
    degraded = state.fabric != "healthy" or state.loose_placement
    link = degraded_link(fabric, state, worst) if degraded else healthy_link(fabric)
    if link is None and nodes > 1:
        return None
    link = link or Link(1.0, 0.0)
    name, seconds = algorithm(
        op, size_bytes, nodes, fabric.gpus_per_node, link, intra_bandwidth(accel), two_node_trees(accel, link)
    )
    if seconds <= 0:
        return None
    algbw = size_bytes / seconds / GB
    return CollectiveEstimate(name, algbw, algbw * bus_factor(op, nodes * fabric.gpus_per_node))


def collective_bandwidth(
    fabric: FabricDescription,
    nodes: int,
    op: str,
    size_bytes: float,
    state: FabricState | None = None,
    worst: bool = False,
) -> tuple[float, float] | None:
    """(algbw, busbw) in GB/s of `collective_estimate`, or None."""
    found = collective_estimate(fabric, nodes, op, size_bytes, state, worst)
    return (found.algbw, found.busbw) if found is not None else None


# ---------------------------------------------------------------------------------------------- fabric

FabricHealth = Literal["healthy", "tcp-fallback", "partial", "gpudirect-off", "unreachable"]


@dataclass(frozen=True)
class FabricDescription:
    """What one node's inter-node path offers when nothing is wrong with it."""

    accelerator: str  # a name catalog.accelerator() knows, e.g. "H100"
    gpus_per_node: int
    fabric: FabricKind
    nics: int  # fabric NICs per node
    gbps_per_nic: float  # one direction
    gpudirect_rdma: bool | None
    ethernet_gbps: float | None  # the ordinary NIC that NCCL sockets fall back to
    instance_type: str | None = None  # only names the node in messages; the model does not use it

    @property
    def fabric_gbps(self) -> float:
        """Total fabric bandwidth of the node, one direction (0 when unknown)."""
        return max(0, self.nics) * max(0.0, self.gbps_per_nic)

    @classmethod
    def from_capability(cls, cap: Capability) -> FabricDescription:
        nics = cap.fabric_interfaces
        per_nic = cap.fabric_gbps / nics if cap.fabric_gbps and nics > 0 else 0.0
        return cls(
            accelerator=cap.accelerator_name or "",
            gpus_per_node=cap.accelerators,
            fabric=cap.fabric,
            nics=nics,
            gbps_per_nic=per_nic,
            gpudirect_rdma=cap.gpudirect_rdma,
            ethernet_gbps=cap.ethernet_gbps,
            instance_type=cap.instance_type,
        )

    def scaled(self, share: float) -> FabricDescription:
        """The same fabric with `share` of its bandwidth (same NIC count, each NIC `share` as fast)."""
        return replace(self, gbps_per_nic=self.gbps_per_nic * share)

    @classmethod
    def borrowed(cls, cap: Capability, sibling: Capability) -> FabricDescription:
        """A node of type `cap` judged against the fabric of `sibling` (a same-generation type that has one):
        the sibling's fabric scaled per accelerator (cap.accelerators / sibling.accelerators), with this
        node's accelerator, GPU count and ordinary Ethernet. Pair it with a tcp-fallback state for a type
        whose fabric is weaker than its generation's."""
        own = cls.from_capability(cap)
        share = cap.accelerators / sibling.accelerators if sibling.accelerators > 0 else 0.0
        return replace(
            cls.from_capability(sibling).scaled(share),
            accelerator=own.accelerator,
            gpus_per_node=own.gpus_per_node,
            ethernet_gbps=own.ethernet_gbps,
            instance_type=own.instance_type,
        )


@dataclass(frozen=True)
class FabricState:
    """What is wrong with one node's fabric. `partial` uses `nics_used` of the description's `nics` (0 behaves
    as tcp-fallback, more than `nics` as all of them); loose placement combines with any fabric state."""

    fabric: FabricHealth
    nics_used: int | None = None
    loose_placement: bool = False

    @classmethod
    def healthy(cls, loose_placement: bool = False) -> FabricState:
        return cls("healthy", loose_placement=loose_placement)

    @classmethod
    def tcp_fallback(cls, loose_placement: bool = False) -> FabricState:
        return cls("tcp-fallback", loose_placement=loose_placement)

    @classmethod
    def unreachable(cls, loose_placement: bool = False) -> FabricState:
        return cls("unreachable", loose_placement=loose_placement)

    @classmethod
    def partial(cls, nics_used: int, loose_placement: bool = False) -> FabricState:
        return cls("partial", nics_used=nics_used, loose_placement=loose_placement)

    @classmethod
    def gpudirect_off(cls, loose_placement: bool = False) -> FabricState:
        return cls("gpudirect-off", loose_placement=loose_placement)


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


def _uses_fabric(fabric: FabricDescription) -> bool:
    return fabric.fabric is not FabricKind.NONE and fabric.fabric_gbps > 0


def _tcp_link(fabric: FabricDescription, efficiency: float) -> Link | None:
    if fabric.ethernet_gbps is None or not fabric.ethernet_gbps > 0:
        return None
    return Link(fabric.ethernet_gbps / 8 * GB * efficiency, TCP_LATENCY_S)


def _healthy(fabric: FabricDescription) -> Link | str:
    if _uses_fabric(fabric):
        efficiency, latency = EFFICIENCY.get(fabric.fabric), LATENCY_S.get(fabric.fabric)
        if efficiency is None or latency is None:
            return f"no sourced efficiency for {fabric.fabric} fabrics"
        if fabric.fabric in RDMA_TRANSPORTS and fabric.gpudirect_rdma is False:
            efficiency *= GPUDIRECT_OFF_EFFICIENCY[0]  # an RDMA fabric without GPUDirect stages through host memory
        return Link(fabric.fabric_gbps / 8 * GB * efficiency, latency, fabric.fabric is FabricKind.EFA)
    # No fabric to lose (or no figure for it): TCP over the ordinary NIC is the healthy state.
    link = _tcp_link(fabric, TCP_EFFICIENCY[0])
    return link if link is not None else f"no bandwidth figure for {fabric.instance_type or 'this node type'}"


def _degraded(fabric: FabricDescription, state: FabricState, healthy: Link, best: bool) -> Link | str:
    side = 0 if best else 1
    kind = state.fabric
    used = state.nics_used
    if kind == "partial":
        if used is None:
            return "partial fabric: how many fabric NICs are in use is unknown"
        if used <= 0:
            kind = "tcp-fallback"  # none of the fabric NICs: NCCL falls back to sockets
    link = healthy
    if kind in ("tcp-fallback", "unreachable"):
        tcp = _tcp_link(fabric, TCP_EFFICIENCY[side])
        if tcp is None:
            return "no ordinary-Ethernet bandwidth figure for this type"
        link = Link(min(link.bandwidth, tcp.bandwidth), tcp.latency)
    elif kind == "partial" and used is not None and fabric.nics > 0 and _uses_fabric(fabric):
        link = replace(link, bandwidth=link.bandwidth * (min(used, fabric.nics) / fabric.nics))
    elif kind == "gpudirect-off" and fabric.gpudirect_rdma and _uses_fabric(fabric):
        link = replace(link, bandwidth=link.bandwidth * GPUDIRECT_OFF_EFFICIENCY[side])
    if state.loose_placement and not best:
        link = replace(link, latency=link.latency * LOOSE_PLACEMENT_LATENCY_FACTOR)
    return link


def healthy_link(fabric: FabricDescription) -> Link | None:
    """A node's inter-node link with nothing wrong, or None when no bandwidth figure is known."""
    link = _healthy(fabric)
    return link if isinstance(link, Link) else None


def degraded_link(fabric: FabricDescription, state: FabricState, worst: bool = False) -> Link | None:
    """A node's inter-node link in `state`, at the best (default) or worst end of the range; None when it
    cannot be modelled."""
    healthy = _healthy(fabric)
    if isinstance(healthy, str):
        return None
    link = _degraded(fabric, state, healthy, best=not worst)
    return link if isinstance(link, Link) else None


def _bottleneck(links: Sequence[Link]) -> Link:
    """A collective runs at its slowest member's pace: least bandwidth, most latency."""
    return Link(min(x.bandwidth for x in links), max(x.latency for x in links), all(x.tuned_trees for x in links))


def estimate_members(members: Sequence[tuple[FabricDescription, FabricState]], workload: Workload) -> Slowdown:
    """Slowdown of `workload` on one node per member. Nodes may differ (mixed types, some degraded): the
    cluster runs at the bottleneck link, with the fewest GPUs per node and the first node's accelerator."""
    return _estimate_distinct(list(dict.fromkeys(members)), len(members), workload)  # identical nodes once


def _estimate_distinct(
    distinct: Sequence[tuple[FabricDescription, FabricState]], nodes: int, workload: Workload
) -> Slowdown:
    """`estimate_members` for `nodes` nodes whose distinct (fabric, state) pairs are `distinct`, first node first."""
    if not distinct or nodes < 1:
        return Slowdown(estimated=False, reason="no nodes")
    if nodes < 2:
        return Slowdown(estimated=False, reason="a single node does not use the inter-node fabric")
    gpus = min(fabric.gpus_per_node for fabric, _ in distinct)
    if gpus <= 0:
        return Slowdown(estimated=False, reason="no accelerators: not a training cluster")
    if any(state.fabric == "unreachable" for _, state in distinct):
        return Slowdown(estimated=True, cannot_run=True, reason=CANNOT_RUN)  # known whatever the accelerator
    name = distinct[0][0].accelerator
    accel = catalog.accelerator(name)
    if accel is None:
        return Slowdown(estimated=False, reason=f"no sourced peak throughput for {name or '?'} accelerators")
    if accel.missing:
        return Slowdown(estimated=False, reason=f"no sourced {' or '.join(accel.missing)} for {name} accelerators")

    healthy_of: dict[FabricDescription, Link] = {}
    for fabric, _ in distinct:
        if fabric not in healthy_of:
            link = _healthy(fabric)
            if isinstance(link, str):
                return Slowdown(estimated=False, reason=link)
            healthy_of[fabric] = link
    sides: list[list[Link]] = [[], []]
    for fabric, state in distinct:
        for side, best_side in enumerate((True, False)):
            degraded = _degraded(fabric, state, healthy_of[fabric], best_side)
            if isinstance(degraded, str):
                return Slowdown(estimated=False, reason=degraded)
            sides[side].append(degraded)
    healthy, best, worst = _bottleneck(list(healthy_of.values())), _bottleneck(sides[0]), _bottleneck(sides[1])

    healthy_step, low, high = degraded_step_range(
        step_times(workload, nodes, gpus, accel, healthy),
        step_times(workload, nodes, gpus, accel, best),
        step_times(workload, nodes, gpus, accel, worst),
    )
    slow_low, slow_high = low / healthy_step, high / healthy_step
    reason = None
    states = [state for _, state in distinct]
    if any(s.loose_placement for s in states) and all(s.fabric == "healthy" for s in states):
        # No cloud publishes what looser placement costs in bandwidth (penalty-model F: AWS, Azure and GCP alike).
        reason = f"loose placement: no published bandwidth cost; latency-only estimate, {slow_high:.3f}x at most"
    return Slowdown(
        estimated=True,
        reason=reason,
        low=slow_low,
        high=slow_high,
        healthy_step_seconds=healthy_step,
        degraded_step_seconds_low=low,
        degraded_step_seconds_high=high,
        healthy_gbytes_per_s=healthy.bandwidth / GB,
        degraded_best_gbytes_per_s=best.bandwidth / GB,
        degraded_worst_gbytes_per_s=worst.bandwidth / GB,
    )


def estimate(fabric: FabricDescription, nodes: int, state: FabricState, workload: Workload) -> Slowdown:
    """Slowdown of `workload` on `nodes` identical nodes, all in `state`."""
    return _estimate_distinct([(fabric, state)], max(0, nodes), workload)


# ---------------------------------------------------------------------------------------------- report


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
        return Penalty(workload=workload.name, estimated=False, reason=slowdown.reason)
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
            workload=workload.name,
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
        workload=workload.name,
        estimated=True,
        reason=slowdown.reason,
        slowdown=Range(low=slowdown.low, high=slowdown.high),
        price_per_gpu_hour=price_per_gpu_hour,
        healthy_step_seconds=slowdown.healthy_step_seconds,
        degraded_step_seconds=degraded,
        inter_node_gbytes_per_s=bandwidth or None,
        **figures,
    )
