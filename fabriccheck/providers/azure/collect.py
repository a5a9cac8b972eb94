"""Live Azure collection: the fetch half. Per subscription, every list call of the ARM call table through
azure-mgmt-compute and azure-mgmt-network (nextLink paging by the SDK, azure-core's retries honouring
Retry-After), concurrently over subscriptions through the shared worker pool; the answers go through the same
normalizer as dumps. Only GET requests: `role_definition()` lists the read actions and a test proves it.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from fabriccheck.errors import FabricCheckError
from fabriccheck.gcpause import paused_gc
from fabriccheck.inventory import Inventory
from fabriccheck.model import CollectionError
from fabriccheck.providers.azure.normalize import (
    AVAILABILITY_SET_LIST,
    CALLS,
    NIC_LIST,
    PPG_LIST,
    SCALE_SET_LIST,
    SCALE_SET_VM_LIST,
    SKU_LIST,
    VM_LIST,
    VNET_LIST,
    ArmCall,
    Normalizer,
)
from fabriccheck.redaction import first_line
from fabriccheck.sources.fleet import DEFAULT_CONCURRENCY, CallCount, RateLimits, scope_status, settle_gc
from fabriccheck.sources.parallel import in_parallel
from fabriccheck.sources.progress import API_CALLS, Progress
from fabriccheck.sources.retries import RETRIES, retry_policy
from fabriccheck.sources.scope import BAD_RESPONSE, Scope


@dataclass(frozen=True)
class Cloud:
    """An Azure cloud: its Resource Manager endpoint and its Entra ID authority (azure-identity's
    AzureAuthorityHosts; ARM endpoints from `az cloud show`)."""

    endpoint: str
    authority: str


CLOUDS = {
    "public": Cloud("https://management.azure.com", "login.microsoftonline.com"),
    "usgov": Cloud("https://management.usgovcloudapi.net", "login.microsoftonline.us"),
    "china": Cloud("https://management.chinacloudapi.cn", "login.chinacloudapi.cn"),
}
# Listing subscriptions (Microsoft.Resources); api-version as the az CLI's subscription list uses.
SUBSCRIPTIONS_API = "2022-12-01"
# --management-group: the group's descendants (nested groups included), Microsoft.Management's GA api-version.
MANAGEMENT_GROUPS_API = "2020-05-01"
DESCENDANTS_READ = "Microsoft.Management/managementGroups/descendants/read"
MANAGEMENT_GROUP = re.compile(r"[\w().-]{1,90}")  # management group ids: up to 90 of letters, digits, -_().
NO_CREDENTIAL_HINT = "az login, a service principal's AZURE_* variables, workload or managed identity"
# Retries of throttled (429, honouring Retry-After) and failed (5xx) calls before one is recorded.
RETRY_TOTAL = RETRIES.max_attempts - 1


def _dicts(paged: Any) -> list[dict[str, Any]]:
    """An SDK pager's items as ARM's own JSON (the SDK's models are views over it), read page by page with the
    paging guards of answers.py."""
    from fabriccheck.providers.azure.answers import items_of

    return items_of(paged, _as_dict)


def _as_dict(item: Any) -> dict[str, Any]:
    found: dict[str, Any] = item.as_dict()
    return found


def _list(call: ArmCall, compute: Any, network: Any, groups: list[str]) -> list[dict[str, Any]]:
    def each(by_group: Callable[[str], Iterable[Any]], everything: Callable[[], Iterable[Any]]) -> list[Any]:
        if groups:
            return [item for group in groups for item in _dicts(by_group(group))]
        return _dicts(everything())

    if call is VM_LIST:
        return each(compute.virtual_machines.list, compute.virtual_machines.list_all)
    if call is SCALE_SET_LIST:
        return each(compute.virtual_machine_scale_sets.list, compute.virtual_machine_scale_sets.list_all)
    if call is AVAILABILITY_SET_LIST:
        return each(compute.availability_sets.list, compute.availability_sets.list_by_subscription)
    if call is PPG_LIST:
        return each(
            compute.proximity_placement_groups.list_by_resource_group,
            compute.proximity_placement_groups.list_by_subscription,
        )
    if call is NIC_LIST:
        return each(network.network_interfaces.list, network.network_interfaces.list_all)
    if call is VNET_LIST:
        return each(network.virtual_networks.list, network.virtual_networks.list_all)
    raise AssertionError(call)


# The VMs' run-time status (power state) in one paged call: the VM list has no instance views, and
# `$expand=instanceView` on it needs a $filter; statusOnly=true gives every VM's instance view and nothing else
# (Microsoft.Compute VirtualMachines_ListAll). Subscription-wide, so with --resource-group too; its VMs are matched
# by id. The same read permission as the VM list.
VM_STATUS_LIST = ArmCall("VirtualMachines.ListAll(statusOnly)", "az vm list -d", VM_LIST.fact, VM_LIST.permission,
                         True)  # fmt: skip


def _add_power_states(vms: list[dict[str, Any]], statuses: list[dict[str, Any]]) -> None:
    """Each VM's instance view from the statusOnly answer, under its properties as $expand would put it."""
    views = {
        str(s.get("id")).lower(): view
        for s in statuses
        if isinstance(view := (s.get("properties") or {}).get("instanceView"), dict)
    }
    for vm in vms:
        view = views.get(str(vm.get("id")).lower())
        if view is not None and isinstance(vm.get("properties"), dict):
            vm["properties"]["instanceView"] = view


def _message(exc: Any) -> str:
    return str(getattr(exc.error, "message", None) or exc.message or first_line(exc)).splitlines()[0]


def _error(call: ArmCall, scope: Scope, exc: Exception) -> CollectionError:
    from azure.core.exceptions import DecodeError, HttpResponseError

    from fabriccheck.providers.azure.answers import BadArmAnswer

    if isinstance(exc, BadArmAnswer | DecodeError) or not isinstance(exc, _call_errors()[0]):
        # A 200 that is not the list, paging that does not end, a body the SDK could not read.
        return scope.error(call.name, BAD_RESPONSE, first_line(exc))
    if isinstance(exc, HttpResponseError):
        status = exc.status_code or 0
        code = str(getattr(exc.error, "code", None) or exc.reason or status)
        text = str(getattr(exc.error, "message", None) or exc.message or first_line(exc)).splitlines()[0]
        if status in (401, 403):
            return scope.denied(call.name, f"{code}: {text}", call.permission)
        if status == 429:
            return scope.throttled(call.name, f"HTTP 429 {code}")
        if status == 404:
            return scope.error(call.name, "NotFound", f"{code}: {text}")
        return scope.error(call.name, f"HTTP{status}", f"{code}: {text}")
    return scope.unreachable(call.name, exc)  # no connection, a reset, a timeout (after azure-core's retries)


def _call_errors() -> tuple[type[Exception], ...]:
    """What one ARM call may raise that is that call's failure: azure-core's errors, and the SDK's deserializer's
    for an answer whose fields it cannot read."""
    from azure.core.exceptions import AzureError, DeserializationError

    return AzureError, DeserializationError


class _Calls:
    """One subscription's calls, one at a time: each failure is recorded against its call, and the rest go on."""

    def __init__(self, subscription: str, progress: Progress) -> None:
        self.subscription = subscription
        self.scope = Scope("azure", subscription)
        self.progress = progress
        self.errors: list[CollectionError] = []

    def one(self, call: ArmCall, fetch: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]] | None:
        from azure.core.exceptions import ClientAuthenticationError

        self.progress.step(self.subscription, call.name)
        try:
            return fetch()
        except ClientAuthenticationError as exc:
            if getattr(exc, "status_code", None) == 403:
                self.errors.append(_error(call, self.scope, exc))
                return None
            if getattr(exc, "status_code", None) == 401:
                # Not a permission of one subscription: the token itself was refused (expired, revoked, other
                # tenant), and every call of every subscription would be refused alike.
                code = str(getattr(exc.error, "code", None) or "Unauthorized")
                raise FabricCheckError(
                    f"Azure refused the credential ({code}: {_message(exc)}); sign in again ({NO_CREDENTIAL_HINT}) "
                    "and run again"
                ) from None
            raise FabricCheckError(f"no Azure credential ({NO_CREDENTIAL_HINT}): {first_line(exc)}") from None
        except _call_errors() as exc:
            self.errors.append(_error(call, self.scope, exc))
            return None


