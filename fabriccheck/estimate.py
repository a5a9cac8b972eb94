"""`fabriccheck estimate`: what a fabric should do, and what a fabric state costs, with no cloud at all.

The same penalty core judges a scanned cluster, so a cluster's penalty and `estimate` for its type, size and
state agree. The fabric comes from an instance type (the catalog) or is described by hand, for any cluster:
on-premises, another cloud, or one being planned.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from fabriccheck import catalog, penalty, textfiles
from fabriccheck.errors import FabricCheckError
from fabriccheck.evidence.failures import unknown_model, usage
from fabriccheck.model import FabricKind

SCHEMA_VERSION = 1
# Message sizes as nccl-tests sweeps them (-b 8 -e 16G -f 4): 8 B to 16 GiB by powers of 4 (and 16 GiB itself).
SIZES = [8 * 4**k for k in range(16)] + [16 * 2**30]
OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall")
TRANSPORTS = {
    "efa": FabricKind.EFA,
    "ib": FabricKind.INFINIBAND,
    "roce": FabricKind.RDMA,
    "tcpx": FabricKind.TCPX,
    "tcpxo": FabricKind.TCPXO,
    "tcp": FabricKind.NONE,
}
_STATE = re.compile(r"^(healthy|tcp|no-gdr|no-placement|unreachable|nics=(\d+))$")


class FabricSummary(BaseModel):
    instance_type: str | None
    accelerator: str
    gpus_per_node: int
    transport: str
    nics: int
    gbps_per_nic: float
    gpudirect_rdma: bool | None
    ethernet_gbps: float | None


class Collective(BaseModel):
    op: str
    bytes: int
    algbw_gbytes_per_s: float
    busbw_gbytes_per_s: float
    algorithm: str  # what NCCL would run: nvlink (one node), ring, tree or p2p (alltoall)


class Range(BaseModel):
    low: float
    high: float


class EstimateReport(BaseModel):
    schema_version: int = SCHEMA_VERSION
    fabric: FabricSummary
    state: str
    nodes: int
    workload: str
    estimated: bool
    cannot_run: bool
    reason: str | None
    notes: list[str]
    collectives: list[Collective]
    step_seconds: Range | None  # the state's step time (healthy when the state is healthy)
    healthy_step_seconds: float | None
    slowdown: Range | None
    # Out of the nodes' GPUs x 24 GPU-hours a day: the share of each lost (1 - 1/slowdown), those lost, dollars.
    gpu_hours_per_day: float
    lost_share: Range | None
    lost_gpu_hours_per_day: Range | None
    lost_dollars_per_day: Range | None


def fabric_of_type(instance_type: str) -> penalty.FabricDescription:
    cap = catalog.resolve(instance_type, {})
    if cap is None:
        raise unknown_model(f"--instance-type {instance_type}: not in the catalog (describe the fabric instead)")
    return penalty.FabricDescription.from_capability(cap)


def accelerator_named(name: str) -> str:
    """The accelerator table's name for `--gpu NAME` (any case, maker and memory words allowed)."""
    found = catalog.accelerator(name.strip())
    if found is None:
        known = ", ".join(sorted(catalog.accelerators()))
        raise unknown_model(f"--gpu {name}: unknown accelerator (known: {known})")
    return found.name


def custom_fabric(
    gpu: str, gpus_per_node: int, nics: int, nic_gbps: float, transport: str, gdr: bool, ethernet_gbps: float | None
) -> penalty.FabricDescription:
    kind = TRANSPORTS.get(transport)
    if kind is None:
        raise usage(f"--transport {transport}: choose from {', '.join(TRANSPORTS)}")
    if gpus_per_node < 1 or nics < 0 or nic_gbps < 0:
        raise usage("--gpus-per-node must be at least 1, --nics and --nic-gbps at least 0")
    if kind is FabricKind.NONE:
        # Plain TCP: the NICs are the ordinary network NCCL's sockets use.
        return penalty.FabricDescription(gpu, gpus_per_node, kind, 0, 0.0, False, ethernet_gbps or nics * nic_gbps)
    return penalty.FabricDescription(gpu, gpus_per_node, kind, nics, nic_gbps, gdr, ethernet_gbps)


