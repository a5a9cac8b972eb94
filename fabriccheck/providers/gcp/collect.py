"""Live Google Cloud collection with google-cloud-compute: the fetch half. Per project, every call of the call
table (aggregated lists across all zones and regions, or plain lists for the zones asked), every page followed;
the answers go through the same normalizer as dumps. Only list calls are made (HTTP GET): `PERMISSIONS` lists
what they need, and `--print-role` and the read-only test are built from it.

`google.cloud.compute_v1` takes about 1.6 s to import, so it is imported here, inside the live path only.
Credentials are Application Default Credentials (user ADC, a service-account key, workload identity, the
metadata server), as google-auth finds them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.model import CollectionError
from fabriccheck.providers.gcp.normalize import (
    CALLS,
    FIREWALLS,
    INSTANCES,
    NETWORKS,
    RESOURCE_POLICIES,
    SUBNETWORKS,
    ZONE,
    GcpCall,
    Normalizer,
    region_of_zone,
)
from fabriccheck.sources.common import (
    API_CALLS,
    BAD_RESPONSE,
    RETRIES,
    Progress,
    Scope,
    first_line,
    in_parallel,
    paused_gc,
)

# Every permission the collector uses: aggregatedList and list of each collection need its .list permission.
PERMISSIONS = tuple(sorted(c.permission for c in CALLS))
SCOPES = ("https://www.googleapis.com/auth/compute.readonly",)
PAGE_SIZE = 500  # the API's largest maxResults


def custom_role() -> dict[str, Any]:
    """The least-privilege custom role for exactly the calls the collector makes (gcloud iam roles create
    fabriccheck --project P --file role.yaml takes this as YAML or JSON)."""
    return {
        "title": "fabriccheck reader",
        "description": "Read-only: lists instances, resource policies, networks, subnetworks and firewall rules",
        "stage": "GA",
        "includedPermissions": list(PERMISSIONS),
    }


_CLIENTS = {
    INSTANCES: "InstancesClient",
    RESOURCE_POLICIES: "ResourcePoliciesClient",
    NETWORKS: "NetworksClient",
    SUBNETWORKS: "SubnetworksClient",
    FIREWALLS: "FirewallsClient",
}
# The proto-plus message field of each collection in a scoped list of an aggregated answer.
_SCOPED_FIELD = {INSTANCES: "instances", RESOURCE_POLICIES: "resource_policies", SUBNETWORKS: "subnetworks"}


class Clients:
    """One client per collection, all on the same credentials and endpoint (clients are thread-safe)."""

    def __init__(self, credentials: Any, endpoint_url: str | None, retry_budget: float) -> None:
        from google.api_core import exceptions, retry
        from google.api_core.client_options import ClientOptions
        from google.cloud import compute_v1

        options = ClientOptions(api_endpoint=endpoint_url) if endpoint_url else None
        self.compute = compute_v1
        self.clients = {
            call: getattr(compute_v1, name)(credentials=credentials, client_options=options)
            for call, name in _CLIENTS.items()
        }
        # 429 and 5xx are retried with exponential backoff and jitter until the budget is spent; then the call is
        # recorded as throttled (or failed) for its project and the rest goes on.
        self.retry = retry.Retry(
            predicate=retry.if_exception_type(
                exceptions.TooManyRequests,
                exceptions.ServiceUnavailable,
                exceptions.InternalServerError,
                exceptions.BadGateway,
                exceptions.GatewayTimeout,
            ),
            initial=min(1.0, retry_budget / 4),
            maximum=16.0,
            multiplier=2.0,
            timeout=retry_budget,
        )


def _pages(clients: Clients, call: GcpCall, project: str, zones: list[str]) -> Iterator[Any]:
    """The answer's pages, each one GET: one aggregated list per project, or one list per zone / region asked."""
    for page in _pages_of(clients, call, project, zones):
        API_CALLS.add()
        yield page


def _pages_of(clients: Clients, call: GcpCall, project: str, zones: list[str]) -> Iterator[Any]:
    client = clients.clients[call]
    common = {"retry": clients.retry, "timeout": RETRIES.read_timeout}
    if call.scope == "global":
        yield from client.list(request={"project": project, "max_results": PAGE_SIZE}, **common).pages
    elif not zones:
        yield from client.aggregated_list(request={"project": project, "max_results": PAGE_SIZE}, **common).pages
    elif call.scope == "zone":
        for zone in zones:
            yield from client.list(request={"project": project, "zone": zone, "max_results": PAGE_SIZE}, **common).pages
    else:
        for region in sorted({region_of_zone(z) or z for z in zones}):
            request = {"project": project, "region": region, "max_results": PAGE_SIZE}
            yield from client.list(request=request, **common).pages


def _items(call: GcpCall, page: Any) -> Iterator[Any]:
    items = page.items
    if hasattr(items, "items") and callable(items.items):  # an aggregated page: scope -> scoped list
        for _scope, scoped in items.items():
            yield from getattr(scoped, _SCOPED_FIELD[call])
    else:
        yield from items


