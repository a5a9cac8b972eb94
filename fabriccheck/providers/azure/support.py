"""Azure's answers to the neutral stages: VM size names, how much InfiniBand a VM has, and the signals that group
VMs that train together. Imports no Azure SDK: saved inventories are judged without it.

Facts and their sources (tags expand in /work/shared/reference/fabric-requirements.md, section 2, and
fabric-catalog.md):
- InfiniBand belongs to the VM size (Resource SKUs capability `RdmaEnabled`), not to a network interface
  in the Azure API (Z1; LISA-IB, AZ-SETUP-IB).
- The scale set or availability set is the InfiniBand boundary: VMs in different sets get different
  partition keys and cannot reach each other over InfiniBand (Z2; AZ-SETUP-IB, NCCLTESTS-36).
"""

from __future__ import annotations

import functools
import ipaddress
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
from fabriccheck.providers.azure.sizes import capability_from_name
from fabriccheck.resources.azure import AzureNicPart, Extension, ScaleSet, VirtualNetwork

if TYPE_CHECKING:
    from fabriccheck.inventory import Inventory

# Placement kinds an Azure VM can have (model.Placement.kind); the ids are ARM resource ids.
# properties.virtualMachineScaleSet.id (fabric-requirements Z2).
SCALE_SET = "scale-set"
# properties.availabilitySet.id (Z2).
AVAILABILITY_SET = "availability-set"
# properties.proximityPlacementGroup.id: advisory only for InfiniBand (Z6).
PROXIMITY_PLACEMENT_GROUP = "proximity-placement-group"

# Azure CycleCloud (v8.2 onwards) tags every VM of a node array with its globally unique name,
# /sites/<site>/clusters/<cluster>/nodearrays/<nodearray> (learn.microsoft.com/azure/cyclecloud/how-to/tag-nodes).
CYCLECLOUD_NODE_ARRAY_TAG = "CycleCloudNodeArray"
# AKS tags its node VMs (and scale sets) with the agent pool's name and a suffix that AKS appends to the
# names of one cluster's resources (in the dumps seen it also names the cluster's aks-vnet-<suffix>). Seen on
# scale-set models and in the instance metadata of AKS nodes (public az/IMDS dumps found with the code search;
# no Microsoft page lists them). The pool name alone is not enough: two clusters in one subscription and
# region can both have a pool named `gpu`, and joining them would report a split that is not there.
AKS_POOL_TAG = "aks-managed-poolName"
AKS_CLUSTER_SUFFIX_TAG = "aks-managed-resourceNameSuffix"

# HPC sizes: HB, HC and HX are Azure's high-performance-compute sizes, whose InfiniBand serves tightly coupled
# MPI jobs without GPUs (azure-compute-docs articles/virtual-machines/sizes/high-performance-compute; AZ-HBV3,
# AZ-HBV4, AZ-HX in fabric-catalog.md). H is the older HPC series (Standard_H16r, Standard_H16mr in the ARM
# size enums; "r" marks RDMA, AZ-SETUP-IB).
HPC_FAMILIES = frozenset({"H", "HB", "HC", "HX"})

# Azure size names (MicrosoftDocs/azure-compute-docs articles/virtual-machines/sizes/overview.md, "naming
# conventions"; the Basic_ tier is in the ARM size enums):
#   [Standard_|Basic_] family [# vCPUs][-constrained vCPUs] [additive features] [_accelerator] [_version]
# e.g. Standard_ND96isr_H100_v5, Standard_HB120-16rs_v3, Standard_HX176rs, Standard_ND128isr_NDR_GB200_v6.
# Matched on the lower-cased name, so users may type `nd96isr_h100_v5`. Family letters and feature letters are
# told apart by the vCPU digits between them. The accelerator part is anything between the features and the
# version that is not itself the version. A _Promo size is the same size at a promotional price.
_SIZE_NAME = re.compile(
    r"^(?:standard_|basic_)?"
    r"(?P<family>[a-z]+)"
    r"(?P<vcpus>\d+)"
    r"(?:-(?P<constrained>\d+))?"
    r"(?P<features>[a-z]*)"
    r"(?:_(?P<accelerator>(?!v\d+(?:_promo)?$)[a-z0-9]+(?:_[a-z0-9]+)*?))?"
    r"(?:_v(?P<version>\d+))?"
    r"(?:_promo)?$"
)


