"""Memory fit: whether a workload's weights, gradients and optimizer states fit the GPUs it is priced on, and the
named workload that does when a preset does not (a 70B model is not trained on four 24 GB GPUs).

Activations are not counted (they depend on the micro-batch and recomputation): a workload is refused only when
its states alone cannot fit, and each device's memory is the larger of its part's sizes (accelerators.yaml).
"""

from __future__ import annotations

import math

from fabriccheck import catalog
from fabriccheck.penalty.workloads import WORKLOADS, Workload

# Mixed-precision Adam keeps 16 bytes per parameter: BF16/FP16 weights and gradients (2 + 2) and FP32 master
# weights, momentum and variance (12). Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
# Parameter Models" (SC20), section 3.1: 2Ψ + 2Ψ + KΨ with K = 12, 16Ψ in all (penalty-model A.3 cites its
# reviews). ZeRO-1 shards the 12, ZeRO-2 the gradients too, ZeRO-3 / FSDP all 16.
WEIGHT_BYTES = 2
GRADIENT_BYTES = 2
OPTIMIZER_BYTES = 12
STATE_BYTES = WEIGHT_BYTES + GRADIENT_BYTES + OPTIMIZER_BYTES


def state_bytes_per_gpu(w: Workload, nodes: int, gpus_per_node: int) -> float:
    """Bytes of weights, gradients and Adam states one GPU holds for `w` on `nodes` x `gpus_per_node` GPUs."""
    psi, gpus = w.parameters, max(1, nodes * gpus_per_node)
    if w.strategy == "ddp":
        # ddp stands for DDP and ZeRO-1/2 alike: priced at ZeRO-2's (weights whole, the rest sharded), the least
        # any of them holds, so none is refused that one of them fits.
        return WEIGHT_BYTES * psi + (GRADIENT_BYTES + OPTIMIZER_BYTES) * psi / gpus
    if w.strategy == "fsdp":
        if w.fsdp_wrap == "hybrid":
            return STATE_BYTES * psi / max(1, gpus_per_node)  # sharded inside the node only
        sharded = STATE_BYTES * psi / gpus
        if w.fsdp_wrap == "model":
            return sharded + (WEIGHT_BYTES + GRADIENT_BYTES) * psi  # the whole model gathered, its gradients too
        return sharded + 2 * WEIGHT_BYTES * psi / max(1, w.layers)  # a layer gathered, the next prefetched
    # 3D: a GPU holds 1/(tensor x pipeline) of the model; the distributed optimizer (ZeRO-1) shards the 12 over
    # the data-parallel replicas (Megatron-LM's --use-distributed-optimizer), as in steps._three_d's layout.
    tp_nodes = max(1, math.ceil(w.tensor_parallel / max(1, gpus_per_node)))
    stages = max(1, min(w.pipeline_parallel, nodes // tp_nodes))
    replicas = max(1, nodes // (stages * tp_nodes))
    shards = min(w.tensor_parallel, gpus_per_node * tp_nodes) * stages
    return ((WEIGHT_BYTES + GRADIENT_BYTES) * psi + OPTIMIZER_BYTES * psi / replicas) / max(1, shards)


def fits(w: Workload, nodes: int, gpus_per_node: int, accel: catalog.Accelerator) -> bool:
    memory = accel.memory_gbytes
    return memory is None or state_bytes_per_gpu(w, nodes, gpus_per_node) <= memory * 1e9


def fitted(
    w: Workload, nodes: int, gpus_per_node: int, accel: catalog.Accelerator
) -> tuple[Workload | None, str | None]:
    """(the workload to price, what was said about its fit): `w` itself when it fits; for a named workload that
    does not, the largest named one that does (the same layout first); None with the reason when none fits or
    the workload is the user's own."""
    if fits(w, nodes, gpus_per_node, accel):
        return w, None
    need = state_bytes_per_gpu(w, nodes, gpus_per_node) / 1e9
    where = f"{nodes} x {gpus_per_node} {accel.name} ({accel.memory_gbytes:g} GB each)"
    said = f"{w.name} does not fit {where}: its weights, gradients and Adam states need {need:,.0f} GB a GPU"
    if WORKLOADS.get(w.name) != w:
        return None, f"{said}; shard it more (fsdp, more nodes) or describe a smaller job in the workload file"
    moe = w.expert_parallel > 1  # a dense job is priced as a dense one, an MoE as an MoE, where one fits
    ranked = sorted(
        WORKLOADS.values(),
        key=lambda o: (o.strategy != w.strategy, (o.expert_parallel > 1) != moe, -o.parameters, o.name),
    )
    other = next((o for o in ranked if o != w and fits(o, nodes, gpus_per_node, accel)), None)
    if other is None:
        return None, f"{said}, and no named workload fits; give yours with --workload-file"
    return other, f"{said}: priced as {other.name} ({other.description}), the largest named workload that fits"
