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
from fabriccheck.gcpause import paused_gc
from fabriccheck.inventory import Inventory
from fabriccheck.model import CollectionError
from fabriccheck.providers.gcp import effective, listing
from fabriccheck.providers.gcp.listing import (
    CALLS,
    FIREWALLS,
    INSTANCES,
    NETWORK_FIREWALL_POLICIES,
    NETWORKS,
    RESOURCE_POLICIES,
    SUBNETWORKS,
    GcpCall,
)
from fabriccheck.providers.gcp.normalize import ZONE, Normalizer, region_of_zone
from fabriccheck.redaction import first_line
from fabriccheck.sources.fleet import DEFAULT_CONCURRENCY, CallCount, RateLimits, scope_status, settle_gc
from fabriccheck.sources.parallel import in_parallel
from fabriccheck.sources.progress import API_CALLS, Progress
from fabriccheck.sources.retries import RETRIES, retry_policy
from fabriccheck.sources.scope import BAD_RESPONSE, UNREACHABLE, Scope

# Every permission the collector uses: aggregatedList and list of each collection need its .list permission, and
# the effective firewall policies of each GPU network (effective.py) compute.networks.getRegionEffectiveFirewalls.
PERMISSIONS = tuple(sorted([*(c.permission for c in CALLS), effective.PERMISSION]))
# --organization / --folder: Resource Manager v3 lists the projects and folders under a parent.
LISTING_PERMISSIONS = ("resourcemanager.folders.list", "resourcemanager.projects.list")
SCOPES = ("https://www.googleapis.com/auth/compute.readonly",)
PAGE_SIZE = 500  # the API's largest maxResults


def custom_role(listing: bool = False) -> dict[str, Any]:
    """The least-privilege custom role for exactly the calls the collector makes (gcloud iam roles create
    fabriccheck --project P --file role.yaml takes this as YAML or JSON). `listing`: --organization / --folder
    also list projects and folders (grant that role at the organization or folder)."""
    return {
        "title": "fabriccheck reader",
        "description": "Read-only: lists instances, resource policies, networks, subnetworks, firewall rules and "
        "network firewall policies, and reads the firewall policies in effect on GPU networks"
        + (", and the projects and folders under an organization or folder" if listing else ""),
        "stage": "GA",
        "includedPermissions": sorted(PERMISSIONS + (LISTING_PERMISSIONS if listing else ())),
    }


_CLIENTS = {
    INSTANCES: "InstancesClient",
    RESOURCE_POLICIES: "ResourcePoliciesClient",
    NETWORKS: "NetworksClient",
    SUBNETWORKS: "SubnetworksClient",
    FIREWALLS: "FirewallsClient",
    # networkFirewallPolicies.list: NetworkFirewallPoliciesClient.list(project=...) pages FirewallPolicy items with
    # their rules (google-cloud-compute, compute_v1.services.network_firewall_policies).
    NETWORK_FIREWALL_POLICIES: "NetworkFirewallPoliciesClient",
}
# The proto-plus message field of each collection in a scoped list of an aggregated answer.
_SCOPED_FIELD = {INSTANCES: "instances", RESOURCE_POLICIES: "resource_policies", SUBNETWORKS: "subnetworks"}