@functools.lru_cache(maxsize=1024)  # a fleet runs a handful of sizes, asked about for every VM
def _parse(size: str) -> re.Match[str] | None:
    return _SIZE_NAME.match(size.strip().lower())


# Series that Microsoft sells with and without InfiniBand under different family letters, so that the "same
# family has an RDMA size" suggestion can cross them (issue 7; fabric-requirements Z1: "NC A100 v4 /
# NCads H100 v5 have no IB", their ND siblings do; AZ-NCA100, AZ-NDA100, AZ-NCH100, AZ-NDH100). The key is
# the generation the size name gives, the value the generation both share. ND A100 v4 is named without its
# accelerator (Standard_ND96asr_v4), hence its own entry.
RDMA_PAIRS = {
    "NC_A100_v4": "ND_A100_v4",
    "ND_v4": "ND_A100_v4",
    "NC_H100_v5": "ND_H100_v5",
}


def _generation(instance_type: str) -> str:
    match = _parse(instance_type)
    if not match:
        return instance_type
    parts = [match["family"].upper()]
    if match["accelerator"]:
        parts.append(match["accelerator"].upper())
    if match["version"]:
        parts.append(f"v{match['version']}")
    series = "_".join(parts)
    return RDMA_PAIRS.get(series, series)


# The RDMA network reserves 172.16.0.0/16: "make sure that the virtual network address space does not overlap
# the RDMA network" (Set up InfiniBand, AZ-SETUP-IB; fabric-requirements Z3).
RDMA_RESERVED = ipaddress.ip_network("172.16.0.0/16")

# The InfiniBand driver extensions (publisher Microsoft.HpcCompute; "InfiniBand Driver Extension for Linux" and
# "... for Windows", AZ-IB-EXT / AZ-ENABLE-IB; fabric-requirements Z4). Compared case-insensitively.
IB_DRIVER_PUBLISHER = "microsoft.hpccompute"
IB_DRIVER_TYPES = frozenset({"infinibanddriverlinux", "infinibanddriverwindows"})
# Microsoft's HPC marketplace images carry the InfiniBand drivers: Ubuntu-HPC and AlmaLinux-HPC (publisher
# microsoft-dsvm, offers ubuntu-hpc / almalinux-hpc) and the older OpenLogic CentOS-HPC (AZ-SETUP-IB,
# AZ-NDH100-SIZES). The exact offer strings are not in Microsoft's text (fabric-requirements Z4 marks them
# unverified), so any marketplace offer whose name contains "hpc" counts.
HPC_IMAGE_OFFER = re.compile(r"hpc", re.IGNORECASE)

# singlePlacementGroup=true holds at most 100 VMs by default, 300 once raised by support; an availability set
# holds 200 (AZ-SETUP-IB, AZDOCS-54063; fabric-requirements Z2).
PLACEMENT_GROUP_DEFAULT_VMS = 100
PLACEMENT_GROUP_MAX_VMS = 300

# Series whose size page says "Accelerated Networking: Not Supported": nothing to switch on (AZ-NCV3,
# azure-compute-docs .../gpu-accelerated/ncv3-series.md).
NO_ACCELERATED_NETWORKING = frozenset({"NC_v3"})

# Facts the collector records in Inventory.collected (model.fact_key), one per list call kind.
VMS = "vms"
SCALE_SETS = "scale_sets"
AVAILABILITY_SETS = "availability_sets"
PROXIMITY_PLACEMENT_GROUPS = "proximity_placement_groups"
NICS = "nics"
VIRTUAL_NETWORKS = "virtual_networks"
SKUS = "skus"


