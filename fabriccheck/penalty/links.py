"""Links: what one node's inter-node path carries, by transport and fabric state (penalty-model A.4).

Every constant is fitted on rows of data/calibration.yaml (each row names the constant it fits; rows marked
held_out fitted none) or quoted from the source named beside it. A link has two ends where the physics leaves a
choice the cloud API does not show (socket threads, GPU-NIC PCIe layout, ECMP hashing): `best` and `worst`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Literal

from fabriccheck import catalog
from fabriccheck.model import Capability, FabricKind, NetworkPath
from fabriccheck.penalty.releases import DEFAULT_NCCL_VERSION, NcclVersion
from fabriccheck.provider import SocketDefaults, declared

GB = 1e9

# Achieved fraction of nominal inter-node bandwidth, by transport, fitted on the calibration rows that name it:
# ring busbw at 4+ nodes, or algbw at 2 nodes, over the node's line rate.
EFFICIENCY = {
    # EFA: 2-node all_reduce algbw over 4 x 100 Gbps (50 GB/s): p4de 41.78 (penalty-model B row 5), p4d VMs 41.55
    # and p4d on EKS 41.25 (skypilot examples/aws_efa): 0.836, 0.831, 0.825; their mean.
    FabricKind.EFA: 0.83,
    # InfiniBand: ring busbw over line rate at 4+ nodes: Voltage Park 4 x 8 H100 330.93 of 400 GB/s (row 15) = 0.83,
    # DGX-A100 8 x 200 Gbps 192 of 200 (row 11) = 0.96, Dell XE9680 4 x 8 H100 365.84 of 400 (NVIDIA/nccl-tests#309)
    # = 0.91, DGX-1 4 x 100 Gbps 47 of 50 (NVIDIA/nccl#307) = 0.94; their mean.
    FabricKind.INFINIBAND: 0.91,
    # RoCE/MRDMA: tuned RoCE performs within about 1% of InfiniBand at equal line rate (penalty-model D); at scale
    # ECMP hashing takes its share (ECMP_WORST below).
    FabricKind.RDMA: 0.91,
    # GPUDirect-TCPXO: a3-megagpu-8g ~340 GB/s busbw at 2 nodes (row 1) = algbw 181 GB/s of 200 GB/s = 0.91.
    FabricKind.TCPXO: 0.91,
    # GPUDirect-TCPX: a3-highgpu-8g, algbw 35 GB/s of 100 (skypilot examples/gcp_gpu_direct_tcpx, 65.72 busbw at
    # 2 nodes) and "up to 50" (dstackai/dstack#2447): their geometric mean.
    FabricKind.TCPX: 0.42,
}
# Transports that move GPU memory by RDMA: without GPUDirect RDMA they stage every byte through host memory.
RDMA_TRANSPORTS = frozenset({FabricKind.EFA, FabricKind.INFINIBAND, FabricKind.RDMA})
# Latency of one all_reduce between 2 nodes (8-byte nccl-tests rows): p5 EFA 65-74 us (row 4), IB ~30 us
# (row 16), TCPXO ~123 us (penalty-model A.2).
LATENCY_S = {
    FabricKind.EFA: 70e-6,
    FabricKind.INFINIBAND: 30e-6,
    FabricKind.RDMA: 30e-6,
    FabricKind.TCPXO: 123e-6,
    FabricKind.TCPX: 123e-6,
}
# First-generation EFA (p4d, p4de: 4 x 100 Gbps) is slower to a small message than p5's: 8-byte all_reduce between
# 2 x p4de ~161 us (aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/README.md, penalty-model B
# row 5); p4d carries the same EFA NICs (catalog: 4 x 100 Gbps, the same sources).
LATENCY_BY_FAMILY_S = {"p4d": 161e-6, "p4de": 161e-6}
# NCCL over sockets, 8-byte all_reduce between 2 nodes: 98.8-112.9 us on EKS with EFA disabled
# (aws-samples/aws-do-eks@509da3f Container-Root/eks/deployment/karpenter/README.md); 200 us kept as the high side.
TCP_LATENCY_S = 200e-6
# One collective inside a DGX H100 node: about 13 us (penalty-model A.2).
INTRA_LATENCY_S = 13e-6
# Loose placement: no published bandwidth cost for RDMA fabrics (penalty-model F); doubled latency on the high side.
LOOSE_PLACEMENT_LATENCY_FACTOR = 2.0
# What one GPU's channels carry over the network when it shares its node with other GPUs (GB/s, achieved). NCCL
# builds its rings and trees through every GPU of a node and sends each channel out of one NIC near the GPU at its
# end (NVIDIA/nccl src/graph/search.cc: one NET per channel, channels capped by the GPU's path to one NIC); a GPU
# given two 400 Gbps NICs does not fill both. Fitted: 2 x p6e-gb300r (4 x GB300, 8 x 400 Gbps ConnectX-8 RoCE, 2 a
# GPU), NCCL 2.29 over IB verbs, multi-node NVLink not used, all_reduce 8 GB busbw ~387 GB/s = algbw 221 GB/s over
# 4 GPUs = 55.3 (NVIDIA/aicr#1413, 2026-06-23 comment); the model put all 8 NICs on the rings, x1.64 high. Every
# published multi-GPU run below it is unchanged (p5 41.5 a GPU, 8 x 400 Gbps H100 45.5, GB200 trays 45.5); a node
# of one GPU is not capped: one GH200 drove 4 x 200 Gbps at 96 GB/s (NVIDIA/nccl#1579).
GPU_NET_GBYTES = 55.3
# PCIe ACS (Access Control Services) on the switches between GPUs and NICs redirects every peer-to-peer transfer
# through the CPU's root complex: GPUDirect RDMA still runs, at a share of the NIC's rate. Worst end fitted: 2 x 8
# A100 over 1 of 4 200 Gbps RoCE NICs (NCCL_IB_HCA=mlx5_0), ACS enabled, all_reduce 1-8 GB average busbw 9.84 GB/s
# where the NIC gives 22.75 (NVIDIA/nccl-tests#112): 0.43. Best end: an NVIDIA engineer's "could explain why
# bandwidth is halved" (same thread; and "all traffic goes back to the CPU and your bandwidth is halved",
# NVIDIA/nccl-tests#156): 0.5.
ACS_SHARE = (0.5, 0.43)  # (best, worst)
# Single-node all_reduce busbw over NVLink rings, as a fraction of nominal NVLink, for accelerators without a
# measured figure: A100 231.58 of 300 (0.77) and GB200 679.61 of 900 (0.76) (Azure/AI-benchmarking-guide).
INTRA_RING_EFFICIENCY = 0.77

# ---- GPUDirect RDMA off: the host-staged path ----------------------------------------------------------------
# Without GPUDirect RDMA, NCCL's proxy moves every byte through a host bounce buffer: the GPU kernel writes its
# send data to pinned host memory and reads what the NIC wrote there across the GPU's host link (PCIe, or
# NVLink-C2C on Grace). Two bounds, the lower wins:
# - NIC-bound (a host link far faster than the NIC): the fabric's efficiency x STAGING_EFFICIENCY. 2 x GH200,
#   4 x 200 Gbps, NCCL 2.24.3, all_reduce busbw at 2 GiB 79.72 GB/s without GDR vs 96.07 with (NVIDIA/nccl#1579).
STAGING_EFFICIENCY = 0.83
# - host-bound: each staging GPU reaches HOST_STAGED_FRACTION of its host link (kernel loads from host memory,
#   the proxy's copies), and NCCL stages each NIC's channels through at most STAGED_GPUS_PER_NIC GPUs (its two
#   channels per NIC: "2 coll channels" in every 1-NIC log of the samples, e.g. CCI-MOC/roce-testing). Fitted ends
#   (best, worst): 2 x 1 H100 (PCIe Gen5, 64 GB/s) on one 400 Gbps RoCE NIC, GDR 0, all_reduce 15.0 GB/s
#   (CCI-MOC/roce-testing@24e67d1 RHELAI/3_nccl_tests/logs/all_reduce_roce_1gpu.log): 15.0 / 64 = 0.23; 4 nodes x
#   4 V100 (PCIe Gen3, 16 GB/s) on one 100 Gbps IB NIC without nv_peer_mem, 6 GB/s busbw (NVIDIA/nccl#465):
#   6 / (2 x 16) = 0.19. A node's GPUs beyond that do not add: they are not on the NICs' rings.
HOST_STAGED_FRACTION = (0.23, 0.094)  # (best, worst)
STAGED_GPUS_PER_NIC = 4

# ---- NCCL's socket transport --------------------------------------------------------------------------------
# NCCL opens NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD sockets per connection and, when neither is set, reads
# the NIC's PCI vendor: each provider declares what its host NIC gets (provider.SocketDefaults: AWS ENA 2 x 8,
# Google gVNIC 4 x 1); anything else (an Azure Mellanox VF, a pod's veth with no PCI device) no helper thread and
# one socket (NVIDIA/nccl@28189e2 src/transport/net_socket.cc, ncclNetSocketGetNsockNthread).
SOCKET_UNKNOWN_NIC = (0, 1)  # (NCCL_SOCKET_NTHREADS, NCCL_NSOCKS_PERTHREAD)
# NCCL's caps on what the two variables ask for (net_socket.cc, same commit): MAX_THREADS 16 threads, MAX_SOCKETS
# 64 sockets (beyond it NSOCKS_PERTHREAD becomes 64 / threads). With no helper thread (NTHREADS 0, the default on
# an unknown NIC) nSocks is 0 and the main thread sends over the connection's control socket: one stream.
SOCKET_MAX_THREADS = 16
SOCKET_MAX_SOCKETS = 64
# Channels per node over one socket NIC: "2 coll channels" in every socket log of the samples (a HyperPod EKS
# socket run, aws-solutions-library-samples/guidance-for-protein-language-esm-model-training-with-sagemaker-
# hyperpod@c1044ff; a g6e socket fallback, gnosia93/training-on-eks@7fb5c75).
SOCKET_CHANNELS = 2
# NCCL's channel limit (NVIDIA/nccl@5067397 src/include/device.h: MAXCHANNELS 64): a log's or a workload's channel
# count beyond it is read as it.
MAX_CHANNELS = 64
# What one TCP stream carries (Gbps), fitted (best, worst) on 2-node runs over NCCL sockets divided by their
# streams (channels x sockets): 2 x p4d on EKS pods, 4.13 GB/s busbw = 33 Gbps over 2 streams = 16.5
# (skypilot examples/aws_efa); 2 x g4dn pods on EKS with EFA disabled, 2.00 GB/s = 16 Gbps over 2 = 8.0
# (aws-samples/aws-do-eks@509da3f). Held out: a3-megagpu-8g pods on GKE, 2.13 GB/s algbw = 17 Gbps over 2 = 8.5
# (NVIDIA/aicr, penalty-model B row 1); a3-highgpu-8g VMs over gVNIC (4 sockets), 10.34 GB/s algbw = 83 Gbps over
# 8 = 10.3 (skypilot examples/gcp_gpu_direct_tcpx).
STREAM_GBPS = (16.5, 8.0)  # (best, worst)
# What kernel TCP reaches on a line-rate-bound path: 2 x p4d VMs, 16 sockets over one 100 Gbps ENA, 8.20 GB/s
# busbw = 66 Gbps (skypilot examples/aws_efa).
TCP_LINE_EFFICIENCY = 0.66
# What a single flow between instances not in one placement group, or across zones, carries of one inside it, and
# the default MTU of the path NCCL's sockets take: each provider's own (provider.SocketDefaults, with its sources);
# Ethernet's 1500 where a provider declares none.
ETHERNET_MTU = 1500
IP_TCP_HEADER_BYTES = 40
# A VXLAN overlay (Calico VXLAN, Flannel, AKS overlay) wraps each frame in 50 more bytes (RFC 7348 section 5).
OVERLAY_HEADER_BYTES = 50

# ---- RoCE at scale --------------------------------------------------------------------------------------------
# Beyond the nodes under one switch a RoCE ring's flows are spread by ECMP hashing, and a few large flows collide
# on uplinks. Meta, "RDMA over Ethernet for Distributed AI Training at Meta Scale" (SIGCOMM 2024; Engineering at
# Meta, 2024-08-05): enhanced ECMP with QP scaling improved AllReduce by up to 40% over baseline ECMP. Worst end:
# baseline ECMP at 1/1.4 of a tuned fabric; best end: adaptive routing or E-ECMP (no loss).
ECMP_WORST = 1 / 1.4
ECMP_FREE_NODES = 2  # a 2-node ring's flows run between two NIC pairs: nothing to hash onto shared uplinks


@dataclass(frozen=True)
class Link:
    """One direction of a node's inter-node path: achieved bandwidth (bytes/s) and the latency of a 2-node
    all_reduce (two inter-node steps)."""

    bandwidth: float
    latency: float
    # NCCL runs trees for large all_reduces at 2 nodes on this fabric: EFA. aws-ofi-nccl's tuner picks them on
    # p5/p5e/p5en/p6-b200 (aws/aws-ofi-nccl@0e2a0f4 src/tuner/nccl_ofi_tuner.cpp: any other type falls back to
    # NCCL's tuner), but the measured 2-node runs of p4d (77 GB/s busbw on 50 GB/s of EFA) and p3dn (2019, before
    # any tuner plugin) are trees too: NCCL's own choice there, which its model (tuning.cc) is not followed far
    # enough here to reproduce, so the flag stands for every EFA fabric.
    tuned_trees: bool = False
    # The units this link joins are multi-node NVLink domains (penalty.collectives.units): their NVLink hops cost
    # NCCL's step latency (collectives.NVLINK_STEP_S), which a node's measured latency does not hold.
    domain_units: bool = False
    # The NCCL release the job runs (DEFAULT_NCCL_VERSION unless a workload or estimate says): which algorithm it
    # picks at 2 nodes (collectives.two_node_trees).
    nccl_version: NcclVersion = DEFAULT_NCCL_VERSION


FabricHealth = Literal["healthy", "tcp-fallback", "partial", "gpudirect-off", "unreachable"]
# How NCCL's sockets reach the network (model.NetworkPath): the VM's own NIC (or a pod with host networking), a
# Kubernetes pod network (a veth: no PCI device under /sys/class/net/<dev>/device for NCCL to read a vendor from,
# NVIDIA/nccl src/transport/net_socket.cc ncclNetSocketGetPciPath), or a pod network through a VXLAN overlay. A
# scanned cluster's path is the trait its grouping signal declares (cloud.TagSignal.network_path, in each
# provider's support.py), never its label: a Kubernetes node group's pods run on the pod network unless a manifest
# asks for host networking, which the cloud API does not show; every published Kubernetes fallback of the
# calibration table ran there (EKS p4d and g4dn, GKE a3-megagpu-8g).
SocketPath = NetworkPath


@dataclass(frozen=True)
class FabricDescription:
    """What one node's inter-node path offers when nothing is wrong with it."""

    accelerator: str  # a name catalog.accelerator() knows, e.g. "H100"
    gpus_per_node: int
    fabric: FabricKind
    nics: int  # fabric NICs per node
    gbps_per_nic: float  # one direction
    gpudirect_rdma: bool | None
    ethernet_gbps: float | None  # the ordinary NIC that NCCL sockets fall back to
    instance_type: str | None = None  # only names the node in messages; the model does not use it
    provider: str | None = None  # the cloud: NCCL's socket defaults and per-flow limits follow it
    # A measured healthy baseline (estimate --calibrate): the fabric's efficiency times this.
    calibration: float = 1.0

    @functools.cached_property
    def fabric_gbps(self) -> float:
        """Total fabric bandwidth of the node, one direction (0 when unknown)."""
        return max(0, self.nics) * max(0.0, self.gbps_per_nic)

    @classmethod
    def from_capability(cls, cap: Capability) -> FabricDescription:
        nics = cap.fabric_interfaces
        per_nic = cap.fabric_gbps / nics if cap.fabric_gbps and nics > 0 else 0.0
        return cls(
            accelerator=cap.accelerator_name or "",
            gpus_per_node=cap.accelerators,
            fabric=cap.fabric,
            nics=nics,
            gbps_per_nic=per_nic,
            gpudirect_rdma=cap.gpudirect_rdma,
            ethernet_gbps=cap.ethernet_gbps,
            instance_type=cap.instance_type,
            provider=cap.provider,
        )

    def scaled(self, share: float) -> FabricDescription:
        """The same fabric with `share` of its bandwidth (same NIC count, each NIC `share` as fast)."""
        return replace(self, gbps_per_nic=self.gbps_per_nic * share)

    @classmethod
    def borrowed(cls, cap: Capability, sibling: Capability) -> FabricDescription:
        """A node of type `cap` judged against the fabric of `sibling` (a same-generation type that has one):
        the sibling's fabric scaled per accelerator (cap.accelerators / sibling.accelerators), with this
        node's accelerator, GPU count and ordinary Ethernet. Pair it with a tcp-fallback state for a type
        whose fabric is weaker than its generation's."""
        own = cls.from_capability(cap)
        share = cap.accelerators / sibling.accelerators if sibling.accelerators > 0 else 0.0
        return replace(
            cls.from_capability(sibling).scaled(share),
            accelerator=own.accelerator,
            gpus_per_node=own.gpus_per_node,
            ethernet_gbps=own.ethernet_gbps,
            instance_type=own.instance_type,
        )