def fetch_subscription(
    subscription: str,
    compute: Any,
    network: Any,
    groups: list[str] | None = None,
    progress: Progress | None = None,
) -> tuple[dict[ArmCall, Any], list[CollectionError]]:
    """Every answer for one subscription; failures become CollectionErrors."""
    calls = _Calls(subscription, progress or Progress())
    answers: dict[ArmCall, Any] = {}
    for call in (VM_LIST, SCALE_SET_LIST, AVAILABILITY_SET_LIST, PPG_LIST, NIC_LIST, VNET_LIST):
        found = calls.one(call, functools.partial(_list, call, compute, network, groups or []))
        if found is not None:
            answers[call] = found
        elif call is VM_LIST and calls.errors[-1].code in ("NotFound", "Unreachable"):
            break  # a subscription that does not exist (or an endpoint that does not answer) fails alike
    if VM_LIST in answers:
        statuses = calls.one(VM_STATUS_LIST, lambda: _dicts(compute.virtual_machines.list_all(status_only="true")))
        if statuses is not None:
            _add_power_states(answers[VM_LIST], statuses)
    if SCALE_SET_LIST in answers:
        members = calls.one(SCALE_SET_VM_LIST, lambda: _scale_set_vms(compute, answers[SCALE_SET_LIST]))
        if members is not None:
            answers[SCALE_SET_VM_LIST] = members
    if VM_LIST in answers:
        used = {
            str(((vm.get("properties") or {}).get("hardwareProfile") or {}).get("vmSize")) for vm in answers[VM_LIST]
        } | {str((s.get("sku") or {}).get("name")) for s in answers.get(SCALE_SET_LIST, [])}
        # One list of every size (ARM has no filter by size name); only the sizes in use are kept.
        skus = calls.one(SKU_LIST, lambda: _dicts(compute.resource_skus.list()))
        if skus is not None:
            answers[SKU_LIST] = [s for s in skus if s.get("resourceType") == "virtualMachines" and s.get("name") in
                                 used]  # fmt: skip
    return answers, calls.errors