@functools.lru_cache(maxsize=4096)  # a fleet runs a handful of images
def image_kind(image: str | None) -> str:
    """hpc (a Microsoft HPC image), marketplace (another publisher:offer:sku:version), custom (a gallery or
    managed image id) or unknown (no image reference)."""
    if not image:
        return "unknown"
    if image.startswith("/"):
        return "custom"
    parts = image.split(":")
    if len(parts) >= 2 and HPC_IMAGE_OFFER.search(parts[1]):
        return "hpc"
    return "marketplace"


def _extension(name: str) -> Extension:
    """An extension as a shape lists it (NodeShape.software): publisher/type."""
    publisher, _, kind = name.rpartition("/")
    return Extension(publisher=publisher, type=kind)


def _resolved(
    shape: NodeShape, records: tuple[tuple[bool, str | None] | None, ...], software: tuple[str, ...]
) -> NodeShape:
    """`shape` with what its NICs' records say (accelerated networking; the subnet, and so the network, of a NIC the VM
    only references) and its VM's extensions; a NIC without a record keeps what the shape says."""
    interfaces = []
    for nic, record in zip(shape.interfaces, records, strict=True):
        if record is not None:
            accelerated, subnet = record
            update: dict[str, object] = {"extension": AzureNicPart(accelerated=accelerated)}
            if subnet and nic.subnet is None:  # a VM's reference to its NIC names no subnet: the record does
                update |= {"subnet": subnet, "network": vnet_of_subnet(subnet)}
            nic = nic.model_copy(update=update)
        interfaces.append(nic)
    if tuple(interfaces) == shape.interfaces and software == shape.software:
        return shape
    return shape.model_copy(update={"interfaces": tuple(interfaces), "software": software})


def accelerated(nic: NetworkInterface) -> bool | None:
    """Whether accelerated networking is on for `nic` (its Azure part); None: not said."""
    part = nic.part(AzureNicPart)
    return part.accelerated if part is not None else None


def has_ib_driver(extensions: list[Extension]) -> bool:
    # An extension known by name only (no publisher in the answer) counts by its name.
    return any(
        e.publisher.lower() in (IB_DRIVER_PUBLISHER, "") and e.type.lower() in IB_DRIVER_TYPES for e in extensions
    )


def overlaps_rdma(prefixes: list[str]) -> list[str]:
    """The prefixes that overlap 172.16.0.0/16 (a prefix that does not parse is left out)."""
    found = []
    for prefix in prefixes:
        try:
            network = ipaddress.ip_network(prefix, strict=False)
        except ValueError:
            continue
        if network.version == 4 and network.overlaps(RDMA_RESERVED):
            found.append(prefix)
    return found


def vnet_of_subnet(subnet_id: str | None) -> str | None:
    """'/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/x' -> the
    virtual network's id (lower-cased, as every Azure id in the model)."""
    if not subnet_id:
        return None
    head, sep, _ = subnet_id.lower().rpartition("/subnets/")
    return head if sep else None


def short_name(resource_id: str) -> str:
    return resource_id.rstrip("/").rsplit("/", 1)[-1]


