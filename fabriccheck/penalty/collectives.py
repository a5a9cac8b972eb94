"""Collectives as NCCL runs them: algorithm and protocol choice, the time for a buffer, nccl-tests' bandwidths.

Inside one node (or one multi-node NVLink domain) a collective runs at the accelerator's measured single-node busbw
(NVLink / NVLS). Across nodes NCCL picks, per operation, size and node count, the faster of a ring (every byte
crosses each node boundary once, so busbw is the node's achieved NIC bandwidth) and a double binary tree (log
latency; at 2 nodes each node moves the buffer once, which is why 2-node busbw can exceed the line rate), as its
tuning model does (NVIDIA/nccl src/graph/tuning.cc).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from fabriccheck import catalog
from fabriccheck.penalty.links import (
    GB,
    HEALTHY,
    INTRA_RING_EFFICIENCY,
    FabricDescription,
    FabricState,
    Link,
    degraded_link_of,
    domain_nodes,
    domains_spanned,
    ecmp_share,
    healthy_link_of,
    ring_rails,
)
from fabriccheck.penalty.releases import (
    FIRST_NVLS_TREE_NCCL,
    FIRST_TREE_NCCL,
    LAST_THRESHOLD_NCCL,
    THRESHOLD_TREE_MIN_GPUS,
)

# NCCL's protocols (tuning.cc): LL keeps the small-message latency at a fraction of the bandwidth; Simple reaches
# full bandwidth after a start-up. Fitted on the mid-size rows of data/calibration.yaml: 2 x p5 all_reduce reaches
# 0.23 of its large-message algbw at 8 MiB and 2 x p4de 0.17 at 1 MiB (LL), and Simple's start-up is ~300 us on
# p5 (4.3 x its 70 us latency) and ~600 us on p4de (3.7 x 161 us).
LL_BANDWIDTH_FRACTION = 0.2
SIMPLE_STARTUP_HOPS = 4.0
# NCCL's own latency model for the steps a collective takes over NVLink (NVIDIA/nccl@5067397 src/graph/tuning.cc,
# ncclTunerConstantsDefaults; the same figures in v2.26.2-1, the NCCL of coreweave/nccl-tests' GB200 runs): a base
# per launch (baseLatencies, Ring: LL 6.6 us, Simple 8.4 us) and one NVLink hop per step (hwLatencies[NVLINK]:
# Ring LL 0.6, Simple 3.4 us; Tree LL 0.6, Simple 4.0 us). A ring of R ranks over U units takes 2(R-U) steps inside
# its units (all_reduce: nsteps - nInterSteps), a tree's chain 2(R/U - 1). Between ordinary nodes the measured
# 2-node latency already holds a node's own hops; inside one node and inside a multi-node NVLink domain (NCCL 2.26
# counts a rack as one node: init.cc groups ranks by their ring's first rank) every hop is counted.
# A tree's chain through a node reaches 0.92 of the NVLink bandwidth (tuning.cc: up to 2 nodes a tree's bandwidth is
# the intra-node one, `bw = nNodes <= 2 ? graphs[a]->bwIntra : ...`, then `if (a == NCCL_ALGO_TREE) busBw =
# std::min(busBw*.92, ...)`; the same lines in v2.19 through NVIDIA/nccl@5067397). It decides the 2-node trees of
# fast fabrics (8 x 400 Gbps InfiniBand on H100), which the NVLink chain, not the NICs, bounds. The NIC side keeps the
# efficiency its fitted rows measured (2-node rows measure the tree itself).
TREE_EFFICIENCY = 0.92
NVLINK_BASE_S = (6.6e-6, 8.4e-6)  # (LL, Simple)
NVLINK_STEP_S = {"ring": (0.6e-6, 3.4e-6), "tree": (0.6e-6, 4.0e-6)}  # (LL, Simple) per NVLink hop
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce")


def size_label(size: int) -> str:
    """A message size as nccl-tests sweeps them: `8 B`, `32 KiB`, `16 GiB`."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} B"


def bus_factor(op: str, ranks: int) -> float:
    """nccl-tests' bus bandwidth factor on `ranks` ranks (nccl-tests doc/PERFORMANCE.md): busbw = algbw x it."""
    if ranks <= 1:
        return 1.0 if op in ("broadcast", "reduce") else 0.0
    if op == "all_reduce":
        return 2 * (ranks - 1) / ranks
    if op in ("all_gather", "reduce_scatter", "alltoall"):
        return (ranks - 1) / ranks
    return 1.0


def intra_bandwidth(accel: catalog.Accelerator, domain: bool = False) -> float:
    """Bytes/s a collective reaches inside one node: the measured single-node busbw, else NVLink x ring efficiency
    (0 when the accelerator has neither figure: callers check `Accelerator.missing` first). Inside a multi-node
    NVLink domain of several nodes (`domain`), the domain's measured busbw where one is sourced: NVLS over the
    whole rack reaches more than one tray's ring."""
    if domain and accel.domain_allreduce_busbw_gbytes:
        return accel.domain_allreduce_busbw_gbytes * GB
    measured = accel.allreduce_busbw_gbytes
    return (measured if measured else (accel.nvlink_gbytes or 0.0) * INTRA_RING_EFFICIENCY) * GB


