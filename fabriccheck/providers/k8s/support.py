"""Kubernetes' answers to the neutral stages: a pod (provider k8s) is judged against the node it runs, or would run,
on. Its type, zone and pool are the node's and its capability comes from the same catalog the cloud audit uses; what
the pod gets of that fabric is what it asks for (its `resources.k8s.PodPart`), because in Kubernetes the fabric is
opt-in a second time. Imports no Kubernetes client: dumps, manifests and saved inventories are judged without it.

Sources (copies in /work/shared/samples/k8s/, named beside each fact):
- EKS: a pod gets EFA interfaces only by requesting `vpc.amazonaws.com/efa`, advertised by the EFA device plugin
  DaemonSet (aws/eks-charts aws-efa-k8s-device-plugin; aws-samples/awsome-distributed-training MPIJob and PyTorchJob
  request `vpc.amazonaws.com/efa: 32` on p5.48xlarge beside `hugepages-2Mi`).
- GKE: an A3 High / A3 Mega pod sees its GPU NICs only through `networking.gke.io/default-interface` and
  `networking.gke.io/interfaces` naming one `Network` per GPU NIC, runs the TCPX / TCPXO receive-data-path daemon
  (`tcpgpudmarxd`) beside it, and the NCCL plugin installer DaemonSet puts the plugin on the node
  (GoogleCloudPlatform/container-engine-accelerators gpudirect-tcpx / gpudirect-tcpxo / gpudirect-rdma manifests).
- AKS: the NVIDIA Network Operator's device plugins advertise `rdma/ib` (SR-IOV, one per NIC) or `rdma/shared_ib`
  (shared, every NIC); the pod requests one and adds IPC_LOCK, else `ulimit -l` is 64 (Azure/aks-rdma-infiniband).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from fabriccheck import catalog, ncclenv
from fabriccheck.cloud import (
    FabricAttachment,
    FactContext,
    Facts,
    FactSchema,
    HostedSupport,
    HostInstance,
    Signal,
    TagSignal,
)
from fabriccheck.model import MAX_COUNT, Capability, FabricKind, NetworkPath, Node, NodeShape
from fabriccheck.providers.k8s.claims import FABRIC_NIC, IMEX_CHANNEL
from fabriccheck.resources.k8s import PodPart

if TYPE_CHECKING:
    from fabriccheck.inventory import Inventory
    from fabriccheck.resources.k8s import DaemonSet

WORKLOAD_TAG = "fabriccheck.io/workload"  # set by the reader: the pod's workload, namespace/Kind/name
ROLE_TAG = "fabriccheck.io/role"  # a pod label or annotation: training | inference | ignore
NODE_POOL = "node-pool"  # placement kind of the pod's node pool

EFA_RESOURCE = "vpc.amazonaws.com/efa"
GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu", "aws.amazon.com/neuron", "aws.amazon.com/neurondevice")
# Workload kinds that serve rather than train: judged only when labelled training.
SERVING_KINDS = frozenset({"Deployment", "ReplicaSet"})

# The facts that need an optional kind of object, and the kind (Inventory.collected, model.fact_key).
DAEMONSETS = "daemonsets"
NETWORKS = "networks"
PARAM_SETS = "gkenetworkparamsets"

# Images and names that mark a DaemonSet or container (sources in the module docstring).
_EFA_PLUGIN: tuple[str, ...] = ("aws-efa-k8s-device-plugin", "efa-device-plugin", "efa-k8s-device-plugin")
_RDMA_PLUGIN: tuple[str, ...] = (
    "k8s-rdma-shared-dev-plugin",
    "sriov-network-device-plugin",
    "rdma-shared-dp",
    "sriov-device-plugin",
)
_NCCL_INSTALLER = {
    FabricKind.TCPX: ("nccl-tcpx-installer", "/gpudirect-tcpx/nccl-plugin"),
    FabricKind.TCPXO: ("nccl-tcpxo-installer", "/gpudirect-tcpxo/nccl-plugin"),
    FabricKind.RDMA: ("nccl-rdma-installer", "/gpudirect-gib/nccl-plugin-gib"),
}
_RXDM = ("tcpgpudmarxd", "rxdm", "tcpx-daemon", "tcpxo-daemon")
_ASK = {
    FabricKind.EFA: "request vpc.amazonaws.com/efa equal to the node's {max} EFA interfaces",
    FabricKind.INFINIBAND: "request an RDMA resource of the NVIDIA Network Operator (rdma/ib: {max}, or "
    "rdma/shared_ib: 1) and add IPC_LOCK",
    FabricKind.TCPX: "map the node's {max} GPU networks in networking.gke.io/interfaces (with "
    "networking.gke.io/default-interface) and run the tcpgpudmarxd sidecar",
    FabricKind.TCPXO: "map the node's {max} GPU networks in networking.gke.io/interfaces (with "
    "networking.gke.io/default-interface) and run the TCPXO receive-data-path sidecar",
    FabricKind.RDMA: "map the node's {max} RDMA networks in networking.gke.io/interfaces (with "
    "networking.gke.io/default-interface)",
}


# What a pod that already takes its fabric through DRA claims should ask (sources: claims.KNOWN_CLASSES).
_ASK_CLAIM = {
    FabricKind.EFA: "claim all {max} of the node's EFA devices (a ResourceClaim of device class "
    "efa.networking.k8s.aws with allocationMode All)",
    FabricKind.INFINIBAND: "claim all {max} of the node's InfiniBand NICs (allocationMode All of its RDMA NIC class)",
    FabricKind.RDMA: "claim all {max} of the node's RDMA NICs (allocationMode All of mrdma.google.com or dranet)",
}


def _ask(pod: PodPart, fabric: FabricKind) -> str:
    if count(pod.claimed, FABRIC_NIC) and fabric in _ASK_CLAIM:
        return _ASK_CLAIM[fabric]
    return _ASK.get(fabric, "")


def count(pairs: Iterable[tuple[str, int]], name: str) -> int:
    return sum(n for k, n in pairs if k == name)


def rdma_requested(pod: PodPart) -> tuple[int, bool]:
    """(RDMA devices the pod requests, whether a shared resource gives it every NIC)."""
    devices, shared = 0, False
    for name, quantity in pod.requests:
        if is_rdma_resource(name) and quantity > 0:
            devices += quantity
            shared = shared or "shared" in name
    return devices, shared


def is_rdma_resource(name: str) -> bool:
    """rdma/ib, rdma/shared_ib and the names a Network Operator configuration gives them (rdma/<anything>)."""
    return name.startswith("rdma/") or name.endswith(("/ib", "_ib"))


def _matches(names: Iterable[str], marks: Iterable[str]) -> bool:
    lowered = [n.lower() for n in names]
    return any(mark in name for name in lowered for mark in marks)


def _daemonset_has(daemonsets: list[DaemonSet], marks: tuple[str, ...]) -> bool:
    return any(_matches([d.name, *d.images], marks) for d in daemonsets)


class K8sSupport(HostedSupport):
    name = "k8s"
    signals: tuple[Signal, ...] = (
        TagSignal((WORKLOAD_TAG,), "Kubernetes workload", NetworkPath.POD, slug="kubernetes-workload"),
    )
    role_tag = ROLE_TAG
    collected_facts = ("nodes", "pods", DAEMONSETS, NETWORKS, PARAM_SETS)
    schema = FactSchema(
        node={
            "cloud": "the node's cloud: aws, gcp, azure, or empty when not known",
            "workload": "the pod's workload: namespace/Kind/name",
            "pod_node": "the Kubernetes node the pod runs on (empty: pending, or a manifest's pod)",
            "node_pool": "the node's EKS node group, GKE node pool, AKS agent pool or Karpenter node pool",
            "fabric_request": "what the pod asks of its node's fabric, in words",
            "fabric_ask": "what it should ask for on its cloud, in words",
            "device_plugin": "ok, no-daemonset (no EFA / RDMA device plugin DaemonSet and the node advertises no "
            "fabric resource), not-advertised (the DaemonSet exists, the pod's node advertises none) or n/a",
            "memlock": "ok, n/a, or what a pod using EFA / InfiniBand lacks to pin memory (hugepages, IPC_LOCK)",
            "rxdm": "ok, missing (a TCPX / TCPXO pod without the receive-data-path daemon beside it) or n/a",
            "nccl_plugin": "ok, missing (no NCCL plugin installer DaemonSet for the node's GKE fabric) or n/a",
            "networks_missing": "networks the pod's networking.gke.io/interfaces names that no Network (or its "
            "GKENetworkParamSet) defines, comma-separated",
            "fabric_off": "an NCCL or libfabric setting in the pod that turns its node's fabric off, or empty (always "
            "for an MPIJob's workers, whose ranks take their env from mpirun -x)",
            "socket_ifname": "an NCCL_SOCKET_IFNAME in the pod that leaves NCCL only the loopback or a Docker bridge "
            "(lo, docker0), which reach no other node, or empty (always for an MPIJob's workers, whose ranks take "
            "their env from mpirun -x)",
            "plugin_ifname": "the GKE NCCL plugin's data-NIC setting in the pod (NCCL_GPUDIRECTTCPX_SOCKET_IFNAME on "
            "TCPX, NCCL_FASTRAK_IFNAME on TCPXO) when it names none of the GPU NIC interfaces the pod maps, or empty "
            "(as socket_ifname for an MPIJob's workers)",
            "efa_hidden": "a hostPath of /dev/infiniband (or /dev) an EFA pod mounts, which exposes the node's other "
            "verbs devices to libfabric, or empty",
            "imex_channels": "IMEX channels the pod's DRA claims give it (ComputeDomain channels: multi-node NVLink "
            "between pods), 1 where it sees the host's (privileged, or a /dev/nvidia-caps-imex-channels hostPath), 0 "
            "without",
            "rdma_not_advertised": "the rdma/* resources the pod requests that its node (or, pending, every node its "
            "selector allows) does not advertise where they advertise another RDMA resource, comma-separated; such a "
            "pod stays Pending",
        },
        cluster={
            "training": "multi-node training: the workload's pods span more than one node, or request more "
            "accelerators than one node has",
            "workload": "the workload: namespace/Kind/name",
            "k8s_nodes": "distinct Kubernetes nodes its scheduled pods run on",
            "node_pools": "distinct node pools (node groups, agent pools) its pods run or would run on",
            "node_pool_names": "their names",
            "ib_scale_sets": "distinct Azure scale sets (from the nodes' spec.providerID) its scheduled pods on "
            "InfiniBand nodes run on: each scale set is its own InfiniBand partition",
            "ib_scale_set_names": "their names",
            "nvlink_multi_node": "the workload's pods run on nodes of an accelerator sold in multi-node NVLink "
            "domains (GB200 / GB300 NVL72) and span more than one node",
            "imex_missing": "pods of such a workload that claim no IMEX channel (ComputeDomain), 0 when all do",
        },
    )

    # ---------------------------------------------------------------------------------------- naming

    def nvlink_domain_gpus(self, instance_type: str, catalog_gpus: int) -> int:
        """As the node's cloud sells its domains (an EKS node in a u-p6e-gb200x36 UltraServer)."""
        cloud = self.cloud_of(instance_type)
        return cloud.nvlink_domain_gpus(instance_type, catalog_gpus) if cloud else catalog_gpus

    def workload_role(self, shapes: Iterable[NodeShape]) -> tuple[str, str] | None:
        kinds = {pod.kind for s in shapes if (pod := s.part(PodPart)) is not None}
        if kinds and kinds <= SERVING_KINDS:
            return "inference", (
                f"a {'/'.join(sorted(kinds))} serves; label its pods {ROLE_TAG}=training to judge it as training"
            )
        return None

    def nvlink_domain(self, node: Node) -> str | None:
        """A pod that claims no IMEX channel reaches no other node over NVLink: its node is a domain of its own
        (K8S145 prices what that costs)."""
        pod = node.shape.part(PodPart)
        if pod is not None and not imex_channels(pod):
            return f"{pod.node or node.id} (no IMEX channel)"
        return super().nvlink_domain(node)

    # ---------------------------------------------------------------------------------------- fabric

    def fabric_expected(self, instance_type: str, cap: Capability | None) -> bool:
        return bool(cap and cap.fabric is not FabricKind.NONE and cap.accelerators > 0)

    def fabric_attachment(self, shape: NodeShape, cap: Capability | None) -> FabricAttachment:
        """What of its node's fabric the pod gets: the EFA devices it requests; the InfiniBand ports of its RDMA
        resource (a shared one gives every port); the GPU or RDMA networks its annotation maps."""
        pod = shape.part(PodPart)
        if cap is None or pod is None or not cap.fabric_interfaces:
            return FabricAttachment(0, 0)
        most = cap.fabric_interfaces
        claimed = count(pod.claimed, FABRIC_NIC)  # EFA / RDMA NICs its DRA claims give it
        if cap.fabric is FabricKind.EFA:
            # A privileged container sees every device of its node, EFA included (not its network namespace).
            got = most if pod.privileged else min(count(pod.requests, EFA_RESOURCE) + claimed, most)
        elif cap.fabric is FabricKind.INFINIBAND:
            devices, shared = rdma_requested(pod)
            got = most if shared or pod.privileged else min(devices + claimed, most)
        elif cap.fabric in (FabricKind.TCPX, FabricKind.TCPXO, FabricKind.RDMA):
            # On the host's network the pod sees every GPU NIC (GKE's first TCPX manifests ran so).
            got = most if pod.host_network else min(len(set(pod.networks)) + claimed, most)
        else:
            got = 0
        return FabricAttachment(got, got)

    # ---------------------------------------------------------------------------------------- facts

    def node_facts(self, shape: NodeShape, context: FactContext, attachment: FabricAttachment) -> Facts:
        pod = shape.part(PodPart) or PodPart(workload="", kind="")
        cap = context.capability(shape)
        fabric = cap.fabric if cap else FabricKind.NONE
        uses = attachment.attached > 0
        unknown: dict[str, str] = {}
        if not shape.instance_type:
            why = (
                f"the node of pod {pod.workload} is not known (pending without a node selector that names one "
                "type, or no node pool matches)"
            )
            unknown = dict.fromkeys(("fabric", "fabric_expected", "accelerators"), why)
        if pod.claims_unknown:
            why = f"what the DRA claims of pod {pod.workload} give it is not known ({'; '.join(pod.claims_unknown)})"
            unknown = unknown | dict.fromkeys(("fabric", "fabric_request"), why)
        daemonsets = self._daemonsets(shape, context)
        facts: Facts = {
            "cloud": pod.cloud or "",
            "workload": pod.workload,
            "pod_node": pod.node or "",
            "node_pool": pod.node_pool or "",
            "fabric_request": _request_words(pod, fabric),
            "fabric_ask": _ask(pod, fabric).format(max=cap.fabric_interfaces if cap else 0),
            "device_plugin": _device_plugin(pod, fabric, daemonsets or []),
            "memlock": _memlock(pod, fabric) if uses else "n/a",
            "rxdm": _rxdm(pod, fabric),
            "nccl_plugin": _nccl_plugin(pod, fabric, daemonsets or []),
            "networks_missing": "",
            "fabric_off": _fabric_off(pod, fabric),
            "socket_ifname": _socket_ifname(pod),
            "plugin_ifname": _plugin_ifname(pod, fabric),
            "efa_hidden": _efa_hidden(pod, fabric),
            "imex_channels": imex_channels(pod),
            "rdma_not_advertised": _rdma_not_advertised(pod),
            "unknown": unknown,
        }
        # Without the DaemonSets, only a verdict that needs them is unknown (a node that advertises EFA says enough).
        if daemonsets is None:
            for fact, bad in (("device_plugin", "no-daemonset"), ("nccl_plugin", "missing")):
                if facts[fact] == bad:
                    unknown[fact] = "daemonsets were not collected (no daemonsets.json in the dump)"
        if pod.networks:
            missing, why = _networks_missing(shape, pod, context)
            facts["networks_missing"] = missing
            if why:
                unknown["networks_missing"] = why
        return facts

    def _daemonsets(self, shape: NodeShape, context: FactContext) -> list[DaemonSet] | None:
        """The DaemonSets of the pod's cluster, or None when they were not collected."""
        if not context.has(shape, DAEMONSETS):
            return None
        index = context.cached("k8s:daemonsets", lambda: _by_scope(context.inventory.k8s.daemonsets))
        return index.get((shape.account, shape.region), [])

    def host_instances(self, clusters: list[list[Node]], inventory: Inventory) -> list[list[HostInstance]]:
        """The cloud instances each workload's scheduled pods run on, from each node's spec.providerID (a pending
        pod has none yet), by node name."""
        return [self._pods_hosts(nodes) for nodes in clusters]

    @staticmethod
    def _pods_hosts(nodes: list[Node]) -> list[HostInstance]:
        found: dict[str, tuple[HostInstance, list[str]]] = {}
        for node in nodes:
            pod = node.shape.part(PodPart)
            if pod is None or not pod.node or not pod.instance or not pod.cloud:
                continue
            host = HostInstance(pod.node, pod.cloud, pod.instance, pod.cloud_account, members=())
            found.setdefault(pod.node, (host, []))[1].append(node.id)
        return [replace(host, members=tuple(pods)) for _, (host, pods) in sorted(found.items())]

    def cluster_facts(self, nodes: list[Node], node_facts: list[Facts], context: FactContext) -> Facts:
        shapes = list(dict.fromkeys(n.shape for n in nodes))
        pods = [pod for n in nodes if (pod := n.shape.part(PodPart)) is not None]
        scheduled = {pod.node for pod in pods if pod.node}
        gpus = sum(pod.gpus for pod in pods)
        per_node = 0
        unknown: dict[str, str] = {}
        for shape in shapes:
            cap = context.type_capability(shape.instance_type)
            if cap is None:
                what = shape.instance_type or "not known"
                why = f"the type of a node the workload runs on is {what}: the workload is not judged"
                unknown = {"training": why, "fabric_cluster": why}
            else:
                per_node = max(per_node, cap.accelerators)
        training = not unknown and (len(scheduled) > 1 or (per_node > 0 and gpus > per_node))
        shape_pods = [pod for s in shapes if (pod := s.part(PodPart)) is not None]
        pools = sorted({pod.node_pool or "?" for pod in shape_pods})
        workload = next((pod.workload for pod in shape_pods), "")
        neutral = len(nodes) > 1 and sum(1 for f in node_facts if f["fabric_expected"]) > 1
        scale_sets = _ib_scale_sets(shapes, context)
        multi_node = training and _nvlink_multi_node(shapes, context)
        return {
            "training": training,
            # Whether the fabric matters here: pods of one workload on one node exchange nothing over it.
            "fabric_cluster": bool(training and neutral),
            "workload": workload,
            "k8s_nodes": len(scheduled),
            "node_pools": len(pools),
            "node_pool_names": ", ".join(pools),
            "ib_scale_sets": len(scale_sets),
            "ib_scale_set_names": ", ".join(sorted(set(scale_sets.values()))),
            "nvlink_multi_node": multi_node,
            "imex_missing": sum(1 for f in node_facts if not f["imex_channels"]) if multi_node else 0,
            "unknown": unknown,
        }


