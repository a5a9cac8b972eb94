"""A 200 answer that is not the call's answer is BadResponse for that call (issue 18, item 1; item 5 for the
capability values botocore would read as "no"), through the real boto3 clients.

botocore parses a captive portal's HTML page, another call's XML and an answer without its list all to `{}`, and
any boolean but `true` to False; before this, such answers read as "no instances" (complete, 0 nodes, exit 0) or
"no EFA". The faults are served by the suite's emulators on 127.0.0.1: tests/ec2_replay.py (answers in EC2's XML
serialized from botocore's own service model) and tests/aws_fleet_replay.py (STS, Organizations).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_fleet_replay import FleetReplay
from aws_fleet_replay import serve as serve_fleet
from cli_run import one_clean_line, run
from ec2_replay import Ec2Replay, answer_xml, serve
from ec2_shapes import answers, instance

from fabriccheck import flow
from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.model import CollectionError
from fabriccheck.providers.aws import collect, fleet
from fabriccheck.providers.aws.normalize import CALLS

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "aws"
ACCOUNT = "111122223333"  # the demo's
# What a hotel or airport network's captive portal answers to any request: a 200 HTML sign-in page.
CAPTIVE_PORTAL = (
    "text/html; charset=utf-8",
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Sign in to Guest Wi-Fi</title>'
    '<meta http-equiv="refresh" content="0; url=http://portal.example/login"></head>'
    '<body><form action="/login" method="post"><input name="accept" type="checkbox"> I accept the terms'
    "<button>Connect</button></form></body></html>",
)
NAMESPACE = "http://ec2.amazonaws.com/doc/2016-11-15/"


def _demo() -> dict[str, Any]:
    return {p.name: json.loads(p.read_text()) for p in DEMO.glob("describe-*.json")}


def _without_list(action: str) -> tuple[str, str]:
    """The operation's own root element, but not its list: `<DescribeInstancesResponse>` with no reservationSet."""
    return "text/xml;charset=UTF-8", (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<{action}Response xmlns="{NAMESPACE}">'
        f"<requestId>59dbff89-35bd-4eac-99ed-be587EXAMPLE</requestId></{action}Response>"
    )


def _another_answer(action: str) -> tuple[str, str]:
    """Another call's complete, well-formed answer (a proxy or cache that mixed up requests)."""
    other = "DescribeSubnets" if action == "DescribeInstances" else "DescribeInstances"
    return "text/xml;charset=UTF-8", answer_xml(
        other, {"Subnets" if other == "DescribeSubnets" else "Reservations": []}
    )


def _captive_portal(action: str) -> tuple[str, str]:
    return CAPTIVE_PORTAL


def _portal_as_xml(action: str) -> tuple[str, str]:
    """The portal's page under the header EC2's answers carry (a proxy that rewrites headers): the body decides."""
    return "text/xml;charset=UTF-8", CAPTIVE_PORTAL[1]


def _json_for_xml(action: str) -> tuple[str, str]:
    """The other protocol's answer: JSON where EC2's query protocol answers XML."""
    return "application/x-amz-json-1.1", json.dumps({"Reservations": [], "Subnets": []})


def _empty(action: str) -> tuple[str, str]:
    return "text/xml;charset=UTF-8", ""


