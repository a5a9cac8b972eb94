"""What a Compute Engine list answer is, and what a file holds when it is not one.

A list is read from three shapes: gcloud's flat list (`gcloud compute instances list --format=json`), the API's
plain list page (`{"kind": "compute#instanceList", "items": [...], "nextPageToken"?}`, what instances.list,
resourcePolicies.list, networks.list, subnetworks.list and firewalls.list return) and the API's aggregated list
(`{"kind": "compute#instanceAggregatedList", "items": {"zones/us-central1-a": {"instances": [...]}}}`). The API
leaves `items` out of a page with no resource, so a page that says its kind is a complete empty answer; an
object that says neither its kind nor holds `items` is not a list at all (`{}`, `{"Items": []}`), and a file of
another kind (a networks list saved as instances-list.json, an AWS or Azure answer) is named for what it holds.
Every resource and page carries its `kind` (Compute API reference), which gcloud prints too.

`CALLS` is the single list of Compute API calls: the live fetch issues them, dumps are named after the gcloud command
that makes the same list, and `--print-role` lists their permissions.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fabriccheck.errors import FabricCheckError
from fabriccheck.sources.shape import Shape


@dataclass(frozen=True)
class GcpCall:
    resource: str  # the API's collection: instances, resourcePolicies, networks, subnetworks, firewalls
    gcloud: str  # the gcloud command that lists the same resources
    fact: str  # what it tells us, recorded in Inventory.collected (model.fact_key)
    scope: str  # zone, region or global: where the API keeps them (aggregated lists span every zone/region)
    required: bool = True
    iam: str = ""  # the IAM permissions' collection where it is not `resource`'s


    @property
    def dump_file(self) -> str:
        # gcloud compute networks subnets list -> networks-subnets-list.json
        return self.gcloud.removeprefix("gcloud compute ").replace(" ", "-") + ".json"

    @property
    def permission(self) -> str:
        # aggregatedList and list are both covered by compute.<collection>.list (Compute IAM permissions).
        return f"compute.{self.iam or self.resource}.list"

    @property
    def command(self) -> str:
        return f"{self.gcloud} --project PROJECT --format=json"


# Read order: what places instances and what networks are, before the instances that name them.
RESOURCE_POLICIES = GcpCall("resourcePolicies", "gcloud compute resource-policies list", "resource_policies", "region")
NETWORKS = GcpCall("networks", "gcloud compute networks list", "networks", "global")
SUBNETWORKS = GcpCall("subnetworks", "gcloud compute networks subnets list", "subnetworks", "region")
FIREWALLS = GcpCall("firewalls", "gcloud compute firewall-rules list", "firewalls", "global")
# Global network firewall policies with their rules (networkFirewallPolicies.list; each item a FirewallPolicy as
# networkFirewallPolicies.get returns it, `rules` included: https://cloud.google.com/compute/docs/reference/rest/v1/
# networkFirewallPolicies/get). Not required: a dump saved before them leaves governed networks not judged. Its
# permissions are compute.firewallPolicies.*, as hierarchical policies' are: there is no compute.networkFirewallPolicies
# permission (roles/compute.viewer and roles/compute.securityAdmin grant compute.firewallPolicies.list,
# iann0036/iam-dataset@0197cfea gcp/roles/compute.viewer.json; `gcloud compute network-firewall-policies
# test-iam-permissions` tests compute.firewallPolicies.get on a network firewall policy).
NETWORK_FIREWALL_POLICIES = GcpCall(
    "networkFirewallPolicies",
    "gcloud compute network-firewall-policies list",
    "network_firewall_policies",
    "global",
    required=False,
    iam="firewallPolicies",
)
INSTANCES = GcpCall("instances", "gcloud compute instances list", "instances", "zone")
CALLS = (RESOURCE_POLICIES, NETWORKS, SUBNETWORKS, FIREWALLS, NETWORK_FIREWALL_POLICIES, INSTANCES)


_PREFIX = "compute#"
# The Compute API's singular of each collection: its resources' kind is compute#<singular>, its pages'
# compute#<singular>List and compute#<singular>AggregatedList.
_SINGULAR = {
    "instances": "instance",
    "resourcePolicies": "resourcePolicy",
    "networks": "network",
    "subnetworks": "subnetwork",
    "firewalls": "firewall",
    "networkFirewallPolicies": "firewallPolicy",  # compute#firewallPolicy, pages compute#firewallPolicyList
}
_PLURAL = {singular: plural for plural, singular in _SINGULAR.items()}


def item_kind(call: GcpCall) -> str:
    return f"{_PREFIX}{_SINGULAR[call.resource]}"


def page_kinds(call: GcpCall) -> tuple[str, str]:
    """The kinds of a plain list page and of an aggregated list page of `call`."""
    singular = _SINGULAR[call.resource]
    return f"{_PREFIX}{singular}List", f"{_PREFIX}{singular}AggregatedList"


def _kind_named(kind: str) -> str:
    """compute#networkList -> 'a Compute API list of networks (kind compute#networkList)'."""
    name = kind.removeprefix(_PREFIX)
    for suffix, what in (("AggregatedList", "an aggregated Compute API list of"), ("List", "a Compute API list of")):
        if name.endswith(suffix):
            base = name.removesuffix(suffix)
            return f"{what} {_PLURAL.get(base, base + 's')} (kind {kind})"
    return f"{_PLURAL.get(name, name + 's')} (kind {kind})" if kind.startswith(_PREFIX) else f"kind {kind}"