def _nvlink_multi_node(shapes: list[NodeShape], context: FactContext) -> bool:
    """Whether the workload's nodes are of an accelerator sold in multi-node NVLink domains (GB200 / GB300 NVL72:
    nvlink_domain_gpus beyond a node's), where NVLink between nodes needs an IMEX channel in every pod."""
    for shape in shapes:
        cap = context.type_capability(shape.instance_type) if shape.instance_type else None
        accel = catalog.accelerator(cap.accelerator_name) if cap is not None else None
        if cap and accel and accel.nvlink_domain_gpus and 0 < cap.accelerators < accel.nvlink_domain_gpus:
            return True
    return False


# An AKS node's providerID names its VM in a Uniform scale set: azure:///subscriptions/S/resourceGroups/RG/providers/
# Microsoft.Compute/virtualMachineScaleSets/aks-POOL-NNNNNNNN-vmss/virtualMachines/N (kubernetes/kubernetes #59855).
_SCALE_SET_VM = re.compile(r"^(?P<set>.*/virtualMachineScaleSets/(?P<name>[^/]+))/virtualMachines/[^/]+$", re.I)


def _ib_scale_sets(shapes: list[NodeShape], context: FactContext) -> dict[str, str]:
    """The scale sets (id, lowercased as Azure ids compare, to name) of the workload's scheduled pods on InfiniBand
    nodes. A pod whose node is no scale set VM, or not scheduled yet, adds none: only what the ids show counts."""
    found: dict[str, str] = {}
    for shape in shapes:
        pod = shape.part(PodPart)
        match = _SCALE_SET_VM.match(pod.instance or "") if pod is not None and pod.cloud == "azure" else None
        if match is None or not shape.instance_type:
            continue
        cap = context.type_capability(shape.instance_type)
        if cap is not None and cap.fabric is FabricKind.INFINIBAND:
            found[match["set"].lower()] = match["name"]
    return found