class Clients:
    """One client per collection, all on the same credentials and endpoint (clients are thread-safe)."""

    def __init__(self, credentials: Any, endpoint_url: str | None, retry_budget: float) -> None:
        from google.api_core.client_options import ClientOptions
        from google.cloud import compute_v1

        self.retry_budget = retry_budget
        self.policy = retry_policy()
        options = ClientOptions(api_endpoint=endpoint_url) if endpoint_url else None
        self.compute = compute_v1
        self.clients = {
            call: getattr(compute_v1, name)(credentials=credentials, client_options=options)
            for call, name in _CLIENTS.items()
        }
        # regionNetworkFirewallPolicies.getEffectiveFirewalls, per GPU network and region (effective.py).
        self.effective = compute_v1.RegionNetworkFirewallPoliciesClient(credentials=credentials, client_options=options)
        self.retry = self.retry_counting(CallCount())

    def retry_counting(self, count: CallCount) -> Any:
        """429 and 5xx are retried with exponential backoff and jitter until the budget is spent; then the call is
        recorded as throttled (or failed) for its project and the rest goes on. Each retry is counted."""
        from google.api_core import exceptions, retry

        retry_budget = self.retry_budget
        server_side = retry.if_exception_type(
            exceptions.TooManyRequests,
            exceptions.ServiceUnavailable,
            exceptions.InternalServerError,
            exceptions.BadGateway,
            exceptions.GatewayTimeout,
        )
        return retry.Retry(
            # A connection reset (or a body cut mid-answer) is retried as a 5xx is; a refused connection is not: the
            # endpoint is not there, and every call would wait out the budget alike.
            predicate=lambda exc: server_side(exc) or is_reset(exc),
            # On the run's scale (RetryPolicy.backoff_base); the budget is scaled where it is chosen (collect_live).
            initial=min(self.policy.backoff(1.0), retry_budget / 4),
            maximum=self.policy.backoff(16.0),
            multiplier=2.0,
            timeout=retry_budget,
            on_error=lambda _: count.retry(),
        )


class NotTheAnswer(ValueError):
    """A 200 answer that is not the call's answer (a page of another kind, or none: `{}`), or pages whose tokens
    lead back to a page already read. Recorded as BadResponse for the call; the rest of the run goes on."""


# Pages read per list before the answer is taken to loop: 10,000 pages of 500 are 5 million resources, far past
# any project's quota of instances, policies, networks or firewall rules.
MAX_PAGES = 10_000


def _pages(clients: Clients, call: GcpCall, project: str, zones: list[str], retry: Any = None) -> Iterator[Any]:
    """The answer's pages, each one GET: one aggregated list per project, or one list per zone / region asked. Each
    page must say it is this call's list (the API sets `kind` on every page), and a nextPageToken already followed
    means the endpoint loops: both are refused before another request is made."""
    kinds = listing.page_kinds(call)
    for pages in _lists(clients, call, project, zones, retry):
        tokens: set[str] = set()
        for number, page in enumerate(pages, 1):
            API_CALLS.add()
            if page.kind not in kinds:
                raise NotTheAnswer(
                    f"the endpoint's 200 answer to the {call.resource} list is a page of kind {page.kind or '(none)'}, "
                    f"not {' or '.join(kinds)}: it is not the list, and its {call.resource} were not read"
                )
            yield page
            token = page.next_page_token
            if token and (token in tokens or number >= MAX_PAGES):
                why = "leads back to a page already read" if token in tokens else f"follows {MAX_PAGES} pages"
                raise NotTheAnswer(
                    f"the endpoint's nextPageToken {token[:40]!r} {why} (page {number}): the list never ends"
                )
            tokens.add(token)


def _lists(clients: Clients, call: GcpCall, project: str, zones: list[str], retry: Any = None) -> Iterator[Any]:
    """The pages of each list request the call makes (one per zone or region asked, or one aggregated)."""
    client = clients.clients[call]
    common = {"retry": retry or clients.retry, "timeout": RETRIES.read_timeout}
    if call.scope == "global":
        yield client.list(request={"project": project, "max_results": PAGE_SIZE}, **common).pages
    elif not zones:
        yield client.aggregated_list(request={"project": project, "max_results": PAGE_SIZE}, **common).pages
    elif call.scope == "zone":
        for zone in zones:
            yield client.list(request={"project": project, "zone": zone, "max_results": PAGE_SIZE}, **common).pages
    else:
        for region in sorted({region_of_zone(z) or z for z in zones}):
            request = {"project": project, "region": region, "max_results": PAGE_SIZE}
            yield client.list(request=request, **common).pages


