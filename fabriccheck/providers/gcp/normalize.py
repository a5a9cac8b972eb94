"""Compute Engine answers -> the model: the pure function from resource lists (the dicts `gcloud compute ... list
--format=json` prints, and that the live collector makes of the client's answers) to nodes and the `gcp` namespace.

Live runs and dumps share this half; the calls they read are listing.CALLS. Field names are the API's JSON names
(camelCase), as gcloud prints them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, TypedDict

from pydantic import ValidationError

from fabriccheck import catalog
from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.model import UNKNOWN_ACCOUNT, Node, NodeShape, Topology, fact_key
from fabriccheck.providers.gcp.listing import (
    CALLS,
    FIREWALLS,
    INSTANCES,
    NETWORK_FIREWALL_POLICIES,
    NETWORKS,
    RESOURCE_POLICIES,
    SUBNETWORKS,
    GcpCall,
    items_of,
)
from fabriccheck.providers.gcp.machines import MachineTypes, attached
from fabriccheck.providers.gcp.support import (
    FLEX_START,
    MIG_METADATA_KEY,
    RESERVATION,
    RESERVATION_BOUND,
    RESOURCE_POLICY,
    SLURM_CLUSTER_LABEL,
    SLURM_JOB_KEY,
    SLURM_NODESET_LABEL,
)
from fabriccheck.resources.gcp import (
    GLOBAL,
    FirewallRule,
    GcpNodePart,
    Network,
    NetworkFirewallPolicy,
    PolicyRule,
    ResourcePolicy,
    Subnetwork,
    firewall_entries,
    unresolved_destinations,
)
from fabriccheck.sources import pools
from fabriccheck.sources.items import INTERFACE_FACTS, ITEM_ERRORS, named, salvage, unknown_because
from fabriccheck.sources.pools import without
from fabriccheck.sources.scope import BAD_RESPONSE, Scope
from fabriccheck.sources.shape import Shape, describe, unexpected_shape

# A Compute Engine zone is its region plus a letter: us-central1-a, europe-west4-b.
ZONE = re.compile(r"^([a-z]+-[a-z]+\d+)-[a-z]$")
REGION = re.compile(r"^[a-z]+-[a-z]+\d+$")
# Project ids: 6 to 30 lower-case letters, digits and hyphens, starting with a letter (Resource Manager);
# domain-scoped projects are "example.com:name".
PROJECT_ID = re.compile(r"^(?:[a-z0-9.-]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$")
_PROJECT = re.compile(r"projects/([^/]+)/")

# instance.status -> the neutral state words (clusters.JUDGED_STATES judges pending and running).
_STATES = {
    "PROVISIONING": "pending",
    "STAGING": "pending",
    "RUNNING": "running",
    "STOPPING": "stopping",
    "STOPPED": "stopped",
    "SUSPENDING": "stopping",
    "SUSPENDED": "stopped",
    "REPAIRING": "pending",
    "TERMINATED": "stopped",  # Compute Engine's word for a stopped instance
}


def short(url: Any) -> str:
    """A resource URL as its path from `projects/`: the same whether the answer gives a full selfLink
    (https://www.googleapis.com/compute/v1/projects/...) or a partial one."""
    text = url if isinstance(url, str) else str(url)
    at = text.find("projects/")
    return text[at:] if at >= 0 else text


def last(url: Any) -> str:
    return (url if isinstance(url, str) else str(url)).rstrip("/").rsplit("/", 1)[-1]


def region_of_zone(zone: str | None) -> str | None:
    match = ZONE.match(zone or "")
    return match.group(1) if match else None


def project_of(item: dict[str, Any]) -> str | None:
    match = _PROJECT.search(str(item.get("selfLink") or ""))
    return match.group(1) if match else None


def _policy(item: dict[str, Any], project: str) -> ResourcePolicy:
    group = item.get("groupPlacementPolicy")
    workload = item.get("workloadPolicy")
    group = group if isinstance(group, dict) else None
    kinds = ("snapshotSchedulePolicy", "instanceSchedulePolicy", "diskConsistencyGroupPolicy")
    return ResourcePolicy(
        account=project,
        region=last(item.get("region") or "unknown"),
        name=str(item["name"]),
        collocation=group.get("collocation") if group else None,
        vm_count=group.get("vmCount") if group else None,
        availability_domain_count=group.get("availabilityDomainCount") if group else None,
        gpu_topology=group.get("gpuTopology") if group else None,
        max_distance=group.get("maxDistance") if group else None,
        max_distance_known=group is not None and "maxDistance" in group,
        workload_type=workload.get("type") if isinstance(workload, dict) else None,
        other_kind=any(k in item for k in kinds),
    )


def _firewall(item: dict[str, Any], project: str) -> FirewallRule:
    entries = item.get("allowed") or item.get("denied") or []
    return FirewallRule(
        account=project,
        region=GLOBAL,
        name=str(item["name"]),
        network=short(item["network"]) if item.get("network") else None,
        direction=str(item.get("direction") or "INGRESS"),
        disabled=bool(item.get("disabled")),
        priority=int(item.get("priority", 1000)),
        action="deny" if item.get("denied") else "allow",
        entries=firewall_entries(entries, "IPProtocol"),
        source_ranges=[str(r) for r in item.get("sourceRanges") or ()],
        destination_ranges=[str(r) for r in item.get("destinationRanges") or ()],
        source_tags=[str(t) for t in item.get("sourceTags") or ()],
        source_service_accounts=[str(s) for s in item.get("sourceServiceAccounts") or ()],
        target_tags=[str(t) for t in item.get("targetTags") or ()],
        target_service_accounts=[str(s) for s in item.get("targetServiceAccounts") or ()],
    )


def policy_rule(rule: dict[str, Any]) -> PolicyRule:
    """A FirewallPolicyRule as networkFirewallPolicies.get returns it (match.srcIpRanges, match.layer4Configs[]
    {ipProtocol, ports}, match.srcSecureTags[].name, targetSecureTags[].name; https://cloud.google.com/compute/docs/
    reference/rest/v1/networkFirewallPolicies/get)."""
    match = rule.get("match") or {}
    return PolicyRule(
        priority=int(rule["priority"]),
        direction=str(rule.get("direction") or "INGRESS"),
        action=str(rule.get("action") or "allow").lower(),
        disabled=bool(rule.get("disabled")),
        entries=firewall_entries(match.get("layer4Configs") or [], "ipProtocol"),
        source_ranges=[str(r) for r in match.get("srcIpRanges") or ()],
        source_secure_tags=[str(t.get("name")) for t in match.get("srcSecureTags") or ()],
        source_address_groups=[str(g) for g in match.get("srcAddressGroups") or ()],
        source_network_context=str(
            match.get("srcNetworkContext") or match.get("srcNetworkScope") or match.get("srcNetworkType") or ""
        ),
        source_networks=[str(n) for n in match.get("srcNetworks") or ()],
        dest_ranges=[str(r) for r in match.get("destIpRanges") or ()],
        dest_unresolved=unresolved_destinations(match, DEST_KINDS),
        dest_network_context=str(match.get("destNetworkContext") or match.get("destNetworkType") or ""),
        target_secure_tags=[str(t.get("name")) for t in rule.get("targetSecureTags") or ()],
        target_service_accounts=[str(s) for s in rule.get("targetServiceAccounts") or ()],
    )


# An egress rule's destinations besides destIpRanges, by their field in the API's match (Terraform's: plan_policies),
# and what a message calls each (FirewallPolicyRuleMatcher, Compute API v1; "Destinations for egress rules",
# https://cloud.google.com/firewall/docs/firewall-policies-rule-details).
DEST_KINDS = {
    "destAddressGroups": "address group",
    "destFqdns": "FQDN",
    "destRegionCodes": "geolocation",
    "destThreatIntelligences": "threat intelligence list",
}


def network_firewall_policy(item: dict[str, Any], project: str) -> NetworkFirewallPolicy:
    """A global network firewall policy; `rules` None when the answer left them out (not an empty policy)."""
    name = str(item["name"])
    rules = item.get("rules")
    return NetworkFirewallPolicy(
        account=project,
        region=GLOBAL,
        id=short(item.get("selfLink") or f"projects/{project}/global/firewallPolicies/{name}"),
        name=name,
        rules=None if rules is None else [policy_rule(r) for r in rules],
        unknown_rules=""
        if rules is not None
        else (
            f"it was saved without its rules (save `gcloud compute network-firewall-policies describe {name} "
            "--global --format=json` instead)"
        ),
    )


def firewall_targets(inst: dict[str, Any]) -> list[str]:
    """What VPC firewall rules target an instance by: its network tags (tags.items) and the email of its service
    account (serviceAccounts[].email), as its GcpNodePart holds them (Compute API v1 Instance)."""
    tags = (inst.get("tags") or {}).get("items") or ()
    accounts = [a.get("email") for a in inst.get("serviceAccounts") or () if isinstance(a, dict)]
    return [*(f"tag:{t}" for t in tags), *(f"sa:{e}" for e in accounts if e)]


def _tags_of(inst: dict[str, Any]) -> dict[str, str]:
    """An instance's labels, the managed instance group its metadata names, and the Slurm job its slurm-gcp
    compact policy names (support.SLURM_JOB_KEY)."""
    tags = {str(k): str(v) for k, v in (inst.get("labels") or {}).items()}
    for entry in (inst.get("metadata") or {}).get("items") or ():
        if isinstance(entry, dict) and entry.get("key") == MIG_METADATA_KEY:
            tags[MIG_METADATA_KEY] = str(entry.get("value", ""))
    if SLURM_CLUSTER_LABEL in tags and SLURM_NODESET_LABEL in tags:
        prefix = f"{tags[SLURM_CLUSTER_LABEL]}-slurmgcp-managed-{tags[SLURM_NODESET_LABEL]}-"
        for url in inst.get("resourcePolicies") or ():
            name = last(url)
            job = _SLURM_JOB.fullmatch(name[len(prefix) :]) if name.startswith(prefix) else None
            if job and job[1] != "0":  # job 0 is the nodeset's static placement
                tags[SLURM_JOB_KEY] = job[1]
    return tags


_SLURM_JOB = re.compile(r"(\d+)-\d+")  # {job id}-{chunk}


# The levels of resourceStatus.physicalHostTopology above the host, coarsest first: "cluster: the global name of the
# Compute Engine cluster", "block: ... Instances within the same block experience low network latency", "subblock:
# ... lower network latency than instances in the same block" (Compute Engine API reference,
# ResourceStatusPhysicalHostTopology; https://cloud.google.com/ai-hypercomputer/docs/terminology).
_HOST_LEVELS = ("cluster", "block", "subblock")


def instance_topology(resource_status: Any, machine_type: str | None) -> Topology | None:
    """Where the instance sits: resourceStatus.physicalHostTopology (cluster, block, sub-block), else the older
    resourceStatus.physicalHost /CLUSTER/RACK/HOST (cluster-toolkit reads its first two components as the topology;
    CTK-TOPO). Each level's id is its path from the cluster, as a block's id is only its own within the cluster. On A4X
    and A4X Max "an NVLink domain, also known as a sub-block, ... consists of 18 A4X Max or A4X instances (72 GPUs)"
    (AI Hypercomputer terminology): the finest level is the node's NVLink domain there."""
    status = resource_status if isinstance(resource_status, dict) else {}
    published = status.get("physicalHostTopology")
    if isinstance(published, dict) and published.get("cluster"):
        named = [(name, str(published[name])) for name in _HOST_LEVELS if published.get(name)]
        source, names = "physicalHostTopology", tuple(name for name, _ in named)
        parts = [value for _, value in named]
    else:
        host = status.get("physicalHost")
        if not isinstance(host, str) or not host.startswith("/"):
            return None
        parts = [p for p in host.split("/") if p][:-1] or [p for p in host.split("/") if p]
        source, names = "physicalHost", ()
    levels = tuple("/" + "/".join(parts[: i + 1]) for i in range(len(parts)))
    in_domains = catalog.nvlink_domain_gpus(machine_type) is not None
    nvlink = levels[-1] if in_domains and levels and (not names or names[-1] == "subblock") else None
    return Topology(source=source, levels=levels, level_names=names, nvlink_domain=nvlink)


# Where an instance's NICs are read, and the node facts made from them.
_NIC_FIELDS = (("networkInterfaces",),)


# What the normalizer reads of an instance (Normalizer._node, _owner, _unreadable and _interface): a dump's
# instances are parsed with these fields only (sources/projected.py), each with the type the Compute API gives
# it. A field read must be named here (tests/test_projected.py checks that against every instance the fixtures
# hold); a value of another type makes the file be read in full instead. With these types, instances whose
# values are equal (==) read the same, which is what lets a pool's instances share one template.
class _Present(TypedDict, total=False):
    """An entry only counted: whether a NIC has an external address, not the per-instance address itself."""


class _InterfaceFields(TypedDict, total=False):
    name: str | None
    nicType: str | None
    network: str | None
    subnetwork: str | None
    accessConfigs: list[_Present] | None
    ipv6AccessConfigs: list[_Present] | None


class _MetadataItem(TypedDict, total=False):
    key: str
    value: str


class _MetadataFields(TypedDict, total=False):
    items: list[_MetadataItem] | None


class _Scheduling(TypedDict, total=False):
    provisioningModel: str | None


class _ReservationAffinity(TypedDict, total=False):
    consumeReservationType: str | None
    values: list[str] | None


class _NetworkTags(TypedDict, total=False):
    items: list[str] | None


class _ServiceAccount(TypedDict, total=False):
    email: str | None


class InstanceFields(TypedDict, total=False):
    kind: str | None  # compute#instance: what dump.py checks a file holds
    name: Any
    selfLink: Any
    zone: str | None
    machineType: str | None
    status: str | None
    networkInterfaces: list[_InterfaceFields] | None
    resourcePolicies: list[str] | None
    scheduling: _Scheduling | None
    reservationAffinity: _ReservationAffinity | None
    labels: dict[str, str] | None
    metadata: _MetadataFields | None
    tags: _NetworkTags | None  # what VPC firewall rules target (firewall_targets)
    serviceAccounts: list[_ServiceAccount] | None
    resourceStatus: Any
    guestAccelerators: Any  # read by machines: an N1 node's attached GPUs; for types outside the catalog, GPUs or not


_NIC_FACTS = (
    *INTERFACE_FACTS, "rdma_profile", "rdma_profile_networks", "non_rdma_on_rdma_vpc", "extra_nics",
    "recommended_mtu", "gpu_mtu", "gpu_mtus", "gpu_firewall", "gpu_firewall_networks",
)  # fmt: skip


class Normalizer:
    """Turns one project's answers (resource lists) into the inventory, in CALLS order.

    `project` is the scope of every answer when known (a live project, a dump's project folder). When it is
    None, each item is filed under the project its selfLink names. `where(call)` names the answer's origin for
    error messages (a dump file, or the API call).
    """

    def __init__(self, inventory: Inventory, project: str | None, where: Callable[[GcpCall], str]) -> None:
        self.inventory = inventory
        self.project = project
        self.where = where
        # A live answer is read item by item: a misshapen instance is recorded and the others stand.
        self.per_item = False
        self._policies: dict[tuple[str, str, str], ResourcePolicy] = {}
        self._pools = pools.Pools()
        self._machines = MachineTypes(inventory)  # what machine types outside the catalog are
        self.named: set[str] = set()  # projects the items' selfLinks named (when `project` is None), for the dump
        self._facts: dict[str, set[str]] = {}  # fact -> projects whose answer was read in full
        self._last_link: tuple[str, str] | None = None  # a selfLink's start up to its project's `/`, the project

    def add(self, call: GcpCall, doc: Any, collected: bool = True) -> None:
        projects = self.add_items(call, items_of(Shape(self.where(call)), doc, call))
        if collected:
            self.record(call, projects)

    def add_items(self, call: GcpCall, items: Iterable[tuple[str, dict[str, Any]]]) -> set[str]:
        """One answer's items as they arrive, each with its path for error messages (a dump file read as a
        stream hands them over one at a time). Returns the projects the items belong to."""
        shape = Shape(self.where(call))
        with unexpected_shape(shape.where):
            return self._add(call, items, shape)

    def record(self, call: GcpCall, projects: set[str]) -> None:
        """The answer was read in full: its fact counts as collected for these projects."""
        self._facts.setdefault(call.fact, set()).update(projects)

    def finish(self) -> None:
        """Record what was collected: every list spans all zones and regions it was asked for, so a fact counts
        for every region the project's instances are in (and for `global`); and what each machine type is."""
        self._machines.finish()
        regions: dict[str, set[str]] = {}
        for account, region in {(n.account, n.region) for n in self.inventory.nodes}:
            regions.setdefault(account, set()).add(region)
        for fact, projects in self._facts.items():
            for project in sorted(projects):
                for region in sorted(regions.get(project, set()) | {GLOBAL}):
                    self.inventory.collected.append(fact_key("gcp", project, region, fact))

    def _owner(self, item: dict[str, Any]) -> str:
        if self.project:
            return self.project
        link = item.get("selfLink")
        # A list's items mostly name one project: a link that starts as the last one did names it too.
        if type(link) is str and self._last_link and link.startswith(self._last_link[0]):
            self.named.add(self._last_link[1])
            return self._last_link[1]
        match = _PROJECT.search(str(link or ""))
        if match is None:
            return UNKNOWN_ACCOUNT
        named = match.group(1)
        self.named.add(named)
        self._last_link = (link[: match.end()], named) if type(link) is str else None
        return named

    def _add(self, call: GcpCall, items: Iterable[tuple[str, dict[str, Any]]], shape: Shape) -> set[str]:
        gcp = self.inventory.gcp
        owned: set[str] = set()
        for path, item in items:
            project = self._owner(item)
            owned.add(project)
            if call is RESOURCE_POLICIES:
                policy = _policy(item, project)
                gcp.resource_policies.append(policy)
                self._policies[policy.scope_key(policy.name)] = policy
            elif call is NETWORKS:
                profile = item.get("networkProfile")
                gcp.networks.append(
                    Network(
                        account=project,
                        region=GLOBAL,
                        id=short(item.get("selfLink") or f"projects/{project}/global/networks/{item['name']}"),
                        name=str(item["name"]),
                        mtu=item.get("mtu"),
                        network_profile=short(profile) if profile else None,
                        firewall_policy=short(item["firewallPolicy"]) if item.get("firewallPolicy") else None,
                        policy_order=item.get("networkFirewallPolicyEnforcementOrder"),
                    )
                )
            elif call is SUBNETWORKS:
                gcp.subnetworks.append(
                    Subnetwork(
                        account=project,
                        region=last(item.get("region") or "unknown"),
                        id=short(item.get("selfLink") or item["name"]),
                        name=str(item["name"]),
                        network=short(item["network"]) if item.get("network") else None,
                        cidr=item.get("ipCidrRange"),
                    )
                )
            elif call is FIREWALLS:
                gcp.firewalls.append(_firewall(item, project))
            elif call is NETWORK_FIREWALL_POLICIES:
                gcp.network_firewall_policies.append(network_firewall_policy(item, project))
            else:
                try:
                    node = self._read_node(item, project)
                    self.inventory.nodes.append(node)
                    unreadable = self._machines.add(node.instance_type or "", item)
                    if unreadable:
                        self._unknown_type(node, path, shape.where, unreadable)
                except ITEM_ERRORS as exc:
                    if not self.per_item:
                        if isinstance(exc, (KeyError, TypeError, AttributeError, ValueError, ValidationError)):
                            raise FabricCheckError(f"{shape.where}: {path}: {describe(exc)}") from None
                        raise
                    self._unreadable(item, path, project, shape.where, describe(exc))
        if self.project:
            return {self.project}
        return owned

    def _unknown_type(self, node: Node, path: str, where: str, why: str) -> None:
        """An instance of a type outside the catalog whose accelerators cannot be read: the type stays unknown (not
        judged), and an error names the instance and field."""
        message = f"{where}: instance {node.id} ({path}): {why}, so whether {node.instance_type} has GPUs is unknown"
        self.inventory.errors.append(
            Scope("gcp", node.account, node.region).error(INSTANCES.resource, BAD_RESPONSE, message)
        )

    def _unreadable(self, item: Any, path: str, project: str, where: str, what_was_wrong: str) -> None:
        """A live instance that cannot be read: an error names it and the field; when the fault is in its
        network interfaces, the node is kept without them, its interface facts unknown."""
        instance = named(item, "name")
        what = f"instance {instance} ({path})" if instance else path
        zone = item.get("zone") if isinstance(item, dict) else None
        scope = Scope("gcp", project, region_of_zone(last(zone)) if isinstance(zone, str) else None)
        kept = salvage(lambda trimmed: self._read_node(trimmed, project), item, _NIC_FIELDS)
        if kept is None:
            self.inventory.errors.append(
                scope.error(INSTANCES.resource, BAD_RESPONSE, f"{where}: {what}: {what_was_wrong}")
            )
            return
        node, field = kept
        why = f"field {field} of the answer could not be read ({what_was_wrong})"
        node.unknown.update(unknown_because(_NIC_FACTS, why))
        self.inventory.nodes.append(node)
        self.inventory.errors.append(
            scope.error(INSTANCES.resource, BAD_RESPONSE, f"{where}: {what}: {why}; its fabric facts are unknown")
        )

    def _placement_of(self, inst: dict[str, Any], project: str) -> list[dict[str, str]]:
        placement = []
        for url in inst.get("resourcePolicies") or ():
            name = last(url)
            policy = self._policies.get((project, last(short(url).split("/resourcePolicies/")[0]), name))
            if policy is None or policy.places:  # one not seen may be a placement policy: facts say unknown
                placement.append({"kind": RESOURCE_POLICY, "id": name})
        scheduling = inst.get("scheduling") or {}
        model = scheduling.get("provisioningModel")
        if model in _OWN_CAPACITY:  # capacity Google places itself: the provisioning model says so
            placement.append({"kind": _OWN_CAPACITY[model], "id": str(model)})
        affinity = inst.get("reservationAffinity") or {}
        if affinity.get("consumeReservationType") == "SPECIFIC_RESERVATION":
            values = affinity.get("values") or ["(unnamed)"]
            placement.append({"kind": RESERVATION, "id": last(values[0])})
        return placement

    def _read_node(self, inst: dict[str, Any], project: str) -> Node:
        """The node of one instance: its name, state, NIC ids and physical host are its own; its shape is read from
        the rest, once per pool (sources/pools.py), with the policies seen so far."""
        name = str(inst["name"])
        status = str(inst.get("status") or "RUNNING")
        nics = inst.get("networkInterfaces") or ()
        shape = self._pools.shape(
            without(inst, _OWN_FIELDS), lambda rest: self._shape(rest, project), (project, len(self._policies))
        )
        return pools.node(
            name,
            shape,
            state=_STATES.get(status, status.lower()),
            interface_ids=tuple(f"{name}/{_nic_name(i, nic)}" for i, nic in enumerate(nics)),
            topology=instance_topology(inst.get("resourceStatus"), last(str(inst.get("machineType") or ""))),
        )

    def _shape(self, inst: dict[str, Any], project: str) -> NodeShape:
        zone = last(inst["zone"]) if inst.get("zone") else None
        gpus = attached(last(inst["machineType"]), inst.get("guestAccelerators"))
        return NodeShape.model_validate(
            {
                "accelerators": gpus[0] if gpus else None,
                "accelerator": gpus[1] if gpus else None,
                "provider": "gcp",
                "account": project,
                "region": region_of_zone(zone) or "unknown",
                "zone": zone,
                "instance_type": last(inst["machineType"]),
                "tags": _tags_of(inst),
                "interfaces": [_interface(i, nic) for i, nic in enumerate(inst.get("networkInterfaces") or ())],
                "placement": self._placement_of(inst, project),
                "extensions": [GcpNodePart(firewall_targets=tuple(firewall_targets(inst)))],
            }
        )


# An instance's own values (normalize.Normalizer._read_node): everything else is its shape's.
_OWN_FIELDS = (("name",), ("selfLink",), ("status",), ("resourceStatus",))
# scheduling.provisioningModel of capacity Google places itself -> its placement kind (support.py, dense capacity).
_OWN_CAPACITY = {"FLEX_START": FLEX_START, "RESERVATION_BOUND": RESERVATION_BOUND}


def _nic_name(i: int, nic: dict[str, Any]) -> str:
    """A NIC's name within its instance (nic0, nic1 ...): its id is the instance's name and this (vm-1/nic0)."""
    return str(nic.get("name") or f"nic{i}")


def _interface(i: int, nic: dict[str, Any]) -> dict[str, Any]:
    """A networkInterfaces[i] entry -> the interface as its instance's shape holds it."""
    name = _nic_name(i, nic)
    index = int(name[3:]) if name.startswith("nic") and name[3:].isdigit() else i
    return {
        "interface_type": str(nic.get("nicType") or "UNSPECIFIED_NIC_TYPE"),
        "network": short(nic["network"]) if nic.get("network") else None,
        "subnet": short(nic["subnetwork"]) if nic.get("subnetwork") else None,
        "public_ip": bool(nic.get("accessConfigs") or nic.get("ipv6AccessConfigs")),
        "device_index": index,
    }


def normalize(
    answers: dict[GcpCall, Any],
    project: str | None,
    where: Callable[[GcpCall], str],
    into: Inventory | None = None,
) -> Inventory:
    """One project's answers into an Inventory (or added to `into`), in CALLS order."""
    inventory = into if into is not None else Inventory(source="gcp")
    normalizer = Normalizer(inventory, project, where)
    for call in sorted(answers, key=CALLS.index):
        normalizer.add(call, answers[call])
    normalizer.finish()
    return inventory