def _by_scope(daemonsets: list[DaemonSet]) -> dict[tuple[str, str], list[DaemonSet]]:
    found: dict[tuple[str, str], list[DaemonSet]] = {}
    for daemonset in daemonsets:
        found.setdefault((daemonset.account, daemonset.region), []).append(daemonset)
    return found


def _request_words(pod: PodPart, fabric: FabricKind) -> str:
    claimed = count(pod.claimed, FABRIC_NIC)
    if pod.privileged and fabric in (FabricKind.EFA, FabricKind.INFINIBAND):
        return "runs privileged (it sees every device of its node)"
    if claimed and fabric in (FabricKind.EFA, FabricKind.INFINIBAND, FabricKind.RDMA):
        got = "all" if claimed >= MAX_COUNT else str(claimed)
        return f"claims {got} fabric NIC(s) through DRA ResourceClaims"
    if fabric is FabricKind.EFA:
        return f"requests {count(pod.requests, EFA_RESOURCE)} {EFA_RESOURCE} (and claims no EFA device through DRA)"
    if fabric is FabricKind.INFINIBAND:
        asked = [f"{name}: {quantity}" for name, quantity in pod.requests if is_rdma_resource(name)]
        return f"requests {', '.join(asked)}" if asked else "requests no RDMA resource (rdma/ib, rdma/shared_ib)"
    if fabric in (FabricKind.TCPX, FabricKind.TCPXO, FabricKind.RDMA):
        if pod.host_network:
            return "runs on the host's network (every NIC of its node)"
        if not pod.networks:
            return "maps no network beside its default one (no networking.gke.io/interfaces annotation)"
        return f"maps {len(set(pod.networks))} network(s) beside its default one ({', '.join(pod.networks)})"
    return "asks for no fabric"


