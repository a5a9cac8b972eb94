"""What a healthy fabric should measure: the fabric description from the command line, and the adapter to
the penalty model's `collective_bandwidth`.

`BandwidthModel` is the one call this package makes into the model. `model()` returns
`penalty.collective_bandwidth`; tests point `use_model` at a local function, so the judging logic is tested
apart from the (separately calibrated) model.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from fabriccheck import catalog, estimate, penalty
from fabriccheck.errors import unknown_model, usage
from fabriccheck.model import FabricKind
from fabriccheck.provider import transport_provider

# penalty.collective_bandwidth: (algbw, busbw) in GB/s, or None when the model cannot say.
BandwidthModel = Callable[
    [penalty.FabricDescription, int, str, float, "penalty.FabricState | None"], tuple[float, float] | None
]
# The collectives whose busbw this package compares (nccl-tests' bus factor: 2(n-1)/n or (n-1)/n); broadcast
# and reduce have busbw = algbw and a tree/ring choice the model does not make (issue 9 Calibration).
COMPARED_OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall")

# The same words and fabrics as `fabriccheck estimate` (one table, in fabriccheck/estimate.py).
TRANSPORTS = estimate.TRANSPORTS

_model: BandwidthModel | None = None


def model() -> BandwidthModel:
    return _model if _model is not None else penalty.collective_bandwidth


def use_model(fn: BandwidthModel | None) -> None:
    """Point the evidence checks at another bandwidth model (None: back to penalty.collective_bandwidth)."""
    global _model
    _model = fn


def _positive(value: float | None, option: str, integer: bool = False) -> None:
    if value is None:
        return
    if not math.isfinite(value) or value <= 0 or (integer and value != int(value)):
        kind = "a whole number above 0" if integer else "a number above 0"
        raise usage(f"{option} {value:g}: expected {kind}")


accelerator_named = estimate.accelerator_named


@dataclass(frozen=True)
class FabricOptions:
    """The fabric the nccl-tests options describe (`fabric_from_options`)."""

    instance_type: str | None = None
    gpu: str | None = None
    gpus_per_node: int | None = None
    nics: int | None = None
    nic_gbps: float | None = None
    transport: str | None = None
    no_gdr: bool = False
    ethernet_gbps: float | None = None


def fabric_from_options(
    instance_type: str | None,
    gpu: str | None,
    gpus_per_node: int | None,
    nics: int | None,
    nic_gbps: float | None,
    transport: str | None,
    no_gdr: bool,
    ethernet_gbps: float | None,
) -> tuple[penalty.FabricDescription | None, str]:
    """(fabric, provider) from `--instance-type T` or the custom options; (None, "unknown") when neither is
    given. Mixing the two, or a custom fabric with options missing, is an error naming the options."""
    custom = {
        "--gpu": gpu,
        "--gpus-per-node": gpus_per_node,
        "--nics": nics,
        "--nic-gbps": nic_gbps,
        "--transport": transport,
    }
    given = [k for k, v in custom.items() if v is not None]
    _positive(ethernet_gbps, "--ethernet-gbps")
    if instance_type is not None:
        if given:
            raise usage(
                f"--instance-type and {', '.join(given)} cannot be used together (the type says its fabric; "
                "--no-gdr and --ethernet-gbps may correct it)"
            )
        cap = catalog.catalog_entry(instance_type)
        if cap is None:
            raise unknown_model(
                f"--instance-type {instance_type}: not in the capability catalog (describe the fabric with "
                "--gpu --gpus-per-node --nics --nic-gbps --transport instead)"
            )
        if cap.accelerators <= 0:
            raise usage(f"--instance-type {instance_type}: has no accelerators")
        fabric = penalty.FabricDescription.from_capability(cap)
        return estimate.with_overrides(fabric, ethernet_gbps, no_gdr), cap.provider
    if not given and not no_gdr and ethernet_gbps is None:
        return None, "unknown"
    needed = {k: v for k, v in custom.items() if not (k in ("--nics", "--nic-gbps") and transport == "tcp")}
    missing = [k for k, v in needed.items() if v is None]
    if missing:
        raise usage(f"a custom fabric needs {', '.join(missing)} too (or use --instance-type)")
    assert gpu is not None and gpus_per_node is not None and transport is not None
    if transport not in TRANSPORTS:
        raise usage(f"--transport {transport}: choose from {', '.join(TRANSPORTS)}")
    _positive(gpus_per_node, "--gpus-per-node", integer=True)
    _positive(nics, "--nics", integer=True)
    _positive(nic_gbps, "--nic-gbps")
    if TRANSPORTS[transport] is FabricKind.NONE and ethernet_gbps is None and not (nics and nic_gbps):
        raise usage("--transport tcp needs --ethernet-gbps (or --nics and --nic-gbps)")
    fabric = estimate.custom_fabric(
        accelerator_named(gpu), gpus_per_node, nics or 0, nic_gbps or 0.0, transport, not no_gdr, ethernet_gbps
    )
    return fabric, transport_provider(transport) or "unknown"  # the cloud a transport implies (its declaration)


def healthy_busbw(
    fabric: penalty.FabricDescription, nodes: int, op: str, size: float, nccl: tuple[int, int] | None = None
) -> float:
    """Expected busbw (GB/s) of a healthy run under NCCL release `nccl` (None: the model's default; it decides
    the 2-node algorithm). A fabric without GPUDirect RDMA (`--no-gdr`, or a type that has none) is judged
    against that: the model's GPUDirect-off state of the same fabric. ValueError when the model cannot say (no
    figure for the accelerator or the fabric)."""
    fn = model()
    if fabric.fabric is not FabricKind.NONE and fabric.gpudirect_rdma is False:
        off = replace(penalty.FabricState.gpudirect_off(), nccl_version=nccl)
        found = fn(replace(fabric, gpudirect_rdma=True), nodes, op, size, off)
    else:
        found = fn(fabric, nodes, op, size, replace(penalty.FabricState.healthy(), nccl_version=nccl) if nccl else None)
    if found is None:
        what = fabric.instance_type or f"{fabric.gpus_per_node} x {fabric.accelerator or '?'}"
        missing = (
            f"accelerator {fabric.accelerator!r} has no figures in the accelerator table (its NVLink/PCIe "
            "bandwidth bounds the ring with several GPUs per node)"
            if catalog.accelerator(fabric.accelerator) is None
            else "no bandwidth figure"
        )
        raise ValueError(f"the penalty model has no bandwidth figure for {op} on {what}: {missing}")
    return found[1]


def line_rate_busbw(fabric: penalty.FabricDescription) -> float | None:
    """A healthy run's busbw (GB/s) from the fabric's published line rate alone, where that is all that bounds it:
    one GPU per node, so no intra-node step (NVLink, PCIe) shares the ring, and every collective's busbw is the
    node's link ("busbw ... reflects how optimally the hardware is used": NVIDIA/nccl-tests doc/PERFORMANCE.md).
    The line rate is the type's published fabric bandwidth (EC2 DescribeInstanceTypes' EfaInfo / network cards,
    Compute and Azure size tables: the capability catalog), times the fabric's sourced efficiency
    (penalty.links.EFFICIENCY). None for several GPUs per node (their accelerator's figures bound the ring too) or
    a fabric without a sourced efficiency."""
    from fabriccheck.penalty.links import EFFICIENCY

    efficiency = EFFICIENCY.get(fabric.fabric)
    cap = catalog.catalog_entry(fabric.instance_type) if fabric.instance_type else None
    if cap is not None and cap.accelerators != 1:
        return None  # a run on one GPU of a larger node: its GPU reaches only part of the node's fabric
    if fabric.gpus_per_node != 1 or not fabric.fabric_gbps or efficiency is None:
        return None
    return fabric.fabric_gbps / 8 * efficiency


def tcp_busbw(fabric: penalty.FabricDescription, nodes: int, op: str, size: float) -> float | None:
    """Busbw (GB/s) NCCL would reach over TCP on the ordinary NIC (best end), None when unknown."""
    if fabric.fabric is FabricKind.NONE or not fabric.ethernet_gbps:
        return None
    found = model()(fabric, nodes, op, size, penalty.FabricState.tcp_fallback())
    return found[1] if found is not None else None


def tcp_busbw_worst(fabric: penalty.FabricDescription, nodes: int, op: str, size: float) -> float | None:
    """The worst end of `tcp_busbw`'s range (fewer sockets' worth of streams than the best end assumes); the best
    end when another bandwidth model is in use (tests), None when unknown."""
    best = tcp_busbw(fabric, nodes, op, size)
    if best is None or _model is not None:
        return best
    found = penalty.collective_bandwidth(fabric, nodes, op, size, penalty.FabricState.tcp_fallback(), worst=True)
    return found[1] if found is not None else best
