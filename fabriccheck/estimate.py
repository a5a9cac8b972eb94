"""`fabriccheck estimate`: what a fabric should do, and what a fabric state costs, with no cloud at all.

The same penalty core judges a scanned cluster, so a cluster's penalty and `estimate` for its type, size and
state agree. The fabric comes from an instance type (the catalog) or is described by hand, for any cluster:
on-premises, another cloud, or one being planned. Every bandwidth is given at both ends of its range (best and
worst), and the step on one node is priced so that a scaling ratio can be formed.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import replace

from pydantic import BaseModel

from fabriccheck import catalog, penalty
from fabriccheck.bounds import MAX_NODES
from fabriccheck.errors import unknown_model, usage
from fabriccheck.model import FabricKind, NetworkPath
from fabriccheck.penalty import links, releases
from fabriccheck.penalty.collectives import size_label
from fabriccheck.provider import clouds
from fabriccheck.workloadfile import PRECISIONS, STRATEGIES, WORKLOAD_FIELDS, workload_from_file

__all__ = ["PRECISIONS", "STRATEGIES", "WORKLOAD_FIELDS", "workload_from_file"]  # the file format's home moved

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
# --state: one fabric word, then modifiers, comma-separated ("tcp,pod,sockets=4", "nics=4,no-placement").
_BASE = re.compile(r"^(healthy|tcp|no-gdr|no-placement|unreachable|nvlink-split|nvlink-down|pcie-acs|nics=(\d+))$")
_MODIFIER = re.compile(r"^(host|pod|overlay|cross-zone|no-placement|pcie-acs|(sockets|channels|mtu|domains)=(\d+))$")
STATE_HELP = (
    "healthy, tcp, nics=K, no-gdr, no-placement, unreachable, nvlink-split (one NVLink domain more than the job "
    "needs; domains=K for more), nvlink-down (multi-node NVLink down) or pcie-acs (PCIe ACS on between GPUs and "
    "NICs), then modifiers: host, pod or overlay "
    "(how NCCL's sockets reach the network), sockets=N (NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD), channels=N "
    "(NCCL's channels over the sockets, a log's coll channels), mtu=N, "
    "cross-zone, no-placement, pcie-acs, domains=K (NVLink domains the job spans), e.g. tcp,pod or nics=1,pcie-acs"
)


# InfiniBand SHARP (in-switch reduction, NCCL's CollNet algorithms) is priced as the ring: it runs only where the
# job loads the NCCL-RDMA-SHARP plugin and sets NCCL_COLLNET_ENABLE=1 (NVIDIA HPC-X 2.25 docs, "NCCL-RDMA-SHARP
# Plugins"), and no published all_reduce of one cluster with and without it was found (docs/cost-model.md says
# what was searched); the one SHARP run we have sits 6.5% above the ring (coreweave/nccl-tests@cb86553 README.md,
# calibration row coreweave-h100-8n-sharp).
SHARP_NOTE = (
    "InfiniBand SHARP (CollNet: the NCCL-RDMA-SHARP plugin with NCCL_COLLNET_ENABLE=1) is priced as the ring: no "
    "published run of one cluster with and without it; the one SHARP run we have (8 x 8 H100) is 6.5% above it"
)


class FabricSummary(BaseModel):
    instance_type: str | None
    accelerator: str
    gpus_per_node: int
    transport: str
    nics: int
    gbps_per_nic: float
    gpudirect_rdma: bool | None
    ethernet_gbps: float | None
    provider: str | None = None
    calibration: float = 1.0  # the measured healthy baseline over the model's (--calibrate); 1.0 without one


class Collective(BaseModel):
    op: str
    bytes: int
    algbw_gbytes_per_s: float  # the best end of the state's range
    busbw_gbytes_per_s: float
    algorithm: str  # what NCCL would run: nvlink (one node), ring, tree or p2p (alltoall)
    # The worst end (equal to the best where the state leaves no choice): socket threads, the GPU-NIC PCIe layout
    # without GPUDirect RDMA, ECMP hashing on RoCE beyond two nodes.
    algbw_worst_gbytes_per_s: float
    busbw_worst_gbytes_per_s: float


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
    one_node_step_seconds: float | None  # the same workload on one node (NVLink only)
    # Per-GPU throughput on these nodes in this state over one healthy node's: weak-scaling efficiency for a
    # tokens-per-GPU workload, strong-scaling for a global batch.
    scaling_efficiency: Range | None
    slowdown: Range | None
    # Out of the nodes' GPUs x 24 GPU-hours a day: the share of each lost (1 - 1/slowdown), those lost, dollars.
    gpu_hours_per_day: float
    lost_share: Range | None
    lost_gpu_hours_per_day: Range | None
    lost_dollars_per_day: Range | None


# Cloud TPUs exchange data over their inter-chip interconnect (ICI) inside a slice and, between slices, through their
# hosts over the data-center network, in collectives the XLA compiler generates ("Cloud TPU Multislice Overview",
# https://cloud.google.com/tpu/docs/multislice-introduction): no NCCL and no NIC fabric a setting leaves unused, so
# the model has nothing to price. Names people type: "TPU v5p", "v5litepod-16", and the Compute Engine machine types
# ct4p-, ct5l-, ct5lp-, ct5p-, ct6e- (Cyclenerd/google-cloud-pricing-cost-calculator#89 lists ct5lp-hightpu-1t/4t/8t).
_TPU = re.compile(r"tpu|^ct\d+[a-z]*-|^v\d+(litepod|lite|e|p)?-\d+$", re.I)


def not_nccl(option: str, name: str) -> None:
    """Refuse a Cloud TPU in one line that says why it is not estimated (rather than "unknown")."""
    if _TPU.search(name.strip()):
        raise unknown_model(
            f"{option} {name}: a Cloud TPU, whose chips talk over their inter-chip interconnect inside a slice and "
            "over the data-center network between slices in collectives XLA generates, not NCCL over a NIC fabric: "
            "fabriccheck prices NCCL fabrics only (GPUs, Trainium, Gaudi), so a TPU is not estimated"
        )


def fabric_of_type(instance_type: str) -> penalty.FabricDescription:
    not_nccl("--instance-type", instance_type)
    cap = catalog.resolve(instance_type, {})
    if cap is None:
        named = type_named(instance_type)
        cap = catalog.resolve(named, {}) if named is not None else None
    if cap is None:
        raise unknown_model(f"--instance-type {instance_type}: not in the catalog; {_did_you_mean(instance_type)}")
    family = _family_of(instance_type)
    if cap.accelerators == 0 and cap.instance_type not in _catalog_types() and family:
        # Read from the name alone as a size without accelerators (`g2` as Azure's G2): the user more likely means
        # the catalog's GPU family of that name (g2-standard-*).
        raise unknown_model(
            f"--instance-type {instance_type}: read as {cap.provider}'s {cap.instance_type}, which has no "
            f"accelerators; did you mean {', '.join(family[:6])}?"
        )
    return penalty.FabricDescription.from_capability(cap)


def _catalog_types() -> list[str]:
    return sorted(set().union(*(catalog.known_types(cloud.name, {}) for cloud in clouds())))


def _squashed(text: str) -> str:
    """Lower-case letters and digits only, without Azure's `Standard_` (whose "nd" would match every size)."""
    return re.sub(r"[^a-z0-9]", "", re.sub(r"^standard_", "", text.lower()))


