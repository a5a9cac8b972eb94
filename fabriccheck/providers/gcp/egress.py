"""Egress firewall rules: whether a rule matches what a GPU node sends to its peers on the same GPU subnet.

A GPU peer's connection must leave the sender as well as enter the receiver: Cloud NGFW evaluates the sender's egress
rules in the same order as ingress (hierarchical policies, regional system policies, then the VPC firewall rules and
network firewall policies in the network's enforcement order), and what no rule decides meets the implied allow
egress rule ("Implied rules", https://cloud.google.com/firewall/docs/firewalls#default_firewall_rules; "Evaluation
order for firewall policies and rules", https://cloud.google.com/firewall/docs/firewall-policies-rule-eval-order).

An egress rule applies to the sending node (its targets: the same tags, service accounts and secure tags as an
ingress rule's, read in firewall.py) and matches packets whose destination is in its destinations; the GPU peers are
the addresses of the GPU subnet, so a rule matches when one of its ranges holds the whole subnet. A source range on an
egress rule narrows it to packets sent from those addresses, the sender's own ("Sources for egress rules" and
"Destinations for egress rules", https://cloud.google.com/firewall/docs/firewall-policies-rule-details; VPC rules:
Firewall.destinationRanges, "If destination ranges are specified, the firewall rule applies only to traffic that has
destination IP address in these ranges", Compute API v1). A range that holds part of the subnet, or a destination the
collector cannot resolve to addresses (address groups, FQDNs, geolocations, threat intelligence lists), leaves the
rule's match unknown: the verdict is then not judged, and the message names the rule.
"""

from __future__ import annotations

import ipaddress

from fabriccheck.resources.gcp import FirewallRule, PolicyRule

Match = bool | str  # True, False, or why it cannot be told

# Destination network contexts the GPU peers (internal addresses of the same VPC network) are in: NON_INTERNET, and
# INTRA_VPC, a part of it (FirewallPolicyRuleMatcher.destNetworkContext: UNSPECIFIED, INTERNET, NON_INTERNET;
# "Network contexts", https://cloud.google.com/firewall/docs/understand-network-contexts).
_PEER_CONTEXTS = frozenset({"", "UNSPECIFIED", "NON_INTERNET", "INTRA_VPC"})


def network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def holds(ranges: list[str], cidr: str | None, what: str) -> Match:
    """Whether `ranges` (a rule's sources or destinations, `what`) hold the GPU subnet `cidr`: True when one holds
    all of it, False when none touches it, why not when one holds only part of it or its range is not known."""
    listed = ", ".join(ranges)
    nets = [n for n in (network(r) for r in ranges) if n is not None]
    subnet = network(cidr) if cidr else None
    if subnet is None:
        if any(n.prefixlen == 0 for n in nets):
            return True  # every address: the subnet's range does not matter
        return f"applies to {what} {listed} and the GPU subnet's range is not known"
    same = [n for n in nets if n.version == subnet.version]
    if any(subnet.subnet_of(n) for n in same):  # type: ignore[arg-type]
        return True
    if any(subnet.overlaps(n) for n in same):
        return f"applies to {what} {listed}, part of the GPU subnet {cidr}"
    return False


def _both(*parts: Match) -> Match:
    """Every part must match: False if one does not, else why one cannot be told, else True."""
    if False in parts:
        return False
    return next((p for p in parts if isinstance(p, str)), True)


def vpc_rule(rule: FirewallRule, cidr: str | None) -> Match:
    """Whether an egress VPC firewall rule that applies to the node matches what it sends to the GPU subnet. No
    destination ranges: every destination (gcloud compute firewall-rules create --destination-ranges defaults to
    0.0.0.0/0, all destinations, when not given)."""
    if rule.destination_ranges is None:
        return "was saved without its destination ranges (collect it again)"
    sources = holds(rule.source_ranges, cidr, "sources") if rule.source_ranges else True
    dests = holds(rule.destination_ranges, cidr, "destinations") if rule.destination_ranges else True
    return _both(sources, dests)


def policy_rule(rule: PolicyRule, cidr: str | None) -> Match:
    """Whether an egress firewall policy rule that applies to the node matches what it sends to the GPU subnet: its
    destination network context, its source ranges, and its destinations, any of which may match (destIpRanges or
    the others: "Destination combinations for egress rules")."""
    context = rule.dest_network_context.upper()
    if context == "INTERNET":
        return False  # the peers' internal addresses are not internet traffic
    if context not in _PEER_CONTEXTS:
        return f"matches destinations by network context {context}, which is not compared"
    sources = holds(rule.source_ranges, cidr, "sources") if rule.source_ranges else True
    if not rule.dest_ranges and not rule.dest_unresolved:
        return sources  # every destination
    dests = holds(rule.dest_ranges, cidr, "destinations") if rule.dest_ranges else False
    if dests is not True and rule.dest_unresolved:
        dests = f"matches destinations by {', '.join(rule.dest_unresolved)}, which the collector cannot resolve"
    return _both(sources, dests)