def _items(call: GcpCall, page: Any) -> Iterator[Any]:
    items = page.items
    if hasattr(items, "items") and callable(items.items):  # an aggregated page: scope -> scoped list
        for _scope, scoped in items.items():
            yield from getattr(scoped, _SCOPED_FIELD[call])
    else:
        yield from items


def fetch(
    clients: Clients,
    call: GcpCall,
    project: str,
    zones: list[str],
    counter: list[int] | None = None,
    count: CallCount | None = None,
    limits: RateLimits | None = None,
) -> list[dict[str, Any]]:
    """One call's resources as API JSON dicts (camelCase, as gcloud prints them). Each page is one request,
    counted in `count` (with its retries) and paced by the project's token bucket in `limits`."""
    found: list[dict[str, Any]] = []
    count = count or CallCount()
    limits = limits or RateLimits({})
    limits.take("compute", project)
    for page in _pages(clients, call, project, zones, clients.retry_counting(count)):
        count.call()
        count.attempt()
        limits.take("compute", project)  # for the next page (one token too many after the last: harmless)
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
        if cause is not None and is_reset(cause):
            return scope.error(call.resource, UNREACHABLE, f"{first_line(cause)}: still failing after retries")
        return scope.error(call.resource, "RetryError", first_line(cause or exc))
    if isinstance(exc, exceptions.TooManyRequests):
        return scope.throttled(call.resource, f"429 {first_line(exc)}")
    if isinstance(exc, (exceptions.Forbidden, exceptions.Unauthorized)):
        return scope.denied(call.resource, first_line(exc), call.permission)
    if isinstance(exc, exceptions.NotFound):
        return scope.error(call.resource, "NotFound", f"{first_line(exc)} (is the project id right?)", call.permission)
    if isinstance(exc, exceptions.GoogleAPICallError):
        return scope.error(call.resource, type(exc).__name__, first_line(exc))
    from google.protobuf import json_format  # type: ignore[import-untyped]

    if isinstance(exc, NotTheAnswer):
        return scope.error(call.resource, BAD_RESPONSE, str(exc))
    if isinstance(exc, (ValueError, KeyError, TypeError, json_format.Error)):
        # A field of an unexpected shape: the client's own types refuse it (protobuf names the field).
        return scope.error(call.resource, BAD_RESPONSE, f"the endpoint's answer is not a Compute API answer: {exc}")
    return scope.unreachable(call.resource, exc)


def fetch_project(
    clients: Clients,
    project: str,
    zones: list[str],
    progress: Progress | None = None,
    count: CallCount | None = None,
    limits: RateLimits | None = None,
) -> tuple[dict[GcpCall, Any], list[CollectionError], int]:
    """Every answer for one project; failures become CollectionErrors. Returns the answers, the errors and the
    number of API requests made (pages)."""
    import requests
    from google.api_core import exceptions
    from google.auth import exceptions as auth_exceptions
    from google.protobuf import json_format

    progress = progress or Progress()
    scope = Scope("gcp", project, None)
    answers: dict[GcpCall, Any] = {}
    errors: list[CollectionError] = []
    counter = [0]
    for call in CALLS:
        progress.step(project, call.resource)
        try:
            answers[call] = fetch(clients, call, project, zones, counter, count, limits)
        except auth_exceptions.GoogleAuthError as exc:
            raise credential_error(exc) from None
        except exceptions.Unauthorized as exc:
            # 401: the token itself was refused (expired, revoked), so every project would fail alike.
            raise credential_error(exc) from None
        except (
            exceptions.GoogleAPICallError,
            exceptions.RetryError,
            requests.RequestException,
            ValueError,
            KeyError,
            TypeError,
            json_format.Error,
        ) as exc:
            error = _error(call, scope, exc)
            errors.append(error)
            cause = exc.cause if isinstance(exc, exceptions.RetryError) else exc
            if error.code == "NotFound" or (error.code == UNREACHABLE and not (cause and is_reset(cause))):
                break  # the endpoint is not there, or the project is not: every call fails alike; one line says it
    return answers, errors, counter[0]