def type_named(text: str) -> str | None:
    """The one catalog type a name people type means: any case (`P4D.24XLARGE`), a family with one size
    (`p4d`), or the words of a size (`ND H100 v5`: Standard_ND96isr_H100_v5); None when none or several."""
    types = _catalog_types()
    wanted = text.strip().lower()
    exact = [t for t in types if t.lower() == wanted]
    family = [t for t in types if t.lower().split(".")[0] == wanted]
    words = [_squashed(w) for w in re.split(r"[\s_.-]+", wanted) if _squashed(w)]
    spoken = [t for t in types if words and all(w in _squashed(t) for w in words)]
    for found in (exact, family, spoken):
        if len(found) == 1:
            return found[0]
    return None


def _family_of(text: str) -> list[str]:
    """The catalog types of the family `text` names (`g2`: g2-standard-4 ...), smallest first."""
    wanted = text.strip().lower()
    found = [t for t in _catalog_types() if t.lower().startswith((wanted + "-", wanted + "."))]
    return sorted(found, key=lambda t: (len(t), t))


def _spoken(text: str) -> list[str]:
    """The catalog types whose names hold every word of `text` (`nd h100 v5`, `g2`)."""
    words = [_squashed(w) for w in re.split(r"[\s_.-]+", text.lower()) if _squashed(w)]
    return [t for t in _catalog_types() if words and all(w in _squashed(t) for w in words)]


