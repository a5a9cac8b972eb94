"""What a cluster's findings cost: slower steps, extra GPU-hours, dollars.

The model (reference: penalty-model.md) is an alpha-beta model of the collectives a workload runs per step:
hierarchical all-reduce / reduce-scatter / all-gather with NVLink inside the node and `efficiency x node
bandwidth` between nodes, point-to-point for pipeline stages. Compute time comes from 6·N·T and an MFU prior
per accelerator. Findings change the inter-node link (no fabric -> TCP over the ordinary NIC, k of N NICs,
looser placement); the slowdown is the ratio of degraded to healthy step time, given as a range from perfect
overlap of communication with compute (low) to none (high). Every constant names its source.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from fabriccheck import catalog
from fabriccheck.clusters import Cluster
from fabriccheck.engine import Finding
from fabriccheck.facts import FactBuilder
from fabriccheck.model import Capability, FabricKind, Inventory

GB = 1e9

# Achieved fraction of nominal inter-node bandwidth (busbw / line rate), by transport.
EFFICIENCY = {
    # EFA: 2x p5.48xlarge all_reduce algbw 259.8 GB/s of 400 GB/s = 0.65 (penalty-model B row 4) and 2x p4de
    # 41.8 of 50 = 0.84 (row 5); their mean.
    FabricKind.EFA: 0.75,
    # InfiniBand: Voltage Park 4 nodes x 8 H100, 330.9 GB/s busbw of 400 GB/s = 0.83 (row 15).
    FabricKind.INFINIBAND: 0.83,
    # RoCE/MRDMA: tuned RoCE performs within about 1% of InfiniBand at equal line rate (penalty-model D).
    FabricKind.RDMA: 0.83,
    # GPUDirect-TCPXO: a3-megagpu-8g ~340 GB/s busbw at 2 nodes (row 1) against 200 GB/s of GPU NICs: 2-node
    # busbw overstates (rule R0), so take algbw-like 340/1.875/200 = 0.91, capped as InfiniBand's.
    FabricKind.TCPXO: 0.83,
    FabricKind.TCPX: 0.83,  # no published TCPX sweep found; assumed as TCPXO
}
# NCCL over TCP sockets on the ordinary NIC, as a fraction of that NIC's line rate. Worst: ~4 GB/s busbw on a
# 200 Gbps host NIC when TCPXO falls back (row 1) = 0.16. Best: NCCL 2.3.7 reached 41 Gbps on a 100 Gbps
# link where iperf3 did 92 (NVIDIA/nccl#209, row 7) = 0.41.
TCP_EFFICIENCY = (0.41, 0.16)  # (best, worst)
# Latency of one collective between 2 nodes (8-byte nccl-tests rows): p5 EFA 65-74 us (row 4), IB ~30 us
# (row 16). TCP: no published NCCL socket figure; assumed above p4de EFA's 161 us (row 5).
LATENCY_S = {
    FabricKind.EFA: 70e-6,
    FabricKind.INFINIBAND: 30e-6,
    FabricKind.RDMA: 30e-6,
    FabricKind.TCPXO: 123e-6,
    FabricKind.TCPX: 123e-6,
}
TCP_LATENCY_S = 200e-6
# Loose placement: no published bandwidth cost (penalty-model F); modelled as doubled latency on the high side.
LOOSE_PLACEMENT_LATENCY_FACTOR = 2.0
# NVLink achieved fraction: calculon-ai/calculon h100_80g_nvl8.json (0.6) and the A100 file (0.65).
NVLINK_EFFICIENCY = 0.6
# PyTorch DDP default gradient bucket (bucket_cap_mb=25, pytorch/pytorch#118421).
DDP_BUCKET_BYTES = 25e6


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    parameters: float
    layers: int
    hidden: int
    seq_len: int
    strategy: Literal["fsdp", "ddp", "3d"]
    tokens_per_gpu: int = 0  # weak scaling (fsdp/ddp): tokens per GPU per optimizer step
    global_batch: int = 0  # 3d: sequences per optimizer step
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    micro_batch: int = 1
    bytes_per_value: int = 2  # BF16 parameters and gradients
    source: str = ""


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


class Range(BaseModel):
    low: float
    high: float


class Penalty(BaseModel):
    workload: str
    estimated: bool
    reason: str | None = None  # why nothing was estimated, or what limits the estimate
    slowdown: Range = Range(low=1.0, high=1.0)
    extra_gpu_hours_per_day: Range = Range(low=0.0, high=0.0)
    extra_dollars_per_day: Range | None = None
    price_per_gpu_hour: float | None = None
    healthy_step_seconds: float | None = None
    degraded_step_seconds: Range | None = None
    inter_node_gbytes_per_s: dict[str, float] | None = None  # healthy, degraded best, degraded worst


# ---------------------------------------------------------------------------------------------- model


@dataclass(frozen=True)
class Link:
    """One direction of a node's inter-node path: achieved bandwidth (bytes/s) and per-collective latency."""

    bandwidth: float
    latency: float


