"""The AWS collector driving the real boto3 client: botocore's Stubber (answers validated against the EC2
model) and a local EC2 endpoint on 127.0.0.1 replaying recorded answers over the query protocol."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from cli_run import run
from ec2_replay import Ec2Replay, serve

from fabriccheck import flow
from fabriccheck.providers.aws import collect, dump

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "aws"


def _answers() -> dict[str, Any]:
    return {p.name: json.loads(p.read_text()) for p in DEMO.glob("describe-*.json")}


def _client(endpoint: str | None = None) -> Any:
    return boto3.session.Session().client("ec2", region_name="us-east-1", endpoint_url=endpoint)


def _rules_found(inventory: Any) -> set[tuple[str, tuple[str, ...]]]:
    report = flow.run(inventory, flow.Options())
    return {(f.rule, tuple(f.resources)) for f in report.findings}


def test_stubbed_full_scan_pages_and_matches_the_dump() -> None:
    """Two DescribeInstances pages joined by NextToken, every other call once; the result judges exactly
    like the same answers read from dump files."""
    answers = _answers()
    client = _client()
    stub = Stubber(client)
    live = answers["describe-instances.json"]["Reservations"]  # every state: the report counts them all
    half = len(live) // 2
    stub.add_response("describe_instances", {"Reservations": live[:half], "NextToken": "page2"}, {"MaxResults": 1000})
    stub.add_response("describe_instances", {"Reservations": live[half:]}, {"MaxResults": 1000, "NextToken": "page2"})
    types = answers["describe-instance-types.json"]["InstanceTypes"]
    stub.add_response("describe_instance_types", {"InstanceTypes": types}, {"InstanceTypes": ANY})
    stub.add_response("describe_instance_types", {"InstanceTypes": []}, {"Filters": ANY, "MaxResults": 100})
    stub.add_response("describe_placement_groups", answers["describe-placement-groups.json"], {})
    stub.add_response("describe_security_groups", answers["describe-security-groups.json"], {"MaxResults": 1000})
    stub.add_response("describe_subnets", answers["describe-subnets.json"], {"MaxResults": 1000})
    stub.add_response(
        "describe_launch_template_versions",
        answers["describe-launch-template-versions.json"],
        {"Versions": ["$Latest", "$Default"], "MaxResults": 200},
    )
    stub.add_response(
        "describe_capacity_reservations", answers["describe-capacity-reservations.json"], {"MaxResults": 1000}
    )
    stub.add_response("describe_instance_topology", answers["describe-instance-topology.json"], {"MaxResults": 100})
    # Asked only because the demo has a reservation; 10 a page, its most (botocore EC2 model).
    placed = answers["describe-capacity-reservation-topology.json"]
    stub.add_response("describe_capacity_reservation_topology", placed, {"MaxResults": 10})
    with stub:
        inventory = collect.collect_region(client, "us-east-1", topology=True)
    stub.assert_no_pending_responses()
    assert inventory.complete
    [capacity] = inventory.aws.capacity_reservations
    assert capacity.topology is not None and capacity.topology.levels[0] == "nn-top-0002"
    states = [n.state for n in inventory.nodes]
    assert (states.count("running"), states.count("terminated")) == (34, 1)  # counted, not judged
    from_dump = dump.load_dump(DEMO)
    assert _rules_found(inventory) == _rules_found(from_dump)
    assert {"AWS101", "AWS102", "AWS110", "AWS111", "AWS120", "AWS150"} <= {r for r, _ in _rules_found(inventory)}


def test_access_denied_is_recorded_with_the_missing_permission() -> None:
    client = _client()
    stub = Stubber(client)
    stub.add_response("describe_instances", {"Reservations": []}, None)
    stub.add_response("describe_instance_types", {"InstanceTypes": []}, None)
    stub.add_response("describe_placement_groups", {"PlacementGroups": []}, None)
    stub.add_client_error("describe_security_groups", "UnauthorizedOperation", "You are not authorized", 403)
    stub.add_response("describe_subnets", {"Subnets": []}, None)
    stub.add_response("describe_launch_template_versions", {"LaunchTemplateVersions": []}, None)
    stub.add_client_error("describe_capacity_reservations", "RequestLimitExceeded", "Rate exceeded", 503)
    with stub:
        inventory = collect.collect_region(client, "eu-west-1")
    assert not inventory.complete
    denied = next(e for e in inventory.errors if e.call == "DescribeSecurityGroups")
    assert (denied.code, denied.permission, denied.region) == (
        "AccessDenied",
        "ec2:DescribeSecurityGroups",
        "eu-west-1",
    )
    throttled = next(e for e in inventory.errors if e.call == "DescribeCapacityReservations")
    assert throttled.code == "Throttled"
    # No answer named an owner, so the scope is "unknown"; it still records which facts came back.
    assert "aws:unknown:eu-west-1:security_groups" not in inventory.collected
    assert "aws:unknown:eu-west-1:subnets" in inventory.collected


def test_only_read_calls_and_the_iam_policy_names_exactly_them() -> None:
    replay = Ec2Replay.from_dump(DEMO)
    issued: list[str] = []
    session = boto3.session.Session()
    session.events.register("before-call.ec2.*", lambda model, **_: issued.append(model.name))
    with serve(replay) as url:
        inventory = collect.collect_live(
            ["us-east-1"], endpoint_url=url, topology=True, every_region=True, session=session
        )
    assert inventory.complete
    assert issued, "the recorder saw no call"
    assert all(op.startswith(("Describe", "List", "Get")) for op in issued)
    assert set(issued) == set(collect.OPERATIONS)  # every declared call is used, and no other
    policy = collect.iam_policy()
    assert sorted(policy["Statement"][0]["Action"]) == sorted(f"ec2:{op}" for op in collect.OPERATIONS)
    assert [a for _, a in replay.calls] == issued


def test_throttling_is_retried_with_backoff() -> None:
    replay = Ec2Replay.from_dump(DEMO)
    replay.throttle = {"DescribeInstances": 2, "DescribeSubnets": 1}
    with serve(replay) as url:
        inventory = collect.collect_region(_client(url), "us-east-1")
    assert inventory.complete
    assert [a for _, a in replay.calls].count("DescribeInstances") == 3
    assert sum(1 for n in inventory.nodes if n.state == "running") == 34


def test_regions_run_in_parallel_and_each_keeps_its_answers() -> None:
    answers = _answers()
    replay = Ec2Replay({"us-east-1": answers, "us-west-2": {}})
    with serve(replay) as url:
        inventory = collect.collect_live(["us-east-1", "us-west-2"], endpoint_url=url)
    assert inventory.complete
    assert {n.region for n in inventory.nodes} == {"us-east-1"}
    # One session is one account: us-west-2 names no owner, yet is filed under the account us-east-1 names.
    account = "111122223333"
    assert {f"aws:{account}:us-west-2:instances", f"aws:{account}:us-east-1:security_groups"} <= set(
        inventory.collected
    )
    assert {n.account for n in inventory.nodes} == {account}
    assert {r for r, _ in replay.calls} == {"us-east-1", "us-west-2"}


@pytest.mark.parametrize("instances", [0, 999, 1000, 2500])
def test_describe_instances_pages_grow_with_fleet_and_nothing_else_does(instances: int) -> None:
    reservation = {
        "OwnerId": "1",
        "ReservationId": "r-1",
        "Groups": [],
        "Instances": [
            {
                "InstanceId": f"i-{n:017x}",
                "InstanceType": "c5.large",
                "State": {"Code": 16, "Name": "running"},
                "Placement": {"AvailabilityZone": "us-east-1a"},
            }
            for n in range(instances)
        ],
    }
    # One instance per reservation, as when each was launched alone: the worst case for paging.
    answers = _answers() | {
        "describe-instances.json": {
            "Reservations": [
                {**reservation, "ReservationId": f"r-{i}", "Instances": [inst]}
                for i, inst in enumerate(reservation["Instances"])
            ]
        }
    }
    replay = Ec2Replay({"us-east-1": answers})
    with serve(replay) as url:
        inventory = collect.collect_region(_client(url), "us-east-1")
    assert len(inventory.nodes) == instances
    calls = [a for _, a in replay.calls]
    assert calls.count("DescribeInstances") == max(1, math.ceil(instances / 1000))
    # The other calls do not grow with N: six, plus one DescribeInstanceTypes batch per 100 types in use.
    assert len(calls) - calls.count("DescribeInstances") == (7 if instances else 6)


def test_unreachable_region_is_one_error_and_the_run_is_incomplete() -> None:
    client = boto3.session.Session().client(
        "ec2",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        config=__import__("botocore.config").config.Config(retries={"max_attempts": 1}, connect_timeout=1),
    )
    inventory = collect.collect_region(client, "us-east-1")
    assert [e.code for e in inventory.errors] == ["Unreachable"]
    assert not inventory.complete


def _pairs(report: dict[str, Any]) -> set[tuple[str, tuple[str, ...]]]:
    return {(f["rule"], tuple(f["resources"])) for f in report["findings"]}


def test_a_misshapen_instance_is_reported_and_the_other_instances_are_judged() -> None:
    """One instance's NICs cannot be read (an interface without its id): that instance is named in an error
    with the field, kept with its fabric facts unknown, and every other instance is judged as usual."""
    replay = Ec2Replay.from_dump(DEMO)
    with serve(replay) as url:
        clean = run("aws", "--endpoint-url", url, "-r", "us-east-1", "-f", "json", "--fail-on", "never")
    expected = _pairs(json.loads(clean.stdout))
    bad = "i-00000000000000121"  # one of four p5 nodes with no EFA (AWS102)
    [instance] = [
        i for r in replay.answers["us-east-1"]["describe-instances.json"]["Reservations"] for i in r["Instances"]
        if i["InstanceId"] == bad
    ]  # fmt: skip
    instance["NetworkInterfaces"] = [{"InterfaceType": "efa", "SubnetId": "subnet-0"}]
    with serve(replay) as url:
        result = run("aws", "--endpoint-url", url, "-r", "us-east-1", "-f", "json", "--fail-on", "never")
        inventory = collect.collect_live(["us-east-1"], endpoint_url=url)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert report["complete"] is False
    [error] = report["errors"]
    assert (error["provider"], error["region"], error["code"]) == ("aws", "us-east-1", "BadResponse")
    assert bad in error["message"] and "NetworkInterfaces" in error["message"]
    assert "NetworkInterfaceId" in error["message"]
    # The others are judged exactly as before; the bad node's own fabric finding is not judged, not "fine".
    found = _pairs(report)
    assert found == {p for p in expected if bad not in p[1]} and ("AWS102", (bad,)) in expected
    assert {"AWS101", "AWS110", "AWS111", "AWS120"} <= {r for r, _ in found}
    [node] = [n for n in inventory.nodes if n.id == bad]
    assert node.instance_type == "p5.48xlarge" and not node.interfaces
    assert "NetworkInterfaces" in node.unknown["fabric"]
    assert len(inventory.nodes) == 35
