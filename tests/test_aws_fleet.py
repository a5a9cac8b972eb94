"""A whole AWS organization through the real boto3 clients: Organizations, STS and EC2 served on 127.0.0.1
(aws_fleet_replay), reached through the standard AWS_ENDPOINT_URL variables; faults injected per account,
region and call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_fleet_replay import MANAGEMENT, FleetReplay, serve

from fabriccheck import flow
from fabriccheck.errors import FabricCheckError
from fabriccheck.providers.aws import collect, fleet
from fabriccheck.sources.retries import RetryPolicy

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "aws"
ACCOUNTS = ["111111111111", "222222222222", "333333333333", "444444444444"]
REGIONS = ["us-east-1", "eu-west-1"]
QUICK = RetryPolicy(max_attempts=2, connect_timeout=1.0, read_timeout=1.0)


def demo_answers() -> dict[str, Any]:
    return {p.name: json.loads(p.read_text()) for p in DEMO.glob("describe-*.json")}


def organization(regions: list[str] = REGIONS) -> FleetReplay:
    """Every account runs the demo's instances in its first region; its other regions are empty."""
    answers = demo_answers()
    return FleetReplay({a: {r: (answers if r == regions[0] else {}) for r in regions} for a in ACCOUNTS})


def run(
    replay: FleetReplay,
    monkeypatch: pytest.MonkeyPatch,
    plan: fleet.Fleet,
    regions: list[str] = REGIONS,
    **options: Any,
) -> Any:
    with serve(replay) as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL", url)  # one variable for EC2, STS and Organizations, as boto3 reads it
        return collect.collect_live(regions, session=boto3.session.Session(), accounts=plan, **options)


def test_org_role_collects_every_active_account_in_every_region(monkeypatch: pytest.MonkeyPatch) -> None:
    replay = organization()
    replay.suspended = {"555555555555"}
    inventory = run(replay, monkeypatch, fleet.Fleet(org_role="Auditor", external_id="shared-ext-id"))
    assert inventory.complete, inventory.errors
    # Each account's instances are filed under that account, not the demo answers' own owner id.
    assert {n.account for n in inventory.nodes} == set(ACCOUNTS)
    per_account = {a: sum(1 for n in inventory.nodes if n.account == a) for a in ACCOUNTS}
    assert set(per_account.values()) == {35}
    scopes = {(s.account, s.region) for s in inventory.scopes if s.region}
    assert scopes == {(a, r) for a in ACCOUNTS for r in REGIONS}
    assert all(s.complete for s in inventory.scopes)
    assert {s.nodes for s in inventory.scopes if s.region == "us-east-1"} == {35}
    # Organizations was paged, the suspended account was never assumed, each role once with the external id.
    assumed = [r for r in replay.requests if r.action == "AssumeRole"]
    assert sorted(r.body.split("RoleArn=")[1].split("&")[0] for r in assumed) == [
        f"arn%3Aaws%3Aiam%3A%3A{a}%3Arole%2FAuditor" for a in ACCOUNTS
    ]
    assert all("ExternalId=shared-ext-id" in r.body for r in assumed)
    assert replay.actions().count(("organizations", "ListAccounts")) == 3  # 5 accounts, 2 a page
    # EC2 calls were made with each account's own assumed key, in the regions asked.
    assert {(r.account, r.region) for r in replay.requests if r.service == "ec2"} == scopes
    report = flow.run(inventory, flow.Options())
    assert len({c.account for c in report.clusters}) == 4