class AzureSupport(CloudSupport):
    name = "azure"
    # Strongest first. In Azure the scale set or availability set *is* the InfiniBand boundary (Z2), so
    # grouping VMs by their scale set can never show the one split that matters: the VMs of one job spread
    # over two scale sets (or over a scale set and standalone VMs) would simply form two clusters, each of
    # them fine. Only a signal above the scale set makes that split visible, so scheduler and orchestrator
    # tags come first and the placement kinds are the fallback for VMs that carry none of them.
    signals: tuple[Signal, ...] = (
        # A CycleCloud node array can be backed by more than one scale set (CycleCloud node/nodearray
        # reference: "a nodearray can represent a collection of virtual machines or at least one virtual
        # machine scale set"; "Max VMs per Scaleset" caps each), and CycleCloud keeps a job inside one of them:
        # `azslurm topology` maps the Slurm topology along scale-set boundaries (Azure/cyclecloud-slurm@00d5f14b
        # README, Topology: one switch per scale set's placement group). So each scale set of a node array is an
        # InfiniBand cluster of its own (notes() says they belong to one array); the array's VMs in no scale set
        # form one group, where each standalone VM is a partition of its own. Only --cluster-tag joins the sets.
        TagSignal(
            (CYCLECLOUD_NODE_ARRAY_TAG,),
            "CycleCloud node array",
            NetworkPath.HOST,
            slug="cyclecloud-node-array",
            within=SCALE_SET,
        ),
        # An AKS node pool. A scale-set pool is one scale set anyway; for a Virtual Machines node pool (no
        # scale set) this would be the only signal, if those VMs carry the same tags (not verified).
        TagSignal((AKS_CLUSTER_SUFFIX_TAG, AKS_POOL_TAG), "AKS node pool", NetworkPath.POD, slug="aks-node-pool"),
        # No Azure Batch signal: Batch puts no documented tag on pool VMs (only user-given resourceTags, in
        # user-subscription mode), and a Batch pool's VMs sit in its own scale sets anyway.
        PlacementSignal(SCALE_SET, "scale set", NetworkPath.HOST, slug="scale-set"),
        PlacementSignal(AVAILABILITY_SET, "availability set", NetworkPath.HOST, slug="availability-set"),
        # Last: a proximity placement group is advisory for InfiniBand (Z6) and often holds unrelated sets
        # (storage, services) next to the training set. Standalone VMs that share only a PPG still group
        # here, so that their lack of a shared scale set or availability set shows.
        PlacementSignal(
            PROXIMITY_PLACEMENT_GROUP, "proximity placement group", NetworkPath.HOST, slug="proximity-placement-group"
        ),
    )

    schema = FactSchema(
        node={
            "scale_set": "the name of the VM's scale set, or empty",
            "availability_set": "the name of the VM's availability set, or empty",
            "ib_partition": "the InfiniBand partition the VM is in: scale-set NAME, availability-set NAME, or "
            "empty for a standalone VM (a partition of its own)",
            "image": "the image: publisher:offer:sku:version, or a custom image id",
            "image_kind": "hpc (a Microsoft HPC image), marketplace, custom or unknown",
            "ib_driver": "extension (InfiniBandDriverLinux/Windows), image (an HPC image), none, or unknown "
            "(the scale set's model was not collected)",
            "accelerated_networking": "on (every NIC), off (some NIC without it), unsupported (the size has "
            "none), n/a (no NIC) or unknown (NICs not collected)",
            "nics_without_acceleration": "the NICs without accelerated networking, comma-separated",
        },
        cluster={
            "ib_partitions": "distinct InfiniBand partitions among the VMs that should use InfiniBand (each "
            "standalone VM is one)",
            "ib_partition_names": "their names (standalone VMs for VMs in no set)",
            "scale_set": "the one scale set every VM is in (empty fields when there is none or several)",
            "scale_set.name": "its name",
            "scale_set.mode": "Uniform, Flexible, or empty",
            "scale_set.single_placement_group": "singlePlacementGroup (Flexible: false unless set)",
            "scale_set.vms": "VMs it runs (the larger of its capacity and the VMs seen)",
            "scale_set.aks": "an AKS node pool's scale set",
            "rdma_overlap": "virtual networks (and prefixes) of the cluster that overlap 172.16.0.0/16, or empty",
        },
        naming=frozenset({"nics_without_acceleration"}),
    )
    collected_facts = (VMS, SCALE_SETS, AVAILABILITY_SETS, PROXIMITY_PLACEMENT_GROUPS, NICS, VIRTUAL_NETWORKS, SKUS)

    # ---------------------------------------------------------------------------------------- naming

    def family(self, instance_type: str) -> str:
        """'Standard_ND96isr_H100_v5' -> 'ND', 'Standard_HB120rs_v3' -> 'HB'."""
        match = _parse(instance_type)
        return match["family"].upper() if match else instance_type

    def generation(self, instance_type: str) -> str:
        """Series, accelerator and version: 'Standard_NC24s_v3' and 'Standard_NC24rs_v3' are both 'NC_v3' (the
        'r' only adds RDMA); 'Standard_ND96isr_H100_v5' ('ND_H100_v5') is not 'Standard_ND96isr_H200_v5'."""
        return _generation(instance_type)

    def size_rank(self, instance_type: str) -> int:
        """The vCPU count in the name (a constrained-core size ranks with the size it is cut from)."""
        match = _parse(instance_type)
        return int(match["vcpus"]) if match else 10_000

    def owns(self, instance_type: str) -> bool:
        """Azure size names, with or without 'Standard_': never an EC2 name (those have a dot) nor a Compute
        Engine name (those join lower-case words with hyphens, which the size pattern does not allow)."""
        return "." not in instance_type and _parse(instance_type) is not None

    # ---------------------------------------------------------------------------------------- fabric

    def is_hpc(self, instance_type: str) -> bool:
        return self.family(instance_type) in HPC_FAMILIES

    def named_capability(self, instance_type: str) -> Capability | None:
        """CPU families and the N-series sizes without 'r' have no InfiniBand (sizes.py, with its sources)."""
        return capability_from_name(instance_type)

    def fabric_attachment(self, shape: NodeShape, cap: Capability | None) -> FabricAttachment:
        """Azure InfiniBand is part of the VM size, not a NIC: the Azure API lists only the Ethernet NICs, and
        the InfiniBand ports come with the size (Resource SKUs `RdmaEnabled`; fabric-requirements Z1). A VM of
        an InfiniBand size therefore has all of its ports, whatever its NICs; whether they can reach the other
        VMs is a question of scale sets and availability sets (Z2), judged by the rules, not here. A size
        whose capability is unknown has nothing known attached."""
        if cap is None or cap.fabric is not FabricKind.INFINIBAND:
            return FabricAttachment(0, 0)
        return FabricAttachment(cap.fabric_interfaces, cap.fabric_interfaces)

    def notes(self, inventory: Inventory) -> list[str]:
        facts = {c.rsplit(":", 1)[-1] for c in inventory.collected if c.startswith("azure:")}
        notes = node_array_notes(inventory)
        if any(n.provider == "azure" for n in inventory.nodes) and SKUS not in facts:
            notes.append("VM size capabilities come from the shipped catalog and the size names (no Resource SKUs)")
        return notes

    # ---------------------------------------------------------------------------------------- facts

    def resolve(self, nodes: list[Node], inventory: Inventory) -> None:
        """A VM's NICs keep their subnet and accelerated networking on their own records (the NIC list), found by
        the NIC's id, and its extensions on the VM list's `resources`, found by the VM's id: copied onto its
        shape, so that its facts read the shape alone. The VMs of a pool whose records say alike keep one shape."""
        azure = inventory.azure
        records = {(n.account, n.id): (bool(n.accelerated_networking), n.subnet) for n in azure.nics}
        extensions = {
            (e.account, e.vm): tuple(f"{x.publisher}/{x.type}" for x in e.extensions) for e in azure.extensions
        }
        made: dict[tuple[NodeShape, tuple[tuple[bool, str | None] | None, ...], tuple[str, ...]], NodeShape] = {}
        for node in nodes:
            found = tuple(records.get((node.account, nic_id.lower())) for nic_id in node.interface_ids)
            key = (node.shape, found, extensions.get((node.account, node.id.lower()), ()))
            shape = made.get(key)
            if shape is None:
                shape = made[key] = _resolved(*key)
            node.shape = shape

    def node_facts(self, shape: NodeShape, context: FactContext, attachment: FabricAttachment) -> Facts:
        index = _index(context)
        unknown: dict[str, str] = {}
        scale_set_id = shape.placed_by(SCALE_SET)
        availability_set_id = shape.placed_by(AVAILABILITY_SET)
        scale_set = index.scale_sets.get((shape.account, scale_set_id)) if scale_set_id else None
        if scale_set_id:
            partition = f"scale-set {short_name(scale_set_id)}"
        elif availability_set_id:
            partition = f"availability-set {short_name(availability_set_id)}"
        else:
            partition = ""
        image = shape.image or (scale_set.image if scale_set else None)
        kind = image_kind(image)
        extensions = [_extension(name) for name in shape.software]
        if scale_set:
            extensions += scale_set.extensions
        if has_ib_driver(extensions):
            driver = "extension"
        elif kind == "hpc":
            driver = "image"
        elif scale_set_id and scale_set is None and shape.origin == "running":
            driver = "unknown"
            unknown["ib_driver"] = self._missing_set(shape, context, scale_set_id)
        else:
            driver = "none"
        accelerated, why = self._acceleration(shape, context)
        if why:
            unknown["accelerated_networking"] = why
        return {
            "scale_set": short_name(scale_set_id) if scale_set_id else "",
            "availability_set": short_name(availability_set_id) if availability_set_id else "",
            "ib_partition": partition,
            "image": image or "",
            "image_kind": kind,
            "ib_driver": driver,
            "accelerated_networking": accelerated,
            "nics_without_acceleration": "",  # named per VM (naming_facts)
            "unknown": unknown,
        }

    def naming_facts(self, node: Node, shared: Facts) -> Facts:
        if shared["accelerated_networking"] != "off":
            return {}
        off = [
            short_name(nic_id)
            for nic_id, nic in zip(node.interface_ids, node.interfaces, strict=True)
            if accelerated(nic) is False
        ]
        return {"nics_without_acceleration": ", ".join(off)}

    def _missing_set(self, shape: NodeShape, context: FactContext, scale_set_id: str) -> str:
        if not context.has(shape, SCALE_SETS):
            return f"scale sets were not collected for subscription {shape.account}"
        return f"scale set {short_name(scale_set_id)} was not among the scale sets collected for {shape.account}"

    def _acceleration(self, shape: NodeShape, context: FactContext) -> tuple[str, str | None]:
        if not shape.interfaces:
            return "n/a", None
        if shape.instance_type and self.generation(shape.instance_type) in NO_ACCELERATED_NETWORKING:
            return "unsupported", None
        flags = [accelerated(nic) for nic in shape.interfaces]
        if False in flags:  # absent on its record is ARM's default: off
            return "off", None
        if None in flags:  # a NIC whose record was not seen
            if not context.has(shape, NICS):
                return "unknown", f"network interfaces were not collected for subscription {shape.account}"
            return "unknown", f"some network interfaces of the VM were not among those collected for {shape.account}"
        return "on", None

    def cluster_facts(self, nodes: list[Node], node_facts: list[Facts], context: FactContext) -> Facts:
        index = _index(context)
        unknown: dict[str, str] = {}
        # A node's name from `nodes`: the VMs of one shape share their facts (without names).
        partitions = {
            f["ib_partition"] or f"standalone VM {node.id}"
            for node, f in zip(nodes, node_facts, strict=True)
            if f["fabric_expected"]
        }
        names = sorted({"standalone VMs" if p.startswith("standalone VM ") else p for p in partitions})
        scale_set, why = self._scale_set(nodes, context, index)
        if why:
            unknown["scale_set"] = why
        overlap, why = self._overlap(nodes, context, index)
        if why:
            unknown["rdma_overlap"] = why
        return {
            "ib_partitions": len(partitions),
            "ib_partition_names": ", ".join(names),
            "scale_set": scale_set,
            "rdma_overlap": overlap,
            "unknown": unknown,
        }

    def _scale_set(self, nodes: list[Node], context: FactContext, index: _Index) -> tuple[Facts, str | None]:
        empty: Facts = {"name": "", "mode": "", "single_placement_group": False, "vms": 0, "aks": False}
        ids = {n.placed_by(SCALE_SET) for n in nodes}
        if len(ids) != 1 or None in ids:
            return empty, None
        scale_set_id = ids.pop()
        assert scale_set_id is not None
        first = nodes[0]
        found = index.scale_sets.get((first.account, scale_set_id))
        if found is None:
            return empty | {"name": short_name(scale_set_id)}, self._missing_set(first.shape, context, scale_set_id)
        single = found.single_placement_group
        why = None
        if single is None:
            if found.orchestration_mode.lower() == "flexible":
                single = False  # Flexible scale sets leave it out; they never asked for one placement group
            else:
                why = f"scale set {found.name} does not say whether it is limited to a single placement group"
        aks = found.tags.get(AKS_POOL_TAG) is not None or any(AKS_POOL_TAG in n.tags for n in nodes)
        facts = {
            "name": found.name,
            "mode": "Flexible" if found.orchestration_mode.lower() == "flexible" else "Uniform",
            "single_placement_group": bool(single),
            "vms": max(found.capacity or 0, len(nodes)),
            "aks": aks,
        }
        return facts, why

    def _overlap(self, nodes: list[Node], context: FactContext, index: _Index) -> tuple[str, str | None]:
        networks = sorted({i.network for n in nodes for i in n.interfaces if i.network})
        found = []
        unseen = []
        for network in networks:
            vnet = index.virtual_networks.get((nodes[0].account, network.lower()))
            if vnet is None:
                unseen.append(short_name(network))
                continue
            overlapping = overlaps_rdma(vnet.address_prefixes)
            if overlapping:
                found.append(f"{vnet.name} ({', '.join(overlapping)})")
        if found:
            return "; ".join(found), None
        if unseen:
            account = nodes[0].account
            if not all(context.has(n.shape, VIRTUAL_NETWORKS) for n in nodes):
                return "", f"virtual networks were not collected for subscription {account}"
            return "", f"virtual network(s) {', '.join(unseen)} were not among those collected for {account}"
        return "", None