def _device_plugin(pod: PodPart, fabric: FabricKind, daemonsets: list[DaemonSet]) -> str:
    """Whether a device plugin advertises the fabric the pod asks for: a pod that requests a resource no node
    advertises never starts."""
    if fabric is FabricKind.EFA:
        asked, marks = count(pod.requests, EFA_RESOURCE), _EFA_PLUGIN
        advertised = count(pod.allocatable or (), EFA_RESOURCE)
    elif fabric is FabricKind.INFINIBAND:
        asked, marks = rdma_requested(pod)[0], _RDMA_PLUGIN
        advertised = sum(n for k, n in pod.allocatable or () if is_rdma_resource(k))
    else:
        return "n/a"
    if not asked or advertised > 0:
        return "n/a" if not asked else "ok"
    if not _daemonset_has(daemonsets, marks):
        return "no-daemonset"
    return "not-advertised" if pod.allocatable is not None else "ok"


def _memlock(pod: PodPart, fabric: FabricKind) -> str:
    """What a pod using InfiniBand lacks to pin memory. EFA is not judged: AWS's own working EFA samples run without
    hugepages (aws-samples/awsome-distributed-training eks fsdp PyTorchJobs, copies in /work/shared/samples/k8s4),
    and libfabric's EFA provider falls back to regular pages when none are there (FI_EFA_USE_HUGE_PAGE)."""
    if fabric is FabricKind.INFINIBAND:
        return "ok" if pod.ipc_lock else "no IPC_LOCK capability (ulimit -l stays 64 KiB)"
    return "n/a"