def algorithm(
    op: str,
    size: float,
    nodes: int,
    gpus: int,
    link: Link,
    intra: float,
    two_node_tree: bool = True,
    domain: bool = False,
) -> tuple[str, float]:
    """The algorithm NCCL would pick for one collective of `size` bytes and its time in seconds.

    One node: the NVLink domain at its measured busbw. Across nodes, alltoall is point-to-point; the others take
    the faster of
    - ring: 2(N-1) (all_reduce) or N-1 inter-node steps; every byte crosses each node boundary once, so busbw is
      the node's achieved NIC bandwidth (or NVLink, if slower);
    - tree (all_reduce only; double binary tree): log2(N) latency; each node sends and receives the buffer once
      at 2 nodes and twice beyond, while the chain inside the node moves 2(g-1)/g of it over NVLink.
    Trees win small messages at scale; at 2 nodes they also win large ones, where NCCL runs them (`two_node_tree`,
    by NCCL release: two_node_trees); otherwise NCCL's model keeps rings there.
    Inside one node, and inside the units when they are multi-node NVLink domains (`domain`), every NVLink hop
    costs NCCL's own step latency (NVLINK_STEP_S): a ring of 1,440 ranks pays for its 2,840 hops inside racks."""
    ranks = nodes * gpus
    factor = bus_factor(op, ranks)
    if ranks <= 1 or size <= 0:
        return "none", 0.0
    hops = 2 if op == "all_reduce" else 1  # NVLink steps per rank of a ring
    domain = domain or link.domain_units
    if nodes <= 1:
        return "nvlink", _nvlink_protocol(hops * (gpus - 1), "ring", factor * size / intra)
    steps = 2 * (nodes - 1) if op == "all_reduce" else nodes - 1
    if op == "alltoall":
        # Point-to-point sends, no ring: each GPU sends (N-1)/N of its buffer off the node, so the node's NICs
        # carry g x (N-1)/N x size and busbw is N/(N-1) x the per-GPU share of the NICs (NVIDIA/nccl-tests#130).
        off_node = gpus * (nodes - 1) / nodes * size / link.bandwidth
        on_node = (gpus - 1) / ranks * size / intra if gpus > 1 else 0.0
        return "p2p", _protocol(steps * link.latency / 2, link.latency, max(off_node, on_node))
    ring_bandwidth = min(link.bandwidth, intra) if gpus > 1 else link.bandwidth
    ring_hops = hops * nodes * (gpus - 1) if domain else 0  # NCCL's (nsteps - nInterSteps) inside the domains
    ring = _protocol(steps * link.latency / 2, link.latency, factor * size / ring_bandwidth, ring_hops, "ring")
    if op != "all_reduce" or link.nccl_version < FIRST_TREE_NCCL:
        return "ring", ring
    if nodes == 2 and not two_node_tree:
        return "ring", ring
    inter = (1.0 if nodes == 2 else 2.0) * size / link.bandwidth
    chain = 2 * (gpus - 1) / gpus * size / intra if gpus > 1 else 0.0
    tree_hops = 2 * (gpus - 1) if domain else 0  # the chain down and up through a domain's ranks
    transfer = max(inter, chain / TREE_EFFICIENCY)
    tree = _protocol(link.latency * math.log2(nodes), link.latency, transfer, tree_hops, "tree")
    return ("tree", tree) if tree < ring else ("ring", ring)


def _protocol(latency: float, hop: float, transfer: float, nvlink_hops: int = 0, kind: str = "ring") -> float:
    """Seconds for an algorithm whose latency is `latency` and whose bytes take `transfer` at full bandwidth, under
    the faster of NCCL's protocols (tuning.cc): LL, at the measured small-message latency but a fraction of the
    bandwidth, or Simple, at full bandwidth after a start-up of a few per-hop latencies (`hop`). `nvlink_hops`
    NVLink steps the measured latency does not hold add NCCL's per-hop latency of each protocol."""
    ll_hop, simple_hop = NVLINK_STEP_S[kind]
    ll = transfer / LL_BANDWIDTH_FRACTION + nvlink_hops * ll_hop
    simple = SIMPLE_STARTUP_HOPS * hop + transfer + nvlink_hops * simple_hop
    return latency + min(ll, simple)


def _nvlink_protocol(hops: int, kind: str, transfer: float) -> float:
    """Seconds for a collective over NVLink alone (one node, or one multi-node NVLink domain): NCCL's base and
    per-hop latencies (NVLINK_BASE_S, NVLINK_STEP_S) under the faster of LL and Simple."""
    ll_hop, simple_hop = NVLINK_STEP_S[kind]
    ll = NVLINK_BASE_S[0] + hops * ll_hop + transfer / LL_BANDWIDTH_FRACTION
    return min(ll, NVLINK_BASE_S[1] + hops * simple_hop + transfer)


