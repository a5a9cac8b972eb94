"""Global network firewall policies of a Terraform plan, with their rules.

google_compute_network_firewall_policy (name) holds no rules of its own: each is a
google_compute_network_firewall_policy_rule naming it in `firewall_policy`, with priority, direction, action
(allow, deny, goto_next, apply_security_profile_group), disabled, match { src_ip_ranges, layer4_configs { ip_protocol,
ports }, src_secure_tags { name }, src_address_groups }, target_secure_tags { name } and target_service_accounts
(registry.terraform.io/providers/hashicorp/google/latest/docs/resources/compute_network_firewall_policy_rule; the same
schema in @cdktf/provider-google lib/compute-network-firewall-policy-rule/index.d.ts). A rule whose match, targets or
action is known only after apply leaves its policy's rules unknown: not judged, never guessed.
"""

from __future__ import annotations

from typing import Any

from fabriccheck.model import UNKNOWN_ACCOUNT
from fabriccheck.resources.gcp import GLOBAL, NetworkFirewallPolicy, PolicyRule, firewall_entries
from fabriccheck.sources.terraform import Plan
from fabriccheck.sources.terraform_resource import PlanResource

POLICY = "google_compute_network_firewall_policy"
POLICY_RULE = "google_compute_network_firewall_policy_rule"
_DECIDING = ("priority", "direction", "action", "disabled", "match", "target_secure_tags", "target_service_accounts")


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
        target_secure_tags=_names(res.known("target_secure_tags")),
        target_service_accounts=[str(s) for s in res.known("target_service_accounts") or ()],
    )


def plan_policies(plan: Plan, project_of: dict[str, str]) -> dict[str, NetworkFirewallPolicy]:
    """Each planned policy by its address, with the rules that name it (`project_of`: each policy's project)."""
    rules: dict[str, list[PolicyRule]] = {}
    unknown: dict[str, str] = {}
    for res in plan.of_type(POLICY_RULE):
        for target in plan.resolve(res, "firewall_policy", unset=[]):
            if isinstance(target, PlanResource):
                rule = policy_rule(res)
                if isinstance(rule, str):
                    unknown.setdefault(target.address, rule)
                else:
                    rules.setdefault(target.address, []).append(rule)
    found = {}
    for res in plan.of_type(POLICY):
        project = project_of.get(res.address, UNKNOWN_ACCOUNT)
        name = str(res.known("name") or res.address)
        why = unknown.get(res.address, "")
        found[res.address] = NetworkFirewallPolicy(
            account=project,
            region=GLOBAL,
            id=f"projects/{project}/global/firewallPolicies/{name}",
            name=name,
            rules=None if why else rules.get(res.address, []),
            unknown_rules=why,
        )
    return found