# fault -> (the answer it gives an action, what the error says)
FAULTS: dict[str, tuple[Callable[[str], tuple[str, str]], str]] = {
    "captive-portal": (_captive_portal, "with an HTML page (Content-Type text/html), not XML: not an AWS answer"),
    "portal-as-xml": (_portal_as_xml, "with an HTML page (Content-Type text/xml), not XML: not an AWS answer"),
    "json-for-xml": (_json_for_xml, "with JSON (Content-Type application/x-amz-json-1.1), not XML"),
    "empty-body": (_empty, "with an empty body (Content-Type text/xml), not XML"),
    "another-root": (_another_answer, "XML whose root is <"),
    "without-its-list": (_without_list, "answered without its"),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize("action", [c.operation for c in CALLS])
def test_every_ec2_call_records_a_wrong_200_as_bad_response(action: str, fault: str) -> None:
    make, said = FAULTS[fault]
    replay = Ec2Replay({"us-east-1": _demo()})
    replay.wrong[action] = make(action)
    with serve(replay) as url:
        client = boto3.session.Session().client("ec2", region_name="us-east-1", endpoint_url=url)
        inventory = collect.collect_region(client, "us-east-1", topology=True)
    [error] = inventory.errors
    assert (error.call, error.code, error.region) == (action, "BadResponse", "us-east-1")
    assert said in error.message and action in error.message
    assert not inventory.complete
    fact = next(c.fact for c in CALLS if c.operation == action)
    assert not any(key.endswith(f":{fact}") for key in inventory.collected)
    if action == "DescribeInstances":
        assert inventory.nodes == []
    else:  # the other calls were read as usual
        assert sum(1 for n in inventory.nodes if n.state == "running") == 34


def test_a_captive_portal_for_describe_instances_fails_the_gate() -> None:
    replay = Ec2Replay({"us-east-1": _demo()})
    replay.wrong["DescribeInstances"] = CAPTIVE_PORTAL
    with serve(replay) as url:
        result = run("aws", "--endpoint-url", url, "-r", "us-east-1", "-f", "json", "--fail-on", "never")
    assert result.returncode == 2, result.stderr
    report = json.loads(result.stdout)
    assert report["complete"] is False and report["clusters"] == []
    [error] = report["errors"]
    assert (error["call"], error["code"]) == ("DescribeInstances", "BadResponse")
    assert "captive-portal" in error["message"]


def test_a_present_empty_list_is_a_complete_empty_answer() -> None:
    replay = Ec2Replay({"us-east-1": answers([])})  # every list there, empty; no instance types file at all
    with serve(replay) as url:
        inventory = collect.collect_region(
            boto3.session.Session().client("ec2", region_name="us-east-1", endpoint_url=url), "us-east-1"
        )
    assert inventory.complete and inventory.errors == [] and inventory.nodes == []


def test_all_regions_with_a_wrong_describe_regions_is_one_line() -> None:
    replay = Ec2Replay({"us-east-1": _demo()})
    replay.wrong["DescribeRegions"] = _without_list("DescribeRegions")
    with serve(replay) as url:
        line = one_clean_line(run("aws", "--endpoint-url", url, "--all-regions"))
    assert "--all-regions: DescribeRegions failed: DescribeRegions answered without its regionInfo" in line


def _efa_said(word: str) -> tuple[str, str]:
    """The demo's DescribeInstanceTypes answer as EC2 serializes it, with p5.48xlarge's efaSupported as `word`."""
    types = _demo()["describe-instance-types.json"]["InstanceTypes"]
    body = answer_xml("DescribeInstanceTypes", {"InstanceTypes": types})
    start = body.index("<instanceType>p5.48xlarge</instanceType>")
    at = body.index("<efaSupported>true</efaSupported>", start)
    return "text/xml;charset=UTF-8", body[:at] + f"<efaSupported>{word}</efaSupported>" + body[at + 33 :]


@pytest.mark.parametrize("word", ["yes", "True", "1", ""])
def test_an_efa_flag_botocore_would_read_as_false_is_bad_response_not_no_efa(word: str) -> None:
    replay = Ec2Replay({"us-east-1": _demo()})
    replay.wrong["DescribeInstanceTypes"] = _efa_said(word)
    with serve(replay) as url:
        client = boto3.session.Session().client("ec2", region_name="us-east-1", endpoint_url=url)
        inventory = collect.collect_region(client, "us-east-1")
    [error] = inventory.errors
    assert (error.call, error.code) == ("DescribeInstanceTypes", "BadResponse")
    assert f'efaSupported "{word}" (in instanceType p5.48xlarge), not true or false' in error.message
    assert (
        inventory.capabilities == {}
    )  # the answer is not used: the catalog's rows stand in, and the run is incomplete
    report = flow.run(inventory, flow.Options())
    assert report.complete is False
    p5_clusters = [c for c in report.clusters if "p5.48xlarge" in c.instance_types]
    assert p5_clusters and not any(
        f.rule == "AWS130" for f in report.findings if f.cluster in {c.id for c in p5_clusters}
    )


def test_a_count_botocore_cannot_read_is_bad_response_not_a_crash() -> None:
    content, body = _efa_said("true")
    body = body.replace("<count>8</count>", "<count>eight</count>", 1)
    replay = Ec2Replay({"us-east-1": _demo()})
    replay.wrong["DescribeInstanceTypes"] = (content, body)
    with serve(replay) as url:
        client = boto3.session.Session().client("ec2", region_name="us-east-1", endpoint_url=url)
        inventory = collect.collect_region(client, "us-east-1")
    [error] = inventory.errors
    assert (
        error.code == "BadResponse"
        and 'count "eight" (in instanceType p4d.24xlarge), not a whole number' in error.message
    )


def _organization() -> FleetReplay:
    return FleetReplay({"222222222222": {"us-east-1": answers([instance("i-00000000000000001")])}})


def _assumed_with(monkeypatch: pytest.MonkeyPatch, answer: tuple[str, str]) -> tuple[Inventory, CollectionError]:
    """A live collection of the organization's one account whose AssumeRole is answered with `answer` (content
    type, body): the inventory and its one error, that account's BadResponse on AssumeRole."""
    replay = _organization()
    replay.wrong["AssumeRole"] = answer
    with serve_fleet(replay) as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL", url)
        plan = fleet.Fleet(role_arn="arn:aws:iam::222222222222:role/Auditor")
        inventory = collect.collect_live(["us-east-1"], session=boto3.session.Session(), accounts=plan)
    [error] = inventory.errors
    assert (error.account, error.call, error.code) == ("222222222222", "AssumeRole", "BadResponse")
    return inventory, error


def test_a_wrong_assume_role_answer_is_that_accounts_bad_response(monkeypatch: pytest.MonkeyPatch) -> None:
    inventory, error = _assumed_with(monkeypatch, CAPTIVE_PORTAL)
    assert "Content-Type text/html" in error.message and not inventory.complete


def test_a_wrong_list_accounts_answer_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    replay = _organization()
    replay.wrong["ListAccounts"] = ("application/x-amz-json-1.1", "{}")
    with serve_fleet(replay) as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL", url)
        with pytest.raises(FabricCheckError, match="ListAccounts answered without its Accounts"):
            collect.collect_live(
                ["us-east-1"], session=boto3.session.Session(), accounts=fleet.Fleet(org_role="Auditor")
            )


LOOSE = "text/html; charset=utf-8"  # the Content-Type moto's server (5.2) gives Organizations' JSON answers


def test_real_answers_under_a_loose_content_type_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33: the body decides, not the header. Every answer of every protocol (Organizations' JSON, STS's and
    EC2's XML, every EC2 call fabriccheck makes, topology included) sent as `text/html; charset=utf-8`, as moto's
    server sends Organizations' (getmoto/moto moto/organizations/responses.py returns a bare json.dumps string, which
    moto/core/utils.py convert_to_flask_response wraps in a flask Response with no Content-Type; pallets/flask
    src/flask/wrappers.py: Response.default_mimetype = "text/html"): every account is read in full."""
    replay = FleetReplay({a: {"us-east-1": _demo()} for a in ("222222222222", "333333333333")}, content_type=LOOSE)
    with serve_fleet(replay) as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL", url)
        inventory = collect.collect_live(
            ["us-east-1"], session=boto3.session.Session(), accounts=fleet.Fleet(org_role="Auditor"), topology=True
        )
    assert inventory.complete and inventory.errors == []
    assert {s.account: s.nodes for s in inventory.scopes if s.region} == {"222222222222": 35, "333333333333": 35}
    asked = {a for _, a in replay.actions()}
    assert {"ListAccounts", "AssumeRole"} | {c.operation for c in CALLS} <= asked


# Answers to Organizations' JSON protocol that are not ListAccounts' answer, whatever their header says.
NOT_JSON = {
    "captive-portal": (CAPTIVE_PORTAL, "with an HTML page (Content-Type text/html), not JSON"),
    "portal-as-json": (("application/x-amz-json-1.1", CAPTIVE_PORTAL[1]), "with an HTML page (Content-Type applic"),
    "xml-for-json": (("text/xml", answer_xml("DescribeRegions", {"Regions": []})), "with XML (Content-Type text/xml)"),
    "empty-body": (("application/x-amz-json-1.1", " \n"), "with an empty body"),
    "json-list": ((LOOSE, "[]"), "answered a JSON list, not an object"),
    "not-json": ((LOOSE, "Service Unavailable"), "with text (Content-Type text/html), not JSON"),
}


@pytest.mark.parametrize("fault", sorted(NOT_JSON))
def test_a_list_accounts_answer_that_is_not_json_is_one_line(monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    """Issue 33: what the body is decides; a JSON object under a loose header is read (above), these are not."""
    answer, said = NOT_JSON[fault]
    replay = _organization()
    replay.wrong["ListAccounts"] = answer
    with serve_fleet(replay) as url:
        line = one_clean_line(run("aws", "--org-role", "Auditor", "-r", "us-east-1", env=_to(url)))
    assert line.startswith("fabriccheck: error: --org-role: listing the organization's accounts failed: ListAccounts")
    assert said in line and "not an AWS answer" in line


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (("application/json", '{"Credentials": {}}'), "with JSON (Content-Type application/json), not XML"),
        ((LOOSE, ""), "with an empty body (Content-Type text/html), not XML"),
    ],
    ids=["json-for-xml", "empty-body"],
)
def test_an_assume_role_answer_of_the_other_protocol_is_bad_response(
    monkeypatch: pytest.MonkeyPatch, answer: tuple[str, str], said: str
) -> None:
    inventory, error = _assumed_with(monkeypatch, answer)
    assert said in error.message and not inventory.complete and inventory.nodes == []


def _to(url: str) -> dict[str, str]:
    """The environment a user's CI gives fabriccheck to reach an emulator: its endpoint and made-up keys."""
    return {
        **os.environ,
        "AWS_ENDPOINT_URL": url,
        "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }


def test_a_reservation_without_its_instances_is_damaged_not_a_clean_account(tmp_path: Path) -> None:
    """Issue 29 item 9: `{"Reservations": [{}]}` read as an account with no instances (complete, exit 0). A
    reservation "describes a launch request for one or more instances" (EC2 API Reference, Reservation:
    https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Reservation.html), so one without its Instances is a
    damaged answer: in a dump, one line naming the file and field, exit 2, the dump as it was; live, the call's
    BadResponse and an incomplete run (served as EC2's XML by tests/ec2_replay.py, parsed by boto3)."""
    folder = tmp_path / "aws"
    folder.mkdir()
    for name, answer in _demo().items():
        (folder / name).write_text(json.dumps(answer))
    damaged = folder / "describe-instances.json"
    damaged.write_text('{"Reservations": [{}]}')
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    line = one_clean_line(run("aws", "--from-dump", str(folder), "-f", "json"))
    assert line == (
        f"fabriccheck: error: {damaged}: field Reservations[0].Instances: expected a list (a reservation lists its "
        "instances)"
    )
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    replay = Ec2Replay({"us-east-1": {**_demo(), "describe-instances.json": {"Reservations": [{}]}}})
    with serve(replay) as url:
        result = run("aws", "--endpoint-url", url, "-r", "us-east-1", "-f", "json", "--fail-on", "never")
    assert result.returncode == 2, result.stderr
    report = json.loads(result.stdout)
    assert report["complete"] is False
    assert [(e["call"], e["code"]) for e in report["errors"]] == [("normalize", "BadResponse")]
    assert "Reservations[0].Instances: expected a list" in report["errors"][0]["message"]