def _normalized(project: str, answers: dict[GcpCall, Any], errors: list[CollectionError]) -> Inventory:
    inventory = Inventory(source="gcp")
    normalizer = Normalizer(inventory, project, lambda c: f"Compute {c.resource}.list in {project}")
    normalizer.per_item = True
    with paused_gc(freeze=False):
        for call in CALLS:
            if call in answers:
                normalizer.add(call, answers[call])
        normalizer.finish()
    inventory.errors.extend(errors)
    return inventory


def is_reset(exc: BaseException) -> bool:
    """A connection that was reset or cut mid-answer (worth a retry), not one that was refused or never resolved
    (the endpoint is not there). requests wraps the socket error: ConnectionError(ProtocolError('Connection aborted.',
    ConnectionResetError(104, ...))) for a reset, ConnectionError(MaxRetryError(NewConnectionError)) for a refusal."""
    import requests

    if isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return True
    if not isinstance(exc, requests.exceptions.ConnectionError) or isinstance(exc, requests.exceptions.Timeout):
        return False
    chain: list[BaseException] = []
    pending: list[BaseException] = [exc]
    while pending and len(chain) < 32:  # the exception, what it wraps (args, reason) and what caused it
        current = pending.pop()
        chain.append(current)
        pending += [a for a in current.args if isinstance(a, BaseException)]
        pending += [c for c in (current.__cause__, current.__context__, getattr(current, "reason", None)) if c]
    names = {type(e).__name__ for e in chain}
    if names & {"NewConnectionError", "NameResolutionError", "ConnectionRefusedError"}:
        return False
    cut = (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)
    return any(isinstance(e, cut) for e in chain) or bool(
        names & {"RemoteDisconnected", "ProtocolError", "IncompleteRead"}
    )


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


def credential_error(exc: BaseException) -> FabricCheckError:
    return FabricCheckError(f"Google credentials could not be used ({first_line(exc)}); {REFRESH_HINT}")


REFRESH_HINT = (
    "refresh them (gcloud auth application-default login, or a valid key in GOOGLE_APPLICATION_CREDENTIALS) "
    "and run again"
)


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
    retry_budget: float | None = None,
    organization: str | None = None,
    folder: str | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    limits: RateLimits | None = None,
) -> Inventory:
    """Every project (named, or every active one under --organization / --folder), `concurrency` at a time."""
    zones = check_zones(zones or [])
    progress = progress or Progress()
    if endpoint_url is not None and not endpoint_url.startswith(("http://", "https://")):
        raise FabricCheckError(f"--endpoint-url {endpoint_url}: give the scheme (https://... or http://...)")
    parent = listing_parent(organization, folder, projects)
    found, default_project = credentials()
    limits = limits or RateLimits()
    if parent is not None:
        projects = active_projects(found, endpoint_url, parent, limits)
    projects = list(dict.fromkeys(projects)) or ([default_project] if default_project else [])
    if not projects:
        raise FabricCheckError("no project: pass --project PROJECT (repeatable); the credentials name none")
    # 60 s of retrying a call before it is recorded, on the run's back-off scale (RetryPolicy.backoff_base)
    clients = Clients(found, endpoint_url, retry_policy().backoff(60.0) if retry_budget is None else retry_budget)
    progress.planned(len(projects))

    def one(project: str) -> tuple[dict[GcpCall, Any], list[CollectionError], CallCount]:
        count = CallCount()
        answers, errors, _ = fetch_project(clients, project, zones, progress, count, limits)
        items = len(answers.get(INSTANCES) or ())
        progress.finished(scope_status("gcp", project, None, count, items, [f"{e.call}: {e.code}" for e in errors]))
        return answers, errors, count

    where = f"{parent}: " if parent else ""
    inventory = Inventory(source=f"gcp live ({where}{', '.join(projects)})")
    for project, (answers, errors, count) in zip(projects, in_parallel(projects, one, concurrency), strict=True):
        try:
            part = _normalized(project, answers, errors)
        except FabricCheckError as exc:
            # A misshapen answer makes its project incomplete, naming the field; the others stand.
            part = Inventory(errors=[*errors, Scope("gcp", project).error("normalize", BAD_RESPONSE, str(exc))])
        del answers
        if part.nodes:
            read, failed = effective.fetch(clients, effective.targets(part), limits, count)
            effective.record(part, read)
            part.errors.extend(failed)
        reasons = [f"{e.call}: {e.code}" for e in part.errors]
        part.scopes.append(scope_status("gcp", project, None, count, len(part.nodes), reasons))
        inventory.merge(part)
    settle_gc()
    return inventory


