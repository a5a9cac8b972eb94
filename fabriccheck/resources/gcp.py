"""Google Cloud-only resources: the `gcp` namespace of the inventory. Each carries the project (`account`) and
region whose answer it came from ("global" for networks and firewall rules) and is looked up by that scope.

Fields as the Compute Engine v1 API names them (sources: Compute API reference for resourcePolicies, networks,
subnetworks and firewalls; fabric-requirements.md section 3, GCP-RP-FIELDS, GCP-RDMA-PROFILE, CTK-MULTIVPC).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator

from fabriccheck.values import Frozen, Model, ProviderResources, Scoped

GLOBAL = "global"  # the region of global resources (networks, firewall rules)
MAX_PORT = 65535


class GcpNodePart(Frozen):
    """What only a Compute Engine instance has, part of its shape (model.NodeShape.extensions): what VPC firewall
    rules target it by, its network tags ("tag:NAME", instances.tags.items) and service accounts ("sa:EMAIL",
    instances.serviceAccounts[].email), Compute API v1 Instance; None: not read (rules are then taken to apply)."""

    provider: Literal["gcp"] = "gcp"
    firewall_targets: tuple[str, ...] | None = None


class ResourcePolicy(Scoped):
    """A resource policy. Only two kinds place instances: a group placement policy (collocation COLLOCATED is a
    compact placement policy) and a workload policy (type HIGH_THROUGHPUT or HIGH_AVAILABILITY)."""

    name: str
    collocation: str | None = None  # groupPlacementPolicy.collocation: COLLOCATED | UNSPECIFIED_COLLOCATION
    vm_count: int | None = None  # groupPlacementPolicy.vmCount
    availability_domain_count: int | None = None  # groupPlacementPolicy.availabilityDomainCount
    gpu_topology: str | None = None  # groupPlacementPolicy.gpuTopology (A4X slices)
    # groupPlacementPolicy.maxDistance: None when the answer does not say. The installed google-cloud-compute
    # types drop the field (it is not in v1), so a live answer never carries it; gcloud dumps may.
    max_distance: int | None = None
    max_distance_known: bool = False
    # workloadPolicy.type: HIGH_THROUGHPUT ("for high throughput distributed workloads eg. HPC or ML training.
    # Compute Engine collocates VMs at best-effort to reduce network latency") or HIGH_AVAILABILITY (spreads VMs);
    # gcloud reference, compute resource-policies create workload-policy.
    workload_type: str | None = None
    other_kind: bool = False  # a snapshot schedule, instance schedule ... (places nothing)

    @property
    def places(self) -> bool:
        group = self.collocation is not None or self.availability_domain_count is not None
        return group or self.workload_type is not None

    @property
    def compact(self) -> bool:
        return self.collocation == "COLLOCATED" or self.workload_type == "HIGH_THROUGHPUT"


class Network(Scoped):
    id: str  # the network's selfLink path: projects/P/global/networks/NAME
    name: str
    mtu: int | None = None  # None: the API leaves it unset, which means 1460
    network_profile: str | None = None  # projects/P/global/networkProfiles/ZONE-vpc-roce[-metal], or None
    # networks.firewallPolicy: the global network firewall policy associated with it (output only), and
    # networkFirewallPolicyEnforcementOrder, AFTER_CLASSIC_FIREWALL when unset (Compute API v1 Network;
    # https://cloud.google.com/ruby/docs/reference/google-cloud-compute-v1/latest/Google-Cloud-Compute-V1-Network-NetworkFirewallPolicyEnforcementOrder).
    firewall_policy: str | None = None
    policy_order: str | None = None


class Subnetwork(Scoped):
    id: str  # projects/P/regions/R/subnetworks/NAME
    name: str
    network: str | None = None
    cidr: str | None = None  # ipCidrRange


# One allowed[] / denied[] item as gcloud's --rules writes it: PROTOCOL (every port) or PROTOCOL:PORT[-PORT], where
# PROTOCOL is a name (tcp, udp, icmp, all ...) or an IP protocol number (6 is TCP). `gcloud compute firewall-rules
# create --rules=tcp:0-65535,udp:0-65535,icmp` is stored by the API as {"IPProtocol": "tcp", "ports": ["0-65535"]} ...
# (Firewall resource, allowed[].IPProtocol and allowed[].ports: "Each entry must be either an integer or a range").
FIREWALL_ENTRY = re.compile(r"^(?P<protocol>[a-z0-9-]+)(?::(?P<low>\d{1,5})(?:-(?P<high>\d{1,5}))?)?$")


def checked_entries(entries: list[str]) -> list[str]:
    """`entries` when each is PROTOCOL or PROTOCOL:PORT[-PORT] with ports 0-65535."""
    for entry in entries:
        match = FIREWALL_ENTRY.match(entry)
        if (
            match is None
            or int(match["low"] or 0) > int(match["high"] or match["low"] or 0)
            or any(int(match[edge] or 0) > MAX_PORT for edge in ("low", "high"))
        ):
            raise ValueError(f"{entry!r} is not PROTOCOL or PROTOCOL:PORT[-PORT] with ports 0-{MAX_PORT}")
    return entries


class FirewallRule(Scoped):
    name: str
    network: str | None = None
    direction: str = "INGRESS"
    disabled: bool = False
    priority: int = 1000
    action: str = "allow"  # allow | deny (which of allowed[] / denied[] the rule has)
    # Each allowed[] / denied[] item, one port or range each: "tcp:0-65535", "udp:0-65535", "icmp", "tcp:22".
    entries: list[str] = Field(default_factory=list)
    # Inventories saved before `entries`: each item's protocol only, and whether none listed ports. A rule saved so
    # with all_ports false allows ports nobody recorded: its verdict is unknown, never a guess.
    protocols: list[str] = Field(default_factory=list)
    all_ports: bool | None = None
    source_ranges: list[str] = Field(default_factory=list)
    # destinationRanges: an egress rule applies to packets to those addresses only; an egress rule without them
    # applies to every destination (gcloud --destination-ranges defaults to 0.0.0.0/0). None: not read (an
    # inventory saved before them, a plan that knows them only after apply), so an egress rule's match is unknown.
    destination_ranges: list[str] | None = None
    source_tags: list[str] = Field(default_factory=list)
    source_service_accounts: list[str] = Field(default_factory=list)
    # The instances a rule applies to: those with one of these network tags, or running as one of these service
    # accounts; neither: every instance of the network (Firewall resource, targetTags / targetServiceAccounts;
    # https://cloud.google.com/firewall/docs/firewalls#rule_assignment).
    target_tags: list[str] = Field(default_factory=list)
    target_service_accounts: list[str] = Field(default_factory=list)

    @field_validator("entries")
    @classmethod
    def _entries_are_protocol_and_ports(cls, entries: list[str]) -> list[str]:
        return checked_entries(entries)

    def known_entries(self) -> list[str] | None:
        """`entries`, or a legacy rule's protocols when they listed no port; None when its ports are unknown."""
        if self.entries or not self.protocols:
            return self.entries
        return list(self.protocols) if self.all_ports is not False else None