@dataclass(frozen=True)
class FabricState:
    """What is wrong with one node's fabric. `partial` uses `nics_used` of the description's `nics` (0 behaves
    as tcp-fallback, more than `nics` as all of them); loose placement combines with any fabric state. The socket
    fields describe NCCL's TCP path (used in tcp-fallback, and by a type without a fabric): `socket_path`, the
    sockets per connection (NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD; None: NCCL's default for the NIC), the
    MTU (None: the cloud's default) and whether peers sit in different zones. `nvlink_domains`: how many
    multi-node NVLink domains (GB200/GB300 NVL72) the job spans; None: as few as hold it. `multi_node_nvlink`
    False: the domain's NVLink between nodes is down (fabric manager or IMEX not running, NVLink switch trays
    out), so every node reaches the others over its own NICs only.

    Two named states say what happens to multi-node NVLink, for rule effects and `--state` alike (the names are
    stable): NVLINK_SPLIT ("nvlink-split", effect split-nvlink-domain: the job spans more domains than it needs)
    and NVLINK_DOWN ("nvlink-down", effect nvlink-down: no NVLink between the nodes of a domain). A third names a
    PCIe state: PCIE_ACS ("pcie-acs", effect pcie-acs: ACS on between GPUs and NICs; `pcie_acs`, which also
    combines with a partial fabric)."""

    fabric: FabricHealth
    nics_used: int | None = None
    loose_placement: bool = False
    socket_path: SocketPath = NetworkPath.HOST
    sockets: int | None = None
    mtu: int | None = None
    cross_zone: bool = False
    nvlink_domains: int | None = None
    multi_node_nvlink: bool = True
    channels: int | None = None  # NCCL channels over the sockets (a log's "N coll channels"); None: SOCKET_CHANNELS
    pcie_acs: bool = False  # PCIE_ACS: ACS on between GPUs and NICs (GPUDirect RDMA through the root complex)
    nccl_version: NcclVersion | None = None  # the NCCL release the job runs; None: DEFAULT_NCCL_VERSION

    @classmethod
    def healthy(cls, loose_placement: bool = False) -> FabricState:
        return cls("healthy", loose_placement=loose_placement)

    @classmethod
    def tcp_fallback(cls, loose_placement: bool = False, socket_path: SocketPath = NetworkPath.HOST) -> FabricState:
        return cls("tcp-fallback", loose_placement=loose_placement, socket_path=socket_path)

    @classmethod
    def unreachable(cls, loose_placement: bool = False) -> FabricState:
        return cls("unreachable", loose_placement=loose_placement)

    @classmethod
    def partial(cls, nics_used: int, loose_placement: bool = False) -> FabricState:
        return cls("partial", nics_used=nics_used, loose_placement=loose_placement)

    @classmethod
    def gpudirect_off(cls, loose_placement: bool = False) -> FabricState:
        return cls("gpudirect-off", loose_placement=loose_placement)

    @classmethod
    def nvlink_split(cls, domains: int | None = None, loose_placement: bool = False) -> FabricState:
        """NVLINK_SPLIT: the fabric is healthy but the job spans `domains` multi-node NVLink domains (None: one
        more than the fewest that hold it, the smallest split)."""
        return cls("healthy", loose_placement=loose_placement, nvlink_domains=domains or SPLIT_ONE_MORE)

    @classmethod
    def nvlink_down(cls, loose_placement: bool = False) -> FabricState:
        """NVLINK_DOWN: the fabric is healthy but multi-node NVLink is down: each node is its own unit."""
        return cls("healthy", loose_placement=loose_placement, multi_node_nvlink=False)

    @classmethod
    def pcie_acs_on(cls, loose_placement: bool = False) -> FabricState:
        """PCIE_ACS: the fabric is healthy but PCIe ACS sends GPU-NIC traffic through the CPU's root complex."""
        return cls("healthy", loose_placement=loose_placement, pcie_acs=True)

    @property
    def name(self) -> str:
        """The named state this is (NVLINK_SPLIT, NVLINK_DOWN, PCIE_ACS), else the fabric's health."""
        if not self.multi_node_nvlink:
            return NVLINK_DOWN
        if self.nvlink_domains is not None:
            return NVLINK_SPLIT
        return PCIE_ACS if self.pcie_acs and self.fabric == "healthy" else self.fabric


