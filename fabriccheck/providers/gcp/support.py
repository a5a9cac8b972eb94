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
from typing import TYPE_CHECKING

from fabriccheck.cloud import (
    CloudSupport,
    FabricAttachment,
    FactContext,
    Facts,
    FactSchema,
    PlacementSignal,
    Signal,
    TagSignal,
)
from fabriccheck.model import Capability, FabricKind, NetworkInterface, NetworkPath, Node, NodeShape
from fabriccheck.providers.gcp.lookup import index_of
from fabriccheck.resources.gcp import ResourcePolicy

if TYPE_CHECKING:
    from fabriccheck.inventory import Inventory

# Placement kind of a Compute Engine instance (model.Placement.kind): a compact placement resource policy
# (instances.resourcePolicies[] whose groupPlacementPolicy.collocation is COLLOCATED; G6, GCP-PLACEMENT).
# Only placement policies belong here: instance schedules are resource policies too.
RESOURCE_POLICY = "resource-policy"
# Capacity Google places densely itself (AI Hypercomputer, "Compact placement policy and workload policy overview":
# "When you use future reservations or managed instance group (MIG) resize requests to obtain A4X, A4, A3 Ultra, A3
# Mega, and A3 High (8 GPUs) machines, the compute instances that you receive are densely colocated"; G6): an
# instance whose scheduling.provisioningModel is RESERVATION_BOUND (how future-reservation capacity is consumed:
# AI Hypercomputer, "Obtain capacity": "specify the reservation-bound provisioning model") or FLEX_START (MIG
# resize requests), and one consuming a specific reservation (reservationAffinity.consumeReservationType
# SPECIFIC_RESERVATION). Reservations of A3 Ultra, A4 and A4X come densely placed (Hypercompute Cluster); of A3 High
# and A3 Mega only when they are future reservations ("Reservations API ... won't be densely allocated"), which a
# specific reservation alone does not tell.
FLEX_START = "flex-start"
RESERVATION = "reservation"
RESERVATION_BOUND = "reservation-bound"
DENSE_RESERVATION_FAMILIES = frozenset({"a3-ultragpu", "a4-highgpu", "a4x-highgpu", "a4x-maxgpu"})
DENSE_CAPACITY_FAMILIES = DENSE_RESERVATION_FAMILIES | {"a3-megagpu"}
DENSE_CAPACITY_TYPES = frozenset({"a3-highgpu-8g"})  # A3 High with 8 GPUs only

# Recommended MTUs of the GPU networks. TCPX / TCPXO: every Google A3 High and A3 Mega example sets 8244 on
# the GPU VPCs (G3; CTK-A3H, CTK-A3M); no Google page says another value breaks TCPX, so the rule is advisory.
# RDMA: "We recommend setting the MTU ... to 8896 bytes for VPC networks with an RDMA network profile" (G5,
# GCP-RDMA-PROFILE). An unset mtu means 1460 (lookup.DEFAULT_MTU).
TCPX_MTU = 8244
RDMA_MTU = 8896
# Multi-node clusters on single-NIC accelerator types where an 8-GPU type with GPU NICs exists: A2 (A100, up
# to 100 Gbps on one NIC) has no GPU-NIC size; its successor with GPUDirect-TCPX is A3 High (GCP-NETBW).
# Types of a series that has a GPU-NIC size (a3-highgpu-1g..4g) get that size from the catalog instead.
SINGLE_NIC_UPGRADE = {"a2-highgpu": "a3-highgpu-8g", "a2-megagpu": "a3-highgpu-8g", "a2-ultragpu": "a3-highgpu-8g"}

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
# slurm-gcp v6 places each exclusive job's nodes under compact policies of its own, named
# {slurm_cluster_name}-slurmgcp-managed-{nodeset}-{job id}-{chunk} (job 0: the nodeset's static placement, chunked
# by the policy's size; GoogleCloudPlatform/cluster-toolkit@02895beac250f6e3a07b2cbb9947afb510035c16:community/
# modules/scheduler/schedmd-slurm-gcp-v6-controller/modules/slurm_files/scripts/resume.py, create_placements).
# The normalizer records the job among the node's tags under this key, which no label can be (labels take no
# colon): nodes of different jobs never share a collective.
SLURM_JOB_KEY = "slurm-gcp:job"
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
# Every nicType value the Compute API defines (GCP-NICTYPE). Another value tells nothing of which NICs carry the
# fabric: the node's fabric is unknown (node_facts), never "none".
NIC_TYPES = frozenset({"GVNIC", "VIRTIO_NET", "MRDMA", "IRDMA", "IDPF", "UNSPECIFIED_NIC_TYPE"})
# The facts that follow from which NICs are RDMA or GPU NICs: unknown with a nicType the API does not define.
_NIC_TYPE_FACTS = ("fabric", "rdma_profile", "rdma_profile_networks", "non_rdma_on_rdma_vpc", "extra_nics")

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


