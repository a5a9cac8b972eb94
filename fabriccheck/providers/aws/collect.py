"""Live AWS collection with boto3: the fetch half. Per region, every call of the EC2 call table, paged, with
botocore's standard retries; the answers go through the same normalizer as dumps. Only Describe calls are made:
`OPERATIONS` lists them, and the IAM policy and the read-only test are built from it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.model import UNKNOWN_ACCOUNT, CollectionError
from fabriccheck.providers.aws.normalize import (
    CALLS,
    INSTANCE_TYPES,
    INSTANCES,
    LAUNCH_TEMPLATES,
    PLACEMENT_GROUPS,
    SECURITY_GROUPS,
    TOPOLOGY,
    Ec2Call,
    Normalizer,
    owners,
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


def iam_policy() -> dict[str, Any]:
    """Least-privilege IAM policy for exactly the calls the collector makes."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "FabricCheckReadOnly",
                "Effect": "Allow",
                "Action": [f"ec2:{op}" for op in OPERATIONS],
                "Resource": "*",
            }
        ],
    }


def _paged(client: Any, call: Ec2Call, **params: Any) -> dict[str, Any]:
    paginator = client.get_paginator(call.method)
    result: dict[str, Any] = paginator.paginate(**params).build_full_result()
    result.pop("NextToken", None)
    return result


def _answer(client: Any, call: Ec2Call, used_types: Iterable[str] = ()) -> dict[str, Any]:
    if call is INSTANCES:
        # Every state: stopped and terminated instances are not judged, but the report counts them.
        return _paged(client, call, PaginationConfig={"PageSize": 1000})
    if call is INSTANCE_TYPES:
        # The types in use, plus every EFA-capable type (for the instance-choice rule's "this family has
        # an EFA type"): both a fixed number of calls, whatever the fleet size.
        found: dict[str, Any] = {}
        names = sorted(set(used_types))
        for start in range(0, len(names), 100):
            batch = _paged(client, call, InstanceTypes=names[start : start + 100])
            found.update({t["InstanceType"]: t for t in batch.get("InstanceTypes", [])})
        efa = _paged(
            client,
            call,
            Filters=[{"Name": "network-info.efa-supported", "Values": ["true"]}],
            PaginationConfig={"PageSize": 100},
        )
        found.update({t["InstanceType"]: t for t in efa.get("InstanceTypes", [])})
        return {"InstanceTypes": list(found.values())}
    if call is PLACEMENT_GROUPS:
        answer: dict[str, Any] = client.describe_placement_groups()
        return answer
    if call is LAUNCH_TEMPLATES:
        return _paged(client, call, Versions=["$Latest", "$Default"], PaginationConfig={"PageSize": 200})
    if call is TOPOLOGY:
        return _paged(client, call, PaginationConfig={"PageSize": 100})
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
        return scope.error(
            call.operation, BAD_RESPONSE, "the endpoint answered with something that is not an EC2 response"
        )
    return scope.unreachable(call.operation, exc)


def _account_of(answers: dict[Ec2Call, Any]) -> str | None:
    """The caller's account, as its own answers name it: reservations, else security groups (every VPC has
    a default one), else who created the launch templates."""
    for call in (INSTANCES, SECURITY_GROUPS, LAUNCH_TEMPLATES):
        found = owners(call, answers.get(call))
        if len(found) == 1:
            return found.pop()
    return None


def fetch_region(
    client: Any, region: str, topology: bool = False, progress: Progress | None = None
) -> tuple[dict[Ec2Call, Any], list[CollectionError]]:
    """Every answer for one region through one EC2 client; failures become CollectionErrors."""
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.parsers import ResponseParserError

    progress = progress or Progress()
    answers: dict[Ec2Call, Any] = {}
    errors: list[CollectionError] = []
    used_types: set[str] = set()
    scope = Scope("aws", UNKNOWN_ACCOUNT, region)
    for call in CALLS:
        if call is TOPOLOGY and not topology:
            continue
        progress.step(region, call.operation)
        try:
            answers[call] = _answer(client, call, used_types)
        except (ClientError, BotoCoreError, ResponseParserError) as exc:
            error = _error(call, scope, exc)
            errors.append(error)
            if error.code == "Unreachable" or (
                call is INSTANCES and error.code == "AccessDenied" and "AuthFailure" in error.message
            ):
                break  # the region (or the credentials) fail every call alike; one line says it
            continue
        if call is INSTANCES:
            used_types = {
                i["InstanceType"]
                for r in answers[call].get("Reservations", [])
                for i in r.get("Instances", [])
                if "InstanceType" in i
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
    with paused_gc():
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


def _client(session: Any, region: str, endpoint_url: str | None) -> Any:
    from botocore.config import Config

    # Standard retry mode backs off exponentially, with jitter, on RequestLimitExceeded and other throttling.
    config = Config(
        retries={"mode": "standard", "max_attempts": RETRIES.max_attempts},
        connect_timeout=RETRIES.connect_timeout,
        read_timeout=RETRIES.read_timeout,
        user_agent_extra="fabriccheck/0.1",
    )
    client = session.client("ec2", region_name=region, endpoint_url=endpoint_url, config=config)
    client.meta.events.register("before-send", API_CALLS.add)
    return client


def all_regions(session: Any, endpoint_url: str | None, home: str) -> list[str]:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        answer = _client(session, home, endpoint_url).describe_regions(AllRegions=False)
    except (ClientError, BotoCoreError) as exc:
        raise FabricCheckError(f"--all-regions: DescribeRegions failed: {first_line(exc)}") from None
    return sorted(r["RegionName"] for r in answer.get("Regions", []))


def collect_live(
    regions: list[str],
    *,
    profile: str | None = None,
    endpoint_url: str | None = None,
    every_region: bool = False,
    topology: bool = False,
    progress: Progress | None = None,
    session: Any = None,
) -> Inventory:
    from botocore.exceptions import NoCredentialsError, NoRegionError

    session = session or _session(profile)
    if session.get_credentials() is None:
        raise FabricCheckError(
            "no AWS credentials found in the standard chain (environment, --profile, config files, SSO, "
            "instance role); set them or use --from-dump DIR"
        )
    if every_region:
        regions = all_regions(session, endpoint_url, regions[0] if regions else "us-east-1")
    if not regions:
        regions = [session.region_name] if session.region_name else []
    if not regions:
        raise FabricCheckError("no region: pass --region REGION (repeatable) or --all-regions")
    try:
        # Clients are made here, in one thread (botocore sessions are not thread-safe); clients are.
        clients = {region: _client(session, region, endpoint_url) for region in regions}
    except NoRegionError:
        raise FabricCheckError("no region: pass --region REGION") from None
    try:
        fetched = list(in_parallel(regions, lambda r: fetch_region(clients[r], r, topology, progress)))
    except NoCredentialsError:
        raise FabricCheckError("no AWS credentials found; set them or use --from-dump DIR") from None
    # One session is one account: a region that named no owner (no instances, no groups) is still that account.
    found = {a for answers, _ in fetched if (a := _account_of(answers))}
    account = found.pop() if len(found) == 1 else UNKNOWN_ACCOUNT
    inventory = Inventory(source=f"aws live ({', '.join(regions)})")
    for region, (answers, errors) in zip(regions, fetched, strict=True):
        inventory.merge(_normalized(region, answers, errors, _account_of(answers) or account))
    return inventory
