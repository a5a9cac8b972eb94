"""Step times: compute from 6·N·T and an MFU prior, communication per parallel layout, and what of it hides.

Data parallelism (DDP / ZeRO-1-2: one gradient all-reduce, bucketed; FSDP / ZeRO-3: per-layer gathers and a
reduce-scatter), tensor parallelism (activation all-reduces on the critical path, over the network once a layer
spans more GPUs than a node holds), pipeline parallelism (1F1B bubble, activation sends between stages) and expert
parallelism (all-to-alls per MoE layer). Communication hides only behind the compute independent of it (forward
gathers behind the forward pass, gradient traffic behind the backward pass), up to that compute, and what hides
still costs the SMs NCCL's kernels occupy (COMM_SM_OVERHEAD).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fabriccheck import catalog
from fabriccheck.penalty.collectives import collective_seconds, intra_bandwidth, two_node_trees
from fabriccheck.penalty.links import Link
from fabriccheck.penalty.workloads import Workload

# Communication that hides behind compute still slows it: NCCL's kernels occupy SMs (NCCL_MIN_CTAS/MAX_CTAS;
# penalty-model A.5), and the two streams contend for memory bandwidth. The share of each hidden second that still
# costs compute, fitted on the weak-scaling row of data/calibration.yaml that names it (pytorch/torchtitan@eaea6f6
# docs/performance.md, Llama 3.1 8B FSDP, 8 -> 128 H100 on 400 Gb/s-per-GPU RoCE: 5,762 -> 5,605 tokens/s/GPU,
# 0.973; the model reaches it at 0.92). The held-out weak-scaling rows (NVIDIA/dgxc-benchmarking Llama 3.1 8B and
# 70B on DGX H100) stay within 1.5% with it.
COMM_SM_OVERHEAD = 0.92


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
        """Step time; with overlap, each phase's communication hides behind its own window, up to that window,
        and what hides still costs COMM_SM_OVERHEAD of itself."""
        if not overlap:
            return self.compute + self.communication
        exposed = sum(max(0.0, p.comm - p.window) for p in self.phases)
        hidden = sum(min(p.comm, p.window) for p in self.phases)
        return self.compute + self.critical + exposed + COMM_SM_OVERHEAD * hidden


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


def step_times(
    w: Workload,
    nodes: int,
    gpus: int,
    accel: catalog.Accelerator,
    link: Link,
    compute_scale: float = 1.0,
    domain: bool = False,
) -> StepTimes:
    """One optimizer step of `w` on `nodes` x `gpus` GPUs whose inter-node link is `link` (one node: NVLink only).
    `compute_scale` stretches the compute (a measured step time in place of the MFU prior); `domain`: each unit is
    a multi-node NVLink domain of several nodes (its measured busbw inside)."""
    assert accel.peak_tflops is not None and accel.mfu is not None  # estimates check `missing`
    flops_per_gpu = accel.peak_tflops * 1e12 * accel.mfu / compute_scale
    # Model FLOPs per token: 6·N plus attention 12·L·h·s (PaLM appendix B, as torchtitan computes it;
    # penalty-model C.1 and C.4). MoE: N is the parameters one token uses.
    flops_per_token = 6 * (w.active_parameters or w.parameters) + 12 * w.layers * w.hidden * w.seq_len
    intra = intra_bandwidth(accel, domain)
    if w.strategy in ("fsdp", "ddp"):
        tokens = tokens_per_gpu(w, nodes * gpus)
        return _data_parallel(w, tokens, nodes, gpus, accel, link, flops_per_token * tokens / flops_per_gpu, intra)
    return _three_d(w, nodes, gpus, accel, link, flops_per_token, flops_per_gpu, intra)


def tokens_per_gpu(w: Workload, gpus: int) -> float:
    """Tokens each GPU trains on per step: the workload's own figure (weak scaling), or its global batch shared by
    all `gpus` (strong scaling)."""
    if w.tokens_per_gpu:
        return float(w.tokens_per_gpu)
    return w.global_batch * w.seq_len / max(1, gpus)


def _data_parallel(
    w: Workload,
    tokens: float,
    nodes: int,
    gpus: int,
    accel: catalog.Accelerator,
    link: Link,
    compute: float,
    intra: float,
) -> StepTimes:
    size = w.parameters * w.bytes_per_value
    m = max(1, w.micro_batches)
    forward, backward = compute / 3, 2 * compute / 3  # backward does twice the forward's FLOPs
    experts = m * _expert_all_to_all(w, tokens / m, gpus, link, intra)
    if w.strategy == "ddp":
        # One all-reduce per step (no_sync while accumulating), bucket by bucket during the last backward;
        # the last bucket is reduced after the backward pass ends. Without overlap (ddp_overlap false) every
        # bucket waits for the backward pass to end: nothing hides.
        buckets = max(1, math.ceil(size / max(1.0, w.bucket_bytes)))
        trees = two_node_trees(accel, link, gpus)
        bucket = collective_seconds("all_reduce", size / buckets, nodes, gpus, link, intra, trees)
        window = backward / m if w.ddp_overlap else 0.0
        return StepTimes(compute, experts + bucket, (Phase((buckets - 1) * bucket, window),))
    if w.fsdp_wrap == "model":
        return _fsdp_whole_model(w, size, nodes, gpus, link, intra, compute, experts)
    if w.fsdp_wrap == "hybrid":
        return _hsdp(w, size, nodes, gpus, accel, link, intra, compute, experts)
    # FSDP: each layer's parameters are gathered before its forward and again before its backward, in every
    # micro-batch; gradients are reduce-scattered once per step. The first layer's gather has nothing to
    # hide behind.
    gather = collective_seconds("all_gather", size / w.layers, nodes, gpus, link, intra)
    scatter = w.layers * collective_seconds("reduce_scatter", size / w.layers, nodes, gpus, link, intra)
    fwd = Phase(m * (w.layers - 1) * gather, forward)
    bwd = Phase(m * w.layers * gather + scatter, backward)
    return StepTimes(compute, experts + m * gather, (fwd, bwd))


def _fsdp_whole_model(
    w: Workload, size: float, nodes: int, gpus: int, link: Link, intra: float, compute: float, experts: float
) -> StepTimes:
    """FSDP with one unit around the whole model: one all-gather of every parameter before the forward (the root
    keeps them for the backward) and one reduce-scatter of every gradient after it, in each micro-batch; no
    compute runs beside either (2x the parameters' volume, all of it exposed)."""
    m = max(1, w.micro_batches)
    gather = collective_seconds("all_gather", size, nodes, gpus, link, intra)
    scatter = collective_seconds("reduce_scatter", size, nodes, gpus, link, intra)
    return StepTimes(compute, experts + m * (gather + scatter))


def _hsdp(
    w: Workload,
    size: float,
    nodes: int,
    gpus: int,
    accel: catalog.Accelerator,
    link: Link,
    intra: float,
    compute: float,
    experts: float,
) -> StepTimes:
    """Hybrid sharding: per-layer gathers and reduce-scatters inside the node (NVLink), and each GPU's gradient
    shard all-reduced across the nodes' replicas once per step, layer by layer during the backward pass (the
    nodes together move the whole gradient, as DDP's all-reduce does); the last layer's is exposed."""
    m = max(1, w.micro_batches)
    forward, backward = compute / 3, 2 * compute / 3
    gather = collective_seconds("all_gather", size / w.layers, 1, gpus, link, intra)
    scatter = w.layers * collective_seconds("reduce_scatter", size / w.layers, 1, gpus, link, intra)
    trees = two_node_trees(accel, link, gpus)
    reduce = collective_seconds("all_reduce", size / w.layers, nodes, gpus, link, intra, trees) if nodes > 1 else 0.0
    fwd = Phase(m * (w.layers - 1) * gather, forward)
    bwd = Phase(m * w.layers * gather + scatter + (w.layers - 1) * reduce, backward)
    return StepTimes(compute, experts + m * gather + reduce, (fwd, bwd))


def _three_d(
    w: Workload,
    nodes: int,
    gpus: int,
    accel: catalog.Accelerator,
    link: Link,
    flops_per_token: float,
    flops_per_gpu: float,
    intra: float,
) -> StepTimes:
    """Megatron-style 3D: a tensor-parallel group fills a node (or several, when the degree exceeds a node's
    GPUs), pipeline stages follow one another across groups, data-parallel replicas take the rest."""
    n = nodes * gpus
    tp_nodes = max(1, math.ceil(w.tensor_parallel / max(1, gpus)))  # nodes one tensor-parallel group spans
    stages = max(1, min(w.pipeline_parallel, nodes // tp_nodes))
    replicas = max(1, nodes // (stages * tp_nodes))
    sequences = w.global_batch or max(1, w.tokens_per_gpu * n // max(1, w.seq_len))
    compute = flops_per_token * sequences * w.seq_len / (n * flops_per_gpu)
    microbatches = max(1, sequences // (w.micro_batch * replicas))
    last_backward = 2 * compute / 3 / microbatches  # Megatron overlaps the gradient reduce with the last backward
    compute *= 1 + (stages - 1) / microbatches  # 1F1B pipeline bubble (A.7), present when healthy too
    stage_bytes = w.parameters * w.bytes_per_value / stages / tp_nodes  # a node's gradients, reduced across replicas
    trees = two_node_trees(accel, link, gpus)
    dp = collective_seconds("all_reduce", stage_bytes, replicas, gpus, link, intra, trees) if replicas > 1 else 0.0
    activation = w.micro_batch * w.seq_len * w.hidden * w.bytes_per_value
    sends = 2 * (microbatches + stages - 1) if stages > 1 else 0  # forward activations + backward gradients
    pp = sends * (link.latency + activation / tp_nodes / link.bandwidth)
    # Tensor parallelism across nodes: two all-reduces of the activations per layer forward and two backward
    # (Megatron-LM's f/g operators; penalty-model A.6), on the critical path. Inside a node they ride NVLink and
    # are part of the measured MFU.
    tp = 0.0
    if tp_nodes > 1:
        per_layer = collective_seconds("all_reduce", activation, tp_nodes, gpus, link, intra, trees)
        tp = 4 * math.ceil(w.layers / stages) * microbatches * per_layer
    tokens = sequences * w.seq_len / n
    experts = microbatches * _expert_all_to_all(w, tokens / microbatches, gpus, link, intra)
    return StepTimes(compute=compute, critical=pp + experts + tp, phases=(Phase(dp, last_backward),))
