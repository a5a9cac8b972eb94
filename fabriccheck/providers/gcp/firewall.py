"""VPC firewall rules: which TCP ports of a GPU network its own subnet reaches.

GPUDirect-TCPX/TCPXO opens many TCP connections between the GPU NICs, on ports NCCL and the receive datapath
manager pick, so a GPU network needs ingress from its subnet allowed on every TCP port (G4; CTK-MULTIVPC's rule
"allow all internal TCP, UDP, and ICMP traffic within the network"). A VPC network denies ingress by default; a
port is decided by the rule of highest precedence that matches it (the lowest priority number), and at equal
priority a deny rule wins (VPC firewall rules overview: priority, action on match, implied rules). The connection
must also leave the sender: the same stages run again for its egress rules (egress.py), whose implied rule allows.

Ports are read as what they allow, for every protocol item of a rule: gcloud's `--rules=tcp:0-65535,udp:0-65535,
icmp` (Google's GPUDirect pages, Cluster Toolkit modules/network/vpc) is stored as {"IPProtocol": "tcp", "ports":
["0-65535"]}; an item without ports covers every port; "all" and the protocol number 6 include TCP. A set of
ports is held as an int with one bit per port. Port 0 is reserved and never a connection's destination, so
1-65535 (the default network's default-allow-internal, as the API recorded it: forseti-security's test data) is
every port, as 0-65535 is.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass

from fabriccheck.providers.gcp import egress
from fabriccheck.resources.gcp import FIREWALL_ENTRY, MAX_PORT, FirewallRule, NetworkFirewallPolicy, PolicyRule

TCP = frozenset({"tcp", "6", "all"})  # IPProtocol values whose rule items reach TCP ports
EVERY_PORT = (1 << (MAX_PORT + 1)) - 1
USABLE_PORTS = EVERY_PORT & ~1  # 1-65535
_SHOWN_RANGES = 6  # port ranges a message lists before "..."
_ONES = re.compile("1+")


@dataclass(frozen=True)
class Reach:
    """What reaches a GPU network's NICs from its subnet over TCP, out of the sender and into the receiver: ok (every
    port), partial, missing (no port), or unknown; `detail` says which ports for partial, why for unknown."""

    verdict: str
    detail: str = ""
    settled: bool = False  # tcp_reach: the VPC rules alone decide every port, both ways


def port_mask(entries: list[str], protocols: frozenset[str] = TCP) -> int:
    """The ports of `protocols` that a rule's entries (FirewallRule.entries, validated) name, one bit each."""
    mask = 0
    for entry in entries:
        match = FIREWALL_ENTRY.match(entry)
        if match is None or match["protocol"] not in protocols:
            continue
        if match["low"] is None:
            return EVERY_PORT
        low = int(match["low"])
        high = int(match["high"] or low)
        mask |= ((1 << (high + 1)) - 1) ^ ((1 << low) - 1)
    return mask


def port_ranges(mask: int) -> str:
    """The usable ports of `mask` as a gcloud port list: '22, 8000-9000'."""
    bits = bin(mask & USABLE_PORTS)[:1:-1]  # lowest port first
    ranges = []
    for run in _ONES.finditer(bits):
        low, high = run.start(), run.end() - 1
        ranges.append(str(low) if low == high else f"{low}-{high}")
    shown = ", ".join(ranges[:_SHOWN_RANGES])
    return shown + (f" and {len(ranges) - _SHOWN_RANGES} more ranges" if len(ranges) > _SHOWN_RANGES else "")


def covers(ranges: list[str], cidr: str | None) -> bool:
    """Whether a rule's source ranges admit the GPU subnet's own addresses (or, its range unknown, any private
    address: the subnet's range is what the GPU NICs talk from)."""
    for text in ranges:
        try:
            source = ipaddress.ip_network(text, strict=False)
        except ValueError:
            continue
        if cidr is None:
            if source.prefixlen == 0 or source.is_private:
                return True
            continue
        try:
            subnet = ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            return False
        if subnet.version == source.version and subnet.subnet_of(source):  # type: ignore[arg-type]
            return True
    return False