def _did_you_mean(text: str) -> str:
    """One clause: the catalog types the name may mean, or how to describe the fabric instead."""
    close = _spoken(text)[:6] or difflib.get_close_matches(text, _catalog_types(), n=4, cutoff=0.6)
    if close:
        return f"did you mean {', '.join(close)}?"
    return "describe the fabric instead (--gpu, --gpus-per-node, --nics, --nic-gbps, --transport, --ethernet-gbps)"


def accelerator_named(name: str) -> str:
    """The accelerator table's name for `--gpu NAME` (any case, maker and memory words allowed)."""
    found = catalog.accelerator(name.strip())
    if found is None:
        not_nccl("--gpu", name)
        known = sorted(catalog.accelerators())
        close = difflib.get_close_matches(name.strip(), known, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise unknown_model(
            f"--gpu {name}: unknown accelerator (known: {', '.join(known)}){hint}; no sourced figures for it: its "
            "peak, NVLink/PCIe and memory figures go in fabriccheck/data/accelerators.yaml"
        )
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
    return _state_named(text, fabric.nics)


@functools.lru_cache(maxsize=1024)
def _state_named(text: str, nics: int) -> penalty.FabricState:
    """A --state word (cached: a sweep asks for a few states many times; bad words raise, and are not kept)."""
    words = [w.strip() for w in text.strip().lower().split(",")]
    match = _BASE.match(words[0]) if words else None
    if match is None:
        raise usage(f"--state {text}: use {STATE_HELP}")
    state = _base_state(match, text, nics)
    for word in words[1:]:
        modifier = _MODIFIER.match(word)
        if modifier is None:
            raise usage(f"--state {text}: {word!r} is not a modifier; use {STATE_HELP}")
        state = _modified(state, modifier)
    return state


def _base_state(match: re.Match[str], text: str, nics: int) -> penalty.FabricState:
    if match.group(2) is not None:
        used = int(match.group(2))
        if used > nics:
            raise usage(f"--state {text}: the fabric has {nics} NICs")
        return penalty.FabricState.partial(used)
    return {
        "healthy": penalty.FabricState.healthy(),
        "tcp": penalty.FabricState.tcp_fallback(),
        "no-gdr": penalty.FabricState.gpudirect_off(),
        "no-placement": penalty.FabricState.healthy(loose_placement=True),
        "unreachable": penalty.FabricState.unreachable(),
        penalty.NVLINK_SPLIT: penalty.FabricState.nvlink_split(),
        penalty.NVLINK_DOWN: penalty.FabricState.nvlink_down(),
        penalty.PCIE_ACS: penalty.FabricState.pcie_acs_on(),
    }[match.group(1)]


def _modified(state: penalty.FabricState, modifier: re.Match[str]) -> penalty.FabricState:
    word, key, number = modifier.group(1), modifier.group(2), modifier.group(3)
    if key is not None:
        value = int(number)
        if value < 1:
            raise usage(f"--state: {word}: {key} must be at least 1")
        if key == "sockets":
            return replace(state, sockets=value)
        if key == "channels":
            return replace(state, channels=value)
        return replace(state, mtu=value) if key == "mtu" else replace(state, nvlink_domains=value)
    if word in set(NetworkPath):
        return replace(state, socket_path=NetworkPath(word))
    if word == "cross-zone":
        return replace(state, cross_zone=True)
    if word == penalty.PCIE_ACS:
        return replace(state, pcie_acs=True)
    return replace(state, loose_placement=True)


def run(
    fabric: penalty.FabricDescription,
    nodes: int,
    state_text: str,
    workload: penalty.Workload,
    price_per_gpu_hour: float | None = None,
    calibration_notes: list[str] | None = None,
    nccl_version: str | None = None,
) -> EstimateReport:
    if nodes < 1:
        raise usage("--nodes must be at least 1")
    if nodes > MAX_NODES:
        raise usage(f"--nodes {nodes:,}: more than {MAX_NODES:,} nodes is not a cluster (a typo?)")
    state = state_named(state_text, fabric)
    version, told = _version(nccl_version, workload)
    state = replace(state, nccl_version=version)
    slowdown = penalty.estimate(fabric, nodes, state, workload)
    result = penalty.penalty_of(slowdown, workload, nodes * fabric.gpus_per_node, price_per_gpu_hour)
    notes = [_version_note(version, told), *_notes(fabric, nodes, state, priced=result.estimated)]
    notes += [f"calibration run: {line}" for line in calibration_notes or ()]
    missing, assumed = figure_lines(fabric.accelerator)
    reason = _how_to_give(result.reason)
    if missing is not None and result.estimated is False and nodes > 1:
        reason = missing  # one line says which figure is missing
    elif missing is not None:
        notes.append(missing)
    if assumed is not None:
        notes.append(assumed)
    if slowdown.healthy_step_seconds is not None:  # no step time: nothing rests on the compute prior
        notes.extend(prior_lines(fabric.accelerator, workload))
    if result.estimated:  # nothing priced: no note on how a price was made
        notes.append(f"layout: {penalty.layout_line(workload)}")
    step = None
    if slowdown.degraded_step_seconds_low is not None and slowdown.degraded_step_seconds_high is not None:
        step = Range(low=slowdown.degraded_step_seconds_low, high=slowdown.degraded_step_seconds_high)
    scaled = penalty.scaling(fabric, nodes, state, workload) if not slowdown.cannot_run else None
    return EstimateReport(
        fabric=_summary(fabric),
        state=state_text,
        nodes=nodes,
        workload=workload.name,
        estimated=result.estimated,
        cannot_run=result.cannot_run,
        reason=reason,
        notes=notes,
        collectives=collectives(fabric, nodes, state),
        step_seconds=step,
        healthy_step_seconds=slowdown.healthy_step_seconds,
        one_node_step_seconds=scaled.one_node_step_seconds if scaled else None,
        scaling_efficiency=Range(low=scaled.low, high=scaled.high) if scaled else None,
        slowdown=Range(**result.slowdown.model_dump()) if result.slowdown and result.estimated else None,
        gpu_hours_per_day=nodes * fabric.gpus_per_node * 24.0,
        lost_share=_range(result.lost_share),
        lost_gpu_hours_per_day=_range(result.lost_gpu_hours_per_day),
        lost_dollars_per_day=_range(result.lost_dollars_per_day),
    )


def nccl_version_named(text: str, option: str = "--nccl-version") -> releases.NcclVersion:
    """An NCCL release the user typed, or one line naming the option (exit 2)."""
    found = releases.nccl_version_of(text)
    if found is None:
        raise usage(f"{option} {text!r}: not an NCCL release (e.g. 2.27 or 2.21.5; NCCL 2.x)")
    return found


def _version(text: str | None, workload: penalty.Workload) -> tuple[releases.NcclVersion, str]:
    """The NCCL release priced and who said so: --nccl-version, the workload file, or the model's default."""
    if text is not None:
        return nccl_version_named(text), "--nccl-version"
    if workload.nccl_version is not None:
        return workload.nccl_version, "the workload's nccl_version"
    return releases.DEFAULT_NCCL_VERSION, "the default"


def _version_note(version: releases.NcclVersion, told: str) -> str:
    label = releases.version_label(version)
    change = "; --nccl-version or a workload file's nccl_version to change" if told == "the default" else ""
    if version < releases.FIRST_TREE_NCCL:  # no trees at all: rings at every node count, not only at 2
        return f"NCCL {label} ({told}{change}): before 2.4 NCCL has no tree, so all_reduce runs rings at every size"
    return f"NCCL {label} ({told}{change}): it decides the algorithm NCCL picks for all_reduce at 2 nodes"


def collectives(fabric: penalty.FabricDescription, nodes: int, state: penalty.FabricState) -> list[Collective]:
    """The nccl-tests sweep of every operation, at both ends of the state's range."""
    found = []
    for op in OPS:
        for size in SIZES:
            best = penalty.collective_estimate(fabric, nodes, op, size, state)
            worst = penalty.collective_estimate(fabric, nodes, op, size, state, worst=True)
            if best is None or worst is None:
                continue
            found.append(
                Collective(
                    op=op,
                    bytes=size,
                    algbw_gbytes_per_s=best.algbw,
                    busbw_gbytes_per_s=best.busbw,
                    algorithm=best.algorithm,
                    algbw_worst_gbytes_per_s=worst.algbw,
                    busbw_worst_gbytes_per_s=worst.busbw,
                )
            )
    return found


def _notes(fabric: penalty.FabricDescription, nodes: int, state: penalty.FabricState, priced: bool) -> list[str]:
    """What the estimate of `fabric` in `state` rests on; without a price (`priced` false), none of how one is made
    (SHARP, the NIC cap)."""
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
    if priced and fabric.fabric is FabricKind.INFINIBAND and nodes > 1 and state.fabric == "healthy":
        notes.append(SHARP_NOTE)
    if fabric.fabric is FabricKind.RDMA and nodes > 2:
        notes.append(
            "RoCE beyond two nodes: the worst end assumes baseline ECMP hashing (up to 1/1.4 of a tuned fabric's "
            "all_reduce, Meta SIGCOMM 2024); adaptive routing or enhanced ECMP keeps the best end"
        )
    if state.pcie_acs:
        best, worst = links.ACS_SHARE
        notes.append(
            f"PCIe ACS on: GPUDirect RDMA through the CPU's root complex at {worst:.2f}-{best:.2f} of the NICs' rate "
            "(NVIDIA/nccl-tests#112); disable ACS on the PCIe switches, or in the BIOS"
        )
    no_domain = links.domain_nodes(fabric, catalog.accelerator(fabric.accelerator)) == 1
    if no_domain and (not state.multi_node_nvlink or state.nvlink_domains is not None):
        notes.append(  # else a state that cannot happen here would read as one that costs nothing
            f"{fabric.accelerator or 'these'} nodes have no multi-node NVLink domain (NVLink ends at the node), so "
            "nvlink-down and nvlink-split change nothing here: priced as the fabric state without them"
        )
    cap = links.nic_cap_line(fabric)  # fitted on one GB300 RoCE run: elsewhere an extrapolation, said so
    if priced and cap is not None:
        notes.append(cap)
    if fabric.calibration != 1.0:
        notes.append(f"healthy fabric recalibrated to {fabric.calibration:.2f}x the model's from measured nccl-tests")
    return notes


def _range(value: penalty.Range | None) -> Range | None:
    return Range(low=value.low, high=value.high) if value is not None else None


# What a reason the core gives lacks, and the option that gives it (the core does not know the command line).
_GIVE = {
    "no ordinary-Ethernet bandwidth figure": "give it with --ethernet-gbps GBPS (the NIC NCCL's sockets would use)",
    "no bandwidth figure for": "give it with --ethernet-gbps GBPS (the NIC NCCL's sockets would use)",
}


def _how_to_give(reason: str | None) -> str | None:
    for lacking, how in _GIVE.items():
        if reason is not None and reason.startswith(lacking):
            return f"{reason}: {how}"
    return reason


def prior_lines(name: str, workload: penalty.Workload) -> list[str]:
    """The priors the step time rests on, printed beside the figure: the accelerator's MFU and peak (or the
    measured step that replaces them)."""
    accel = catalog.accelerator(name)
    if accel is None or accel.mfu is None or accel.peak_tflops is None:
        return []
    if workload.measured_step_seconds > 0:
        return [f"compute from the measured step: {workload.measured_step_seconds:g} s on {workload.measured_nodes} "
                "healthy nodes (replaces the MFU prior)"]  # fmt: skip
    kind = "assumed: no published multi-node MFU" if "mfu" in accel.assumed else "from published runs"
    return [
        f"compute at an MFU prior of {accel.mfu:.0%} of {accel.name}'s {accel.peak_tflops:g} TFLOPS dense BF16/FP16 "
        f"({kind}; fabriccheck/data/accelerators.yaml); a workload file's step_seconds replaces it"
    ]


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
        missing = (
            f"no sourced {' or '.join(accel.missing)} for {accel.name}: {lost} (give them, with their source, in "
            "fabriccheck/data/accelerators.yaml)"
        )
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
        provider=fabric.provider,
        calibration=fabric.calibration,
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


def _links_said(f: FabricSummary) -> str:
    """The node's links as the header says them: its fabric NICs, or (no fabric) the one Ethernet NIC sockets use."""
    if f.nics == 0 and f.transport == "tcp":
        nic = f"{f.ethernet_gbps:g} Gbps" if f.ethernet_gbps is not None else "bandwidth unknown"
        return f"tcp over Ethernet ({nic}), no fabric"
    gdr = "on" if f.gpudirect_rdma else "off" if f.gpudirect_rdma is False else "unknown"
    return f"{f.transport} {f.nics} x {f.gbps_per_nic:g} Gbps (GPUDirect RDMA {gdr})"


def render_text(report: EstimateReport) -> str:
    f = report.fabric
    head = f.instance_type or f"{f.gpus_per_node} x {f.accelerator}"
    lines = [
        f"fabriccheck estimate · {report.nodes} x {head} · {_links_said(f)}"
        f" · state {report.state} · workload {report.workload}",
        "",
    ]
    if report.collectives:
        lines += _collective_lines(report.collectives)
    if report.cannot_run:
        lines.append(f"cannot run: {report.reason}")
    elif not report.estimated:
        lines.append(f"not estimated: {report.reason}")
    elif report.slowdown is not None and report.healthy_step_seconds is not None:
        lines.append(f"healthy step: {report.healthy_step_seconds:.2f} s")
        lines.append(f"slowdown: {report.slowdown.low:.2f}x–{report.slowdown.high:.2f}x")
        if report.reason:
            lines.append(f"priced with: {report.reason}")  # e.g. the named workload that fits in place of one
    if report.one_node_step_seconds is not None and report.scaling_efficiency is not None:
        lines.append(
            f"one-node step: {report.one_node_step_seconds:.2f} s; scaling efficiency from one node: "
            f"{_span(report.scaling_efficiency, '{:.0%}')}"
        )
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


def _collective_lines(found: list[Collective]) -> list[str]:
    """A readable subset of the sweep (JSON has all), each bandwidth as best–worst where they differ."""
    lines = [f"{'op':<15}{'size':>10}{'algbw GB/s':>18}{'busbw GB/s':>18}  algorithm"]
    for c in found:
        if c.bytes in (8, 8 * 4**5, 8 * 4**10, 8 * 4**13, 16 * 2**30):
            algbw = _pair(c.algbw_gbytes_per_s, c.algbw_worst_gbytes_per_s)
            busbw = _pair(c.busbw_gbytes_per_s, c.busbw_worst_gbytes_per_s)
            lines.append(f"{c.op:<15}{size_label(c.bytes):>10}{algbw:>18}{busbw:>18}  {c.algorithm}")
    return [*lines, ""]


def _pair(best: float, worst: float) -> str:
    """`best–worst`, or one figure when both ends read the same."""
    low, high = _gbytes(worst), _gbytes(best)
    return high if low == high else f"{low}–{high}"


def _span(value: Range, form: str) -> str:
    """`low–high` in `form`, or one figure when both ends read the same."""
    low, high = form.format(value.low), form.format(value.high)
    return low if low == high else f"{low}–{high}"


def _gbytes(value: float) -> str:
    return f"{value:.2f}" if value >= 1 else f"{value:.3g}"
