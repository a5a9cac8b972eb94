"""What a training job moves and computes per step: the named workloads and the shape of a user's own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fabriccheck.penalty import releases

# PyTorch DDP default gradient bucket (bucket_cap_mb=25, pytorch/pytorch#118421).
DDP_BUCKET_BYTES = 25e6

Strategy = Literal["fsdp", "ddp", "3d"]
# How FSDP wraps the model (each unit is gathered with one all-gather; docs.pytorch.org/docs/stable/
# distributed.fsdp.fully_shard.html): `layer`, one unit per transformer block (torchtitan and the FSDP tutorials
# wrap each block; the default); `model`, one unit around the whole model, whose parameters the root keeps
# gathered from forward into backward (fully_shard: the root's reshard_after_forward is False, "since its
# parameters would typically be immediately all-gathered for backward"); `hybrid`, HSDP (ShardingStrategy
# HYBRID_SHARD, "FULL_SHARD within a node, and replicate parameters across nodes"; fully_shard on a 2D mesh).
FsdpWrap = Literal["layer", "model", "hybrid"]
FSDP_WRAPS: tuple[FsdpWrap, ...] = ("layer", "model", "hybrid")


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
    tensor_parallel: int = 1  # 3d: GPUs a layer is split over (beyond a node's GPUs it crosses the network)
    pipeline_parallel: int = 1
    micro_batch: int = 1  # 3d: sequences per micro-batch
    bytes_per_value: int = 2  # BF16 parameters and gradients
    source: str = ""
    micro_batches: int = 1  # fsdp/ddp: gradient-accumulation steps per optimizer step (FSDP re-gathers in each)
    expert_parallel: int = 1  # MoE: GPUs an expert all-to-all spans
    top_k: int = 2  # MoE: experts each token is routed to
    active_parameters: float = 0.0  # MoE: parameters one token uses (FLOPs); 0 = all of them
    bucket_bytes: float = DDP_BUCKET_BYTES  # ddp: gradient bucket
    # A step time the user measured with a healthy fabric, and on how many nodes: it replaces the accelerator's
    # MFU prior for this job (0: use the prior).
    measured_step_seconds: float = 0.0
    measured_nodes: int = 0
    # NCCL's socket transport as the job sets it (None: NCCL's default for the NIC, penalty.links.nccl_sockets):
    # NCCL_SOCKET_NTHREADS, NCCL_NSOCKS_PERTHREAD, and the channels a log of the job shows ("N coll channels").
    socket_threads: int | None = None
    sockets_per_thread: int | None = None
    socket_channels: int | None = None
    fsdp_wrap: FsdpWrap = "layer"  # fsdp: how the model is wrapped (FSDP_WRAPS)
    # ddp: whether gradient buckets are reduced during the backward pass as their gradients become ready (PyTorch
    # DDP's reducer, docs.pytorch.org/docs/stable/notes/ddp.html: "overlapping the gradient communication with
    # backward computation"; the default), or only after it ends (DeepSpeed ZeRO-1, whose backward hooks reduce
    # nothing, microsoft/DeepSpeed#1246; ZeRO-2 with zero_optimization.overlap_comm false).
    ddp_overlap: bool = True
    # The NCCL release the job runs, (major, minor) (None: links.DEFAULT_NCCL_VERSION): it decides the algorithm
    # NCCL picks at 2 nodes (collectives.two_node_trees).
    nccl_version: tuple[int, int] | None = None


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
            "llm-8b-fsdp",
            "8B-class dense LLM, FSDP over all GPUs, local batch 2 x 8192",
            8e9,
            32,
            4096,
            8192,
            "fsdp",
            tokens_per_gpu=16384,
            source="pytorch/torchtitan@eaea6f6 docs/performance.md Tables 1 and 3 (Llama 3.1 8B, FSDP, local batch 2)",
        ),
        Workload(
            "llm-1b-ddp",
            "1B-class dense LLM, DDP / ZeRO-1 (a model small GPUs can train: 16 GB cards and up)",
            1.24e9,
            16,
            2048,
            8192,
            "ddp",
            tokens_per_gpu=8192,
            source="Llama-3.2-1B shape (meta-llama/Llama-3.2-1B config.json: hidden_size 2048, 16 layers, 1.24B "
            "parameters); local batch 1 x 8192 as llm-8b-ddp",
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
        Workload(
            "moe-47b-fsdp",
            "Mixtral-8x7B-class MoE (47B parameters, 13B active), FSDP, experts all-to-all over 8 GPUs",
            46.7e9,
            32,
            4096,
            4096,
            "fsdp",
            tokens_per_gpu=8192,
            expert_parallel=8,
            active_parameters=12.9e9,
            source="Mixtral-8x7B shape (mistralai, 46.7B total / 12.9B active, top-2 of 8 experts)",
        ),
    )
}
DEFAULT_WORKLOAD = "llm-70b-fsdp"


def release_line(w: Workload) -> str:
    """The NCCL release the step is priced with (it decides the 2-node algorithm), default named, for every report."""
    if w.nccl_version is not None:
        return f"NCCL {releases.version_label(w.nccl_version)} (the workload file's nccl_version)"
    default = releases.version_label(releases.DEFAULT_NCCL_VERSION)
    return f"NCCL {default} (the default; a workload file's nccl_version sets it)"


def layout_line(w: Workload) -> str:
    """The data-parallel layout the step is priced with, defaults named, for every report."""
    if w.strategy == "fsdp":
        said = {
            "layer": "FSDP wrapping each layer (the default; fsdp_wrap: layer, model or hybrid)",
            "model": "FSDP wrapping the whole model in one unit (fsdp_wrap: model)",
            "hybrid": "hybrid-shard FSDP: sharded inside a node, replicated across nodes (fsdp_wrap: hybrid)",
        }
        return said[w.fsdp_wrap]
    if w.strategy == "ddp":
        default = " (the default)" if w.bucket_bytes == DDP_BUCKET_BYTES else ""
        if not w.ddp_overlap:
            return (
                f"DDP, {w.bucket_bytes / 1e6:g} MB gradient buckets{default} reduced after the backward pass ends"
                " (ddp_overlap: false)"
            )
        return (
            f"DDP, {w.bucket_bytes / 1e6:g} MB gradient buckets{default} reduced during the backward pass"
            " (ddp_overlap: true, the default)"
        )
    return f"3D: tensor {w.tensor_parallel}, pipeline {w.pipeline_parallel}, data parallel across the rest"


def is_workload_file(name: str) -> bool:
    """A --workload value that names a user's workload file (YAML or TOML) rather than a preset."""
    return name.lower().endswith((".yaml", ".yml", ".toml"))