def _targets(rule: FirewallRule, targets: frozenset[str] | None) -> bool:
    """Whether a rule applies to the instance: a rule with target tags or target service accounts applies only to
    the instances that carry one of them ("Rule assignment": https://cloud.google.com/firewall/docs/firewalls#rule_assignment).
    `targets` None (not read: an inventory saved before them) takes every rule to apply, as before."""
    if targets is None or not (rule.target_tags or rule.target_service_accounts):
        return True
    wanted = {f"tag:{t}" for t in rule.target_tags} | {f"sa:{s}" for s in rule.target_service_accounts}
    return bool(wanted & targets)


def _from_peers(rule: FirewallRule, targets: frozenset[str] | None) -> bool:
    """Whether a rule's source tags or source service accounts name the GPU peers: the other nodes of the pool,
    which carry the node's own tags and service account ("Sources for ingress rules": source tags and source
    service accounts match the primary NIC's address of instances that have them). Not read: an allow rule so
    narrowed counts as internal, a deny rule is not taken to block them all (as before)."""
    if targets is None:
        return False
    wanted = {f"tag:{t}" for t in rule.source_tags} | {f"sa:{s}" for s in rule.source_service_accounts}
    return bool(wanted & targets)


def _applies(rule: FirewallRule, cidr: str | None, targets: frozenset[str] | None) -> bool | str:
    """An enabled ingress rule that applies to the node and matches its subnet's own traffic (by range, or by the
    peers' tags or service accounts), or why that cannot be told. An ingress rule with destination ranges applies
    only to packets sent to those addresses (Firewall.destinationRanges, Compute API v1: "If destination ranges are
    specified, the firewall rule applies only to traffic that has destination IP address in these ranges"): the GPU
    peers send to the GPU subnet, so a rule whose destinations miss it does not touch them."""
    if rule.disabled or rule.direction != "INGRESS" or not _targets(rule, targets):
        return False
    if rule.destination_ranges:
        to_peers = egress.holds(rule.destination_ranges, cidr, "destinations")
        if to_peers is not True:
            return to_peers
    by_instance = bool(rule.source_tags or rule.source_service_accounts)
    if targets is None and by_instance:
        return rule.action == "allow"
    if rule.action not in ("allow", "deny"):
        return False
    return covers(rule.source_ranges, cidr) or (by_instance and _from_peers(rule, targets))


def _sends(rule: FirewallRule, cidr: str | None, targets: frozenset[str] | None) -> egress.Match:
    """An enabled egress rule that applies to the node (the sender) and matches what it sends to the GPU subnet."""
    if rule.disabled or rule.direction != "EGRESS" or rule.action not in ("allow", "deny"):
        return False
    if targets is None and (rule.target_tags or rule.target_service_accounts):
        return "targets some instances only, and the node's tags and service accounts were not read"
    return egress.vpc_rule(rule, cidr) if _targets(rule, targets) else False


class _Ports:
    """Where the evaluation of one direction of a connection's TCP ports stands: those allowed, and those no stage
    decided yet. What no stage decides meets the implied rule: deny ingress, allow egress (VPC firewall rules
    overview, "Implied rules")."""

    def __init__(self, outgoing: bool = False, guess: str = "") -> None:
        self.outgoing = outgoing
        self.allowed = 0
        self.open = EVERY_PORT
        self.denied_by: list[str] = []  # the rules that denied usable ports, in evaluation order
        # How an allow or deny rule whose match cannot be told is taken ("allow": the allow rules match and the
        # deny rules do not; "deny": the reverse; "": not at all, the stage is unknown), and the first such rule.
        self.guess = guess
        self.unsure = ""

    def taken(self, matched: bool | str, rule_action: str, where: str) -> bool | str:
        """Whether a rule is taken to match: its match, or for one whose match cannot be told (`matched` says why)
        as this reading takes its action (see `guess`); a string when the stage is unknown (why, naming `where`)."""
        if not isinstance(matched, str):
            return matched
        why = f"{where} {matched}, so which ports its GPU NICs reach is not judged"
        if not self.guess or rule_action not in ("allow", "deny"):
            return why
        self.unsure = self.unsure or why
        return rule_action == self.guess

    @property
    def direction(self) -> str:
        return "EGRESS" if self.outgoing else "INGRESS"

    def decide(self, mask: int, allows: bool, by: str = "") -> None:
        mask &= self.open
        if allows:
            self.allowed |= mask
        elif by and mask & USABLE_PORTS:
            self.denied_by.append(by)
        self.open &= ~mask

    def passed(self) -> int:
        """The usable ports let through once every stage ran."""
        return (self.allowed | (self.open if self.outgoing else 0)) & USABLE_PORTS


