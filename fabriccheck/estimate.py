"""`fabriccheck estimate`: what a fabric should do, and what a fabric state costs, with no cloud at all.

The same penalty core judges a scanned cluster, so a cluster's penalty and `estimate` for its type, size and
state agree. The fabric comes from an instance type (the catalog) or is described by hand, for any cluster:
on-premises, another cloud, or one being planned.
"""

from __future__ import annotations

import re
from dataclasses import replace

from pydantic import BaseModel

from fabriccheck import catalog, penalty
from fabriccheck.errors import FabricCheckError
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
    extra_gpu_hours_per_day: Range | None
    extra_dollars_per_day: Range | None


def fabric_of_type(instance_type: str) -> penalty.FabricDescription:
    cap = catalog.resolve(instance_type, {})
    if cap is None:
        raise FabricCheckError(f"--instance-type {instance_type}: not in the catalog (describe the fabric instead)")
    return penalty.FabricDescription.from_capability(cap)


def custom_fabric(
    gpu: str, gpus_per_node: int, nics: int, nic_gbps: float, transport: str, gdr: bool, ethernet_gbps: float | None
) -> penalty.FabricDescription:
    kind = TRANSPORTS.get(transport)
    if kind is None:
        raise FabricCheckError(f"--transport {transport}: choose from {', '.join(TRANSPORTS)}")
    if gpus_per_node < 1 or nics < 0 or nic_gbps < 0:
        raise FabricCheckError("--gpus-per-node must be at least 1, --nics and --nic-gbps at least 0")
    if kind is FabricKind.NONE:
        # Plain TCP: the NICs are the ordinary network NCCL's sockets use.
        return penalty.FabricDescription(gpu, gpus_per_node, kind, 0, 0.0, False, ethernet_gbps or nics * nic_gbps)
    return penalty.FabricDescription(gpu, gpus_per_node, kind, nics, nic_gbps, gdr, ethernet_gbps)


def state_named(text: str, fabric: penalty.FabricDescription) -> penalty.FabricState:
    match = _STATE.match(text.strip().lower())
    if match is None:
        raise FabricCheckError(f"--state {text}: use healthy, tcp, nics=K, no-gdr, no-placement or unreachable")
    word = match.group(1)
    if match.group(2) is not None:
        used = int(match.group(2))
        if used > fabric.nics:
            raise FabricCheckError(f"--state {text}: the fabric has {fabric.nics} NICs")
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
        raise FabricCheckError("--nodes must be at least 1")
    state = state_named(state_text, fabric)
    slowdown = penalty.estimate(fabric, nodes, state, workload)
    result = penalty.penalty_of(slowdown, workload, nodes * fabric.gpus_per_node, price_per_gpu_hour)
    notes = []
    if nodes == 1:
        notes.append("one node: no inter-node fabric is used, so no fabric state costs anything")
    if nodes == 2:
        notes.append(
            "at 2 nodes nccl-tests' busbw formula overstates what the network carries (2(n-1)/n counts the "
            "traffic that stays on NVLink inside each node): compare algbw between 2-node runs"
        )
    if catalog.accelerators().get(fabric.accelerator) is None:
        notes.append(f"no sourced peak throughput or NVLink figure for {fabric.accelerator or '?'}: no numbers")
    collectives = [
        Collective(op=op, bytes=size, algbw_gbytes_per_s=bw[0], busbw_gbytes_per_s=bw[1])
        for op in OPS
        for size in SIZES
        if (bw := penalty.collective_bandwidth(fabric, nodes, op, size, state)) is not None
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
        reason=result.reason,
        notes=notes,
        collectives=collectives,
        step_seconds=step,
        healthy_step_seconds=result.healthy_step_seconds,
        slowdown=Range(**result.slowdown.model_dump()) if result.slowdown and result.estimated else None,
        extra_gpu_hours_per_day=Range(**result.extra_gpu_hours_per_day.model_dump()) if result.estimated else None,
        extra_dollars_per_day=Range(**result.extra_dollars_per_day.model_dump())
        if result.extra_dollars_per_day
        else None,
    )


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
        lines.append(f"{'op':<15}{'size':>10}{'algbw GB/s':>13}{'busbw GB/s':>13}")
        for c in report.collectives:
            if c.bytes in (8, 8 * 4**5, 8 * 4**10, 8 * 4**13, 16 * 2**30):  # a readable subset; JSON has all
                lines.append(
                    f"{c.op:<15}{_size(c.bytes):>10}{_gbytes(c.algbw_gbytes_per_s):>13}{_gbytes(c.busbw_gbytes_per_s):>13}"
                )
        lines.append("")
    if report.cannot_run:
        lines.append(f"cannot run: {report.reason}")
    elif not report.estimated:
        lines.append(f"not estimated: {report.reason}")
    elif report.slowdown is not None and report.healthy_step_seconds is not None:
        lines.append(f"healthy step: {report.healthy_step_seconds:.2f} s")
        lines.append(f"slowdown: {report.slowdown.low:.2f}x–{report.slowdown.high:.2f}x")
    if report.extra_gpu_hours_per_day is not None:
        hours = report.extra_gpu_hours_per_day
        line = f"extra GPU-hours per day: {hours.low:,.0f}–{hours.high:,.0f}"
        if report.extra_dollars_per_day is not None:
            line += f" (${report.extra_dollars_per_day.low:,.0f}–${report.extra_dollars_per_day.high:,.0f})"
        lines.append(line)
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines) + "\n"


def _gbytes(value: float) -> str:
    return f"{value:.2f}" if value >= 1 else f"{value:.3g}"


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"