# What a node's shape and placement are read from, in C (node_shapes, _placement).


class GcpSupport(CloudSupport):
    name = "gcp"
    # Strongest first. The orchestrator's group comes before the placement policy, which is one of the things
    # being judged: grouped by policy, instances of one node pool or nodeset placed under two policies (or some
    # under none) would form separate clusters, each fine, and the split would never show. A Slurm nodeset holds
    # one policy per exclusive job (SLURM_JOB_KEY): the nodes of one job train together, within its nodeset.
    signals: tuple[Signal, ...] = (
        TagSignal((GKE_CLUSTER_LABEL, GKE_NODE_POOL_LABEL), "GKE node pool", NetworkPath.POD, slug="gke-node-pool"),
        TagSignal(
            (SLURM_CLUSTER_LABEL, SLURM_NODESET_LABEL, SLURM_JOB_KEY), "Slurm job", NetworkPath.HOST, slug="slurm-job"
        ),
        TagSignal((SLURM_CLUSTER_LABEL, SLURM_NODESET_LABEL), "Slurm nodeset", NetworkPath.HOST, slug="slurm-nodeset"),
        # The compute instances of one Cluster Toolkit deployment (e.g. the A3 Ultra vm-instance blueprint,
        # which has no scheduler labels).
        TagSignal(
            (CTK_DEPLOYMENT_LABEL, CTK_ROLE_LABEL),
            "Cluster Toolkit deployment",
            NetworkPath.HOST,
            slug="cluster-toolkit-deployment",
        ),
        TagSignal((MIG_METADATA_KEY,), "managed instance group", NetworkPath.HOST, slug="managed-instance-group"),
        PlacementSignal(RESOURCE_POLICY, "compact placement policy", NetworkPath.HOST, slug="compact-placement-policy"),
    )
    # Slurm controller and login nodes never run the job's collectives.
    alone_tags = ((SLURM_ROLE_LABEL, "controller"), (SLURM_ROLE_LABEL, "login"))
    role_tag = "fabriccheck-role"  # label keys allow only lower-case letters, digits, - and _ (no colon)
    schema = FactSchema(
        node={
            "extra_nics": "NICs beyond the host NIC and the type's GPU NICs (TCPX/TCPXO types; 0 otherwise)",
            "gpu_firewall": "ok, missing (a GPU network whose own subnet reaches no TCP port through its enabled "
            "ingress rules), partial (some TCP ports only), n/a (no TCPX/TCPXO GPU NIC) or unknown (firewall rules "
            "not collected)",
            "gpu_firewall_networks": "the GPU networks at fault, comma-separated, each partial one with the TCP ports "
            "it reaches",
            "rdma_nic_type": "the nicType that carries the type's RDMA: MRDMA (A3 Ultra, A4, A4X), IRDMA (H4D), or "
            "empty",
            "rdma_profile": "ok, missing (an RDMA NIC on a network without the RDMA network profile of its nicType: "
            "vpc-roce for MRDMA, vpc-falcon for IRDMA), wrong-zone (a profile of another zone), n/a (no RDMA NIC) or "
            "unknown (networks not collected)",
            "rdma_profile_networks": "the RDMA NICs' networks at fault, comma-separated",
            "non_rdma_on_rdma_vpc": "non-RDMA NICs on a network with an RDMA network profile (-1: unknown)",
            "gpu_mtu": "ok, other (a GPU network's MTU is not the recommended one), n/a or unknown",
            "gpu_mtus": "the GPU networks' MTUs, comma-separated",
            "recommended_mtu": "8244 for TCPX/TCPXO GPU networks, 8896 for RDMA networks, 0 otherwise",
        },
        cluster={
            "placement": "the cluster's resource policies",
            "placement.policy": "compact (one COLLOCATED group placement policy), workload (one HIGH_THROUGHPUT "
            "workload policy), not-compact (a placement policy that is neither), several (more than one), none "
            "(some node has no placement policy) or unknown",
            "placement.policies": "the placement policy names, (none) for nodes without one",
            "placement.dense_capacity": "every node is capacity Google places densely itself: flex-start, "
            "reservation-bound (future reservations) of A4X, A4, A3 Ultra, A3 Mega or A3 High 8g, or a reservation of "
            "A3 Ultra, A4 or A4X",
            "placement.capacity_note": "a sentence for the message when the nodes consume a reservation that may or "
            "may not be dense capacity (empty otherwise)",
            "placement.max_distance": "groupPlacementPolicy.maxDistance when every policy states it, else 0 "
            "(unknown from a live answer: the installed client drops the field)",
            "upgrade": "a single-NIC choice where an 8-GPU type with GPU NICs exists",
            "upgrade.weaker": "all nodes are single-NIC accelerator types (a3-highgpu-1g..4g, a2) and a type "
            "with GPU NICs exists",
            "upgrade.suggestion": "that type",
            "zonal_fabric": "some node's fabric is RDMA, whose networks are zonal (an RDMA network profile serves one "
            "zone): nodes in other zones cannot reach it. TCPX/TCPXO GPU NICs sit on regional subnets of global VPCs",
        },
    )
    collected_facts = (
        "instances",
        "resource_policies",
        "networks",
        "subnetworks",
        "firewalls",
        "network_firewall_policies",
        "max_distance",
    )

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

    def fabric_attachment(self, shape: NodeShape, cap: Capability | None) -> FabricAttachment:
        """Which NICs carry the fabric depends on the type's fabric, so an unknown type has nothing known
        attached."""
        if cap is None:
            return FabricAttachment(0, 0)
        if cap.fabric in (FabricKind.TCPX, FabricKind.TCPXO):
            return _gpu_nic_attachment(shape, cap.fabric_interfaces)
        if cap.fabric is FabricKind.RDMA:
            return _rdma_attachment(shape, cap.fabric_interfaces)
        return FabricAttachment(0, 0)

    def notes(self, inventory: Inventory) -> list[str]:
        gcp = [c for c in inventory.collected if c.startswith("gcp:")]
        if not gcp:
            return []
        notes = []
        if inventory.gcp.resource_policies and not any(c.endswith(":max_distance") for c in gcp):
            notes.append(
                "groupPlacementPolicy.maxDistance could not be seen: the installed google-cloud-compute types drop "
                "the field, so whether a compact policy is best-effort or bounded is unknown (a gcloud dump shows it)"
            )
        return notes

    # ---------------------------------------------------------------------------------------- facts

    def node_facts(self, shape: NodeShape, context: FactContext, attachment: FabricAttachment) -> Facts:
        cap = context.capability(shape)
        index = index_of(context)
        unknown: dict[str, str] = {}
        odd = next((nic.interface_type for nic in shape.interfaces if nic.interface_type not in NIC_TYPES), None)
        if odd is not None:
            undefined = (
                f"nicType {odd!r} is none the Compute API defines ({', '.join(sorted(NIC_TYPES))}), so which NICs "
                "carry the fabric is unknown"
            )
            unknown = dict.fromkeys(_NIC_TYPE_FACTS, undefined)
        gpu_networks: list[str] = []
        extra = 0
        recommended = 0
        if cap is not None and cap.fabric in (FabricKind.TCPX, FabricKind.TCPXO):
            gpu_nics = attachment.interfaces
            gpu_networks = sorted({nic.network for nic in gpu_nics if nic.network})
            extra = max(0, len(shape.interfaces) - 1 - cap.fabric_interfaces) if cap.fabric_interfaces else 0
            recommended = TCPX_MTU
        rdma_nics = [nic for nic in shape.interfaces if _is_rdma(nic)]
        rdma_nic_type = ""
        if cap is not None and cap.fabric is FabricKind.RDMA:
            rdma_nic_type = "IRDMA" if self.is_hpc(shape.instance_type or "") else "MRDMA"
            recommended = RDMA_MTU
            gpu_networks = sorted({nic.network for nic in rdma_nics if nic.network})

        firewall, firewall_at = "n/a", ""
        if recommended == TCPX_MTU and gpu_networks:
            firewall, firewall_at, why = index.firewall(shape, gpu_networks)
            if why:
                unknown["gpu_firewall"] = why

        profile, profile_at = "n/a", ""
        if rdma_nics:
            profile, profile_at, why = index.rdma_profile(shape, rdma_nics)
            if why:
                unknown["rdma_profile"] = why

        misplaced, why = 0, None
        if rdma_nics or (cap is not None and cap.fabric is FabricKind.RDMA):  # no RDMA NIC, no RDMA network asked
            misplaced, why = index.misplaced(shape)
        if why:
            unknown["non_rdma_on_rdma_vpc"] = why

        mtu, mtus = "n/a", ""
        if gpu_networks:
            mtu, mtus, why = index.mtu(shape, gpu_networks, recommended)
            if why:
                unknown["gpu_mtu"] = why
        return {
            "extra_nics": extra,
            "gpu_firewall": firewall,
            "gpu_firewall_networks": firewall_at,
            "rdma_profile": profile,
            "rdma_profile_networks": profile_at,
            "non_rdma_on_rdma_vpc": misplaced,
            "gpu_mtu": mtu,
            "gpu_mtus": mtus,
            "recommended_mtu": recommended,
            "rdma_nic_type": rdma_nic_type,
            "unknown": unknown,
        }

    def cluster_facts(self, nodes: list[Node], node_facts: list[Facts], context: FactContext) -> Facts:
        placement, unknown = self._placement(nodes, context)
        zonal = any(f["fabric"]["kind"] == FabricKind.RDMA.value for f in node_facts)
        return {
            "placement": placement,
            "upgrade": self._upgrade(nodes, node_facts),
            "zonal_fabric": zonal,
            "unknown": unknown,
        }

    def _placement(self, nodes: list[Node], context: FactContext) -> tuple[Facts, dict[str, str]]:
        index = index_of(context)
        # The nodes of a pool are placed alike: each distinct shape is read once.
        alike = list(dict.fromkeys(node.shape for node in nodes))
        names = sorted({node.placed_by(RESOURCE_POLICY) or "" for node in alike})
        policies: list[ResourcePolicy] = []
        unseen: set[str] = set()
        none = False
        for node in alike:
            found = [p.id for p in node.placement if p.kind == RESOURCE_POLICY]
            if not found:
                none = True
                continue
            for name in found:
                policy = index.policies.get(node.scope_key(name))
                if policy is None:
                    unseen.add(name)
                elif policy.places:
                    policies.append(policy)
        unknown: dict[str, str] = {}
        distinct = {(p.account, p.region, p.name): p for p in policies}
        if not all(context.has(n, "resource_policies") for n in alike):
            missing = sorted({n.account for n in alike if not context.has(n, "resource_policies")})
            verdict = "unknown"
            unknown["placement"] = f"resource policies were not collected for project {', '.join(missing)}"
        elif unseen:
            verdict = "unknown"
            unknown["placement"] = f"resource policy {', '.join(sorted(unseen))} was not among the collected policies"
        elif none:
            verdict = "none"
        elif len(distinct) > 1:
            verdict = "several"
        else:
            policy = next(iter(distinct.values()))
            compact = policy.compact and (policy.availability_domain_count or 1) <= 1
            verdict = ("workload" if policy.workload_type else "compact") if compact else "not-compact"
        dense, capacity_note = self._dense_capacity(alike)
        distances = [p.max_distance for p in distinct.values()]
        known_distance = bool(distinct) and all(p.max_distance_known for p in distinct.values())
        if distinct and not known_distance:
            unknown["placement.max_distance"] = (
                "groupPlacementPolicy.maxDistance is not in the answer "
                "(the installed google-cloud-compute types drop it)"
            )
        placement = {
            "policy": verdict,
            "policies": ", ".join(n or "(none)" for n in names),
            "dense_capacity": bool(nodes) and dense,
            "capacity_note": capacity_note,
            "max_distance": max((d or 0 for d in distances), default=0) if known_distance else 0,
        }
        return placement, unknown

    def _dense_capacity(self, nodes: list[NodeShape]) -> tuple[bool, str]:
        """Whether Google placed every node densely itself, and, when the answer cannot tell (a specific reservation
        of A3 High or A3 Mega may be a future reservation, placed densely, or not), a sentence saying so."""
        dense, maybe = True, set()
        for node in nodes:
            machine = node.instance_type or ""
            capable = self.family(machine) in DENSE_CAPACITY_FAMILIES or machine in DENSE_CAPACITY_TYPES
            reserved = node.placed_by(RESERVATION)
            if node.placed_by(FLEX_START) or (capable and node.placed_by(RESERVATION_BOUND)):
                continue
            if reserved and self.family(machine) in DENSE_RESERVATION_FAMILIES:
                continue
            dense = False
            if reserved and capable:
                maybe.add(reserved)
        if dense or not maybe:
            return dense, ""
        return False, (
            f" The nodes consume reservation {', '.join(sorted(maybe))}: capacity of a future reservation is placed "
            "densely by Google, and then no policy is needed, but the answer does not say whether it is one (their "
            "provisioning model is not RESERVATION_BOUND)."
        )

    def _upgrade(self, nodes: list[Node], node_facts: list[Facts]) -> Facts:
        if len(nodes) < 2 or not all(
            f["fabric"]["known"] and f["fabric"]["kind"] == "none" and f["accelerators"] > 0 for f in node_facts
        ):
            return {"weaker": False, "suggestion": ""}
        families = {self.family(n.instance_type or "") for n in nodes}
        from fabriccheck import catalog  # the catalog imports cloud, which imports nothing of this module

        suggestion = ""
        for family in sorted(families):
            siblings = [
                s.instance_type
                for n in nodes
                if self.family(n.instance_type or "") == family
                for s in catalog.fabric_siblings(self, n.instance_type or "", {})[:1]
            ]
            suggestion = (siblings[:1] or [SINGLE_NIC_UPGRADE.get(family, "")])[0]
            if suggestion:
                break
        return {"weaker": bool(suggestion), "suggestion": suggestion}


