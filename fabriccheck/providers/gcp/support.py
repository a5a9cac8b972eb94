"""Google Cloud's answers to the neutral stages: machine type names, how many GPU NICs or RDMA NICs carry the
fabric, and the signals that group instances that train together. Imports no Google client library: saved
inventories are judged without it.

Facts and their sources (tags expand in /work/shared/reference/fabric-requirements.md, section 3, and
fabric-catalog.md):
- A3 High / A3 Edge (GPUDirect-TCPX) take 4 GPU NICs and A3 Mega (GPUDirect-TCPXO) 8, besides the host NIC
  nic0; each GPU NIC sits in its own VPC network, none shared with nic0 (G1, G2; GCP-NETBW, CTK-A3H, CTK-A3M,
  JAX-A3, DSTACK-GCP).
- A3 Ultra, A4 and A4X carry GPUDirect RDMA on NICs of nicType MRDMA, which may all share one RoCE VPC network
  with one subnet each (G5; GCP-NETBW, CTK-A3U, CTK-RDMA-VPC).
- nicType values: GVNIC, VIRTIO_NET, MRDMA, IRDMA, IDPF, UNSPECIFIED_NIC_TYPE (GCP-NICTYPE).
"""

from __future__ import annotations

import re

from fabriccheck.cloud import CloudSupport, FabricAttachment, PlacementSignal, Signal, TagSignal
from fabriccheck.model import Capability, FabricKind, NetworkInterface, Node

# Placement kind of a Compute Engine instance (model.Placement.kind): a compact placement resource policy
# (instances.resourcePolicies[] whose groupPlacementPolicy.collocation is COLLOCATED; G6, GCP-PLACEMENT).
# Only placement policies belong here: instance schedules are resource policies too.
RESOURCE_POLICY = "resource-policy"

# GKE labels the node VMs with their cluster and node pool ("goog-k8s-cluster-name: filter GKE resources by
# cluster", "goog-k8s-node-pool-name: filter cluster resources by node pool": Google Cloud docs on filtering
# GKE costs by label; also seen in instance label dumps found with the code search).
GKE_CLUSTER_LABEL = "goog-k8s-cluster-name"
GKE_NODE_POOL_LABEL = "goog-k8s-node-pool-name"
# Slurm on Google Cloud (slurm-gcp v6, as shipped in GoogleCloudPlatform/cluster-toolkit): every node carries
# slurm_cluster_name and slurm_instance_role (community/internal/slurm-gcp/instance_template/main.tf), and
# compute nodes also slurm_nodeset (community/modules/scheduler/schedmd-slurm-gcp-v6-controller/partition.tf).
SLURM_CLUSTER_LABEL = "slurm_cluster_name"
SLURM_NODESET_LABEL = "slurm_nodeset"
SLURM_ROLE_LABEL = "slurm_instance_role"  # controller, login or compute (same instance_template module)
# Cluster Toolkit labels everything it deploys with ghpc_blueprint, ghpc_deployment and ghpc_role, the role of
# the module that made it, e.g. compute (cluster-toolkit pkg/config: blueprintLabel, deploymentLabel,
# roleLabel; docs/blueprint labels section).
CTK_DEPLOYMENT_LABEL = "ghpc_deployment"
CTK_ROLE_LABEL = "ghpc_role"
# A managed instance group's instances carry the metadata item `created-by`, the URL of the group manager
# (projects/<number>/zones|regions/<location>/instanceGroupManagers/<name>). Secondary sources only: code that
# reads instance/attributes/created-by to find its MIG (e.g. a GKE TPU device plugin's GetMIGURL). It is
# metadata, not a label: this signal applies where the normalizer records that item among the node's tags.
MIG_METADATA_KEY = "created-by"

# NIC types that carry RDMA: MRDMA (CX-7 on A3 Ultra, A4, A4X; GCP-NETBW) and IRDMA (Cloud RDMA over Falcon
# on H4D; Google Cloud "RDMA network profiles", docs.cloud.google.com/vpc/docs/rdma-network-profiles).
RDMA_NIC_TYPES = frozenset({"MRDMA", "IRDMA"})

# H4D is Compute Engine's HPC series with Cloud RDMA, "ideal for applications that scale across multiple
# nodes" (GKE docs, "Run HPC workloads with H4D"; Cluster Toolkit, "Configure MPI applications on H4D").
# H3 has no RDMA and is not listed.
HPC_RDMA_SERIES = frozenset({"h4d"})

# Compute Engine machine types: <series>-<type>-<size>[unit][-suffix...], e.g. a3-highgpu-8g (8 GPUs),
# h4d-highmem-192 (192 vCPUs), a4x-maxgpu-4g-metal, n2-custom-8-16384. Shared-core types (e2-micro) do not
# follow it and keep their whole name as family.
_MACHINE_TYPE = re.compile(
    r"^(?P<series>[a-z][a-z0-9]*)-(?P<kind>[a-z]+)-(?P<size>\d+)(?P<unit>[a-z]*)(?P<rest>(?:-[a-z0-9]+)*)$"
)
# Anything Compute Engine names: lower-case words and digits joined by hyphens, never a dot or an underscore.
_GCP_NAME = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)+$")


