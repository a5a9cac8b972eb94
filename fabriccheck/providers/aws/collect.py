"""Live AWS collection with boto3: the fetch half. Per region, every call of the EC2 call table, paged, with
botocore's standard retries; the answers go through the same normalizer as dumps. Only Describe calls are made:
`OPERATIONS` lists them, and the IAM policy and the read-only test are built from it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from fabriccheck.endpoints import check_endpoint_url
from fabriccheck.errors import FabricCheckError
from fabriccheck.gcpause import paused_gc
from fabriccheck.inventory import Inventory
from fabriccheck.model import UNKNOWN_ACCOUNT, CollectionError, ScopeStatus
from fabriccheck.providers.aws import DECLARATION, fleet
from fabriccheck.providers.aws.normalize import (
    CALLS,
    CAPACITY_RESERVATIONS,
    INSTANCE_TYPES,
    INSTANCES,
    LAUNCH_TEMPLATES,
    PLACEMENT_GROUPS,
    RESERVATION_TOPOLOGY,
    SECURITY_GROUPS,
    TOPOLOGY,
    Ec2Call,
    Normalizer,
    owners,
)
from fabriccheck.redaction import first_line
from fabriccheck.sources.fleet import DEFAULT_CONCURRENCY, CallCount, RateLimits, scope_status, settle_gc
from fabriccheck.sources.parallel import in_parallel
from fabriccheck.sources.progress import API_CALLS, Progress
from fabriccheck.sources.retries import RETRIES, RetryPolicy, retry_policy
from fabriccheck.sources.scope import BAD_RESPONSE, Scope

# Every EC2 operation the collector may issue. DescribeRegions serves --all-regions.
OPERATIONS = tuple(sorted({c.operation for c in CALLS} | {"DescribeRegions"}))

ACCESS_DENIED_CODES = {
    "UnauthorizedOperation",
    "AccessDenied",
    "AccessDeniedException",
    "AuthFailure",
    "InvalidClientTokenId",
    "UnrecognizedClientException",
    "OptInRequired",
}
THROTTLED_CODES = {"RequestLimitExceeded", "Throttling", "ThrottlingException", "TooManyRequestsException"}


def iam_policy(plan: fleet.Fleet | None = None) -> dict[str, Any]:
    """Least-privilege IAM policy for exactly the calls the collector makes. With --org-role or --role-arn, the
    read statement belongs to the role in each audited account, the others to the caller that assumes it."""
    statements: list[dict[str, Any]] = [
        {
            "Sid": "FabricCheckReadOnly",
            "Effect": "Allow",
            "Action": [f"ec2:{op}" for op in OPERATIONS],
            "Resource": "*",
        }
    ]
    plan = plan or fleet.Fleet()
    if plan.org_role is not None:
        statements.append(
            {
                "Sid": "FabricCheckListAccounts",
                "Effect": "Allow",
                "Action": [f"organizations:{op}" for op in fleet.OPERATIONS["organizations"]],
                "Resource": "*",
            }
        )
    if plan.assumes:
        role = plan.role_arn or f"arn:aws:iam::*:role/{plan.org_role}"
        statements.append(
            {
                "Sid": "FabricCheckAssumeRole",
                "Effect": "Allow",
                "Action": [f"sts:{op}" for op in fleet.OPERATIONS["sts"]],
                "Resource": role,
            }
        )
    return {"Version": "2012-10-17", "Statement": statements}


def _paged(client: Any, call: Ec2Call, **params: Any) -> dict[str, Any]:
    paginator = client.get_paginator(call.method)
    result: dict[str, Any] = paginator.paginate(**params).build_full_result()
    result.pop("NextToken", None)
    return result


class InstanceTypes:
    """DescribeInstanceTypes answers shared by the scopes of one run. An instance type's specs are the same in
    every account (the model keeps capabilities by type alone), so each region is asked once for its
    EFA-capable types and once for each type in use, however many accounts run there: 50 accounts in a region
    make the calls of one. Scopes of one region wait for the first to ask; other regions go on."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.region_locks: dict[str, threading.Lock] = {}
        self.known: dict[str, dict[str, Any]] = {}  # region -> type name -> its answer
        self.asked: dict[str, set[str]] = {}  # region -> type names asked for (found or not)
        self.efa: dict[str, set[str]] = {}  # region -> EFA-capable type names

    def answer(self, client: Any, region: str, used_types: Iterable[str]) -> dict[str, Any]:
        """The types in use, plus every EFA-capable type (for the instance-choice rule's "this family has an EFA
        type"): a fixed number of calls per region, whatever the fleet size."""
        with self.lock:
            region_lock = self.region_locks.setdefault(region, threading.Lock())
        with region_lock:
            known = self.known.setdefault(region, {})
            asked = self.asked.setdefault(region, set())
            names = sorted(set(used_types) - asked)
            for start in range(0, len(names), 100):
                batch = _paged(client, INSTANCE_TYPES, InstanceTypes=names[start : start + 100])
                known.update({t["InstanceType"]: t for t in batch.get("InstanceTypes", [])})
                asked.update(names[start : start + 100])
            if region not in self.efa:
                efa = _paged(
                    client,
                    INSTANCE_TYPES,
                    Filters=[{"Name": "network-info.efa-supported", "Values": ["true"]}],
                    PaginationConfig={"PageSize": 100},
                )
                known.update({t["InstanceType"]: t for t in efa.get("InstanceTypes", [])})
                self.efa[region] = {t["InstanceType"] for t in efa.get("InstanceTypes", [])}
            wanted = set(used_types) | self.efa[region]
            return {"InstanceTypes": [known[n] for n in sorted(wanted) if n in known]}


