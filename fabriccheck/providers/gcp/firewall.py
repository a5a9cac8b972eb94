"""VPC firewall rules: which TCP ports of a GPU network its own subnet reaches.

GPUDirect-TCPX/TCPXO opens many TCP connections between the GPU NICs, on ports NCCL and the receive datapath
manager pick, so a GPU network needs ingress from its subnet allowed on every TCP port (G4; CTK-MULTIVPC's rule
"allow all internal TCP, UDP, and ICMP traffic within the network"). A VPC network denies ingress by default; a
port is decided by the rule of highest precedence that matches it (the lowest priority number), and at equal
priority a deny rule wins (VPC firewall rules overview: priority, action on match, implied rules).

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
from dataclasses import dataclass

from fabriccheck.resources.gcp import FIREWALL_ENTRY, MAX_PORT, FirewallRule

TCP = frozenset({"tcp", "6", "all"})  # IPProtocol values whose rule items reach TCP ports
EVERY_PORT = (1 << (MAX_PORT + 1)) - 1
USABLE_PORTS = EVERY_PORT & ~1  # 1-65535
_SHOWN_RANGES = 6  # port ranges a message lists before "..."
_ONES = re.compile("1+")


@dataclass(frozen=True)
class Reach:
    """What reaches a GPU network's NICs from its subnet over TCP: ok (every port), partial, missing (no port),
    or unknown; `detail` says which ports for partial, why for unknown."""

    verdict: str
    detail: str = ""


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


def _applies(rule: FirewallRule, cidr: str | None, targets: frozenset[str] | None) -> bool:
    """An enabled ingress rule that applies to the node and matches its subnet's own traffic (by range, or by the
    peers' tags or service accounts)."""
    if rule.disabled or rule.direction != "INGRESS" or not _targets(rule, targets):
        return False
    by_instance = bool(rule.source_tags or rule.source_service_accounts)
    if targets is None and by_instance:
        return rule.action == "allow"
    if rule.action not in ("allow", "deny"):
        return False
    return covers(rule.source_ranges, cidr) or (by_instance and _from_peers(rule, targets))


def tcp_reach(rules: list[FirewallRule], cidr: str | None, targets: frozenset[str] | None = None) -> Reach:
    """Which TCP ports the subnet `cidr` reaches through `rules` (those of its network) on a node that firewall
    rules target by `targets` (NodeShape.firewall_targets)."""
    matching: list[tuple[int, bool, int]] = []  # (priority, is an allow rule, its TCP ports)
    for rule in rules:
        if not _applies(rule, cidr, targets):
            continue
        entries = rule.known_entries()
        if entries is None:
            return Reach("unknown", f"firewall rule {rule.name} was saved without its ports (collect it again)")
        mask = port_mask(entries)
        if mask:
            matching.append((rule.priority, rule.action == "allow", mask))
    decided = allowed = 0
    for _, allows, mask in sorted(matching):  # by priority, deny (False) before allow at the same priority
        if allows:
            allowed |= mask & ~decided
        decided |= mask
    allowed &= USABLE_PORTS
    if allowed == USABLE_PORTS:
        return Reach("ok")
    if not allowed:
        return Reach("missing")
    return Reach("partial", f"TCP ports {port_ranges(allowed)} only")
