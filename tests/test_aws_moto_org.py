"""An organization scan end to end against moto's real server on 127.0.0.1 (issue 33), as a user testing in their
own CI would: start the server, build an organization in it with boto3, run `fabriccheck aws --org-role` at it
through AWS_ENDPOINT_URL (boto3's standard variable for every service: EC2, STS and Organizations alike).

moto's server sends Organizations' JSON answers as `Content-Type: text/html; charset=utf-8` (getmoto/moto
moto/core/utils.py convert_to_flask_response: a flask Response without a Content-Type; pallets/flask
src/flask/wrappers.py: Response.default_mimetype = "text/html"), which the captive-portal guard used to refuse
before a single account was read. With IAM enforcement on (moto docs, "IAM-like Access Control": POST
/moto-api/reset-auth), AssumeRole is checked against the caller's policies and EC2 calls against the assumed
role's, and the account an answer comes from is the one the assumed keys belong to (moto/sts/models.py
assume_role: "The ARN can point to another account, providing an opportunity to switch accounts").
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from cli_run import run

moto_server = pytest.importorskip("moto.server")

ROLE = "Auditor"
# EC2 calls moto's server does not implement (HTTP 500): the scan records them and is incomplete, as it must be.
MOTO_GAPS = {"DescribePlacementGroups", "DescribeCapacityReservations"}
READ_EC2 = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "ec2:Describe*", "Resource": "*"}]}


def _moto_api(url: str, path: str, body: bytes = b"") -> None:
    """moto's own control API (moto docs, "Server mode": /moto-api/reset, /moto-api/reset-auth)."""
    request = urllib.request.Request(url + path, data=body, headers={"Content-Type": "text/plain"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:
        answer.read()


@pytest.fixture
def moto(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)  # the setup's own boto3 clients
    try:
        yield url
    finally:  # moto keeps its state and auth setting in this process: leave neither to other tests
        _moto_api(url, "/moto-api/reset-auth", b"inf")
        _moto_api(url, "/moto-api/reset")
        server.stop()


def _session(credentials: dict[str, str]) -> Any:
    return boto3.session.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials.get("SessionToken"),
        region_name="us-east-1",
    )


def _organization() -> tuple[str, dict[str, str], dict[str, str], set[tuple[str, str]]]:
    """An organization of a management account and three members: each member runs two GPU nodes, `locked` is one
    whose role the CI user is denied. Returns the management account, member name -> id, the CI user's keys, and
    (account, instance id) of every node."""
    org = boto3.client("organizations", region_name="us-east-1")
    org.create_organization(FeatureSet="ALL")
    management = str(org.describe_organization()["Organization"]["MasterAccountId"])
    members = {
        name: str(org.create_account(Email=f"{name}@example.com", AccountName=name)["CreateAccountStatus"]["AccountId"])
        for name in ("train-a", "train-b", "locked")
    }
    iam = boto3.client("iam", region_name="us-east-1")
    iam.create_user(UserName="ci")
    key = iam.create_access_key(UserName="ci")["AccessKey"]
    # What fabriccheck aws --print-iam-policy asks for in the management account, and a Deny on one member's role
    # (an SCP or a permissions boundary does this in a real organization).
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": ["organizations:ListAccounts", "sts:AssumeRole"], "Resource": "*"},
            {"Effect": "Deny", "Action": "sts:AssumeRole", "Resource": f"arn:aws:iam::{members['locked']}:role/{ROLE}"},
        ],
    }
    iam.put_user_policy(UserName="ci", PolicyName="fabriccheck", PolicyDocument=json.dumps(policy))
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{management}:user/ci"}, "Action": "sts:AssumeRole"}
        ],
    }
    sts = boto3.client("sts", region_name="us-east-1")
    nodes: set[tuple[str, str]] = set()
    for account in (management, *members.values()):
        # Into each account as its administrator would: the role Organizations creates in every new member.
        admin = sts.assume_role(
            RoleArn=f"arn:aws:iam::{account}:role/OrganizationAccountAccessRole", RoleSessionName="setup"
        )["Credentials"]
        there = _session(admin)
        there.client("iam").create_role(RoleName=ROLE, AssumeRolePolicyDocument=json.dumps(trust))
        there.client("iam").put_role_policy(RoleName=ROLE, PolicyName="read", PolicyDocument=json.dumps(READ_EC2))
        if account != management:
            nodes |= {(account, i) for i in _gpu_nodes(there.client("ec2"))}
    keys = {"AccessKeyId": key["AccessKeyId"], "SecretAccessKey": key["SecretAccessKey"]}
    return management, members, keys, nodes


def _gpu_nodes(ec2: Any) -> list[str]:
    """Two p4d.24xlarge in one Auto Scaling group, launched without EFA (moto's instances have none)."""
    launched = ec2.run_instances(
        ImageId="ami-12c6146b",  # one of moto's own AMIs (moto/ec2/resources/amis.json)
        MinCount=2,
        MaxCount=2,
        InstanceType="p4d.24xlarge",
        TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": "aws:autoscaling:groupName", "Value": "trainers"}]}
        ],
    )
    return [str(i["InstanceId"]) for i in launched["Instances"]]


def test_an_org_scan_against_moto_judges_every_member_it_may_enter(moto: str) -> None:
    """Before issue 33's fix this ended with one line, "ListAccounts answered HTTP 200 with Content-Type text/html
    ... not an AWS answer", and no account was read."""
    management, members, ci, nodes = _organization()
    _moto_api(moto, "/moto-api/reset-auth", b"0")  # from here on, every call is checked against IAM
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": moto,
        "AWS_ACCESS_KEY_ID": ci["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": ci["SecretAccessKey"],
    }
    result = run("aws", "--org-role", ROLE, "-r", "us-east-1", "-f", "json", "--fail-on", "never", env=env)
    assert result.returncode == 2 and result.stdout, result.stderr  # incomplete: a denied role, moto's gaps
    report = json.loads(result.stdout)
    # Every account of the organization was listed (through moto's text/html JSON) and has its scope.
    assert {s["account"] for s in report["scopes"]} == {management, *members.values()}
    [denied] = [e for e in report["errors"] if e["call"] == "AssumeRole"]
    assert (denied["account"], denied["code"], denied["permission"]) == (
        members["locked"],
        "AccessDenied",
        "sts:AssumeRole",
    )
    assert f"arn:aws:iam::{members['locked']}:role/{ROLE}" in denied["message"]
    # Every other account was entered with its assumed role and read; what failed is only what moto lacks.
    others = [e for e in report["errors"] if e["call"] != "AssumeRole"]
    assert {e["call"] for e in others} <= MOTO_GAPS and {e["code"] for e in others} == {"BadResponse"}
    assert {e["account"] for e in others} == {management, members["train-a"], members["train-b"]}
    read = {s["account"]: s["nodes"] for s in report["scopes"] if s["region"] == "us-east-1"}
    assert read == {management: 0, members["train-a"]: 2, members["train-b"]: 2}
    # Each member's own instances, filed under that member, judged: a p4d.24xlarge without EFA (AWS101) each; the
    # locked member's were not seen, and nothing is said of them.
    judged = {(f["account"], r) for f in report["findings"] if f["rule"] == "AWS101" for r in f["resources"]}
    assert judged == {(a, i) for a, i in nodes if a != members["locked"]} and len(judged) == 4
    assert not any(f["account"] == members["locked"] for f in report["findings"])