# The named multi-node NVLink states (stable names: rule effects and `--state` use them).
NVLINK_SPLIT = "nvlink-split"
NVLINK_DOWN = "nvlink-down"
# The named PCIe state (stable: rule effect and `--state` use it): ACS on between GPUs and fabric NICs.
PCIE_ACS = "pcie-acs"
# nvlink_domains for "one more domain than the job needs" (domains_spanned reads it); any positive count
# is that many domains.
SPLIT_ONE_MORE = -1


HEALTHY = FabricState.healthy()


def _socket_defaults(provider: str | None) -> SocketDefaults:
    """What NCCL's sockets find on the provider's host NICs (none known: NCCL's and Ethernet's generic defaults)."""
    found = declared(provider)
    return found.sockets if found is not None else SocketDefaults()


def uses_fabric(fabric: FabricDescription) -> bool:
    return fabric.fabric is not FabricKind.NONE and fabric.fabric_gbps > 0


def nccl_sockets(threads: int | None, per_thread: int | None, provider: str | None, path: SocketPath) -> int:
    """Sockets per NCCL connection as ncclNetSocketGetNsockNthread counts them (net_socket.cc): each variable the
    job sets (None: unset) wins, the other comes from the NIC's PCI vendor (a pod's veth has none), threads are
    capped at 16 and sockets at 64; no helper thread means the control socket alone."""
    auto = _socket_defaults(provider).threads or SOCKET_UNKNOWN_NIC if path == NetworkPath.HOST else SOCKET_UNKNOWN_NIC
    count = min(auto[0] if threads is None else max(0, threads), SOCKET_MAX_THREADS)
    each = auto[1] if per_thread is None else max(0, per_thread)
    if count * each > SOCKET_MAX_SOCKETS:
        each = SOCKET_MAX_SOCKETS // count
    return max(1, count * each)