def _rxdm(pod: PodPart, fabric: FabricKind) -> str:
    if fabric not in (FabricKind.TCPX, FabricKind.TCPXO):
        return "n/a"
    return "ok" if _matches([part for c in pod.containers for part in c], _RXDM) else "missing"


def _nccl_plugin(pod: PodPart, fabric: FabricKind, daemonsets: list[DaemonSet]) -> str:
    marks = _NCCL_INSTALLER.get(fabric)
    if marks is None:
        return "n/a"
    # The pod may carry the plugin itself (the TCPXO NCCL test image is the plugin's).
    if _daemonset_has(daemonsets, marks) or _matches([image for _, image in pod.containers], marks[1:]):
        return "ok"
    return "missing"


def _fabric_off(pod: PodPart, fabric: FabricKind) -> str:
    """The first setting that reaches the pod's ranks and turns its node's fabric off: what an MPIJob's launcher
    passes them (mpirun -x), else the pod's own env (ConfigMaps included), which an MPIJob's ranks do not see (they
    take their variables from the launcher's mpirun -x: flagging a worker's own env would be a guess)."""
    return ncclenv.fabric_off(_rank_env(pod), fabric)


def _rank_env(pod: PodPart) -> list[tuple[str, str, str]]:
    """(name, value, where) of the settings that reach the pod's ranks: the launcher's mpirun -x first."""
    return list(pod.rank_env())