def foreign(item: dict[str, Any], call: GcpCall) -> str | None:
    """What a resource of a flat list is when it is not one of `call`'s, or None (it is, or cannot be told)."""
    kind = item.get("kind")
    if isinstance(kind, str) and kind:  # a live answer's resources say "" when the endpoint sent none
        return None if kind == item_kind(call) else _kind_named(kind)
    if "InstanceId" in item or "VpcId" in item or "GroupId" in item:
        return "AWS EC2 resources (aws ec2 describe-* output)"
    ident = item.get("id")
    if isinstance(ident, str) and ident.lower().startswith("/subscriptions/"):
        return "Azure resources (az ... -o json output)"
    return None


def foreign_page(top: dict[str, Any], call: GcpCall) -> str | None:
    """What a top-level object holds when it is not a list answer of `call`, or None when it is one."""
    kind = top.get("kind")
    if isinstance(kind, str) and kind:
        return None if kind in page_kinds(call) else _kind_named(kind)
    if "items" in top:
        return None
    upper = sorted(k for k in top if k[:1].isupper())
    if upper:
        misspelt = [k for k in upper if k.lower() == "items"]
        if misspelt:
            return f"the key {misspelt[0]} where the Compute API writes items"
        return f"an AWS CLI answer (top-level {', '.join(upper[:3])})"
    if isinstance(top.get("value"), list):
        return "an Azure Resource Manager list (top-level value)"
    if not top:
        return "an empty object"
    return f"an object with the keys {', '.join(sorted(top)[:5])} and no items"


def not_a_list(where: str, call: GcpCall, holds: str) -> FabricCheckError:
    plain, _ = page_kinds(call)
    return FabricCheckError(
        f"{where}: holds {holds}, not a list of {call.resource} (expected the output of `{call.gcloud} "
        f"--format=json`, or a Compute API page of kind {plain})"
    )


def checked(where: str, path: str, item: dict[str, Any], call: GcpCall) -> dict[str, Any]:
    """`item`, when it is a resource of `call`; a resource of another kind is an error naming the file."""
    holds = foreign(item, call)
    if holds is not None:
        raise not_a_list(where, call, f"{holds} at {path}")
    return item


def items_of(shape: Shape, doc: Any, call: GcpCall) -> Iterator[tuple[str, dict[str, Any]]]:
    """The resources of an answer held whole (as the dump reader streams them: dump._Answer), each with its path.
    A page that ends with a nextPageToken is refused here: whoever holds one whole must follow the token."""
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            yield f"[{i}]", checked(shape.where, f"[{i}]", shape.obj(item, f"[{i}]"), call)
        return
    if not isinstance(doc, dict):
        raise FabricCheckError(f"{shape.where}: expected a JSON list of {call.resource} (gcloud --format=json)")
    holds = foreign_page(doc, call)
    if holds is not None:
        raise not_a_list(shape.where, call, holds)
    if doc.get("nextPageToken"):
        raise FabricCheckError(f"{shape.where}: ends with a nextPageToken: the answer is cut short")
    items = doc.get("items")
    if isinstance(items, dict):
        if not items and doc.get("kind") != page_kinds(call)[1]:
            raise not_a_list(shape.where, call, "an items object without scopes or kind")
        for scope, scoped in items.items():
            for i, item in enumerate(shape.items(scoped, call.resource, f"items.{scope}")):
                path = f"items.{scope}.{call.resource}[{i}]"
                yield path, checked(shape.where, path, shape.obj(item, path), call)
        return
    for i, item in enumerate(shape.items(doc, "items", "")):
        yield f"[{i}]", checked(shape.where, f"[{i}]", shape.obj(item, f"[{i}]"), call)