def socket_streams(fabric: FabricDescription, state: FabricState) -> int:
    """TCP streams one node's sockets run at once: channels x sockets per connection (at least one). The state's
    own figures (a workload's NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD, a log's channels) win over NCCL's
    defaults."""
    if state.sockets is not None:
        sockets = max(1, min(state.sockets, SOCKET_MAX_SOCKETS))
    else:
        sockets = nccl_sockets(None, None, fabric.provider, state.socket_path)
    channels = min(state.channels, MAX_CHANNELS) if state.channels else SOCKET_CHANNELS
    return channels * sockets


def _payload_share(fabric: FabricDescription, state: FabricState) -> float:
    """The share of each frame that is NCCL's data on this path (headers, and an overlay's encapsulation)."""
    mtu = state.mtu or _socket_defaults(fabric.provider).mtu or ETHERNET_MTU
    overhead = IP_TCP_HEADER_BYTES + (OVERLAY_HEADER_BYTES if state.socket_path == "overlay" else 0)
    return max(0.0, mtu - overhead) / mtu if mtu > overhead else 0.0


def tcp_link(fabric: FabricDescription, state: FabricState, best: bool) -> Link | None:
    """NCCL's socket transport over the ordinary NIC: the lesser of what the line carries and what the streams
    carry, on this socket path. None without an Ethernet figure."""
    if fabric.ethernet_gbps is None or not fabric.ethernet_gbps > 0:
        return None
    per_stream = STREAM_GBPS[0 if best else 1]
    if state.loose_placement or state.cross_zone:
        per_stream *= _socket_defaults(fabric.provider).loose_flow_share
    share = _payload_share(fabric, state)
    gbps = min(fabric.ethernet_gbps * TCP_LINE_EFFICIENCY, socket_streams(fabric, state) * per_stream) * share
    return Link(gbps / 8 * GB, TCP_LATENCY_S)