def _efa_hidden(pod: PodPart, fabric: FabricKind) -> str:
    """A /dev/infiniband (or /dev) hostPath on an EFA pod: it exposes every verbs device of the node, and where the
    node also carries other RDMA NICs (mlx5 on B200 HyperPod nodes) libfabric's EFA provider fails to open them and
    offers no EFA at all: NCCL falls back to TCP (aws-samples/aws-do-eks#63, measured A/B: fi_info -p efa -61 with
    the hostPath, 24 providers without)."""
    if fabric is not FabricKind.EFA:
        return ""
    return next((p for p in pod.host_paths if p in ("/dev", "/dev/infiniband")), "")


def imex_channels(pod: PodPart) -> int:
    """IMEX channels the pod has: its ComputeDomain channel claims, or the host's channels where it sees the host's
    devices (privileged, or a hostPath of /dev or /dev/nvidia-caps-imex-channels: the IMEX daemon then runs on the
    host, NVIDIA IMEX guide)."""
    claimed = count(pod.claimed, IMEX_CHANNEL)
    if claimed:
        return claimed
    host = pod.privileged or any(p == "/dev" or p.startswith("/dev/nvidia-caps-imex-channels") for p in pod.host_paths)
    return 1 if host else 0


def _rdma_not_advertised(pod: PodPart) -> str:
    return ", ".join(pod.unadvertised)