def _answer(
    client: Any, call: Ec2Call, used_types: Iterable[str] = (), types: InstanceTypes | None = None, region: str = ""
) -> dict[str, Any]:
    if call is INSTANCES:
        # Every state: stopped and terminated instances are not judged, but the report counts them.
        return _paged(client, call, PaginationConfig={"PageSize": 1000})
    if call is INSTANCE_TYPES:
        return (types or InstanceTypes()).answer(client, region, used_types)
    if call is PLACEMENT_GROUPS:
        answer: dict[str, Any] = client.describe_placement_groups()
        return answer
    if call is LAUNCH_TEMPLATES:
        return _paged(client, call, Versions=["$Latest", "$Default"], PaginationConfig={"PageSize": 200})
    if call is TOPOLOGY:
        return _paged(client, call, PaginationConfig={"PageSize": 100})
    if call is RESERVATION_TOPOLOGY:  # botocore has no paginator for it: NextToken by hand
        found: list[Any] = []
        page: dict[str, Any] = {"MaxResults": 10}  # its most per page (botocore EC2 model: max 10)
        while page.get("NextToken", True):
            answer = client.describe_capacity_reservation_topology(**page)
            found += answer.get(call.result_key, [])
            page["NextToken"] = answer.get("NextToken")
        return {call.result_key: found}
    return _paged(client, call, PaginationConfig={"PageSize": 1000})


def _error(call: Ec2Call, scope: Scope, exc: Exception) -> CollectionError:
    from botocore.exceptions import ClientError
    from botocore.parsers import ResponseParserError

    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code", "ClientError"))
        message = str(exc.response.get("Error", {}).get("Message", "")).splitlines()[0:1]
        text = message[0] if message else code
        if code in ACCESS_DENIED_CODES:
            return scope.denied(call.operation, f"{code}: {text}", f"ec2:{call.operation}")
        if code in THROTTLED_CODES:
            return scope.throttled(call.operation, code)
        return scope.error(call.operation, code, text)
    if isinstance(exc, ResponseParserError):
        from fabriccheck.providers.aws.answers import NotTheAnswer

        said = (
            str(exc)
            if isinstance(exc, NotTheAnswer)
            else "the endpoint answered with something that is not an EC2 response"
        )
        return scope.error(call.operation, BAD_RESPONSE, said)
    return scope.unreachable(call.operation, exc)