def test_accounts_and_exclude_accounts_filter_the_organization(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = fleet.Fleet(org_role="Auditor", accounts=tuple(ACCOUNTS[:3]), exclude_accounts=(ACCOUNTS[1],))
    inventory = run(organization(), monkeypatch, plan, regions=["us-east-1"])
    assert {s.account for s in inventory.scopes} == {ACCOUNTS[0], ACCOUNTS[2]}
    with pytest.raises(FabricCheckError, match="--accounts 123456789012: not an active account"):
        run(organization(), monkeypatch, fleet.Fleet(org_role="Auditor", accounts=("123456789012",)))


def test_role_arn_audits_that_one_account(monkeypatch: pytest.MonkeyPatch) -> None:
    replay = organization()
    inventory = run(replay, monkeypatch, fleet.Fleet(role_arn=f"arn:aws:iam::{ACCOUNTS[2]}:role/ops/Auditor"))
    assert inventory.complete
    assert {n.account for n in inventory.nodes} == {ACCOUNTS[2]}
    assert ("organizations", "ListAccounts") not in replay.actions()


def test_service_specific_endpoint_variables_win(monkeypatch: pytest.MonkeyPatch) -> None:
    replay = organization()
    with serve(replay) as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
        for service in ("EC2", "STS", "ORGANIZATIONS"):
            monkeypatch.setenv(f"AWS_ENDPOINT_URL_{service}", url)
        inventory = collect.collect_live(
            ["us-east-1"], session=boto3.session.Session(), accounts=fleet.Fleet(org_role="Auditor")
        )
    assert inventory.complete
    assert {r.service for r in replay.requests} == {"organizations", "sts", "ec2"}


def test_all_regions_are_asked_of_each_account(monkeypatch: pytest.MonkeyPatch) -> None:
    replay = organization(["us-east-1", "us-west-2", "ap-south-1"])
    inventory = run(replay, monkeypatch, fleet.Fleet(org_role="Auditor"), regions=[], every_region=True)
    assert inventory.complete
    assert {s.region for s in inventory.scopes if s.region} == {"us-east-1", "us-west-2", "ap-south-1"}
    described = [r.account for r in replay.requests if r.action == "DescribeRegions"]
    assert sorted(described) == ACCOUNTS


def test_a_failing_account_or_region_leaves_the_rest_collected(monkeypatch: pytest.MonkeyPatch) -> None:
    replay = organization()
    replay.deny_assume = {ACCOUNTS[0]}
    replay.fail = {(ACCOUNTS[1], "us-east-1"): 503}
    replay.slow = {(ACCOUNTS[2], "eu-west-1"): 3.0}
    inventory = run(replay, monkeypatch, fleet.Fleet(org_role="Auditor"), retry=QUICK)
    assert not inventory.complete
    denied = [e for e in inventory.errors if e.call == "AssumeRole"]
    assert len(denied) == 1 and denied[0].account == ACCOUNTS[0] and denied[0].permission == "sts:AssumeRole"
    assert "trust policy" in denied[0].message and f"arn:aws:iam::{ACCOUNTS[0]}:role/Auditor" in denied[0].message
    failed = {(e.account, e.region, e.code) for e in inventory.errors if e.call != "AssumeRole"}
    assert (ACCOUNTS[1], "us-east-1", "InternalError") in failed
    assert (ACCOUNTS[2], "eu-west-1", "Unreachable") in failed
    assert {a for a, _, _ in failed} == {ACCOUNTS[1], ACCOUNTS[2]}
    # The healthy scopes were collected in full: account 4 everywhere, account 3's us-east-1.
    complete = {(s.account, s.region) for s in inventory.scopes if s.complete and s.region}
    assert complete == {(ACCOUNTS[3], "us-east-1"), (ACCOUNTS[3], "eu-west-1"), (ACCOUNTS[2], "us-east-1"),
                        (ACCOUNTS[1], "eu-west-1")}  # fmt: skip
    incomplete = {(s.account, s.region): s.reason for s in inventory.scopes if not s.complete}
    assert incomplete[(ACCOUNTS[0], None)] == "AssumeRole: AccessDenied"
    assert "DescribeInstances: InternalError" in (incomplete[(ACCOUNTS[1], "us-east-1")] or "")
    assert {n.account for n in inventory.nodes} == {ACCOUNTS[2], ACCOUNTS[3]}
    # The failed region was retried (QUICK: 2 attempts a call) and the retries are counted.
    failed_scope = next(s for s in inventory.scopes if (s.account, s.region) == (ACCOUNTS[1], "us-east-1"))
    assert failed_scope.retries >= 1
    assert flow.run(inventory, flow.Options()).complete is False


def test_a_throttling_storm_is_retried_to_the_end_and_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    replay = organization(["us-east-1"])
    # The first attempt of every call of every service is throttled, with the code each protocol uses.
    replay.throttle = {"RequestLimitExceeded": 1}
    inventory = run(replay, monkeypatch, fleet.Fleet(org_role="Auditor"), regions=["us-east-1"])
    assert inventory.complete, inventory.errors
    ec2 = [r for r in replay.requests if r.service == "ec2"]
    retries = sum(s.retries for s in inventory.scopes)
    calls = sum(s.api_calls for s in inventory.scopes)
    # Every EC2 and STS call was answered twice: once throttled, once served.
    assumes = sum(1 for r in replay.requests if r.action == "AssumeRole")
    assert calls == len(ec2) + assumes
    assert retries == calls // 2
    assert len(inventory.nodes) == 35 * len(ACCOUNTS)


@pytest.mark.parametrize("code", ["Throttling", "TooManyRequestsException"])
def test_other_throttling_codes_are_retried(monkeypatch: pytest.MonkeyPatch, code: str) -> None:
    replay = organization(["us-east-1"])
    replay.throttle = {code: 1}
    inventory = run(
        replay, monkeypatch, fleet.Fleet(role_arn=f"arn:aws:iam::{ACCOUNTS[0]}:role/A"), regions=["us-east-1"]
    )
    assert inventory.complete, inventory.errors
    assert sum(s.retries for s in inventory.scopes) == sum(s.api_calls for s in inventory.scopes) // 2 > 0


def test_expired_caller_credentials_are_one_line_naming_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    replay = organization()
    replay.expired = True
    for plan in (
        fleet.Fleet(org_role="Auditor"),
        fleet.Fleet(role_arn=f"arn:aws:iam::{ACCOUNTS[0]}:role/A"),
        fleet.Fleet(),
    ):
        with pytest.raises(FabricCheckError) as raised:
            run(replay, monkeypatch, plan)
        message = str(raised.value)
        assert message.startswith("AWS credentials have expired (ExpiredToken"), message
        assert "aws sso login" in message and "\n" not in message


def test_scopes_are_collected_concurrently_up_to_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {}
    for concurrency in (1, 4):
        replay = organization(["us-east-1"])
        replay.slow = {(a, "us-east-1"): 0.1 for a in ACCOUNTS}
        inventory = run(replay, monkeypatch, fleet.Fleet(org_role="Auditor"), ["us-east-1"], concurrency=concurrency)
        assert inventory.complete
        seen[concurrency] = replay.most_in_flight
    assert seen[1] == 1  # one scope at a time: never two requests at once
    assert 2 <= seen[4] <= 4  # several at once, never more than asked


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ({"role_arn": "arn:aws:iam::1:role/x"}, "--role-arn arn:aws:iam::1:role/x: not an IAM role ARN"),
        ({"org_role": "arn:aws:iam::111111111111:role/x"}, "--org-role arn:aws:iam::111111111111:role/x: not an IAM"),
        ({"role_arn": f"arn:aws:iam::{ACCOUNTS[0]}:role/x", "org_role": "x"}, "cannot be used together"),
        ({"accounts": (ACCOUNTS[0],)}, "--accounts filters the organization's accounts: use it with --org-role"),
        ({"org_role": "x", "exclude_accounts": ("12",)}, "--exclude-accounts 12: not an AWS account id"),
        ({"external_id": "abc"}, "--external-id goes with --role-arn or --org-role"),
    ],
)
def test_account_options_are_checked(plan: dict[str, Any], message: str) -> None:
    with pytest.raises(FabricCheckError, match=message.replace("(", r"\(")):
        fleet.Fleet(**plan)


