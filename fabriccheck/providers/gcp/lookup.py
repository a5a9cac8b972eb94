"""The GCP namespace looked up for a node's NICs: networks, subnetworks and firewall rules, each in the project
that owns the network.

With Shared VPC an instance of a service project has its NICs on networks of the host project, and the networks'
firewall rules live in the host project too ("Shared VPC overview": the host project holds the networks and their
firewall rules; an instance's networkInterfaces[].network names that project's network URL). So every look-up goes
by the project its URL names (projects/HOST/global/networks/NAME), across every project of the dump or scan, and a
project that was not collected makes the verdict unknown, naming it, never "missing". Built once per inventory.
What a network is, and what reaches a GPU NIC from its subnet, depend on the node's project and region and the NIC's
network and subnet only: each is worked out once per such value, whichever pools share it.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from fabriccheck.cloud import FactContext
from fabriccheck.model import NetworkInterface, NodeShape, fact_key
from fabriccheck.providers.gcp.firewall import Reach, governed_reach, tcp_reach
from fabriccheck.resources.gcp import (
    GLOBAL,
    EffectiveFirewalls,
    FirewallRule,
    GcpNodePart,
    Network,
    NetworkFirewallPolicy,
    ResourcePolicy,
    Subnetwork,
)

# An RDMA network profile is projects/P/global/networkProfiles/{ZONE}-vpc-roce (bare metal: -vpc-roce-metal) for
# MRDMA NICs, or {ZONE}-vpc-falcon for IRDMA NICs (H4D); the VPC serves instances of that zone only, and takes only
# its own RDMA NIC type (Google Cloud, "RDMA network profiles": Falcon VPC network, IRDMA; RoCE VPC network, MRDMA).
RDMA_PROFILE = re.compile(r"networkProfiles/(?P<zone>[a-z]+-[a-z]+\d+-[a-z])-vpc-(?P<kind>roce|falcon)(?:-metal)?$")
PROFILE_OF_NIC = {"MRDMA": "roce", "IRDMA": "falcon"}
DEFAULT_MTU = 1460  # an unset networks.mtu means 1460 (Compute API reference)
_PROJECT = re.compile(r"(?:^|/)projects/([^/]+)/")


def name_of(url: str) -> str:
    return url.rsplit("/", 1)[-1]


class _Found(NamedTuple):
    """A network looked up for a node: it, or why it is unknown; `collected`: its project's networks were."""

    network: Network | None
    why: str | None
    collected: bool