def collective_seconds(op: str, size: float, nodes: int, gpus: int, link: Link, nvlink: float) -> float:
    """Hierarchical collective (penalty-model A.4): NVLink reduce-scatter / all-gather inside the node,
    ring or tree between nodes. NCCL pipelines the two, so the bandwidth terms overlap (max), latencies add."""
    factor = 2.0 if op == "all_reduce" else 1.0
    intra = factor * (gpus - 1) / gpus * size / nvlink if gpus > 1 else 0.0
    if nodes <= 1:
        return intra
    inter = factor * (nodes - 1) / nodes * size / link.bandwidth
    return max(intra, inter) + link.latency * max(1.0, math.log2(nodes))  # tree latency grows with log N


@dataclass(frozen=True)
class StepTimes:
    compute: float
    critical: float  # communication on the critical path (pipeline sends)
    overlappable: float  # data-parallel traffic that can hide behind compute

    @property
    def communication(self) -> float:
        return self.critical + self.overlappable

    def step(self, overlap: bool) -> float:
        hidden = min(self.overlappable, self.compute) if overlap else 0.0
        return self.compute + self.critical + self.overlappable - hidden


def degraded_step_range(healthy: StepTimes, best: StepTimes, worst: StepTimes) -> tuple[float, float, float]:
    """(healthy step, degraded low, degraded high). Healthy fabrics hide data-parallel traffic, so the
    healthy step overlaps. Low: the degraded traffic overlaps as well. High: the extra traffic the finding
    causes is fully exposed (penalty-model A.5: phi = 0 as the upper bound)."""
    base = healthy.step(overlap=True)
    low = best.step(overlap=True)
    high = base + max(0.0, worst.communication - healthy.communication)
    return base, max(base, low), max(base, low, high)


