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

import re

from fabriccheck.cloud import CloudSupport, FabricAttachment, PlacementSignal, Signal, TagSignal
from fabriccheck.model import Capability, FabricKind, Node

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


def _parse(size: str) -> re.Match[str] | None:
    return _SIZE_NAME.match(size.strip().lower())


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
        # machine scale set"); whether a job may span them is for the rules to judge.
        TagSignal((CYCLECLOUD_NODE_ARRAY_TAG,), "CycleCloud node array"),
        # An AKS node pool. A scale-set pool is one scale set anyway; for a Virtual Machines node pool (no
        # scale set) this would be the only signal, if those VMs carry the same tags (not verified).
        TagSignal((AKS_CLUSTER_SUFFIX_TAG, AKS_POOL_TAG), "AKS node pool"),
        # No Azure Batch signal: Batch puts no documented tag on pool VMs (only user-given resourceTags, in
        # user-subscription mode), and a Batch pool's VMs sit in its own scale sets anyway.
        PlacementSignal(SCALE_SET, "scale set"),
        PlacementSignal(AVAILABILITY_SET, "availability set"),
        # Last: a proximity placement group is advisory for InfiniBand (Z6) and often holds unrelated sets
        # (storage, services) next to the training set. Standalone VMs that share only a PPG still group
        # here, so that their lack of a shared scale set or availability set shows.
        PlacementSignal(PROXIMITY_PLACEMENT_GROUP, "proximity placement group"),
    )

    # ---------------------------------------------------------------------------------------- naming

    def family(self, instance_type: str) -> str:
        """'Standard_ND96isr_H100_v5' -> 'ND', 'Standard_HB120rs_v3' -> 'HB'."""
        match = _parse(instance_type)
        return match["family"].upper() if match else instance_type

    def generation(self, instance_type: str) -> str:
        """Series, accelerator and version: 'Standard_NC24s_v3' and 'Standard_NC24rs_v3' are both 'NC_v3' (the
        'r' only adds RDMA); 'Standard_ND96isr_H100_v5' ('ND_H100_v5') is not 'Standard_ND96isr_H200_v5'."""
        match = _parse(instance_type)
        if not match:
            return instance_type
        parts = [match["family"].upper()]
        if match["accelerator"]:
            parts.append(match["accelerator"].upper())
        if match["version"]:
            parts.append(f"v{match['version']}")
        return "_".join(parts)

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

    def fabric_attachment(self, node: Node, cap: Capability | None) -> FabricAttachment:
        """Azure InfiniBand is part of the VM size, not a NIC: the Azure API lists only the Ethernet NICs, and
        the InfiniBand ports come with the size (Resource SKUs `RdmaEnabled`; fabric-requirements Z1). A VM of
        an InfiniBand size therefore has all of its ports, whatever its NICs; whether they can reach the other
        VMs is a question of scale sets and availability sets (Z2), judged by the rules, not here. A size
        whose capability is unknown has nothing known attached."""
        if cap is None or cap.fabric is not FabricKind.INFINIBAND:
            return FabricAttachment(0, 0)
        return FabricAttachment(cap.fabric_interfaces, cap.fabric_interfaces)


SUPPORT = AzureSupport()