def listing_parent(organization: str | None, folder: str | None, projects: list[str]) -> str | None:
    """`organizations/ID` or `folders/ID` to list projects under, checked; None when projects are named."""
    given = [(o, v) for o, v in (("--organization", organization), ("--folder", folder)) if v is not None]
    if len(given) > 1:
        raise FabricCheckError("--organization and --folder cannot be used together (give the one to list)")
    if given and projects:
        raise FabricCheckError(f"--project and {given[0][0]} cannot be used together (name projects, or list them)")
    if not given:
        return None
    option, value = given[0]
    if not value.isdigit():
        raise FabricCheckError(f"{option} {value}: give the numeric id (gcloud {option[2:]}s list shows it)")
    return f"{'organizations' if option == '--organization' else 'folders'}/{value}"


def active_projects(credentials: Any, endpoint_url: str | None, parent: str, limits: RateLimits) -> list[str]:
    """Every ACTIVE project under `parent` and its folders, walked folder by folder (Resource Manager v3
    ListProjects and ListFolders, read-only). At the same --endpoint-url as Compute when one is given."""
    from google.api_core import exceptions
    from google.api_core.client_options import ClientOptions
    from google.auth import exceptions as auth_exceptions
    from google.cloud import resourcemanager_v3

    options = ClientOptions(api_endpoint=endpoint_url) if endpoint_url else None
    # REST, as the Compute clients use (the default gRPC transport would need its own channel and endpoint form).
    projects_client = resourcemanager_v3.ProjectsClient(
        credentials=credentials, client_options=options, transport="rest"
    )
    folders_client = resourcemanager_v3.FoldersClient(credentials=credentials, client_options=options, transport="rest")
    active = resourcemanager_v3.Project.State.ACTIVE
    found: list[str] = []
    pending = [parent]
    try:
        while pending:
            under = pending.pop(0)
            limits.take("cloudresourcemanager", "listing")
            for project in projects_client.list_projects(parent=under, timeout=RETRIES.read_timeout):
                if project.state == active:
                    found.append(project.project_id)
            limits.take("cloudresourcemanager", "listing")
            for child in folders_client.list_folders(parent=under, timeout=RETRIES.read_timeout):
                if child.state == resourcemanager_v3.Folder.State.ACTIVE:
                    pending.append(child.name)
    except auth_exceptions.GoogleAuthError as exc:
        raise credential_error(exc) from None
    except (exceptions.Forbidden, exceptions.PermissionDenied) as exc:
        raise FabricCheckError(
            f"listing the projects under {parent} was denied ({first_line(exc)}); it needs "
            f"{' and '.join(LISTING_PERMISSIONS)} on it"
        ) from None
    except exceptions.GoogleAPICallError as exc:
        raise FabricCheckError(f"listing the projects under {parent} failed: {first_line(exc)}") from None
    if not found:
        raise FabricCheckError(f"no active project under {parent} (or none this credential may list)")
    return sorted(set(found))