def step_times(w: Workload, nodes: int, gpus: int, accel: catalog.Accelerator, link: Link) -> StepTimes:
    n = nodes * gpus
    flops_per_gpu = accel.peak_tflops * 1e12 * accel.mfu
    nvlink = accel.nvlink_gbytes * GB * NVLINK_EFFICIENCY
    size = w.parameters * w.bytes_per_value
    # Model FLOPs per token: 6·N plus attention 12·L·h·s (PaLM appendix B, as torchtitan computes it;
    # penalty-model C.1 and C.4).
    flops_per_token = 6 * w.parameters + 12 * w.layers * w.hidden * w.seq_len
    if w.strategy in ("fsdp", "ddp"):
        compute = flops_per_token * w.tokens_per_gpu / flops_per_gpu
        if w.strategy == "ddp":
            comm = collective_seconds("all_reduce", size, nodes, gpus, link, nvlink)
            calls = math.ceil(size / DDP_BUCKET_BYTES)
        else:  # FSDP: all-gather in forward and backward, reduce-scatter of gradients (A.3: 1.5x DDP)
            comm = 2 * collective_seconds("all_gather", size, nodes, gpus, link, nvlink)
            comm += collective_seconds("reduce_scatter", size, nodes, gpus, link, nvlink)
            calls = 3 * w.layers
        extra_latency = max(0, calls - 3) * link.latency * (math.log2(nodes) if nodes > 1 else 0.0)
        return StepTimes(compute=compute, critical=0.0, overlappable=comm + extra_latency)
    # 3D: each node holds one pipeline stage (tensor parallel inside the node)
    stages = max(1, min(w.pipeline_parallel, nodes))
    replicas = max(1, nodes // stages)
    tokens = w.global_batch * w.seq_len
    compute = flops_per_token * tokens / (n * flops_per_gpu)
    microbatches = max(1, w.global_batch // (w.micro_batch * replicas))
    compute *= 1 + (stages - 1) / microbatches  # 1F1B pipeline bubble (A.7), present when healthy too
    stage_bytes = size / stages  # a node's share of the gradients, all-reduced across replicas
    dp = 2 * (replicas - 1) / replicas * stage_bytes / link.bandwidth if replicas > 1 else 0.0
    activation = w.micro_batch * w.seq_len * w.hidden * w.bytes_per_value
    sends = 2 * (microbatches + stages - 1) if stages > 1 else 0  # forward activations + backward gradients
    pp = sends * (link.latency + activation / link.bandwidth)
    return StepTimes(compute=compute, critical=pp, overlappable=dp)


# ---------------------------------------------------------------------------------------------- cluster


def _healthy_link(cap: Capability) -> Link | None:
    if cap.fabric is FabricKind.NONE or not cap.fabric_gbps:
        return None
    return Link(cap.fabric_gbps / 8 * GB * EFFICIENCY[cap.fabric], LATENCY_S[cap.fabric])


def _tcp_link(cap: Capability, efficiency: float) -> Link | None:
    if not cap.ethernet_gbps:
        return None
    return Link(cap.ethernet_gbps / 8 * GB * efficiency, TCP_LATENCY_S)


def estimate(
    cluster: Cluster,
    findings: Iterable[Finding],
    inventory: Inventory,
    workload: Workload,
    price_per_gpu_hour: float | None = None,
    facts: FactBuilder | None = None,
) -> Penalty:
    facts = facts or FactBuilder(inventory)  # the run's own builder carries its capability cache
    caps = [facts.capability(n.instance_type) for n in cluster.nodes]
    base = Penalty(workload=workload.name, estimated=False)
    if cluster.size < 2:
        return base.model_copy(update={"reason": "a single node does not use the inter-node fabric"})
    if any(c is None for c in caps):
        return base.model_copy(update={"reason": "an instance type's capability is unknown"})
    known = [c for c in caps if c is not None]
    gpus = min(c.accelerators for c in known)
    if gpus == 0:
        return base.model_copy(update={"reason": "no accelerators: not a training cluster"})
    name = known[0].accelerator_name or "?"
    accel = catalog.accelerators().get(name)
    if accel is None:
        return base.model_copy(update={"reason": f"no sourced peak throughput for {name} accelerators"})

    effects_by_node: dict[str, set[str]] = {n.id: set() for n in cluster.nodes}
    for finding in findings:
        targets = (
            finding.resources
            if len(finding.resources) == 1 and finding.resources[0] in effects_by_node
            else list(effects_by_node)
        )
        for node_id in targets:
            effects_by_node[node_id].add(finding.effect)

    # Healthy: the type's own fabric, or for a type without one the fabric of the same-generation type the
    # instance-choice rule suggests, scaled per accelerator.
    healthy_links: list[Link] = []
    for node, cap in zip(cluster.nodes, known, strict=True):
        link = _healthy_link(cap)
        if link is None and "weaker-fabric" in effects_by_node[node.id]:
            siblings = facts.siblings(cap.instance_type)
            pick = next((s.capability for s in siblings if s.capability.accelerators >= cap.accelerators), None)
            sibling_link = _healthy_link(pick) if pick else None
            if sibling_link and pick:
                share = cap.accelerators / pick.accelerators
                link = Link(sibling_link.bandwidth * share, sibling_link.latency)
        if link is None:
            link = _tcp_link(cap, TCP_EFFICIENCY[0])  # no fabric to lose: TCP is the healthy state
        if link is None:
            return base.model_copy(update={"reason": f"no bandwidth figure for {cap.instance_type}"})
        healthy_links.append(link)

    def degraded(best: bool) -> Link | None:
        links = []
        for node, cap, healthy in zip(cluster.nodes, known, healthy_links, strict=True):
            effects = effects_by_node[node.id]
            link = healthy
            if effects & {"tcp-fallback", "unreachable", "weaker-fabric"}:
                tcp = _tcp_link(cap, TCP_EFFICIENCY[0 if best else 1])
                if tcp is None:
                    return None
                link = Link(min(link.bandwidth, tcp.bandwidth), tcp.latency)
            elif "partial-fabric" in effects:
                attached = sum(1 for i in node.interfaces if i.is_fabric)
                share = attached / cap.fabric_interfaces if cap.fabric_interfaces else 1.0
                link = Link(link.bandwidth * min(1.0, share), link.latency)
            if "loose-placement" in effects and not best:
                link = Link(link.bandwidth, link.latency * LOOSE_PLACEMENT_LATENCY_FACTOR)
            links.append(link)
        return Link(min(x.bandwidth for x in links), max(x.latency for x in links))

    healthy = Link(min(x.bandwidth for x in healthy_links), max(x.latency for x in healthy_links))
    best, worst = degraded(True), degraded(False)
    if best is None or worst is None:
        return base.model_copy(update={"reason": "no ordinary-Ethernet bandwidth figure for this type"})
    nodes = cluster.size
    healthy_step, low, high = degraded_step_range(
        step_times(workload, nodes, gpus, accel, healthy),
        step_times(workload, nodes, gpus, accel, best),
        step_times(workload, nodes, gpus, accel, worst),
    )
    slowdown = Range(low=low / healthy_step, high=high / healthy_step)
    all_effects = set().union(*effects_by_node.values())
    reason = None
    if all_effects & {"loose-placement"} and not all_effects & {
        "tcp-fallback",
        "unreachable",
        "weaker-fabric",
        "partial-fabric",
    }:
        reason = (
            f"loose placement: AWS publishes no bandwidth cost; latency-only estimate, {slowdown.high:.3f}x at most"
        )
    total_gpus = nodes * gpus
    # penalty-model A.8: extra GPU-hours = healthy GPU-hours x (slowdown - 1), per day of healthy work.
    extra = Range(low=total_gpus * 24 * (slowdown.low - 1), high=total_gpus * 24 * (slowdown.high - 1))
    dollars = None
    if price_per_gpu_hour is not None:
        dollars = Range(low=extra.low * price_per_gpu_hour, high=extra.high * price_per_gpu_hour)
    return Penalty(
        workload=workload.name,
        estimated=True,
        reason=reason,
        slowdown=slowdown,
        extra_gpu_hours_per_day=extra,
        extra_dollars_per_day=dollars,
        price_per_gpu_hour=price_per_gpu_hour,
        healthy_step_seconds=healthy_step,
        degraded_step_seconds=Range(low=low, high=high),
        inter_node_gbytes_per_s={
            "healthy": healthy.bandwidth / GB,
            "degraded_best": best.bandwidth / GB,
            "degraded_worst": worst.bandwidth / GB,
        },
    )