def staged_bandwidth(fabric: FabricDescription, accel: catalog.Accelerator | None, rdma: float, best: bool) -> float:
    """Bytes/s of an RDMA fabric without GPUDirect RDMA (`rdma`: its bandwidth with it): the NIC-bound and the
    host-bound ends of the host-staged path, the lower of them."""
    nic_bound = rdma * STAGING_EFFICIENCY
    host = accel.host_link_gbytes if accel is not None else None
    if not host or fabric.gpus_per_node <= 0:
        return nic_bound
    staging = min(fabric.gpus_per_node, STAGED_GPUS_PER_NIC * max(1, fabric.nics))
    return min(nic_bound, HOST_STAGED_FRACTION[0 if best else 1] * host * staging * GB)


def ecmp_share(fabric: FabricDescription, nodes: int, best: bool) -> float:
    """What ECMP hashing leaves of a RoCE fabric's bandwidth on `nodes` nodes (1.0 at the best end)."""
    if best or fabric.fabric is not FabricKind.RDMA or nodes <= ECMP_FREE_NODES:
        return 1.0
    return ECMP_WORST


def gpu_capped(fabric: FabricDescription, bandwidth: float) -> float:
    """What a node's NICs carry (`bandwidth`, bytes/s) up to what its GPUs' channels drive (GPU_NET_GBYTES each;
    a node of one GPU is not capped)."""
    if fabric.gpus_per_node <= 1:
        return bandwidth
    return min(bandwidth, fabric.gpus_per_node * GPU_NET_GBYTES * GB * fabric.calibration)