class PolicyRule(Model):
    """One rule of a network firewall policy (Compute API v1 FirewallPolicyRule: priority, direction, action,
    disabled, match.srcIpRanges, match.layer4Configs[].ipProtocol / ports, match.srcSecureTags[].name,
    targetSecureTags[].name, targetServiceAccounts;
    https://cloud.google.com/python/docs/reference/compute/latest/google.cloud.compute_v1.types.FirewallPolicyRule)."""

    priority: int
    direction: str = "INGRESS"
    action: str = "allow"  # allow | deny | goto_next | apply_security_profile_group
    disabled: bool = False
    entries: list[str] = Field(default_factory=list)  # match.layer4Configs, as FirewallRule.entries
    source_ranges: list[str] = Field(default_factory=list)  # match.srcIpRanges
    # Other sources the collector cannot resolve to addresses: secure tags (tagValues/N), address groups.
    source_secure_tags: list[str] = Field(default_factory=list)
    source_address_groups: list[str] = Field(default_factory=list)
    # match.srcNetworkContext (or its older names srcNetworkScope, srcNetworkType): INTERNET | NON_INTERNET |
    # INTRA_VPC | VPC_NETWORKS, with match.srcNetworks for VPC_NETWORKS; it narrows the other sources (both must
    # match) or stands alone.
    source_network_context: str = ""
    source_networks: list[str] = Field(default_factory=list)
    dest_ranges: list[str] = Field(default_factory=list)  # match.destIpRanges: the rule applies to those only
    # An egress rule's other destinations (match.destAddressGroups, destFqdns, destRegionCodes,
    # destThreatIntelligences), which the collector cannot resolve to addresses, and match.destNetworkContext (or
    # destNetworkType): INTERNET | NON_INTERNET (Compute API v1 FirewallPolicyRuleMatcher).
    dest_unresolved: list[str] = Field(default_factory=list)
    dest_network_context: str = ""
    target_secure_tags: list[str] = Field(default_factory=list)  # tagValues/N: bound to instances, not read
    target_service_accounts: list[str] = Field(default_factory=list)
    # A hierarchical rule's targetResources: the networks whose instances it applies to (none: every network).
    target_resources: list[str] = Field(default_factory=list)

    @field_validator("entries")
    @classmethod
    def _entries_are_protocol_and_ports(cls, entries: list[str]) -> list[str]:
        return checked_entries(entries)