def state_named(text: str, fabric: penalty.FabricDescription) -> penalty.FabricState:
    match = _STATE.match(text.strip().lower())
    if match is None:
        raise usage(f"--state {text}: use healthy, tcp, nics=K, no-gdr, no-placement or unreachable")
    word = match.group(1)
    if match.group(2) is not None:
        used = int(match.group(2))
        if used > fabric.nics:
            raise usage(f"--state {text}: the fabric has {fabric.nics} NICs")
        return penalty.FabricState.partial(used)
    return {
        "healthy": penalty.FabricState.healthy(),
        "tcp": penalty.FabricState.tcp_fallback(),
        "no-gdr": penalty.FabricState.gpudirect_off(),
        "no-placement": penalty.FabricState.healthy(loose_placement=True),
        "unreachable": penalty.FabricState.unreachable(),
    }[word]


def run(
    fabric: penalty.FabricDescription,
    nodes: int,
    state_text: str,
    workload: penalty.Workload,
    price_per_gpu_hour: float | None = None,
) -> EstimateReport:
    if nodes < 1:
        raise usage("--nodes must be at least 1")
    state = state_named(state_text, fabric)
    slowdown = penalty.estimate(fabric, nodes, state, workload)
    result = penalty.penalty_of(slowdown, workload, nodes * fabric.gpus_per_node, price_per_gpu_hour)
    notes = []
    if nodes == 1:
        notes.append("one node: no inter-node fabric is used, so no fabric state costs anything")
    if nodes == 2:
        big = penalty.collective_estimate(fabric, nodes, "all_reduce", SIZES[-1], state)
        ratio = 2 * (2 * fabric.gpus_per_node - 1) / (2 * fabric.gpus_per_node)
        if big is not None and big.algorithm == "tree":
            notes.append(
                "at 2 nodes nccl-tests' busbw formula overstates what the network carries: NCCL runs a tree here "
                f"and each node sends the buffer once, so large all_reduce busbw reads up to {ratio:.2f}x the NICs' "
                "rate; compare algbw between 2-node runs"
            )
        elif big is not None or state.fabric == "unreachable":
            notes.append(
                "at 2 nodes NCCL keeps rings here, so busbw is what the NICs carry; a 2-node run with trees "
                f"(NCCL_ALGO, a tuner plugin) reads up to {ratio:.2f}x that, as nccl-tests' busbw formula overstates "
                "there: compare algbw between 2-node runs"
            )
    missing, assumed = figure_lines(fabric.accelerator)
    reason = result.reason
    if missing is not None and result.estimated is False and nodes > 1:
        reason = missing  # one line says which figure is missing
    elif missing is not None:
        notes.append(missing)
    if assumed is not None:
        notes.append(assumed)
    collectives = [
        Collective(op=op, bytes=size, algbw_gbytes_per_s=c.algbw, busbw_gbytes_per_s=c.busbw, algorithm=c.algorithm)
        for op in OPS
        for size in SIZES
        if (c := penalty.collective_estimate(fabric, nodes, op, size, state)) is not None
    ]
    step = None
    if slowdown.degraded_step_seconds_low is not None and slowdown.degraded_step_seconds_high is not None:
        step = Range(low=slowdown.degraded_step_seconds_low, high=slowdown.degraded_step_seconds_high)
    return EstimateReport(
        fabric=_summary(fabric),
        state=state_text,
        nodes=nodes,
        workload=workload.name,
        estimated=result.estimated,
        cannot_run=result.cannot_run,
        reason=reason,
        notes=notes,
        collectives=collectives,
        step_seconds=step,
        healthy_step_seconds=result.healthy_step_seconds,
        slowdown=Range(**result.slowdown.model_dump()) if result.slowdown and result.estimated else None,
        gpu_hours_per_day=nodes * fabric.gpus_per_node * 24.0,
        lost_share=_range(result.lost_share),
        lost_gpu_hours_per_day=_range(result.lost_gpu_hours_per_day),
        lost_dollars_per_day=_range(result.lost_dollars_per_day),
    )