def nic_cap_line(fabric: FabricDescription) -> str | None:
    """When GPU_NET_GBYTES holds a node's fabric below its NICs' rate, the line that says so, and that outside the one
    GB300 RoCE run it was fitted on it is extrapolated, not measured; None when the NICs bind first (or one GPU)."""
    gpus = fabric.gpus_per_node
    if not uses_fabric(fabric) or gpus <= 1 or gpu_capped(fabric, float("inf")) >= fabric.fabric_gbps / 8 * GB:
        return None
    where = f"; extrapolated to {fabric.accelerator or 'this GPU'} over {fabric.fabric.value}, not measured"
    return (
        f"{fabric.nics} NICs for {gpus} GPUs: each GPU's NCCL channels drive about {GPU_NET_GBYTES:g} GB/s "
        f"of them (measured on GB300 with 2 x 400 Gbps a GPU, NVIDIA/aicr#1413{'' if _cap_measured(fabric) else where})"
    )


def _cap_measured(fabric: FabricDescription) -> bool:
    """GPU_NET_GBYTES was fitted on GB300 over RoCE (NVIDIA/aicr#1413): anywhere else it is an extrapolation."""
    return fabric.accelerator == "GB300" and fabric.fabric is not FabricKind.EFA


def nic_cap_extrapolated(fabric: FabricDescription) -> str | None:
    """`nic_cap_line` only where it is an extrapolation: what a price resting on it must say beside the figure."""
    return None if _cap_measured(fabric) else nic_cap_line(fabric)


