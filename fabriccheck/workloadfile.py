"""A user's own training job, from a YAML or TOML file, as the penalty model's Workload.

The file says what the model needs to price a step: the model's size and shape, the precision of what is
communicated, the parallel layout (data, tensor, pipeline, expert), the batch (tokens per GPU for weak scaling, or
a global batch shared by all GPUs) and, when the team measured it, the step time on a healthy fabric and on how
many nodes (it then stands in for the accelerator's MFU prior, so the estimate prices the team's own run).
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

import yaml

from fabriccheck import penalty, textfiles
from fabriccheck.errors import FabricCheckError
from fabriccheck.penalty import releases

# Layout words users write, as the model's three traffic shapes: ZeRO-1/2 move what DDP moves (one gradient
# all-reduce, as reduce-scatter + all-gather), ZeRO-3 is FSDP's full sharding.
STRATEGIES: dict[str, penalty.Strategy] = {
    "ddp": "ddp",
    "zero1": "ddp",
    "zero-1": "ddp",
    "zero2": "ddp",
    "zero-2": "ddp",
    "fsdp": "fsdp",
    "zero3": "fsdp",
    "zero-3": "fsdp",
    "3d": "3d",
    "megatron": "3d",
}
# Bytes per communicated parameter or gradient value. The compute peak stays the accelerator's dense BF16 figure.
PRECISIONS = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
WORKLOAD_FIELDS = {
    "name": "a name for the report",
    "description": "free text",
    "parameters": "model parameters (a number, or 70B / 8e9)",
    "active_parameters": "MoE: parameters one token uses",
    "layers": "transformer layers",
    "hidden": "hidden size",
    "seq_len": "sequence length",
    "tokens_per_gpu": "tokens per GPU per optimizer step (weak scaling)",
    "global_batch": "sequences per optimizer step, shared by all GPUs (strong scaling)",
    "micro_batches": "gradient-accumulation micro-batches per step",
    "micro_batch": "3d: sequences per micro-batch",
    "parallelism": "ddp, zero1, zero2, zero3/fsdp or 3d",
    "tensor_parallel": "3d: tensor-parallel degree (beyond a node's GPUs it crosses the network)",
    "pipeline_parallel": "3d: pipeline stages",
    "expert_parallel": "MoE: GPUs an expert all-to-all spans",
    "top_k": "MoE: experts per token",
    "precision": "fp32, bf16, fp16 or fp8 (bytes of communicated values)",
    "bucket_mb": "ddp: gradient bucket in MB (PyTorch's bucket_cap_mb, 25 by default)",
    "ddp_overlap": "ddp: true (the default: buckets reduced during the backward pass, as PyTorch DDP does) or false"
    " (after it: DeepSpeed ZeRO-1, or ZeRO-2 without overlap_comm)",
    "step_seconds": "a step time you measured with a healthy fabric (replaces the MFU prior)",
    "step_nodes": "the nodes that step time was measured on",
    "nccl_socket_nthreads": "NCCL_SOCKET_NTHREADS as the job sets it (NCCL's default for the NIC if absent)",
    "nccl_nsocks_perthread": "NCCL_NSOCKS_PERTHREAD as the job sets it (NCCL's default for the NIC if absent)",
    "nccl_channels": "NCCL channels over sockets, from a log of the job (`N coll channels`)",
    "nccl_version": "the NCCL release the job runs, e.g. 2.21 or 2.21.5 (default: the model's, in every estimate)",
    "fsdp_wrap": "fsdp: layer (each transformer block, the default), model (one unit) or hybrid (HSDP)",
}
_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}
_SIZED = (
    ("layers", None),
    ("hidden", None),
    ("seq_len", None),
    ("micro_batches", 1),
    ("micro_batch", 1),
    ("tensor_parallel", 1),
    ("pipeline_parallel", 1),
    ("expert_parallel", 1),
    ("top_k", 2),
)


def _number(doc: dict[str, Any], key: str, where: str, integer: bool = True, default: float | None = None) -> float:
    value = doc.get(key, default)
    if value is None:
        raise FabricCheckError(f"{where}: {key} is missing ({WORKLOAD_FIELDS[key]})")
    number: float | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip().lower().replace("_", "")
        scale = _SUFFIX.get(text[-1:], 1.0) if text else 1.0
        try:
            number = float(text[:-1] if scale != 1.0 else text) * scale
        except ValueError:
            number = None
    if number is None or not math.isfinite(number) or number <= 0 or (integer and number != int(number)):
        kind = "a whole number above 0" if integer else "a number above 0"
        raise FabricCheckError(f"{where}: {key} {value!r} is not {kind}")
    return number


def _document(path: Path, option: str) -> dict[str, Any]:
    where = f"{option} {path}"
    text = textfiles.read_text(path, option)  # UTF-8 only: one line naming the file otherwise
    try:
        doc = textfiles.load_toml(text) if path.suffix.lower() == ".toml" else textfiles.load_yaml(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        kind = "TOML" if path.suffix.lower() == ".toml" else "YAML"
        raise FabricCheckError(f"{where}: not valid {kind}: {first}") from None
    return _checked(doc, where)


def _checked(doc: Any, where: str) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise FabricCheckError(f"{where}: expected a mapping of workload fields ({', '.join(WORKLOAD_FIELDS)})")
    unknown = sorted(str(k) for k in doc if k not in WORKLOAD_FIELDS)
    if unknown:
        raise FabricCheckError(f"{where}: unknown field {unknown[0]} (known: {', '.join(WORKLOAD_FIELDS)})")
    return doc


def _choice(doc: dict[str, Any], key: str, default: str, known: dict[str, Any], where: str) -> str:
    word = str(doc.get(key, default)).strip().lower()
    if word not in known:
        raise FabricCheckError(f"{where}: {key} {word!r}: choose from {', '.join(known)}")
    return word


def _batch(doc: dict[str, Any], strategy: penalty.Strategy, where: str) -> tuple[int, int]:
    """(tokens per GPU, global batch): one of them, as the file gives it (3d defaults to a global batch)."""
    if "tokens_per_gpu" in doc:
        return int(_number(doc, "tokens_per_gpu", where)), 0
    if "global_batch" in doc or strategy == "3d":
        return 0, int(_number(doc, "global_batch", where))
    return int(_number(doc, "tokens_per_gpu", where)), 0


def _measured(doc: dict[str, Any], where: str) -> tuple[float, int]:
    if "step_seconds" not in doc and "step_nodes" not in doc:
        return 0.0, 0
    seconds = _number(doc, "step_seconds", where, integer=False)
    return seconds, int(_number(doc, "step_nodes", where))


def workload_from_file(path: Path, option: str = "--workload-file") -> penalty.Workload:
    """A user's workload from a YAML or TOML file (fields: WORKLOAD_FIELDS). Bad input raises FabricCheckError
    naming the option, the file and the field."""
    return workload_from_mapping(_document(path, option), f"{option} {path}", path.stem, str(path))


def workload_from_mapping(doc: Any, where: str, name: str = "workload", source: str = "") -> penalty.Workload:
    """A workload from the fields of a workload file, already read (`where` names it in errors)."""
    doc = _checked(doc, where)
    layout = _choice(doc, "parallelism", "fsdp", STRATEGIES, where)
    strategy = STRATEGIES[layout]
    precision = _choice(doc, "precision", "bf16", PRECISIONS, where)
    parameters = _number(doc, "parameters", where, integer=False)
    active = _number(doc, "active_parameters", where, integer=False, default=parameters)
    if active > parameters:
        raise FabricCheckError(f"{where}: active_parameters exceeds parameters")
    sized = {key: int(_number(doc, key, where, default=default)) for key, default in _SIZED}
    tokens, batch = _batch(doc, strategy, where)
    seconds, nodes = _measured(doc, where)
    bucket = _number(doc, "bucket_mb", where, integer=False, default=penalty.DDP_BUCKET_BYTES / 1e6) * 1e6
    return penalty.Workload(
        name=str(doc.get("name") or name),
        description=str(doc.get("description") or f"{layout} workload from {source or name}"),
        parameters=parameters,
        layers=sized["layers"],
        hidden=sized["hidden"],
        seq_len=sized["seq_len"],
        strategy=strategy,
        tokens_per_gpu=tokens,
        global_batch=batch,
        tensor_parallel=sized["tensor_parallel"],
        pipeline_parallel=sized["pipeline_parallel"],
        micro_batch=sized["micro_batch"],
        bytes_per_value=PRECISIONS[precision],
        source=source,
        micro_batches=sized["micro_batches"],
        expert_parallel=sized["expert_parallel"],
        top_k=sized["top_k"],
        active_parameters=active,
        bucket_bytes=bucket,
        measured_step_seconds=seconds,
        measured_nodes=nodes,
        socket_threads=_count(doc, "nccl_socket_nthreads", where),
        sockets_per_thread=_count(doc, "nccl_nsocks_perthread", where),
        socket_channels=_count(doc, "nccl_channels", where),
        fsdp_wrap=_wrap(doc, where),
        ddp_overlap=_flag(doc, "ddp_overlap", True, where),
        nccl_version=_nccl_version(doc, where),
    )


def _nccl_version(doc: dict[str, Any], where: str) -> tuple[int, int] | None:
    if "nccl_version" not in doc:
        return None
    value = doc["nccl_version"]
    found = releases.nccl_version_of(value) if isinstance(value, str) else None
    if found is None:
        raise FabricCheckError(f'{where}: nccl_version {value!r} is not an NCCL release (quote it: "2.21", "2.21.5")')
    return found


def _flag(doc: dict[str, Any], key: str, default: bool, where: str) -> bool:
    """A true/false field (YAML and TOML booleans only: a word like "yes" in quotes is refused)."""
    value = doc.get(key, default)
    if not isinstance(value, bool):
        raise FabricCheckError(f"{where}: {key} must be true or false, not {value!r}")
    return value


def _wrap(doc: dict[str, Any], where: str) -> penalty.FsdpWrap:
    word = _choice(doc, "fsdp_wrap", "layer", {w: w for w in penalty.FSDP_WRAPS}, where)
    return next(w for w in penalty.FSDP_WRAPS if w == word)


def _count(doc: dict[str, Any], key: str, where: str) -> int | None:
    """An optional whole-number NCCL setting (0 allowed: NCCL_SOCKET_NTHREADS=0 is no helper thread)."""
    if key not in doc:
        return None
    value = doc[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FabricCheckError(f"{where}: {key} {value!r} is not a whole number (0 or more)")
    return value