# What each type of firewall policy is called in a message (the `type` of an effective firewall policy:
# RegionNetworkFirewallPoliciesGetEffectiveFirewallsResponseEffectiveFirewallPolicy.type, Compute API v1).
POLICY_KINDS = {
    "NETWORK": "network firewall policy",
    "NETWORK_REGIONAL": "regional network firewall policy",
    "HIERARCHY": "hierarchical firewall policy",
    "SYSTEM_REGIONAL": "regional system firewall policy",
    "SYSTEM_GLOBAL": "system firewall policy",
}


class NetworkFirewallPolicy(Scoped):
    """A firewall policy with its rules: a global network firewall policy (networkFirewallPolicies; `kind` NETWORK),
    or one an effective-firewalls answer or a plan names (hierarchical, regional network, regional system). `rules`
    None: they are not known (an answer that left them out, a plan whose rule is known only after apply), so what
    it decides is unknown; `unknown_rules` says why."""

    id: str  # projects/P/global/firewallPolicies/NAME, as networks[].firewallPolicy names it
    name: str
    rules: list[PolicyRule] | None = None
    unknown_rules: str = ""
    kind: str = "NETWORK"  # NETWORK | NETWORK_REGIONAL | HIERARCHY | SYSTEM_REGIONAL | SYSTEM_GLOBAL

    @property
    def described(self) -> str:
        """'hierarchical firewall policy org-gpu-guard'."""
        return f"{POLICY_KINDS.get(self.kind, 'firewall policy')} {self.name}"


class EffectiveFirewalls(Scoped):
    """The firewall policies that govern one network in one region besides its global network firewall policy, in
    evaluation order: the hierarchical policies from the organization down, the regional system policies, and the
    regional network policies (regionNetworkFirewallPolicies.getEffectiveFirewalls; a plan's regional policies).
    `policies` None: they could not be read (`unknown` says why), so the network's reach is not judged there."""

    network: str  # projects/P/global/networks/NAME, as a NIC names it
    policies: list[NetworkFirewallPolicy] | None = None
    unknown: str = ""


class GcpResources(ProviderResources):
    resource_policies: list[ResourcePolicy] = Field(default_factory=list)
    networks: list[Network] = Field(default_factory=list)
    subnetworks: list[Subnetwork] = Field(default_factory=list)
    firewalls: list[FirewallRule] = Field(default_factory=list)
    network_firewall_policies: list[NetworkFirewallPolicy] = Field(default_factory=list)
    effective_firewalls: list[EffectiveFirewalls] = Field(default_factory=list)


def firewall_entries(items: list[dict[str, Any]], protocol_key: str) -> list[str]:
    """allowed[] / denied[] items ({"IPProtocol": "tcp", "ports": ["0-65535"]}; Terraform's allow {protocol, ports})
    as `FirewallRule.entries`, one port or range each."""
    found = []
    for item in items:
        protocol = str(item.get(protocol_key, "")).lower()
        ports = item.get("ports") or ()
        found += [f"{protocol}:{str(port).strip()}" for port in ports] if ports else [protocol]
    return found


def unresolved_destinations(match: dict[str, Any], kinds: dict[str, str]) -> list[str]:
    """A policy rule's destinations the collector cannot resolve to addresses, as `PolicyRule.dest_unresolved`
    ('address group G', 'FQDN example.com'), from its match by `kinds` (the match's field: what it is called)."""
    return [f"{what} {value}" for key, what in kinds.items() for value in match.get(key) or ()]