def _range(value: penalty.Range | None) -> Range | None:
    return Range(low=value.low, high=value.high) if value is not None else None


def figure_lines(name: str) -> tuple[str | None, str | None]:
    """(one line naming the figures an accelerator lacks and what is therefore not estimated, one line naming the
    figures that are assumed rather than published), each None when there is nothing to say."""
    accel = catalog.accelerator(name)
    if accel is None:
        wanted = " or ".join([catalog.FIGURES["peak_tflops"], catalog.FIGURES["nvlink_gbytes"]])
        return (
            f"{name or '?'} is not in the accelerator table (fabriccheck/data/accelerators.yaml): no sourced "
            f"{wanted}, so no collectives and no step time",
            None,
        )
    missing = None
    if accel.missing:
        lost = "no collectives and no step time" if accel.nvlink_gbytes is None else "no step time"
        missing = f"no sourced {' or '.join(accel.missing)} for {accel.name}: {lost}"
    assumed = [catalog.FIGURES[f] for f in accel.assumed if f != "mfu"]  # every MFU is a prior (README)
    said = f"{accel.name}'s {' and '.join(assumed)} is assumed, not published (fabriccheck/data/accelerators.yaml)"
    return missing, said if assumed else None


def _summary(fabric: penalty.FabricDescription) -> FabricSummary:
    transport = next((name for name, kind in TRANSPORTS.items() if kind is fabric.fabric), fabric.fabric.value)
    return FabricSummary(
        instance_type=fabric.instance_type,
        accelerator=fabric.accelerator,
        gpus_per_node=fabric.gpus_per_node,
        transport=transport,
        nics=fabric.nics,
        gbps_per_nic=fabric.gbps_per_nic,
        gpudirect_rdma=fabric.gpudirect_rdma,
        ethernet_gbps=fabric.ethernet_gbps,
    )


def with_overrides(
    fabric: penalty.FabricDescription, ethernet_gbps: float | None, no_gdr: bool
) -> penalty.FabricDescription:
    """An instance type's fabric with the user's corrections (their ordinary NIC, GPUDirect off)."""
    if ethernet_gbps is not None:
        fabric = replace(fabric, ethernet_gbps=ethernet_gbps)
    if no_gdr:
        fabric = replace(fabric, gpudirect_rdma=False)
    return fabric


def render_text(report: EstimateReport) -> str:
    f = report.fabric
    head = f.instance_type or f"{f.gpus_per_node} x {f.accelerator}"
    lines = [
        f"fabriccheck estimate · {report.nodes} x {head} · {f.transport} {f.nics} x {f.gbps_per_nic:g} Gbps"
        f" (GPUDirect RDMA {'on' if f.gpudirect_rdma else 'off' if f.gpudirect_rdma is False else 'unknown'})"
        f" · state {report.state} · workload {report.workload}",
        "",
    ]
    if report.collectives:
        lines.append(f"{'op':<15}{'size':>10}{'algbw GB/s':>13}{'busbw GB/s':>13}  algorithm")
        for c in report.collectives:
            if c.bytes in (8, 8 * 4**5, 8 * 4**10, 8 * 4**13, 16 * 2**30):  # a readable subset; JSON has all
                lines.append(
                    f"{c.op:<15}{_size(c.bytes):>10}{_gbytes(c.algbw_gbytes_per_s):>13}"
                    f"{_gbytes(c.busbw_gbytes_per_s):>13}  {c.algorithm}"
                )
        lines.append("")
    if report.cannot_run:
        lines.append(f"cannot run: {report.reason}")
    elif not report.estimated:
        lines.append(f"not estimated: {report.reason}")
    elif report.slowdown is not None and report.healthy_step_seconds is not None:
        lines.append(f"healthy step: {report.healthy_step_seconds:.2f} s")
        lines.append(f"slowdown: {report.slowdown.low:.2f}x–{report.slowdown.high:.2f}x")
    if report.lost_gpu_hours_per_day is not None and report.lost_share is not None:
        hours, share = report.lost_gpu_hours_per_day, report.lost_share
        line = (
            f"GPU-hours lost per day: {_span(hours, '{:,.0f}')} of {report.gpu_hours_per_day:,.0f}"
            f" ({_span(share, '{:.0%}')})"
        )
        if report.lost_dollars_per_day is not None:
            line += f", {_span(report.lost_dollars_per_day, '${:,.0f}')}"
        lines.append(line)
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines) + "\n"