class GcpIndex:
    def __init__(self, context: FactContext) -> None:
        # The index keeps no reference to the context that holds it: the two would form a cycle, left to the cyclic
        # collector (tests/test_collector_plumbing.py holds a run to making none).
        gcp = context.inventory.gcp
        self.collected = set(context.inventory.collected)
        self.policies: dict[tuple[str, str, str], ResourcePolicy] = {
            p.scope_key(p.name): p for p in gcp.resource_policies
        }
        self.networks: dict[tuple[str, str], Network] = {(n.account, n.id): n for n in gcp.networks}
        self.subnets: dict[tuple[str, str], Subnetwork] = {(s.account, s.id): s for s in gcp.subnetworks}
        self.rules: dict[tuple[str, str], list[FirewallRule]] = {}
        for rule in gcp.firewalls:
            self.rules.setdefault((rule.account, rule.network or ""), []).append(rule)
        self.firewall_policies = {(p.account, p.id): p for p in gcp.network_firewall_policies}
        self.effective = {(e.account, e.region, e.network): e for e in gcp.effective_firewalls}
        # A plan's hierarchical policies: associated with an organization or folder the plan does not place its
        # projects in, so they may govern its networks or not (plan_policies.hierarchical_associations).
        self.maybe = tuple(p for p in gcp.network_firewall_policies if p.kind == "HIERARCHY")
        self._networks: dict[tuple[str, str, str], _Found] = {}
        self._reaches: dict[tuple[str, str, str, str | None, frozenset[str] | None], Reach] = {}

    # ---------------------------------------------------------------------------------------- by owner

    @staticmethod
    def owner(node: NodeShape, url: str | None) -> str:
        """The project a network or subnetwork URL names (a Shared VPC host), else the node's own."""
        match = _PROJECT.search(url or "")
        return match.group(1) if match else node.account

    def has(self, node: NodeShape, owner: str, fact: str) -> bool:
        """Whether `fact` was collected for `owner`: the node's own project in its region, another project (a host
        project, whose networks and firewall rules are global) in any."""
        region = node.region if owner == node.account else GLOBAL
        return fact_key("gcp", owner, region, fact) in self.collected

    def not_collected(self, node: NodeShape, owner: str, what: str, url: str) -> str:
        if owner == node.account:
            return f"{what} were not collected for project {owner}"
        return (
            f"{what} were not collected for project {owner}, which owns network {name_of(url)} "
            f"(a Shared VPC host project of {node.account}: collect it too)"
        )

    def uncollected(self, node: NodeShape, url: str, fact: str, what: str) -> str | None:
        """Why `fact` of the project owning `url` is unknown (it was not collected), or None."""
        owner = self.owner(node, url)
        return None if self.has(node, owner, fact) else self.not_collected(node, owner, what, url)

    def network(self, node: NodeShape, url: str) -> tuple[Network | None, str | None]:
        """The network `url` names, or None with why it is unknown (its project not collected, or not in it)."""
        found = self._network(node, url)
        return found.network, found.why

    def _network(self, node: NodeShape, url: str) -> _Found:
        key = (node.account, node.region, url)
        found = self._networks.get(key)
        if found is None:
            why = self.uncollected(node, url, "networks", "networks")
            if why:
                found = _Found(None, why, collected=False)
            else:
                network = self.networks.get((self.owner(node, url), url))
                missing = None if network else f"network {name_of(url)} was not among the collected networks"
                found = _Found(network, missing, collected=True)
            self._networks[key] = found
        return found

    # ---------------------------------------------------------------------------------------- verdicts

    def firewall(self, node: NodeShape, networks: list[str]) -> tuple[str, str, str | None]:
        """ok, missing or partial (some GPU network reaches only some TCP ports), or unknown, with the networks at
        fault (each partial one with the ports it does reach) and why it is unknown."""
        missing, partial, unknown = set(), set(), None
        for nic in node.interfaces:
            if nic.network is None or nic.network not in networks:
                continue
            reach = self._reach(node, nic)
            if reach.verdict == "missing":
                missing.add(f"{name_of(nic.network)} ({reach.detail})" if reach.detail else name_of(nic.network))
            elif reach.verdict == "partial":
                partial.add(f"{name_of(nic.network)} ({reach.detail})")
            elif reach.verdict == "unknown":
                unknown = unknown or reach.detail  # the first NIC's, as the NICs are ordered
        if missing or partial:
            return ("missing" if missing else "partial"), ", ".join(sorted(missing) + sorted(partial)), None
        return ("unknown", "", unknown) if unknown else ("ok", "", None)

    def _reach(self, node: NodeShape, nic: NetworkInterface) -> Reach:
        url = nic.network or ""
        part = node.part(GcpNodePart)
        targets = frozenset(part.firewall_targets) if part and part.firewall_targets is not None else None
        key = (node.account, node.region, url, nic.subnet, targets)
        found = self._reaches.get(key)
        if found is None:
            found = self._reaches[key] = self._find_reach(node, url, nic.subnet, targets)
        return found

    def _find_reach(self, node: NodeShape, url: str, subnet_url: str | None, targets: frozenset[str] | None) -> Reach:
        why = self.uncollected(node, url, "firewalls", "firewall rules")
        if why:
            return Reach("unknown", why)
        owner = self.owner(node, url)
        subnet_owner = self.owner(node, subnet_url)
        subnet = None
        if self.has(node, subnet_owner, "subnetworks"):
            subnet = self.subnets.get((subnet_owner, subnet_url or ""))
        cidr = subnet.cidr if subnet else None
        reach = tcp_reach(self.rules.get((owner, url), []), cidr, targets)
        return self._governed(node, url, cidr, targets, reach)

    def _governed(
        self, node: NodeShape, url: str, cidr: str | None, targets: frozenset[str] | None, classic: Reach
    ) -> Reach:
        """The reach through every stage that governs the network in the node's region: its hierarchical and
        regional system policies first, then its VPC rules and its global and regional network firewall policies in
        the network's enforcement order, VPC rules before them (AFTER_CLASSIC_FIREWALL, the default) or after
        them (BEFORE_CLASSIC_FIREWALL); an allow or deny ends the evaluation ("Evaluation order for firewall
        policies and rules", https://cloud.google.com/firewall/docs/firewall-policies-rule-eval-order). A policy
        that governs the network and was not read leaves the reach not judged, named, never refused."""
        owner = self.owner(node, url)
        network = self.networks.get((owner, url))
        found, why = self._effective(node, url)
        if why:
            return Reach("unknown", why)
        first = tuple(p for p in found if p.kind != "NETWORK_REGIONAL")
        policies = [p for p in found if p.kind == "NETWORK_REGIONAL"]
        order = (network.policy_order if network else None) or "AFTER_CLASSIC_FIREWALL"
        if not first and not self.maybe and order == "AFTER_CLASSIC_FIREWALL" and classic.settled:
            return classic  # the VPC rules decide every port both ways before any network policy sees it
        if network is not None and network.firewall_policy is not None:
            policy, why = self._policy(node, network.firewall_policy)
            if policy is None:
                return Reach(
                    "unknown",
                    f"network {network.name} is governed by network firewall policy "
                    f"{name_of(network.firewall_policy)} ({order}), whose rules were not read ({why}), so which "
                    "ports its GPU NICs reach is not judged",
                )
            policies.insert(0, policy)  # the global policy before the regional one
        rules = self.rules.get((owner, url), [])
        before = order == "BEFORE_CLASSIC_FIREWALL"
        reach = governed_reach(rules, policies, before, cidr, targets, first) if first or policies else classic
        if not self.maybe:
            return reach
        held = tuple(_on_network(p, url) for p in self.maybe)
        governed = governed_reach(rules, policies, before, cidr, targets, held + first)
        if governed.verdict == reach.verdict:
            return reach  # the same whether they govern it or not
        named = ", ".join(f"{p.described} (associated with {p.account})" for p in held)
        return Reach(
            "unknown",
            f"{named} may govern network {name_of(url)}: the plan does not say which organization and folders "
            f"project {owner} lies under, and the GPU NICs' reach is {reach.verdict} without it, {governed.verdict} "
            "with it, so it is not judged",
        )

    def _effective(self, node: NodeShape, url: str) -> tuple[list[NetworkFirewallPolicy], str | None]:
        """The hierarchical, system and regional network policies of the network in the node's region, in
        evaluation order, or why they are unknown. None read for its project and region (a dump or plan saved
        without them): none, as before they were read."""
        owner = self.owner(node, url)
        found: EffectiveFirewalls | None = self.effective.get((owner, node.region, url))
        if found is None:
            if fact_key("gcp", owner, node.region, "effective_firewalls") not in self.collected:
                return [], None
            return [], (
                f"the firewall policies in effect on network {name_of(url)} in {node.region} (hierarchical and "
                f"regional) were not read, so which ports its GPU NICs reach is not judged"
            )
        if found.policies is None:
            return [], (
                f"the firewall policies in effect on network {name_of(url)} in {node.region} (hierarchical and "
                f"regional) are not known: {found.unknown}; so which ports its GPU NICs reach is not judged"
            )
        return found.policies, None

    def _policy(self, node: NodeShape, policy_id: str) -> tuple[NetworkFirewallPolicy | None, str]:
        """The global network firewall policy `policy_id` names, or why it is unknown: its project's policies were
        not collected, or it was not among them."""
        owner = self.owner(node, policy_id)
        if not self.has(node, owner, "network_firewall_policies"):
            return None, f"network firewall policies were not collected for project {owner}"
        policy = self.firewall_policies.get((owner, policy_id))
        return policy, "" if policy else f"it was not among the collected policies of project {owner}"

    def rdma_profile(self, node: NodeShape, nics: list[NetworkInterface]) -> tuple[str, str, str | None]:
        """ok, missing (an RDMA NIC on a network without the RDMA profile of its NIC type), wrong-zone, or unknown."""
        missing, wrong, unknown = set(), set(), []
        for nic in nics:
            network, why = self.network(node, nic.network or "?")
            if network is None:
                unknown.append(why or "")
                continue
            match = RDMA_PROFILE.search(network.network_profile or "")
            if match is None or match["kind"] != PROFILE_OF_NIC.get(nic.interface_type.upper()):
                kind = f", a {match['kind']} profile" if match else ""
                missing.add(f"{network.name}{kind}")
            elif match["zone"] != node.zone:
                wrong.add(f"{network.name} ({match['zone']})")
        if missing:
            return "missing", ", ".join(sorted(missing)), None
        if wrong:
            return "wrong-zone", ", ".join(sorted(wrong)), None
        if unknown:
            return "unknown", "", sorted(unknown)[0]
        return "ok", "", None

    def misplaced(self, node: NodeShape) -> tuple[int, str | None]:
        """Non-RDMA NICs on a network with an RDMA network profile, or -1 and why when a network is unknown."""
        count = 0
        for nic in node.interfaces:
            if nic.interface_type.upper() in PROFILE_OF_NIC or nic.network is None:
                continue
            found = self._network(node, nic.network)
            if not found.collected:
                return -1, found.why
            network = found.network
            if network is not None and network.network_profile and RDMA_PROFILE.search(network.network_profile):
                count += 1
        return count, None

    def mtu(self, node: NodeShape, networks: list[str], recommended: int) -> tuple[str, str, str | None]:
        values = []
        for url in networks:
            network, why = self.network(node, url)
            if network is None:
                return "unknown", "", why
            values.append(network.mtu or DEFAULT_MTU)
        text = ", ".join(str(v) for v in sorted(set(values)))
        return ("ok" if all(v == recommended for v in values) else "other"), text, None


def _on_network(policy: NetworkFirewallPolicy, url: str) -> NetworkFirewallPolicy:
    """A hierarchical policy with the rules that apply to the network's instances (targetResources)."""
    if policy.rules is None:
        return policy
    rules = [r for r in policy.rules if not r.target_resources or url in {_PATH.sub("", t) for t in r.target_resources}]
    return policy.model_copy(update={"rules": rules})


_PATH = re.compile(r"^.*?(?=projects/)")  # a network URL's scheme and host, up to projects/


def index_of(context: FactContext) -> GcpIndex:
    return context.cached("gcp-index", lambda: GcpIndex(context))
