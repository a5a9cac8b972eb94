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
    FirewallRule,
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
        targets = frozenset(node.firewall_targets) if node.firewall_targets is not None else None
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
        """The reach through the VPC rules and the network's global network firewall policy. Cloud NGFW evaluates
        a network's global and regional network firewall policies after its VPC firewall rules
        (AFTER_CLASSIC_FIREWALL, the default) or before them (BEFORE_CLASSIC_FIREWALL), and an allow or deny ends
        the evaluation ("Evaluation order for firewall policies and rules",
        https://cloud.google.com/firewall/docs/firewall-policies-rule-eval-order). So after the VPC rules, every
        port they allow is allowed whatever the policy says; any other port is the policy's to decide, and a
        policy not read leaves the reach not judged, never refused."""
        network = self.networks.get((self.owner(node, url), url))
        if network is None or network.firewall_policy is None:
            return classic
        order = network.policy_order or "AFTER_CLASSIC_FIREWALL"
        if order == "AFTER_CLASSIC_FIREWALL" and classic.verdict == "ok":
            return classic
        policy, why = self._policy(node, network.firewall_policy)
        if policy is not None:
            rules = self.rules.get((self.owner(node, url), url), [])
            return governed_reach(rules, policy, order == "BEFORE_CLASSIC_FIREWALL", cidr, targets)
        return Reach(
            "unknown",
            f"network {network.name} is governed by network firewall policy {name_of(network.firewall_policy)} "
            f"({order}), whose rules were not read ({why}), so which ports its GPU NICs reach is not judged",
        )

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


def index_of(context: FactContext) -> GcpIndex:
    return context.cached("gcp-index", lambda: GcpIndex(context))