def _socket_ifname(pod: PodPart) -> str:
    """NCCL_SOCKET_IFNAME leaving only the loopback or a Docker bridge, as it reaches the pod's ranks."""
    return ncclenv.local_socket_ifname(_rank_env(pod))


# The plugins' own data-NIC lists (GoogleCloudPlatform/container-engine-accelerators gpudirect-tcpx and gpudirect-tcpxo
# READMEs: NCCL_GPUDIRECTTCPX_SOCKET_IFNAME=eth1,...,eth4; NCCL_FASTRAK_IFNAME=eth1,...,eth8, NCCL_SOCKET_IFNAME=eth0
# for the control traffic). NCCL_SOCKET_IFNAME does not carry the data there.
_PLUGIN_IFNAME = {FabricKind.TCPX: "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME", FabricKind.TCPXO: "NCCL_FASTRAK_IFNAME"}


def _plugin_ifname(pod: PodPart, fabric: FabricKind) -> str:
    """The plugin's data-NIC setting when none of its names (taken as prefixes, the lenient reading) is an interface
    the pod's networking.gke.io/interfaces maps. A pod on the host's network sees the node's own names, not known
    here; a pod that maps no GPU NIC is K8S101's."""
    variable = _PLUGIN_IFNAME.get(fabric)
    if variable is None or pod.host_network or not pod.interfaces or not pod.env_reaches_ranks():
        return ""
    for name, value in pod.env:
        if name != variable:
            continue
        prefixes = [p.strip().removeprefix("=") for p in value.split(",") if p.strip()]
        if prefixes and not any(i.startswith(p) for i in pod.interfaces for p in prefixes if p):
            return f"{name}={value}"
    return ""


def _networks_missing(shape: NodeShape, pod: PodPart, context: FactContext) -> tuple[str, str]:
    """The networks the pod maps that no Network object defines (or whose GKENetworkParamSet is missing), and why
    that could not be told."""
    if not (context.has(shape, NETWORKS) and context.has(shape, PARAM_SETS)):
        return "", (
            "GKE Network and GKENetworkParamSet objects were not collected (networks.json, gkenetworkparamsets.json)"
        )
    k8s = context.inventory.k8s
    networks = context.cached("k8s:networks", lambda: {(n.account, n.region, n.name): n for n in k8s.networks})
    param_sets = context.cached(
        "k8s:param-sets", lambda: {(p.account, p.region, p.name) for p in k8s.network_param_sets}
    )
    missing = []
    for name in dict.fromkeys(pod.networks):
        network = networks.get((shape.account, shape.region, name))
        if network is None or (network.params and (shape.account, shape.region, network.params) not in param_sets):
            missing.append(name)
    return ", ".join(missing), ""


SUPPORT = K8sSupport()
