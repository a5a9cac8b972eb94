"""Firewall policies of a Terraform plan, with their rules: global and regional network firewall policies, and
hierarchical ones.

google_compute_network_firewall_policy (name) holds no rules of its own: each is a
google_compute_network_firewall_policy_rule naming it in `firewall_policy`, with priority, direction, action
(allow, deny, goto_next, apply_security_profile_group), disabled, match { src_ip_ranges, layer4_configs { ip_protocol,
ports }, src_secure_tags { name }, src_address_groups }, target_secure_tags { name } and target_service_accounts
(registry.terraform.io/providers/hashicorp/google/latest/docs/resources/compute_network_firewall_policy_rule; the same
schema in @cdktf/provider-google lib/compute-network-firewall-policy-rule/index.d.ts). The regional twins
google_compute_region_network_firewall_policy (name, region) and google_compute_region_network_firewall_policy_rule
(firewall_policy, region, the same rule fields; lib/compute-region-network-firewall-policy-rule) are associated with
a network in one region by google_compute_region_network_firewall_policy_association (attachment_target,
firewall_policy, region). A hierarchical policy is google_compute_firewall_policy (parent, short_name) with
google_compute_firewall_policy_rule (firewall_policy, the same rule fields and target_resources, the networks it
applies to; lib/compute-firewall-policy-rule), associated with an organization or folder by
google_compute_firewall_policy_association (attachment_target organizations/N or folders/N, firewall_policy). A
rule whose match, targets or action is known only after apply leaves its policy's rules unknown: not judged, never
guessed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fabriccheck.model import UNKNOWN_ACCOUNT
from fabriccheck.resources.gcp import (
    GLOBAL,
    EffectiveFirewalls,
    NetworkFirewallPolicy,
    PolicyRule,
    firewall_entries,
    unresolved_destinations,
)
from fabriccheck.sources.terraform import Plan
from fabriccheck.sources.terraform_resource import PlanResource

POLICY = "google_compute_network_firewall_policy"
POLICY_RULE = "google_compute_network_firewall_policy_rule"
REGION_POLICY = "google_compute_region_network_firewall_policy"
REGION_POLICY_RULE = "google_compute_region_network_firewall_policy_rule"
REGION_ASSOCIATION = "google_compute_region_network_firewall_policy_association"
HIERARCHY_POLICY = "google_compute_firewall_policy"
HIERARCHY_RULE = "google_compute_firewall_policy_rule"
HIERARCHY_ASSOCIATION = "google_compute_firewall_policy_association"
TYPES = (POLICY, POLICY_RULE, REGION_POLICY, REGION_POLICY_RULE, REGION_ASSOCIATION, HIERARCHY_POLICY, HIERARCHY_RULE,
         HIERARCHY_ASSOCIATION)  # fmt: skip
_DECIDING = (
    "priority",
    "direction",
    "action",
    "disabled",
    "match",
    "target_secure_tags",
    "target_service_accounts",
    "target_resources",
)

# An egress rule's destinations besides dest_ip_ranges (the match block of the three *_firewall_policy_rule
# resources; the API's names in normalize.DEST_KINDS).
_DEST_KINDS = {
    "dest_address_groups": "address group",
    "dest_fqdns": "FQDN",
    "dest_region_codes": "geolocation",
    "dest_threat_intelligences": "threat intelligence list",
}


def _names(blocks: Any) -> list[str]:
    return [str(b.get("name")) for b in blocks or () if isinstance(b, dict)]


def policy_rule(res: PlanResource) -> PolicyRule | str:
    """The rule, or why it is not known at plan time."""
    unknown = [field for field in _DECIDING if res.unknown_at(field)]
    if unknown or res.known("priority") is None:
        return f"{res.address}'s {', '.join(unknown) or 'priority'} is known only after apply"
    match = res.known("match", 0) or {}
    return PolicyRule(
        priority=int(res.known("priority")),
        direction=str(res.known("direction") or "INGRESS"),
        action=str(res.known("action") or "allow").lower(),
        disabled=bool(res.known("disabled")),
        entries=firewall_entries([c for c in match.get("layer4_configs") or () if isinstance(c, dict)], "ip_protocol"),
        source_ranges=[str(r) for r in match.get("src_ip_ranges") or ()],
        source_secure_tags=_names(match.get("src_secure_tags")),
        source_address_groups=[str(g) for g in match.get("src_address_groups") or ()],
        source_network_context=str(
            match.get("src_network_context") or match.get("src_network_scope") or match.get("src_network_type") or ""
        ),
        source_networks=[str(n) for n in match.get("src_networks") or ()],
        dest_ranges=[str(r) for r in match.get("dest_ip_ranges") or ()],
        dest_unresolved=unresolved_destinations(match, _DEST_KINDS),
        dest_network_context=str(match.get("dest_network_context") or match.get("dest_network_type") or ""),
        target_secure_tags=_names(res.known("target_secure_tags")),
        target_service_accounts=[str(s) for s in res.known("target_service_accounts") or ()],
        target_resources=[str(r) for r in res.known("target_resources") or ()],
    )


def _rules(plan: Plan, rule_type: str) -> tuple[dict[str, list[PolicyRule]], dict[str, str]]:
    """The rules of each planned policy by its address, and why a policy's rules are unknown."""
    rules: dict[str, list[PolicyRule]] = {}
    unknown: dict[str, str] = {}
    for res in plan.of_type(rule_type):
        for target in plan.resolve(res, "firewall_policy", unset=[]):
            if isinstance(target, PlanResource):
                rule = policy_rule(res)
                if isinstance(rule, str):
                    unknown.setdefault(target.address, rule)
                else:
                    rules.setdefault(target.address, []).append(rule)
    return rules, unknown