Stages = Callable[[_Ports], "str | None"]  # runs every stage of one direction, or says why one is unknown


def _both_ways(run: Stages) -> tuple[_Ports, _Ports] | str:
    """The receiver's ingress and the sender's egress through every stage (`run`), or why they are unknown. An
    egress rule whose match cannot be told is taken both ways, its allow matching and its deny not, then the
    reverse: an allow can only add ports and a deny only take them away, so when both readings reach the same ports
    every reading does, and the verdict stands; when they differ it is not judged, the rule named."""
    incoming, most, least = _Ports(), _Ports(outgoing=True, guess="allow"), _Ports(outgoing=True, guess="deny")
    for ports in (incoming, most, least):
        why = run(ports)
        if why:
            return why
    if incoming.passed() & most.passed() != incoming.passed() & least.passed():
        return most.unsure
    return incoming, most


def _verdict(incoming: _Ports, outgoing: _Ports) -> Reach:
    """A port is reached when the sender's egress and the receiver's ingress both let it through."""
    allowed = incoming.passed() & outgoing.passed()
    if allowed == USABLE_PORTS:
        return Reach("ok")
    if not allowed:
        return Reach("missing")
    return Reach("partial", f"TCP ports {port_ranges(allowed)} only")


def _classic(rules: list[FirewallRule], cidr: str | None, targets: frozenset[str] | None, ports: _Ports) -> str | None:
    """The VPC firewall rules' stage: each port goes to the matching rule of highest precedence (a deny first at
    equal priority); a port no rule matches goes on to the next stage. Returns why the stage is unknown, or None."""
    matching: list[tuple[int, bool, int, str]] = []  # (priority, is an allow rule, its TCP ports, what denies)
    for rule in rules:
        matched = _sends(rule, cidr, targets) if ports.outgoing else _applies(rule, cidr, targets)
        kind = "egress firewall rule" if ports.outgoing else "firewall rule"
        taken = ports.taken(matched, rule.action, f"{kind} {rule.name}")
        if isinstance(taken, str):
            return taken
        if not taken:
            continue
        entries = rule.known_entries()
        if entries is None:
            return f"firewall rule {rule.name} was saved without its ports (collect it again)"
        mask = port_mask(entries)
        if mask:  # an egress deny is named: its network's ingress rules look fine
            by = f"egress firewall rule {rule.name}" if ports.outgoing else ""
            matching.append((rule.priority, rule.action == "allow", mask, by))
    for _, allows, mask, by in sorted(matching):  # by priority, deny (False) before allow at the same priority
        ports.decide(mask, allows, by)
    return None