def _span(value: Range, form: str) -> str:
    """`low–high` in `form`, or one figure when both ends read the same."""
    low, high = form.format(value.low), form.format(value.high)
    return low if low == high else f"{low}–{high}"


def _gbytes(value: float) -> str:
    return f"{value:.2f}" if value >= 1 else f"{value:.3g}"


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


# ---------------------------------------------------------------------------------------------- workload files

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
    "tokens_per_gpu": "tokens per GPU per optimizer step",
    "micro_batches": "gradient-accumulation micro-batches per step",
    "global_batch": "3d: sequences per optimizer step",
    "micro_batch": "3d: sequences per micro-batch",
    "parallelism": "ddp, zero1, zero2, zero3/fsdp or 3d",
    "tensor_parallel": "3d: tensor-parallel degree (inside a node)",
    "pipeline_parallel": "3d: pipeline stages (one per node)",
    "expert_parallel": "MoE: GPUs an expert all-to-all spans",
    "top_k": "MoE: experts per token",
    "precision": "fp32, bf16, fp16 or fp8 (bytes of communicated values)",
}
_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


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


def workload_from_file(path: Path, option: str = "--workload-file") -> penalty.Workload:
    """A user's workload from a YAML or TOML file (fields: WORKLOAD_FIELDS). Bad input raises FabricCheckError
    naming the option, the file and the field."""
    where = f"{option} {path}"
    text = textfiles.read_text(path, option)  # UTF-8 only: one line naming the file otherwise
    try:
        doc = textfiles.load_toml(text) if path.suffix.lower() == ".toml" else textfiles.load_yaml(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        kind = "TOML" if path.suffix.lower() == ".toml" else "YAML"
        raise FabricCheckError(f"{where}: not valid {kind}: {first}") from None
    if not isinstance(doc, dict):
        raise FabricCheckError(f"{where}: expected a mapping of workload fields ({', '.join(WORKLOAD_FIELDS)})")
    unknown = sorted(str(k) for k in doc if k not in WORKLOAD_FIELDS)
    if unknown:
        raise FabricCheckError(f"{where}: unknown field {unknown[0]} (known: {', '.join(WORKLOAD_FIELDS)})")
    layout = str(doc.get("parallelism", "fsdp")).strip().lower()
    strategy = STRATEGIES.get(layout)
    if strategy is None:
        raise FabricCheckError(f"{where}: parallelism {layout!r}: choose from {', '.join(STRATEGIES)}")
    precision = str(doc.get("precision", "bf16")).strip().lower()
    if precision not in PRECISIONS:
        raise FabricCheckError(f"{where}: precision {precision!r}: choose from {', '.join(PRECISIONS)}")
    parameters = _number(doc, "parameters", where, integer=False)
    active = _number(doc, "active_parameters", where, integer=False, default=parameters)
    if active > parameters:
        raise FabricCheckError(f"{where}: active_parameters exceeds parameters")
    sized = {
        key: int(_number(doc, key, where, default=default))
        for key, default in (
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
    }
    tokens = int(_number(doc, "tokens_per_gpu", where)) if strategy != "3d" or "tokens_per_gpu" in doc else 0
    batch = int(_number(doc, "global_batch", where)) if strategy == "3d" and not tokens else 0
    name = str(doc.get("name") or path.stem)
    return penalty.Workload(
        name=name,
        description=str(doc.get("description") or f"{layout} workload from {path.name}"),
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
        source=str(path),
        micro_batches=sized["micro_batches"],
        expert_parallel=sized["expert_parallel"],
        top_k=sized["top_k"],
        active_parameters=active,
    )