def plan_policies(
    plan: Plan,
    project_of: dict[str, str],
    kind: str = "NETWORK",
    region_of: Callable[[PlanResource], str] | None = None,
) -> dict[str, NetworkFirewallPolicy]:
    """Each planned policy of `kind` by its address, with the rules that name it (`project_of`: each policy's
    project; `region_of`: a regional policy's region)."""
    types = {"NETWORK": (POLICY, POLICY_RULE), "NETWORK_REGIONAL": (REGION_POLICY, REGION_POLICY_RULE)}
    policy_type, rule_type = types.get(kind, (HIERARCHY_POLICY, HIERARCHY_RULE))
    rules, unknown = _rules(plan, rule_type)
    found = {}
    for res in plan.of_type(policy_type):
        project = project_of.get(res.address, UNKNOWN_ACCOUNT)
        name = str(res.known("short_name" if kind == "HIERARCHY" else "name") or res.address)
        region = region_of(res) if region_of else GLOBAL
        where = f"regions/{region}" if kind == "NETWORK_REGIONAL" else "global"
        why = unknown.get(res.address, "")
        found[res.address] = NetworkFirewallPolicy(
            account=str(res.known("parent") or UNKNOWN_ACCOUNT) if kind == "HIERARCHY" else project,
            region=region,
            id=f"projects/{project}/{where}/firewallPolicies/{name}" if kind != "HIERARCHY" else res.address,
            name=name,
            rules=None if why else rules.get(res.address, []),
            unknown_rules=why,
            kind=kind,
        )
    return found


def regional_associations(
    plan: Plan,
    planned: dict[str, NetworkFirewallPolicy],
    network_of: Callable[[PlanResource], str | None],
    region_of: Callable[[PlanResource], str],
) -> list[EffectiveFirewalls]:
    """The regional network policies the plan associates with its networks, per network and region. A policy the
    plan does not hold is named, its rules unknown (not judged)."""
    found: dict[tuple[str, str, str], list[NetworkFirewallPolicy]] = {}
    for res in plan.of_type(REGION_ASSOCIATION):
        network = network_of(res)
        if network is None:
            continue
        project, region = network.split("/")[1], region_of(res)
        policy = next((planned[i.address] for i in plan.resolve(res, "firewall_policy", unset=[])
                       if isinstance(i, PlanResource) and i.address in planned), None)  # fmt: skip
        if policy is None:
            named = res.known("firewall_policy")
            policy = NetworkFirewallPolicy(
                account=project, region=region, id=str(named or res.address),
                name=str(named or res.address).rsplit("/", 1)[-1], rules=None, kind="NETWORK_REGIONAL",
                unknown_rules="the plan does not hold it",
            )  # fmt: skip
        found.setdefault((project, region, network), []).append(policy)
    return [EffectiveFirewalls(account=p, region=r, network=n, policies=v) for (p, r, n), v in found.items()]


def hierarchical_associations(plan: Plan, planned: dict[str, NetworkFirewallPolicy]) -> list[NetworkFirewallPolicy]:
    """The plan's hierarchical policies as associated, each named by where (`account`: organizations/N or
    folders/N), organizations first. Which projects lie under a folder the plan does not say (lookup.py)."""
    found = []
    for res in plan.of_type(HIERARCHY_ASSOCIATION):
        target = res.known("attachment_target")
        where = str(target) if target else f"{res.address}'s attachment_target (known only after apply)"
        for item in plan.resolve(res, "firewall_policy", unset=[]):
            if isinstance(item, PlanResource) and item.address in planned:
                found.append(planned[item.address].model_copy(update={"account": where}))
    return sorted(found, key=lambda p: not p.account.startswith("organizations/"))