def tcp_reach(rules: list[FirewallRule], cidr: str | None, targets: frozenset[str] | None = None) -> Reach:
    """Which TCP ports the subnet `cidr` reaches through `rules` (those of its network) on a node that firewall
    rules target by `targets` (resources.gcp.GcpNodePart.firewall_targets), both ways. `settled`: the rules decide
    every port both ways, so no network firewall policy evaluated after them changes the verdict."""
    found = _both_ways(lambda ports: _classic(rules, cidr, targets, ports))
    if isinstance(found, str):
        return Reach("unknown", found)
    incoming, outgoing = found
    reach = _verdict(incoming, outgoing)
    denied = ", ".join(dict.fromkeys(outgoing.denied_by))
    if reach.verdict != "ok" and denied:
        reach = Reach(reach.verdict, ", ".join(filter(None, (reach.detail, f"denied by {denied}"))))
    settled = not (incoming.open | outgoing.open) & USABLE_PORTS and not outgoing.unsure
    return Reach(reach.verdict, reach.detail, settled)


def _policy_targets(rule: PolicyRule, targets: frozenset[str] | None) -> bool | str:
    """Whether a policy rule applies to the node, or why it cannot be told. Secure tags are bound to instances
    through Resource Manager tag bindings, which the collector does not read; target service accounts match the
    node's (FirewallPolicyRule.targetSecureTags / targetServiceAccounts)."""
    if rule.target_secure_tags:
        return f"targets secure tags {', '.join(rule.target_secure_tags)}, whose bindings to instances are not read"
    if not rule.target_service_accounts or targets is None:
        return True
    return bool({f"sa:{s}" for s in rule.target_service_accounts} & targets)


def _policy_match(rule: PolicyRule, cidr: str | None, targets: frozenset[str] | None) -> bool | str:
    """Whether a policy rule matches the GPU peers' traffic to the node: True, False, or why it cannot be told.
    Sources: srcIpRanges against the subnet; srcSecureTags and srcAddressGroups name addresses it cannot see."""
    applies = _policy_targets(rule, targets)
    if applies is not True:
        return applies
    narrowed = _narrowed(rule, cidr)
    if narrowed is not True:
        return narrowed
    if covers(rule.source_ranges, cidr):
        return True
    others = rule.source_ranges or rule.source_secure_tags or rule.source_address_groups
    if rule.source_network_context and not others:
        return True  # the network context alone is the rule's source, and the GPU peers are in it
    unseen = rule.source_secure_tags + rule.source_address_groups
    if unseen:
        return f"matches sources by {', '.join(unseen)}, which the collector cannot resolve to addresses"
    return False


def _policy_sends(rule: PolicyRule, cidr: str | None, targets: frozenset[str] | None) -> bool | str:
    """Whether an egress policy rule matches what the node sends to its GPU peers (egress.policy_rule)."""
    applies = _policy_targets(rule, targets)
    return egress.policy_rule(rule, cidr) if applies is True else applies


# Source network contexts the GPU peers (instances of the same VPC network, on internal addresses) are in: a
# context is part of an ingress rule's source combination, with the other source parameters; INTERNET and
# NON_INTERNET are exclusive, INTRA_VPC and VPC_NETWORKS are parts of NON_INTERNET ("Network contexts",
# https://cloud.google.com/firewall/docs/understand-network-contexts; FirewallPolicyRuleMatcher.srcNetworkContext).
_PEER_CONTEXTS = frozenset({"INTRA_VPC", "NON_INTERNET"})


def _narrowed(rule: PolicyRule, cidr: str | None) -> bool | str:
    """What a policy rule's destination ranges and source network context leave of the GPU peers' traffic to the
    node: True (it stays in), False (none of it), or why it cannot be told. An ingress rule with destIpRanges applies
    to packets to those addresses only; a source network context must match beside the other sources."""
    if rule.dest_ranges:
        if cidr is None:
            return f"applies to destinations {', '.join(rule.dest_ranges)} and the GPU subnet's range is not known"
        subnet = ipaddress.ip_network(cidr, strict=False)
        dests = [d for d in (egress.network(t) for t in rule.dest_ranges) if d and d.version == subnet.version]
        if not any(subnet.subnet_of(d) for d in dests):  # type: ignore[arg-type]
            if any(subnet.overlaps(d) for d in dests):
                return f"applies to destinations {', '.join(rule.dest_ranges)}, part of the GPU subnet {cidr}"
            return False
    context = rule.source_network_context.upper()
    if context in ("", "UNSPECIFIED") or context in _PEER_CONTEXTS:
        return True
    if context == "VPC_NETWORKS":
        return f"matches sources by network ({', '.join(rule.source_networks) or 'none named'}), which is not compared"
    return False  # INTERNET: the peers' internal addresses are not internet traffic