def node_array_notes(inventory: Inventory) -> list[str]:
    """One line per CycleCloud node array whose running VMs sit in several scale sets: each set was judged as an
    InfiniBand cluster of its own, and the report says they belong to one node array."""
    from fabriccheck.clusters import JUDGED_STATES

    sets: dict[tuple[str, str, str], set[str]] = {}
    for node in inventory.nodes:
        array = node.tags.get(CYCLECLOUD_NODE_ARRAY_TAG) if node.provider == "azure" else None
        scale_set = node.placed_by(SCALE_SET) if array else None
        if array and scale_set and node.state in JUDGED_STATES:
            sets.setdefault((node.account, node.region, array), set()).add(short_name(scale_set))
    return [
        f"CycleCloud node array {array} (subscription {account}, {region}) runs in {len(names)} scale sets "
        f"({', '.join(sorted(names))}): each is judged as its own InfiniBand cluster, since CycleCloud keeps a job "
        "inside one scale set; tag a job's VMs and pass --cluster-tag to judge a job that spans them"
        for (account, region, array), names in sorted(sets.items())
        if len(names) > 1
    ]


class _Index:
    """The Azure namespace keyed by (subscription, lower-cased ARM id), built once per inventory."""

    def __init__(self, context: FactContext) -> None:
        azure = context.inventory.azure
        self.scale_sets: dict[tuple[str, str], ScaleSet] = {(s.account, s.id): s for s in azure.scale_sets}
        self.virtual_networks: dict[tuple[str, str], VirtualNetwork] = {
            (v.account, v.id): v for v in azure.virtual_networks
        }


def _index(context: FactContext) -> _Index:
    return context.cached("azure-index", lambda: _Index(context))


SUPPORT = AzureSupport()