def fetch(
    clients: Clients, call: GcpCall, project: str, zones: list[str], counter: list[int] | None = None
) -> list[dict[str, Any]]:
    """One call's resources as API JSON dicts (camelCase, as gcloud prints them)."""
    found: list[dict[str, Any]] = []
    for page in _pages(clients, call, project, zones):
        if counter is not None:
            counter[0] += 1
        for item in _items(call, page):
            found.append(type(item).to_dict(item, preserving_proto_field_name=False, use_integers_for_enums=False))
    return found


def _error(call: GcpCall, scope: Scope, exc: Exception) -> CollectionError:
    from google.api_core import exceptions

    if isinstance(exc, exceptions.RetryError):
        cause = exc.cause if isinstance(exc.cause, Exception) else None
        if isinstance(cause, exceptions.TooManyRequests):
            return scope.throttled(call.resource, f"429 {first_line(cause)}")
        return scope.error(call.resource, "RetryError", first_line(cause or exc))
    if isinstance(exc, exceptions.TooManyRequests):
        return scope.throttled(call.resource, f"429 {first_line(exc)}")
    if isinstance(exc, (exceptions.Forbidden, exceptions.Unauthorized)):
        return scope.denied(call.resource, first_line(exc), call.permission)
    if isinstance(exc, exceptions.NotFound):
        return scope.error(call.resource, "NotFound", f"{first_line(exc)} (is the project id right?)", call.permission)
    if isinstance(exc, exceptions.GoogleAPICallError):
        return scope.error(call.resource, type(exc).__name__, first_line(exc))
    if isinstance(exc, (ValueError, KeyError, TypeError)):
        return scope.error(call.resource, BAD_RESPONSE, f"the endpoint's answer is not a Compute API answer: {exc}")
    return scope.unreachable(call.resource, exc)


def fetch_project(
    clients: Clients, project: str, zones: list[str], progress: Progress | None = None
) -> tuple[dict[GcpCall, Any], list[CollectionError], int]:
    """Every answer for one project; failures become CollectionErrors. Returns the answers, the errors and the
    number of API requests made (pages)."""
    import requests
    from google.api_core import exceptions
    from google.auth import exceptions as auth_exceptions

    progress = progress or Progress()
    scope = Scope("gcp", project, None)
    answers: dict[GcpCall, Any] = {}
    errors: list[CollectionError] = []
    counter = [0]
    for call in CALLS:
        progress.step(project, call.resource)
        try:
            answers[call] = fetch(clients, call, project, zones, counter)
        except auth_exceptions.GoogleAuthError as exc:
            raise FabricCheckError(f"Google credentials could not be used: {first_line(exc)}") from None
        except (
            exceptions.GoogleAPICallError,
            exceptions.RetryError,
            requests.RequestException,
            ValueError,
            KeyError,
            TypeError,
        ) as exc:
            error = _error(call, scope, exc)
            errors.append(error)
            if error.code in ("Unreachable", "NotFound"):
                break  # the endpoint or the project fails every call alike; one line says it
    return answers, errors, counter[0]


def _normalized(project: str, answers: dict[GcpCall, Any], errors: list[CollectionError]) -> Inventory:
    inventory = Inventory(source="gcp")
    normalizer = Normalizer(inventory, project, lambda c: f"Compute {c.resource}.list in {project}")
    with paused_gc():
        for call in CALLS:
            if call in answers:
                normalizer.add(call, answers[call])
        normalizer.finish()
    inventory.errors.extend(errors)
    return inventory


def credentials() -> tuple[Any, str | None]:
    """Application Default Credentials and their project; a missing credential is one line."""
    import google.auth
    from google.auth import exceptions as auth_exceptions

    try:
        found, project = google.auth.default(scopes=list(SCOPES))
    except auth_exceptions.DefaultCredentialsError as exc:
        raise FabricCheckError(
            "no Google credentials found (Application Default Credentials): run `gcloud auth application-default "
            f"login`, set GOOGLE_APPLICATION_CREDENTIALS, or use --from-dump DIR ({first_line(exc)})"
        ) from None
    return found, project


def check_zones(zones: Iterable[str]) -> list[str]:
    zones = list(zones)
    for zone in zones:
        if not ZONE.fullmatch(zone):
            raise FabricCheckError(f"--zone {zone}: not a Compute Engine zone (e.g. us-central1-a)")
    return zones


def collect_live(
    projects: list[str],
    *,
    zones: list[str] | None = None,
    endpoint_url: str | None = None,
    progress: Progress | None = None,
    retry_budget: float = 60.0,
) -> Inventory:
    zones = check_zones(zones or [])
    if endpoint_url is not None and not endpoint_url.startswith(("http://", "https://")):
        raise FabricCheckError(f"--endpoint-url {endpoint_url}: give the scheme (https://... or http://...)")
    found, default_project = credentials()
    projects = list(dict.fromkeys(projects)) or ([default_project] if default_project else [])
    if not projects:
        raise FabricCheckError("no project: pass --project PROJECT (repeatable); the credentials name none")
    clients = Clients(found, endpoint_url, retry_budget)
    fetched = list(in_parallel(projects, lambda p: fetch_project(clients, p, zones, progress)))
    inventory = Inventory(source=f"gcp live ({', '.join(projects)})")
    for project, (answers, errors, _calls) in zip(projects, fetched, strict=True):
        inventory.merge(_normalized(project, answers, errors))
    return inventory