def collective_seconds(
    op: str,
    size: float,
    nodes: int,
    gpus: int,
    link: Link,
    intra: float,
    two_node_tree: bool = True,
    domain: bool = False,
) -> float:
    """Seconds one collective of `size` bytes takes on `nodes` x `gpus` ranks (see `algorithm`)."""
    return algorithm(op, size, nodes, gpus, link, intra, two_node_tree, domain)[1]


def two_node_trees(accel: catalog.Accelerator, link: Link, gpus: int = 8) -> bool:
    """Whether NCCL runs a tree for large all_reduces at 2 nodes of `gpus` GPUs, by the release the link's job
    runs (links.NcclVersion): none before 2.4; 2.4's threshold ran trees there on NVLink nodes of 3 GPUs and more;
    from 2.18 NVLSTree does on NVLS accelerators; a plugin's tuner (tuned_trees) picks them on its fabric."""
    version = link.nccl_version
    if version < FIRST_TREE_NCCL:
        return False  # no trees before 2.4
    if version <= LAST_THRESHOLD_NCCL:
        return bool(accel.nvlink_gbytes) and gpus >= THRESHOLD_TREE_MIN_GPUS
    return (accel.nvls and version >= FIRST_NVLS_TREE_NCCL) or link.tuned_trees


@dataclass(frozen=True)
class Units:
    """What a collective sees as its nodes: the nodes themselves, or the multi-node NVLink domains they fill
    (every GPU of a domain reaches the others over NVLink; only traffic between domains uses the NICs, all of
    the domain's NICs at once)."""

    count: int
    gpus: int
    link: Link
    nodes_per_unit: int = 1  # nodes one unit holds: more than one inside a multi-node NVLink domain


# What a multi-node NVLink domain's rings carry out of it: NCCL's channels cross the domain boundary on the rails
# of the GPUs at their ends, not on all of the domain's NICs at once. Fitted: 20 GB200 NVL72 racks (1,440 ranks,
# 4 x 400 Gbps InfiniBand a tray), all_reduce 16 GiB busbw 405.74 GB/s (coreweave/nccl-tests@cb86553 README.md,
# "20 Racks"): 405.74 / (50 GB/s x 0.91) = 8.9 NICs' worth of the rack's 72. Held out: the same README's 2 racks
# (810.41 at 16 GiB). A rail is a GPU's (links.ring_rails): on GB200 one NIC a GPU; a tray with 2 NICs a GPU (GB300
# on ConnectX-8) gives each rail what the GPU's channels drive (links.GPU_NET_GBYTES).
DOMAIN_RING_NICS = 8.9


def units(nodes: int, gpus: int, link: Link, per_domain: int, domains: int | None, nics: int = 0) -> Units:
    """`nodes` of `gpus` each, grouped into NVLink domains of `per_domain` nodes (1: no domain beyond the node).
    A domain's link is its nodes' links together, up to what its rings drive (DOMAIN_RING_NICS of the `nics` rails
    a node has, links.ring_rails; 0: no cap)."""
    if per_domain <= 1 or nodes <= 1:
        return Units(nodes, gpus, link)
    spanned = domains_spanned(nodes, per_domain, domains)
    per_unit = max(1, nodes // spanned)
    share = min(float(per_unit), DOMAIN_RING_NICS / nics) if nics > 0 else float(per_unit)
    joined = replace(link, bandwidth=link.bandwidth * max(1.0, share), domain_units=per_unit > 1)
    return Units(spanned, gpus * per_unit, joined, per_unit)


@dataclass(frozen=True)
class CollectiveEstimate:
    algorithm: str  # nvlink (one node or one NVLink domain), ring, tree or p2p (alltoall)
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
    state = state or HEALTHY
    if state.fabric == "unreachable" and nodes > 1:
        return None
    link = _link(fabric, accel, state, nodes, worst)
    if link is None and nodes > 1:
        return None
    link = link or Link(1.0, 0.0)
    per_domain = domain_nodes(fabric, accel, state)
    group = units(nodes, fabric.gpus_per_node, link, per_domain, state.nvlink_domains, ring_rails(fabric))
    intra = intra_bandwidth(accel, group.nodes_per_unit > 1)
    trees = two_node_trees(accel, link, group.gpus)
    domain = group.nodes_per_unit > 1
    name, seconds = algorithm(op, size_bytes, group.count, group.gpus, group.link, intra, trees, domain)
    if seconds <= 0:
        return None
    algbw = size_bytes / seconds / GB
    return CollectiveEstimate(name, algbw, algbw * bus_factor(op, nodes * fabric.gpus_per_node))


def _link(
    fabric: FabricDescription, accel: catalog.Accelerator, state: FabricState, nodes: int, worst: bool
) -> Link | None:
    healthy = healthy_link_of(fabric, accel, state, best=not worst)
    if isinstance(healthy, str):
        return None
    degraded = state != HEALTHY and (state.fabric != "healthy" or state.loose_placement or state != HEALTHY)
    link = degraded_link_of(fabric, accel, state, healthy, best=not worst) if degraded else healthy
    if isinstance(link, str):
        return None
    share = ecmp_share(fabric, nodes, best=not worst)
    return replace(link, bandwidth=link.bandwidth * share) if share != 1.0 else link


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