def test_a_management_account_that_cannot_list_the_organization_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    replay = organization()
    with serve(replay) as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL", url)
        session = boto3.session.Session()
        replay.throttle = {}
        replay.accounts = {}  # nothing listed: every filter leaves nothing
        with pytest.raises(FabricCheckError, match="no active account is left"):
            collect.collect_live(["us-east-1"], session=session, accounts=fleet.Fleet(org_role="Auditor"))
    assert MANAGEMENT not in {s for s in ACCOUNTS}


def test_instance_types_are_asked_once_per_region_however_many_accounts(monkeypatch: pytest.MonkeyPatch) -> None:
    replay = organization()
    inventory = run(replay, monkeypatch, fleet.Fleet(org_role="Auditor"))
    assert inventory.complete
    asked = [(r.region, r.body) for r in replay.requests if r.action == "DescribeInstanceTypes"]
    # us-east-1 runs instances: one batch of the types in use and one EFA listing; eu-west-1 is empty: the
    # EFA listing only. Four accounts, the calls of one.
    assert sorted(region for region, _ in asked) == ["eu-west-1", "us-east-1", "us-east-1"]
    # Every account's nodes still got the live capabilities.
    assert {c.source for c in inventory.capabilities.values()} == {"EC2 DescribeInstanceTypes (live answer)"}
    assert all(n.instance_type in inventory.capabilities for n in inventory.nodes if n.state == "running")


