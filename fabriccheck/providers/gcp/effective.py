"""The firewall policies that govern a GPU network in its region besides its global network firewall policy:
hierarchical policies (organization and folders), regional system policies and regional network policies.

Read with regionNetworkFirewallPolicies.getEffectiveFirewalls (GET .../projects/P/regions/R/firewallPolicies/
getEffectiveFirewalls?network=N): "Effective firewalls from firewall policy. It applies to Regional Network
Firewall Policies in the specified region, Global Network Firewall Policies and Hierachial Firewall Policies which
are associated with the network" (Compute API v1, RegionNetworkFirewallPoliciesGetEffectiveFirewallsResponse
.firewallPolicys; each with `name`, `type` HIERARCHY | NETWORK | NETWORK_REGIONAL | SYSTEM_GLOBAL | SYSTEM_REGIONAL,
`priority` (of a network policy's association, "Not applicable for type=HIERARCHY") and `rules`). One call per GPU
network and region its GPU NICs are in, only: a regional policy is associated with a network in one region, and
hierarchical policies are not listed per project. It needs compute.networks.getRegionEffectiveFirewalls (Compute
Engine IAM permissions). gcloud makes the same call: `gcloud compute network-firewall-policies get-effective-firewalls
--network N --region R --format=json` prints {"firewalls": [...], "firewallPolicys": [{name, type, rules}]}
(googlecloudsdk surface compute/network_firewall_policies/get_effective_firewalls.py), the policies in the API's
order.

The hierarchical policies are taken in the answer's order, the organization's first: Cloud NGFW evaluates the
organization's policy, then each folder's from the top down ("Evaluation order for firewall policies and rules",
https://cloud.google.com/firewall/docs/firewall-policies-rule-eval-order). The `NETWORK` policy is the network's
global one, read with its rules from networkFirewallPolicies.list as the network names it (listing.py), so it is
not taken twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fabriccheck.catalog import catalog_entry
from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.model import CollectionError, FabricKind, fact_key
from fabriccheck.providers.gcp.lookup import GcpIndex
from fabriccheck.providers.gcp.normalize import policy_rule, short
from fabriccheck.providers.gcp.support import SUPPORT
from fabriccheck.resources.gcp import EffectiveFirewalls, NetworkFirewallPolicy
from fabriccheck.sources.fleet import CallCount, RateLimits
from fabriccheck.sources.scope import Scope

CALL = "regionNetworkFirewallPolicies.getEffectiveFirewalls"
PERMISSION = "compute.networks.getRegionEffectiveFirewalls"
FACT = "effective_firewalls"
DUMP_FILE = "network-firewall-policies-get-effective-firewalls.json"
GCLOUD = "gcloud compute network-firewall-policies get-effective-firewalls"
COMMAND = f"{GCLOUD} --network NETWORK --region REGION --project PROJECT --format=json"
_KEPT = ("HIERARCHY", "SYSTEM_REGIONAL", "SYSTEM_GLOBAL", "NETWORK_REGIONAL")  # evaluated in this order
_API = "https://www.googleapis.com/compute/v1/"


def targets(inventory: Inventory) -> list[tuple[str, str, str]]:
    """(the network's project, the region, the network) of every GPU NIC of a GPUDirect-TCPX/TCPXO node: the
    networks GCP110 judges, each once per region (a Shared VPC network is asked of its host project)."""
    found: set[tuple[str, str, str]] = set()
    for node in inventory.nodes:
        shape = node.shape
        cap = catalog_entry(shape.instance_type or "")
        if cap is None or cap.fabric not in (FabricKind.TCPX, FabricKind.TCPXO):
            continue
        for nic in SUPPORT.fabric_attachment(shape, cap).interfaces:
            if nic.network:
                found.add((GcpIndex.owner(shape, nic.network), shape.region, nic.network))
    return sorted(found)


def _name(policy: dict[str, Any]) -> str:
    """A hierarchical policy's `name` is its number; the API adds its shortName and displayName (gcloud drops them)."""
    return str(policy.get("shortName") or policy.get("displayName") or policy.get("name") or "?")


def _applies(rule: dict[str, Any], network: str) -> bool:
    """A hierarchical rule with targetResources applies to those networks' instances only (FirewallPolicyRule
    .targetResources: "A list of network resource URLs to which this rule applies")."""
    wanted = rule.get("targetResources") or ()
    return not wanted or any(short(url) == network for url in wanted)


def from_answer(answer: dict[str, Any], project: str, region: str, network: str) -> EffectiveFirewalls:
    """The effective answer for `network` in `region` as the policies evaluated before and after its own."""
    policies: list[NetworkFirewallPolicy] = []
    by_type: dict[str, list[dict[str, Any]]] = {}
    for item in answer.get("firewallPolicys") or ():
        by_type.setdefault(str(item.get("type") or ""), []).append(item)
    for kind in _KEPT:
        items = by_type.get(kind, [])
        if kind != "HIERARCHY":  # network policies by their association's priority; hierarchy as listed
            items = sorted(items, key=lambda i: int(i.get("priority") or 0))
        for item in items:
            rules = [policy_rule(r) for r in item.get("rules") or () if _applies(r, network)]
            policies.append(
                NetworkFirewallPolicy(
                    account=project, region=region, id=str(item.get("name")), name=_name(item), rules=rules, kind=kind
                )
            )
    return EffectiveFirewalls(account=project, region=region, network=network, policies=policies)


def not_read(project: str, region: str, network: str, why: str) -> EffectiveFirewalls:
    return EffectiveFirewalls(account=project, region=region, network=network, policies=None, unknown=why)


def fetch(
    clients: Any, wanted: list[tuple[str, str, str]], limits: RateLimits, count: CallCount
) -> tuple[list[EffectiveFirewalls], list[CollectionError]]:
    """One getEffectiveFirewalls per (project, region, network); a failure is recorded for its project and leaves
    that network's reach not judged in that region, naming why, and the rest goes on."""
    import requests
    from google.api_core import exceptions
    from google.auth import exceptions as auth_exceptions

    from fabriccheck.redaction import first_line
    from fabriccheck.sources.progress import API_CALLS
    from fabriccheck.sources.retries import RETRIES

    failed = (exceptions.GoogleAPICallError, exceptions.RetryError, auth_exceptions.GoogleAuthError,
              requests.RequestException, ValueError, TypeError, KeyError)  # fmt: skip

    client = clients.effective
    retry = clients.retry_counting(count)
    found: list[EffectiveFirewalls] = []
    errors: list[CollectionError] = []
    for project, region, network in wanted:
        limits.take("compute", project)
        API_CALLS.add()
        count.call()
        count.attempt()
        scope = Scope("gcp", project, region)
        request = {"project": project, "region": region, "network": _API + network}
        try:
            answer = client.get_effective_firewalls(request=request, retry=retry, timeout=RETRIES.read_timeout)
            doc = type(answer).to_dict(answer, preserving_proto_field_name=False, use_integers_for_enums=False)
            read = from_answer(doc, project, region, network)
        except (exceptions.Forbidden, exceptions.Unauthorized) as exc:
            errors.append(scope.denied(CALL, f"{network}: {first_line(exc)}", PERMISSION))
            why = f"reading them was denied ({PERMISSION} is needed on project {project})"
        except failed as exc:  # 429 or 5xx past the retry budget, a reset, an answer of another shape
            errors.append(scope.error(CALL, type(exc).__name__, f"{network}: {first_line(exc)}", PERMISSION))
            why = f"reading them failed ({first_line(exc)})"
        else:
            found.append(read)
            continue
        found.append(not_read(project, region, network, why))
    return found, errors


def record(inventory: Inventory, read: list[EffectiveFirewalls]) -> None:
    """Effective firewalls were asked for these projects and regions: a GPU network there without an answer
    is not judged."""
    inventory.gcp.effective_firewalls.extend(read)
    for project, region in sorted({(e.account, e.region) for e in read}):
        inventory.collected.append(fact_key("gcp", project, region, FACT))


def load_dump(path: Path, project: str | None) -> list[EffectiveFirewalls]:
    """network-firewall-policies-get-effective-firewalls.json: a JSON list of gcloud's answers, each with the
    `network` and `region` it was asked for (docs/dump-formats.md shows the jq that adds them)."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise FabricCheckError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(doc, list):
        raise FabricCheckError(f"{path}: expected a JSON list of `{GCLOUD}` answers, each with its network and region")
    found = []
    for i, item in enumerate(doc):
        if not isinstance(item, dict) or not isinstance(item.get("firewallPolicys", []), list):
            raise FabricCheckError(f"{path}: [{i}]: expected a `{GCLOUD} --format=json` answer (firewallPolicys)")
        network, region = item.get("network"), item.get("region")
        if not isinstance(network, str) or not isinstance(region, str) or not network or not region:
            raise FabricCheckError(f"{path}: [{i}]: says no `network` and `region` (add them as the jq line does)")
        url = short(network)
        if "/" not in url:  # a bare name: the folder's project
            url = f"projects/{project or '?'}/global/networks/{network}"
        owner = url.split("/")[1]
        try:
            found.append(from_answer(item, owner, region.rsplit("/", 1)[-1], url))
        except (KeyError, TypeError, ValueError) as exc:
            raise FabricCheckError(f"{path}: [{i}]: {exc}") from None
    return found