def _scale_set_vms(compute: Any, scale_sets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The VMs of every Uniform scale set, with their instance views (a Flexible set's VMs are in the VM list)."""
    members: list[dict[str, Any]] = []
    for scale_set in scale_sets:
        props = scale_set.get("properties") or {}
        if str(props.get("orchestrationMode") or "Uniform").lower() == "flexible":
            continue
        group = str(scale_set["id"]).split("/")[4]
        members += _dicts(compute.virtual_machine_scale_set_vms.list(group, scale_set["name"], expand="instanceView"))
    return members


def _credential(cloud: Cloud) -> Any:
    import logging

    from azure.identity import DefaultAzureCredential

    # azure-identity logs a multi-line warning when no credential works; the CLI says it in one line instead.
    logging.getLogger("azure").addHandler(logging.NullHandler())

    return DefaultAzureCredential(authority=cloud.authority)


def _counting(count: CallCount, limits: RateLimits, subscription: str) -> Callable[[Any], None]:
    """azure-core's raw request hook runs for every attempt (it sits after the retry policy); a call keeps its
    x-ms-client-request-id across its retries, so new ids are calls and the rest retries."""
    seen: set[str] = set()
    lock = threading.Lock()

    def hook(request: Any) -> None:
        request_id = str(request.http_request.headers.get("x-ms-client-request-id", ""))
        with lock:
            new = request_id not in seen or not request_id
            seen.add(request_id)
        if new:
            count.call()
        count.attempt()
        API_CALLS.add()
        limits.take("arm", subscription)

    return hook


def clients(
    credential: Any,
    subscription: str,
    endpoint: str,
    verify: str | None = None,
    count: CallCount | None = None,
    limits: RateLimits | None = None,
) -> tuple[Any, Any]:
    from azure.mgmt.compute import ComputeManagementClient
    from azure.mgmt.network import NetworkManagementClient

    from fabriccheck.providers.azure.answers import check_answer

    retry = retry_policy()
    options: dict[str, Any] = {
        "base_url": endpoint,
        # The token's audience follows the endpoint: sovereign clouds and Azure Stack have their own.
        "credential_scopes": [endpoint.rstrip("/") + "/.default"],
        "retry_total": RETRY_TOTAL,
        # azure-core's own back-off (0.8 s doubling, at most 120 s) on the run's scale (RetryPolicy.backoff_base)
        "retry_backoff_factor": retry.backoff(0.8),
        "retry_backoff_max": retry.backoff(120),
        "connection_timeout": RETRIES.connect_timeout,
        "read_timeout": RETRIES.read_timeout,
        "user_agent": "fabriccheck/0.1",
        "raw_request_hook": API_CALLS.add,  # each request sent, retries included
        "raw_response_hook": check_answer,  # a 200 must be an ARM list page (answers.py); each attempt checked
    }
    if verify:
        options["connection_verify"] = verify
    if count is not None:
        options["raw_request_hook"] = _counting(count, limits or RateLimits({}), subscription)  # counts API_CALLS too
    return (
        ComputeManagementClient(credential, subscription, **options),
        NetworkManagementClient(credential, subscription, **options),
    )


def list_subscriptions(compute: Any, endpoint: str) -> list[str]:
    """Every subscription the credential can list (GET /subscriptions, nextLink paging)."""
    from azure.core.exceptions import ClientAuthenticationError

    url = f"{endpoint.rstrip('/')}/subscriptions?api-version={SUBSCRIPTIONS_API}"
    found: list[str] = []
    try:
        for page in _pages(compute, url):
            found += [str(s["subscriptionId"]) for s in page["value"] if s.get("subscriptionId")]
    except ClientAuthenticationError as exc:
        raise FabricCheckError(f"no Azure credential ({NO_CREDENTIAL_HINT}): {first_line(exc)}") from None
    except _call_errors() as exc:
        raise FabricCheckError(f"listing subscriptions at {endpoint} failed: {first_line(exc)}") from None
    return sorted(set(found))


def _pages(compute: Any, url: str) -> Iterator[dict[str, Any]]:
    """The pages of an ARM list read by URL through the client's pipeline (its retries and answer check), with
    the paging guards of answers.py."""
    from azure.core.rest import HttpRequest

    from fabriccheck.providers.azure.answers import pages_of

    def fetch(link: str) -> dict[str, Any]:
        response = compute._client.send_request(HttpRequest("GET", link))
        response.raise_for_status()
        page: dict[str, Any] = response.json()
        return page

    return pages_of(url, fetch)


def management_group_subscriptions(compute: Any, endpoint: str, group: str) -> list[str]:
    """Every subscription under the management group, nested groups included (GET .../descendants, nextLink
    paging); read-only, and it needs Microsoft.Management/managementGroups/descendants/read on the group."""
    from azure.core.exceptions import ClientAuthenticationError

    if not MANAGEMENT_GROUP.fullmatch(group):
        raise FabricCheckError(f"--management-group {group}: not a management group id (its name, not a path)")
    url = (
        f"{endpoint.rstrip('/')}/providers/Microsoft.Management/managementGroups/{group}/descendants"
        f"?api-version={MANAGEMENT_GROUPS_API}"
    )
    found: list[str] = []
    try:
        for page in _pages(compute, url):
            for item in page["value"]:
                if str(item.get("type", "")).lower().endswith("/subscriptions") and item.get("name"):
                    found.append(str(item["name"]).lower())
    except ClientAuthenticationError as exc:
        if getattr(exc, "status_code", None) in (401, 403):
            raise FabricCheckError(
                f"--management-group {group}: listing its subscriptions was denied ({first_line(exc)}); it needs "
                f"{DESCENDANTS_READ} on the group"
            ) from None
        raise FabricCheckError(f"no Azure credential ({NO_CREDENTIAL_HINT}): {first_line(exc)}") from None
    except _call_errors() as exc:
        raise FabricCheckError(
            f"--management-group {group}: listing its subscriptions failed: {first_line(exc)}"
        ) from None
    if not found:
        raise FabricCheckError(f"--management-group {group}: holds no subscription (nested groups included)")
    return sorted(set(found))


def role_for(management_group: str | None = None) -> dict[str, Any]:
    """The least-privilege role; with --management-group it also lists the group's descendants and is assigned
    at the group, so every subscription under it inherits it."""
    from fabriccheck.providers.azure.normalize import SUBSCRIPTIONS_PERMISSION, role_definition

    role = role_definition()
    if management_group is not None:
        # The group's descendants name the subscriptions, so listing subscriptions is not needed.
        role["Actions"] = sorted({*role["Actions"], DESCENDANTS_READ} - {SUBSCRIPTIONS_PERMISSION})
        role["AssignableScopes"] = [f"/providers/Microsoft.Management/managementGroups/{management_group}"]
    return role


def _where(subscription: str) -> Callable[[ArmCall], str]:
    return lambda call: f"ARM {call.name} in subscription {subscription}"


def collect_live(
    subscriptions: list[str],
    *,
    resource_groups: list[str] | None = None,
    endpoint_url: str | None = None,
    cloud: str = "public",
    progress: Progress | None = None,
    credential: Any = None,
    management_group: str | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    limits: RateLimits | None = None,
) -> Inventory:
    """Every subscription (named, under --management-group, or every one the credential lists), `concurrency`
    at a time; one subscription's failure is recorded for it and the rest goes on."""
    if cloud not in CLOUDS:
        raise FabricCheckError(f"--cloud {cloud}: choose from {', '.join(CLOUDS)}")
    if management_group is not None and subscriptions:
        raise FabricCheckError(
            "--subscription and --management-group cannot be used together (name subscriptions, or list a group's)"
        )
    progress = progress or Progress()
    chosen = CLOUDS[cloud]
    endpoint = (endpoint_url or chosen.endpoint).rstrip("/")
    if not endpoint.startswith("https://"):
        raise FabricCheckError(f"--endpoint-url {endpoint_url}: Resource Manager is reached over https:// only")
    credential = credential or _credential(chosen)
    limits = limits or RateLimits()
    if not subscriptions:
        compute, _ = clients(credential, "00000000-0000-0000-0000-000000000000", endpoint)
        if management_group is not None:
            subscriptions = management_group_subscriptions(compute, endpoint, management_group)
        else:
            subscriptions = list_subscriptions(compute, endpoint)
        if not subscriptions:
            raise FabricCheckError("the Azure credential can list no subscription; pass --subscription ID")
    subscriptions = sorted({s.lower() for s in subscriptions})
    counts = {s: CallCount() for s in subscriptions}
    # Clients are made here, in one thread; each subscription's calls then run on the shared pool.
    made = {s: clients(credential, s, endpoint, count=counts[s], limits=limits) for s in subscriptions}
    progress.planned(len(subscriptions))

    def one(subscription: str) -> tuple[dict[ArmCall, Any], list[CollectionError]]:
        answers, errors = fetch_subscription(subscription, *made[subscription], resource_groups or [], progress)
        vms = len(answers.get(VM_LIST) or ()) + len(answers.get(SCALE_SET_VM_LIST) or ())
        reasons = [f"{e.call}: {e.code}" for e in errors]
        progress.finished(scope_status("azure", subscription, None, counts[subscription], vms, reasons))
        return answers, errors

    where = f"management group {management_group}: " if management_group else ""
    inventory = Inventory(source=f"azure live ({where}{', '.join(subscriptions)})")
    fetched = in_parallel(subscriptions, one, concurrency)
    for subscription, (answers, errors) in zip(subscriptions, fetched, strict=True):
        part = Inventory()
        try:
            normalizer = Normalizer(part, subscription, _where(subscription))
            normalizer.per_item = True
            with paused_gc(freeze=False):
                for call in sorted(answers, key=CALLS.index):
                    normalizer.add(call, answers[call])
                normalizer.finish()
        except FabricCheckError as exc:
            # A misshapen answer makes its subscription incomplete, naming the field; the others stand.
            part = Inventory(errors=[Scope("azure", subscription).error("normalize", BAD_RESPONSE, str(exc))])
        del answers
        part.errors.extend(errors)
        reasons = [f"{e.call}: {e.code}" for e in part.errors]
        part.scopes.append(scope_status("azure", subscription, None, counts[subscription], len(part.nodes), reasons))
        inventory.merge(part)
    settle_gc()
    return inventory