class GcpSupport(CloudSupport):
    name = "gcp"
    # Strongest first. The orchestrator's group comes before the placement policy, which is one of the things
    # being judged: grouped by policy, instances of one node pool or nodeset placed under two policies (or some
    # under none) would form separate clusters, each fine, and the split would never show. A Slurm nodeset may
    # legitimately hold several policies, one per job allocation (cluster-toolkit slurm_files/scripts/resume.py,
    # create_placements); the rules judge that, the grouping only makes it visible.
    signals: tuple[Signal, ...] = (
        TagSignal((GKE_CLUSTER_LABEL, GKE_NODE_POOL_LABEL), "GKE node pool"),
        TagSignal((SLURM_CLUSTER_LABEL, SLURM_NODESET_LABEL), "Slurm nodeset"),
        # The compute instances of one Cluster Toolkit deployment (e.g. the A3 Ultra vm-instance blueprint,
        # which has no scheduler labels).
        TagSignal((CTK_DEPLOYMENT_LABEL, CTK_ROLE_LABEL), "Cluster Toolkit deployment"),
        TagSignal((MIG_METADATA_KEY,), "managed instance group"),
        PlacementSignal(RESOURCE_POLICY, "compact placement policy"),
    )
    # Slurm controller and login nodes never run the job's collectives.
    alone_tags = ((SLURM_ROLE_LABEL, "controller"), (SLURM_ROLE_LABEL, "login"))

    # ---------------------------------------------------------------------------------------- naming

    def family(self, instance_type: str) -> str:
        """Series and type: 'a3-highgpu-8g' -> 'a3-highgpu', 'h4d-highmem-192' -> 'h4d-highmem'."""
        match = _MACHINE_TYPE.match(instance_type)
        return f"{match['series']}-{match['kind']}" if match else instance_type

    def generation(self, instance_type: str) -> str:
        """The same machine series and type stand in for each other: a3-highgpu-1g and a3-highgpu-8g (both H100),
        but not a3-ultragpu-8g (H200) nor a3-megagpu-8g (another NIC layout)."""
        return self.family(instance_type)

    def size_rank(self, instance_type: str) -> int:
        """The GPU count of an accelerator type ('8g'), else the vCPU count ('192')."""
        match = _MACHINE_TYPE.match(instance_type)
        return int(match["size"]) if match else 10_000

    def owns(self, instance_type: str) -> bool:
        return not instance_type.lower().startswith(("standard_", "basic_")) and bool(_GCP_NAME.match(instance_type))

    # ---------------------------------------------------------------------------------------- fabric

    def is_hpc(self, instance_type: str) -> bool:
        match = _MACHINE_TYPE.match(instance_type)
        return match is not None and match["series"] in HPC_RDMA_SERIES

    def fabric_attachment(self, node: Node, cap: Capability | None) -> FabricAttachment:
        """Which NICs carry the fabric depends on the type's fabric, so an unknown type has nothing known
        attached."""
        if cap is None:
            return FabricAttachment(0, 0)
        if cap.fabric in (FabricKind.TCPX, FabricKind.TCPXO):
            return _gpu_nic_attachment(node, cap.fabric_interfaces)
        if cap.fabric is FabricKind.RDMA:
            return _rdma_attachment(node, cap.fabric_interfaces)
        return FabricAttachment(0, 0)


def _capped(count: int, limit: int) -> int:
    return min(count, limit) if limit > 0 else count


def _gpu_nic_attachment(node: Node, limit: int) -> FabricAttachment:
    """GPUDirect-TCPX / TCPXO: the GPU NICs are the NICs besides nic0 (the lowest card and device index) on a
    network other than nic0's. Each must have a VPC network of its own (G1, G2), so two GPU NICs in one VPC
    count once: attached and paths are the distinct GPU networks, at most the type's GPU NIC count."""
    host = node.primary_interface
    if host is None:
        return FabricAttachment(0, 0)
    gpu_nics = tuple(
        nic for nic in node.interfaces if nic is not host and nic.network is not None and nic.network != host.network
    )
    attached = _capped(len({nic.network for nic in gpu_nics}), limit)
    return FabricAttachment(attached, attached, gpu_nics)


def _rdma_attachment(node: Node, limit: int) -> FabricAttachment:
    """GPUDirect RDMA: every NIC of an RDMA nicType is one rail. They may share one RoCE VPC network with one
    subnet each (G5), so paths are the distinct (network, subnet) pairs, never more than the NICs counted."""
    rdma_nics = tuple(nic for nic in node.interfaces if _is_rdma(nic))
    attached = _capped(len(rdma_nics), limit)
    paths = min(len({(nic.network, nic.subnet) for nic in rdma_nics}), attached)
    return FabricAttachment(attached, paths, rdma_nics)


def _is_rdma(nic: NetworkInterface) -> bool:
    return nic.interface_type.upper() in RDMA_NIC_TYPES


SUPPORT = GcpSupport()