def _policy(
    policy: NetworkFirewallPolicy, cidr: str | None, targets: frozenset[str] | None, ports: _Ports
) -> str | None:
    """A firewall policy's stage (hierarchical, system, network or regional network alike): its enabled rules of the
    direction by priority (unique within a policy); the first that matches a port decides it (allow, deny) or sends
    it on to the next stage (goto_next), and a port no rule matches goes on too ("Evaluation order for firewall
    policies and rules", https://cloud.google.com/firewall/docs/firewall-policies-rule-eval-order). Returns why it
    is unknown, or None."""
    if policy.rules is None:
        why = policy.unknown_rules or "they were not read"
        return f"the rules of {policy.described} are not known ({why}), so the reach is not judged"
    pending = ports.open  # the ports this stage still evaluates
    matches = _policy_sends if ports.outgoing else _policy_match
    for rule in sorted(policy.rules, key=lambda r: r.priority):
        mask = port_mask(rule.entries) & pending
        if rule.disabled or rule.direction != ports.direction or not mask:
            continue
        where = f"{'egress ' if ports.outgoing else ''}rule {rule.priority} of {policy.described}"
        taken = ports.taken(matches(rule, cidr, targets), rule.action, where)
        if isinstance(taken, str):
            return taken
        if not taken:
            continue
        if rule.action not in ("allow", "deny", "goto_next"):
            return f"{where} hands the traffic to {rule.action} (Layer 7 inspection decides), so it is not judged"
        pending &= ~mask
        if rule.action != "goto_next":
            ports.decide(mask, rule.action == "allow", where)
    return None


def governed_reach(
    rules: list[FirewallRule],
    policies: list[NetworkFirewallPolicy],
    before_classic: bool,
    cidr: str | None,
    targets: frozenset[str] | None = None,
    first: tuple[NetworkFirewallPolicy, ...] = (),
) -> Reach:
    """Which TCP ports reach the node through every stage that governs its network, in Cloud NGFW's order: the
    hierarchical policies (organization, then each folder down) and the regional system policies (`first`); then
    the network's VPC rules and its network firewall policies (`policies`: the global one, then the regional one),
    the VPC rules first (AFTER_CLASSIC_FIREWALL) or last (BEFORE_CLASSIC_FIREWALL); what none decides meets the
    implied rule ("Evaluation order for firewall policies and rules"). The same order runs twice: for the receiver's
    ingress and for the sender's egress (egress.py)."""
    vpc: list[NetworkFirewallPolicy | None] = [None]  # None: the VPC firewall rules' stage
    network: list[NetworkFirewallPolicy | None] = [*policies]
    stages = [*first, *(network + vpc if before_classic else vpc + network)]

    def run(ports: _Ports) -> str | None:
        for stage in stages:
            why = _classic(rules, cidr, targets, ports) if stage is None else _policy(stage, cidr, targets, ports)
            if why:
                return why
        return None

    found = _both_ways(run)
    if isinstance(found, str):
        return Reach("unknown", found)
    incoming, outgoing = found
    reach = _verdict(incoming, outgoing)
    order = "BEFORE_CLASSIC_FIREWALL" if before_classic else "AFTER_CLASSIC_FIREWALL"
    via = "VPC firewall rules" + "".join(f" and {p.described}" for p in policies) + f", {order}"
    if first:
        via = f"{', '.join(p.described for p in first)}, then {via}"
    denied = incoming.denied_by + outgoing.denied_by
    if reach.verdict != "ok" and denied:
        via += f"; denied by {', '.join(dict.fromkeys(denied))}"
    return Reach(reach.verdict, f"{reach.detail}, {via}" if reach.detail else via)