def test_a_misshapen_instance_makes_its_scope_incomplete_naming_it_and_the_field(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    replay = organization(["us-east-1"])
    broken = json.loads(json.dumps(demo_answers()))
    bad = broken["describe-instances.json"]["Reservations"][0]["Instances"][0]
    del bad["InstanceType"]
    replay.ec2[ACCOUNTS[1]].answers["us-east-1"] = broken
    inventory = run(replay, monkeypatch, fleet.Fleet(org_role="Auditor"), regions=["us-east-1"])
    [error] = inventory.errors
    assert (error.account, error.region, error.code) == (ACCOUNTS[1], "us-east-1", "BadResponse")
    assert "Instances[0]" in error.message and "InstanceType" in error.message
    assert bad["InstanceId"] in error.message
    scopes = {s.account: s for s in inventory.scopes if s.region}
    assert not scopes[ACCOUNTS[1]].complete and "BadResponse" in (scopes[ACCOUNTS[1]].reason or "")
    assert all(scopes[a].complete and scopes[a].nodes == 35 for a in ACCOUNTS if a != ACCOUNTS[1])
    # The instance that could not be read is not judged as if it were fine; the others of its scope are.
    assert scopes[ACCOUNTS[1]].nodes == 34
    assert bad["InstanceId"] not in {n.id for n in inventory.nodes if n.account == ACCOUNTS[1]}
    report = flow.run(inventory, flow.Options())
    assert report.complete is False
    judged = {f.account for f in report.findings}
    assert set(ACCOUNTS) <= judged


def test_assumed_credentials_near_expiry_are_assumed_again_per_scope(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long run outlives an hour's assumed credentials: a scope that starts with less than REFRESH_MARGIN left
    assumes the role again instead of failing as expired; fresh credentials are assumed once per account."""
    plan = fleet.Fleet(org_role="Auditor")
    fresh = organization()
    inventory = run(fresh, monkeypatch, plan)
    assert inventory.complete, inventory.errors
    assert fresh.actions().count(("sts", "AssumeRole")) == len(ACCOUNTS)
    short = organization()
    short.assumed_for = 60.0  # a minute left: within the margin at every scope
    inventory = run(short, monkeypatch, plan)
    assert inventory.complete, inventory.errors
    assert short.actions().count(("sts", "AssumeRole")) == len(ACCOUNTS) * (1 + len(REGIONS))
    assert {n.account for n in inventory.nodes} == set(ACCOUNTS)