def ring_rails(fabric: FabricDescription) -> int:
    """The rails a node's rings leave it on: one a GPU (its own NICs, up to what its channels drive), or one a NIC
    where the node has fewer NICs than GPUs."""
    if fabric.nics > 0 and fabric.gpus_per_node > 0:
        return min(fabric.nics, fabric.gpus_per_node)
    return max(0, fabric.nics)


def acs_share(fabric: FabricDescription, state: FabricState, best: bool) -> float:
    """What PCIe ACS leaves of a fabric's GPUDirect RDMA path (1.0 without ACS, or where no GPU-NIC peer traffic
    runs: no fabric, sockets, GPUDirect RDMA off)."""
    direct = fabric.fabric in RDMA_TRANSPORTS and fabric.gpudirect_rdma is not False and uses_fabric(fabric)
    if not state.pcie_acs or not direct or state.fabric not in ("healthy", "partial"):
        return 1.0
    return ACS_SHARE[0 if best else 1]


def fabric_link(fabric: FabricDescription, accel: catalog.Accelerator | None, best: bool) -> Link | str:
    """The fabric itself with nothing wrong, at the best or worst end (they differ only without GPUDirect RDMA)."""
    efficiency, latency = EFFICIENCY.get(fabric.fabric), LATENCY_S.get(fabric.fabric)
    family = (fabric.instance_type or "").split(".")[0]
    if latency is not None and fabric.fabric is FabricKind.EFA:
        latency = LATENCY_BY_FAMILY_S.get(family, latency)
    if efficiency is None or latency is None:
        return f"no sourced efficiency for {fabric.fabric} fabrics"
    bandwidth = gpu_capped(fabric, fabric.fabric_gbps / 8 * GB * efficiency * fabric.calibration)
    if fabric.fabric in RDMA_TRANSPORTS and fabric.gpudirect_rdma is False:
        bandwidth = staged_bandwidth(fabric, accel, bandwidth, best)  # a fabric that never had GPUDirect RDMA
    return Link(bandwidth, latency, fabric.fabric is FabricKind.EFA)


def healthy_link_of(
    fabric: FabricDescription, accel: catalog.Accelerator | None, state: FabricState = HEALTHY, best: bool = True
) -> Link | str:
    """A node's inter-node link with nothing wrong with its fabric, or why there is none. Without a fabric, TCP
    over the ordinary NIC on the state's socket path is the healthy state. The link carries the state's NCCL
    version (the default where it names none)."""
    link = (
        fabric_link(fabric, accel, best) if uses_fabric(fabric) else _calibrated(tcp_link(fabric, state, best), fabric)
    )
    if link is None:
        return f"no bandwidth figure for {fabric.instance_type or 'this node type'}"
    if isinstance(link, str) or state.nccl_version is None:
        return link
    return replace(link, nccl_version=state.nccl_version)


def _calibrated(link: Link | None, fabric: FabricDescription) -> Link | None:
    """TCP as a type's own healthy path (it has no fabric), scaled by a measured baseline."""
    if link is None or fabric.calibration == 1.0:
        return link
    return replace(link, bandwidth=link.bandwidth * fabric.calibration)


def healthy_ends(
    fabric: FabricDescription, accel: catalog.Accelerator | None, state: FabricState = HEALTHY
) -> tuple[Link | str, Link | str]:
    """`healthy_link_of` at both ends; a path without a range of its own (a fabric with GPUDirect RDMA) is priced
    once. A type without a fabric is healthy on the state's own socket path (a pod network is no finding)."""
    best = healthy_link_of(fabric, accel, state)
    if uses_fabric(fabric) and not (fabric.fabric in RDMA_TRANSPORTS and fabric.gpudirect_rdma is False):
        return best, best
    return best, healthy_link_of(fabric, accel, state, best=False)