def _capped(count: int, limit: int) -> int:
    return min(count, limit) if limit > 0 else count


def _gpu_nic_attachment(node: NodeShape, limit: int) -> FabricAttachment:
    """GPUDirect-TCPX / TCPXO: the GPU NICs are the NICs besides nic0 (the lowest card and device index) on a
    network other than nic0's. Each must have a VPC network of its own (G1, G2), so two GPU NICs in one VPC
    count once: attached and paths are the distinct GPU networks, at most the type's GPU NIC count."""
    host = node.primary_interface
    if host is None:
        return FabricAttachment(0, 0)
    others = sorted(
        (nic for nic in node.interfaces if nic.network is not None and nic.network != host.network),
        key=lambda nic: (nic.network_card_index, nic.device_index),
    )
    # The GPU NICs are nic1..nicN, N the type's GPU NIC count (A3 Mega: nic0 and 8 GPU NICs; GCP-NETBW, CTK-A3M):
    # a NIC beyond them (GCP103) is no GPU NIC, so its network is no GPU network for the firewall and MTU rules.
    networks = list(dict.fromkeys(nic.network for nic in others))
    gpu_networks = set(networks[:limit] if limit > 0 else networks)
    gpu_nics = tuple(nic for nic in others if nic.network in gpu_networks)
    attached = len(gpu_networks)
    return FabricAttachment(attached, attached, gpu_nics)


def _rdma_attachment(node: NodeShape, limit: int) -> FabricAttachment:
    """GPUDirect RDMA: every NIC of an RDMA nicType is one rail. They may share one RoCE VPC network with one
    subnet each (G5), so paths are the distinct (network, subnet) pairs, never more than the NICs counted."""
    rdma_nics = tuple(nic for nic in node.interfaces if _is_rdma(nic))
    attached = _capped(len(rdma_nics), limit)
    paths = min(len({(nic.network, nic.subnet) for nic in rdma_nics}), attached)
    return FabricAttachment(attached, paths, rdma_nics)


def _is_rdma(nic: NetworkInterface) -> bool:
    return nic.interface_type.upper() in RDMA_NIC_TYPES


SUPPORT = GcpSupport()