def _server_error(exc: Exception) -> bool:
    """A 5xx answer that outlasted the retries: the region is down for now, and every other call would wait
    through the same retries before failing alike."""
    response = getattr(exc, "response", None) or {}
    status = int((response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)
    return status >= 500 and str((response.get("Error") or {}).get("Code")) not in THROTTLED_CODES


def _account_of(answers: dict[Ec2Call, Any]) -> str | None:
    """The caller's account, as its own answers name it: reservations, else security groups (every VPC has
    a default one), else who created the launch templates."""
    for call in (INSTANCES, SECURITY_GROUPS, LAUNCH_TEMPLATES):
        found = owners(call, answers.get(call))
        if len(found) == 1:
            return found.pop()
    return None


def fetch_region(
    client: Any,
    region: str,
    topology: bool = False,
    progress: Progress | None = None,
    account: str | None = None,
    types: InstanceTypes | None = None,
) -> tuple[dict[Ec2Call, Any], list[CollectionError]]:
    """Every answer for one region through one EC2 client; failures become CollectionErrors."""
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.parsers import ResponseParserError

    from fabriccheck.providers.aws.answers import check

    check(client)  # a 200 that is not the call's answer is BadResponse, never "none"
    progress = progress or Progress()
    answers: dict[Ec2Call, Any] = {}
    errors: list[CollectionError] = []
    used_types: set[str] = set()
    scope = Scope("aws", account or UNKNOWN_ACCOUNT, region)
    for call in CALLS:
        if call in (TOPOLOGY, RESERVATION_TOPOLOGY) and not topology:
            continue
        if call is RESERVATION_TOPOLOGY and not (answers.get(CAPACITY_RESERVATIONS) or {}).get("CapacityReservations"):
            continue  # no reservation to place: no call
        progress.step(f"{account} {region}" if account else region, call.operation)
        try:
            answers[call] = _answer(client, call, used_types, types, region)
        except (ClientError, BotoCoreError, ResponseParserError) as exc:
            error = _error(call, scope, exc)
            errors.append(error)
            if error.code == "Unreachable" or (
                call is INSTANCES
                and (("AuthFailure" in error.message and error.code == "AccessDenied") or _server_error(exc))
            ):
                break  # the region (or the credentials) fail every call alike; one line says it
            continue
        if call is INSTANCES:
            used_types = {
                i["InstanceType"]
                for r in answers[call].get("Reservations", [])
                for i in r.get("Instances", [])
                if isinstance(i, dict) and isinstance(i.get("InstanceType"), str)
            }
    return answers, errors


def collect_region(
    client: Any, region: str, topology: bool = False, progress: Progress | None = None, account: str | None = None
) -> Inventory:
    """One region, fetched and normalized under the caller's account."""
    answers, errors = fetch_region(client, region, topology, progress)
    return _normalized(region, answers, errors, account or _account_of(answers) or UNKNOWN_ACCOUNT)


def _normalized(region: str, answers: dict[Ec2Call, Any], errors: list[CollectionError], account: str) -> Inventory:
    inventory = Inventory(source="aws")
    normalizer = Normalizer(inventory, region, account, lambda c: f"EC2 {c.operation} in {region}")
    normalizer.per_item = True
    with paused_gc(freeze=False):
        for call in sorted(answers, key=CALLS.index):
            normalizer.add(call, answers[call])
    inventory.errors.extend(e.model_copy(update={"account": account}) for e in errors)
    return inventory


def _session(profile: str | None) -> Any:
    import boto3
    from botocore.exceptions import ProfileNotFound

    try:
        return boto3.Session(profile_name=profile)
    except ProfileNotFound:
        raise FabricCheckError(f"--profile {profile}: no such AWS profile") from None


def _config(retry: RetryPolicy = RETRIES) -> Any:
    from botocore.config import Config

    # Standard retry mode backs off exponentially, with jitter, on RequestLimitExceeded and other throttling.
    return Config(
        retries={"mode": "standard", "max_attempts": retry.max_attempts},
        connect_timeout=retry.connect_timeout,
        read_timeout=retry.read_timeout,
        user_agent_extra="fabriccheck/0.1",
    )


def _scaled_backoff(client: Any, retry: RetryPolicy) -> None:
    """botocore's standard retry handler with its waits on the policy's scale (RetryPolicy.backoff_base).
    botocore takes no setting for its back-off, so at any scale but the default the handler it registered is
    replaced by the same handler (the same attempts, retry quota and throttling detection) whose jitter is
    scaled: its wait is jitter() x min(base x 2^attempt, 20 s)."""
    if retry.backoff_base == 1.0:
        return  # botocore's own handler, untouched
    import random

    from botocore.retries import quota, standard

    name = client.meta.service_model.service_id.hyphenize()
    events = client.meta.events
    events.unregister(f"needs-retry.{name}", unique_id=f"retry-config-{name}")
    adapter = standard.RetryEventAdapter()
    detector = standard.ThrottlingErrorDetector(adapter)
    retry_quota = standard.RetryQuotaChecker(quota.RetryQuota(), detector)
    handler = standard.RetryHandler(
        retry_policy=standard.RetryPolicy(
            retry_checker=standard.StandardRetryConditions(
                max_attempts=client.meta.config.retries.get("total_max_attempts", retry.max_attempts + 1)
            ),
            retry_backoff=standard.ExponentialBackoff(
                random=lambda: retry.backoff(random.random()), service_name=name, throttling_detector=detector
            ),
        ),
        retry_event_adapter=adapter,
        retry_quota=retry_quota,
        service_name=name,
    )
    events.register(f"after-call.{name}", retry_quota.release_retry_quota)
    events.register(f"needs-retry.{name}", handler.needs_retry, unique_id=f"retry-config-{name}")


def _client(session: Any, region: str, endpoint_url: str | None) -> Any:
    # endpoint_url None leaves boto3 to its own configuration: AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_EC2 and the
    # config file's endpoint_url settings are honoured as boto3 honours them.
    retry = retry_policy()
    client = session.client("ec2", region_name=region, endpoint_url=endpoint_url, config=_config(retry))
    _scaled_backoff(client, retry)
    client.meta.events.register("before-send", API_CALLS.add)
    return _checked(client, endpoint_url)


def _checked(client: Any, given: str | None) -> Any:
    """A client whose endpoint takes its credentials in the open only on this machine (endpoints.py), whether
    --endpoint-url named it or AWS_ENDPOINT_URL(_<SERVICE>) or the config file's endpoint_url did, and whose
    answers are checked to be the calls' own (answers.py)."""
    from fabriccheck.providers.aws.answers import check

    where = (
        "--endpoint-url"
        if given
        else f"the {client.meta.service_model.service_id} endpoint (AWS_ENDPOINT_URL or config)"
    )
    check_endpoint_url(client.meta.endpoint_url, DECLARATION.endpoint_credential or "", where)
    return check(client)


class _Clients:
    """Makes every client of a run from one session: under a lock (a boto3 session is not thread-safe; its
    clients are), each with the run's retry settings, a client-side token bucket per service and throttling
    domain, and a count of the calls and attempts (retries) made through it."""

    def __init__(self, session: Any, endpoint_url: str | None, retry: RetryPolicy, limits: RateLimits) -> None:
        self.session = session
        self.endpoint_url = endpoint_url
        self.config = _config(retry)
        self.retry = retry
        self.limits = limits
        self.lock = threading.Lock()

    def make(
        self, service: str, region: str, domain: str, count: CallCount, credentials: dict[str, str] | None = None
    ) -> Any:
        with self.lock:
            client = self.session.client(
                service,
                region_name=region,
                endpoint_url=self.endpoint_url if service == "ec2" else None,
                config=self.config,
                **(credentials or {}),
            )
        _scaled_backoff(client, self.retry)

        def before_send(**_: Any) -> None:  # every HTTP attempt, retries included
            API_CALLS.add()
            count.attempt()
            self.limits.take(service, domain)

        client.meta.events.register(f"before-call.{service}", lambda **_: count.call())
        client.meta.events.register(f"before-send.{service}", before_send)
        return _checked(client, self.endpoint_url if service == "ec2" else None)


def _instances_in(answers: dict[Ec2Call, Any]) -> int:
    return sum(len(r.get("Instances") or ()) for r in (answers.get(INSTANCES) or {}).get("Reservations") or ())


def _status(
    account: str, region: str | None, count: CallCount, nodes: int, errors: list[CollectionError]
) -> ScopeStatus:
    return scope_status("aws", account, region, count, nodes, [f"{e.call}: {e.code}" for e in errors])


def _credential_failure(errors: list[CollectionError]) -> None:
    """The caller's own credentials rejected (expired, revoked): one line for the whole run, not one per scope."""
    for error in errors:
        code = error.message.split(":", 1)[0] if error.code == "AccessDenied" else error.code
        if code in fleet.CREDENTIAL_CODES:
            raise fleet.credential_error(code, error.message.split(": ", 1)[-1])


def _safe_normalized(
    region: str, answers: dict[Ec2Call, Any], errors: list[CollectionError], account: str
) -> Inventory:
    """A scope's answers normalized; an answer of an unexpected shape makes that scope incomplete (the error
    names the field) instead of ending the run."""
    try:
        return _normalized(region, answers, errors, account)
    except FabricCheckError as exc:
        part = Inventory(source="aws")
        part.errors += [e.model_copy(update={"account": account}) for e in errors]
        part.errors.append(Scope("aws", account, region).error("normalize", BAD_RESPONSE, str(exc)))
        return part


def collect_live(
    regions: list[str],
    *,
    profile: str | None = None,
    endpoint_url: str | None = None,
    every_region: bool = False,
    topology: bool = False,
    progress: Progress | None = None,
    session: Any = None,
    accounts: fleet.Fleet | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    retry: RetryPolicy | None = None,
    limits: RateLimits | None = None,
) -> Inventory:
    """Every scope (account x region) of the run, collected `concurrency` at a time. With `accounts` naming
    roles, each account's role is assumed first (also concurrently); an account whose role cannot be assumed,
    or a region that cannot be read, is recorded as incomplete and the rest goes on."""
    from botocore.exceptions import NoCredentialsError, NoRegionError

    session = session or _session(profile)
    if session.get_credentials() is None:
        raise FabricCheckError(
            "no AWS credentials found in the standard chain (environment, --profile, config files, SSO, "
            "instance role); set them or use --from-dump DIR"
        )
    home = regions[0] if regions else session.region_name
    if not regions and not every_region:
        regions = [home] if home else []
    if not regions and not every_region:
        raise FabricCheckError("no region: pass --region REGION (repeatable) or --all-regions")
    clients = _Clients(session, endpoint_url, retry or retry_policy(), limits or RateLimits())
    run = _Run(clients, accounts or fleet.Fleet(), home or "us-east-1", regions, every_region, topology, progress)
    try:
        return run.collect(session, concurrency)
    except NoRegionError:
        raise FabricCheckError("no region: pass --region REGION") from None
    except NoCredentialsError:
        raise FabricCheckError("no AWS credentials found; set them or use --from-dump DIR") from None


class _Run:
    """One live collection: its accounts (assumed roles), their regions, and each scope's answers."""

    def __init__(
        self,
        clients: _Clients,
        plan: fleet.Fleet,
        home: str,
        regions: list[str],
        every_region: bool,
        topology: bool,
        progress: Progress | None,
    ) -> None:
        self.clients = clients
        self.plan = plan
        self.home = home
        self.regions = regions
        self.every_region = every_region
        self.topology = topology
        self.progress = progress or Progress()
        self.types = InstanceTypes()

    def collect(self, session: Any, concurrency: int) -> Inventory:
        listing = CallCount()  # ListAccounts: made before any scope, paced and counted apart from them
        partition = session.get_partition_for_region(self.home)
        organizations = self.clients.make("organizations", self.home, "org", listing) if self.plan.org_role else None
        targets = fleet.accounts(self.plan, organizations, partition)
        prepared = list(in_parallel(targets, self.prepare, concurrency))
        scopes = [(a, r) for a, (found, _, _) in zip(targets, prepared, strict=True) for r in found]
        self.progress.planned(len(scopes) + sum(1 for _, errors, _ in prepared if errors))
        inventory = Inventory(source=_source(self.plan, targets, self.regions, self.every_region))
        for account, (_, errors, count) in zip(targets, prepared, strict=True):
            if self.plan.assumes or errors:
                status = _status(account.id or UNKNOWN_ACCOUNT, None, count, 0, errors)
                inventory.errors += errors
                inventory.scopes.append(status)
                if errors:
                    self.progress.finished(status)
        fetched = in_parallel(scopes, self.fetch_scope, concurrency)
        if self.plan.assumes:
            # Each account is known: normalize every scope as it arrives and let its raw answers go.
            for (account, region), (answers, errors, count) in zip(scopes, fetched, strict=True):
                part = _safe_normalized(region, answers, errors, account.id or UNKNOWN_ACCOUNT)
                del answers
                part.scopes.append(_status(account.id or UNKNOWN_ACCOUNT, region, count, len(part.nodes), part.errors))
                inventory.merge(part)
        else:
            self._one_account(inventory, scopes, list(fetched))
        settle_gc()
        return inventory

    def _one_account(
        self,
        inventory: Inventory,
        scopes: list[tuple[fleet.Account, str]],
        done: list[tuple[dict[Ec2Call, Any], list[CollectionError], CallCount]],
    ) -> None:
        """One session is one account: a region that named no owner (no instances, no groups) is still that
        account."""
        found = {a for answers, _, _ in done if (a := _account_of(answers))}
        own = found.pop() if len(found) == 1 else UNKNOWN_ACCOUNT
        for (_, region), (answers, errors, count) in zip(scopes, done, strict=True):
            named = _account_of(answers) or own
            part = _safe_normalized(region, answers, errors, named)
            part.scopes.append(_status(named, region, count, len(part.nodes), part.errors))
            self.progress.finished(part.scopes[-1])
            inventory.merge(part)

    def prepare(self, account: fleet.Account) -> tuple[list[str], list[CollectionError], CallCount]:
        """Assume the account's role and find its regions; an error here is the whole account's."""
        count = CallCount()
        self.progress.step(account.id or "aws", "AssumeRole" if account.role_arn else "DescribeRegions")
        sts = self.clients.make("sts", self.home, "sts", count) if account.role_arn else None
        failed = fleet.assume(sts, account, self.plan.external_id)
        if failed is not None:
            return [], [failed], count
        if not self.every_region:
            return self.regions, [], count
        domain = f"{account.id}/{self.home}"
        client = self.clients.make("ec2", self.home, domain, count, account.credentials)
        try:
            return all_regions_of(client), [], count
        except FabricCheckError as exc:
            if account.role_arn is None:
                raise
            return [], [Scope("aws", account.id or UNKNOWN_ACCOUNT).error("DescribeRegions", "Failed", str(exc))], count

    def fetch_scope(
        self, scope: tuple[fleet.Account, str]
    ) -> tuple[dict[Ec2Call, Any], list[CollectionError], CallCount]:
        account, region = scope
        count = CallCount()
        stale = fleet.refreshed(
            lambda: self.clients.make("sts", self.home, "sts", count), account, self.plan.external_id
        )
        if stale is not None:
            return {}, [stale.model_copy(update={"region": region})], count
        client = self.clients.make("ec2", region, f"{account.id}/{region}", count, account.credentials)
        answers, errors = fetch_region(client, region, self.topology, self.progress, account.id, self.types)
        if account.role_arn is None:
            _credential_failure(errors)
        if account.id is not None:
            self.progress.finished(_status(account.id, region, count, _instances_in(answers), errors))
        return answers, errors, count


def all_regions_of(client: Any) -> list[str]:
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.parsers import ResponseParserError

    try:
        answer = client.describe_regions(AllRegions=False)
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", "ClientError"))
        if code in fleet.CREDENTIAL_CODES:
            raise fleet.credential_error(code, first_line(exc)) from None
        raise FabricCheckError(f"--all-regions: DescribeRegions failed: {first_line(exc)}") from None
    except (BotoCoreError, ResponseParserError) as exc:
        raise FabricCheckError(f"--all-regions: DescribeRegions failed: {first_line(exc)}") from None
    return sorted(r["RegionName"] for r in answer.get("Regions", []))


def _source(plan: fleet.Fleet, targets: list[fleet.Account], regions: list[str], every_region: bool) -> str:
    where = "every enabled region" if every_region else ", ".join(regions)
    if plan.org_role:
        return f"aws live ({len(targets)} organization accounts via role {plan.org_role}; {where})"
    if plan.role_arn:
        return f"aws live ({plan.role_arn}; {where})"
    return f"aws live ({where})"