def degraded_link_of(
    fabric: FabricDescription, accel: catalog.Accelerator | None, state: FabricState, healthy: Link, best: bool
) -> Link | str:
    """A node's link in `state` at the best or worst end of its range, or why it cannot be modelled."""
    kind = state.fabric
    used = state.nics_used
    if kind == "partial":
        if used is None:
            return "partial fabric: how many fabric NICs are in use is unknown"
        if used <= 0:
            kind = "tcp-fallback"  # none of the fabric NICs: NCCL falls back to sockets
    link = healthy
    if kind in ("tcp-fallback", "unreachable"):
        tcp = tcp_link(fabric, state, best)
        if tcp is None:
            # Name the type and the one figure: the fabric is priced, only the fallback NIC is unknown.
            if fabric.instance_type:
                why = "no source gives its host NIC's share"
                return f"no ordinary-Ethernet bandwidth figure for {fabric.instance_type} ({why})"
            return "no ordinary-Ethernet bandwidth figure for this node type (none given)"
        link = Link(min(link.bandwidth, tcp.bandwidth), tcp.latency, nccl_version=link.nccl_version)
    elif kind == "partial" and used is not None and fabric.nics > 0 and uses_fabric(fabric):
        # k of N NICs: the NICs' share of the uncapped line, still up to what the GPUs drive (GPU_NET_GBYTES)
        nic_line = fabric.fabric_gbps / 8 * GB * EFFICIENCY.get(fabric.fabric, 0.0) * fabric.calibration
        share = min(used, fabric.nics) / fabric.nics
        capped = gpu_capped(fabric, nic_line) < nic_line and link.bandwidth >= gpu_capped(fabric, nic_line)
        link = replace(link, bandwidth=min(link.bandwidth, nic_line * share) if capped else link.bandwidth * share)
    elif kind == "gpudirect-off" and fabric.gpudirect_rdma and uses_fabric(fabric):
        if fabric.fabric in RDMA_TRANSPORTS:
            link = replace(link, bandwidth=staged_bandwidth(fabric, accel, link.bandwidth, best))
    elif not uses_fabric(fabric):
        link = _calibrated(tcp_link(fabric, state, best), fabric) or link  # the state's socket path sets it
    acs = acs_share(fabric, state, best)
    if acs != 1.0:
        link = replace(link, bandwidth=link.bandwidth * acs)
    if state.loose_placement and not best:
        link = replace(link, latency=link.latency * LOOSE_PLACEMENT_LATENCY_FACTOR)
    return link


def healthy_link(fabric: FabricDescription) -> Link | None:
    """A node's inter-node link with nothing wrong, or None when no bandwidth figure is known."""
    link = healthy_link_of(fabric, catalog.accelerator(fabric.accelerator))
    return link if isinstance(link, Link) else None


def degraded_link(fabric: FabricDescription, state: FabricState, worst: bool = False) -> Link | None:
    """A node's inter-node link in `state`, at the best (default) or worst end of the range; None when it
    cannot be modelled."""
    accel = catalog.accelerator(fabric.accelerator)
    healthy = healthy_link_of(fabric, accel, state, best=not worst)
    if isinstance(healthy, str):
        return None
    link = degraded_link_of(fabric, accel, state, healthy, best=not worst)
    return link if isinstance(link, Link) else None


def bottleneck(links: list[Link]) -> Link:
    """A collective runs at its slowest member's pace: least bandwidth, most latency."""
    if len(links) == 1:
        return links[0]
    return Link(
        min(x.bandwidth for x in links),
        max(x.latency for x in links),
        all(x.tuned_trees for x in links),
        nccl_version=links[0].nccl_version,  # one job, one NCCL
    )


def domain_nodes(fabric: FabricDescription, accel: catalog.Accelerator | None, state: FabricState = HEALTHY) -> int:
    """Nodes one multi-node NVLink domain holds (GB200/GB300 NVL72: 72 GPUs, 18 nodes of 4); 1 without one, or
    when the state says multi-node NVLink is down."""
    gpus = accel.nvlink_domain_gpus if accel is not None and state.multi_node_nvlink else None
    if not gpus or fabric.gpus_per_node <= 0 or gpus <= fabric.gpus_per_node:
        return 1
    return gpus // fabric.gpus_per_node


def domains_spanned(nodes: int, per_domain: int, asked: int | None) -> int:
    """NVLink domains a job of `nodes` spans: as few as hold it, or as many as the state says (SPLIT_ONE_MORE: one
    more than the fewest), at most one per node."""
    fewest = max(1, math.ceil(nodes / max(1, per_domain)))
    if asked == SPLIT_ONE_MORE:
        asked = fewest + 1
    return min(nodes, max(fewest, asked or fewest)) if nodes > 0 else 1
