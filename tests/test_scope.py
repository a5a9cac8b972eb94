"""Scope in every key: two accounts read together never share a cluster or lend each other facts.

The answers are built by tests/ec2_shapes.py in the EC2 API's own shape (botocore's Stubber validates each
against the EC2 model here)
for two accounts that both run an Auto Scaling group named `trainers` and both have a group `sg-efa`: the
situation where keys without the account gave a false zone split and judged one account on the other's
security groups.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from ec2_shapes import answers, instance, placement_group, security_group, write

from fabriccheck import flow, report
from fabriccheck.providers.aws.dump import load_dump
from fabriccheck.providers.aws.normalize import CALLS

A, B = "111122223333", "444455556666"


def _answers(account: str, zone: str, group_allows_itself: bool = True) -> dict[str, Any]:
    """Two p4d nodes of the group `trainers` in `zone`, the account's own sg-efa and pg-train."""
    nodes = [instance(f"i-{account[:6]}{n:011x}", account=account, zone=zone) for n in range(2)]
    return answers(
        nodes,
        account=account,
        groups=[security_group(account=account, allows_itself=group_allows_itself)],
        placement_groups=[placement_group(account=account)],
    )


def _write(folder: Path, docs: dict[str, Any]) -> None:
    write(folder, docs)


def _merged(*parts: dict[str, Any]) -> dict[str, Any]:
    """One file per call holding several accounts' answers, as a merged organization-wide dump would."""
    merged: dict[str, Any] = {}
    for part in parts:
        for name, doc in part.items():
            key = next(iter(doc))
            merged.setdefault(name, {key: []})[key].extend(doc[key])
    return merged


@pytest.mark.parametrize("account", [A, B])
def test_the_answers_have_the_ec2_api_shape(account: str) -> None:
    client = boto3.client("ec2", region_name="us-east-1")
    for name, doc in _answers(account, "us-east-1a").items():
        call = next(c for c in CALLS if c.dump_file == name)
        with Stubber(client) as stub:
            stub.add_response(call.method, doc)  # raises on a shape the EC2 model does not allow
            getattr(client, call.method)()


def _report(folder: Path) -> report.Report:
    return flow.run(load_dump(folder), flow.Options())


def test_two_accounts_in_one_dump_are_two_clusters(tmp_path: Path) -> None:
    _write(tmp_path, _merged(_answers(A, "us-east-1a"), _answers(B, "us-east-1b")))
    report = _report(tmp_path)
    assert report.complete
    clusters = {c.id: c for c in report.clusters}
    assert set(clusters) == {
        f"aws:{A}:us-east-1:auto-scaling-group/trainers",
        f"aws:{B}:us-east-1:auto-scaling-group/trainers",
    }
    assert {c.account for c in report.clusters} == {A, B}
    assert all(len(c.nodes) == 2 for c in report.clusters)
    # Each account's group of one zone is whole: no zone split, and each account's own sg-efa is judged.
    assert report.findings == []


def test_two_accounts_in_account_folders_are_two_clusters(tmp_path: Path) -> None:
    _write(tmp_path / A, _answers(A, "us-east-1a"))
    _write(tmp_path / B / "us-east-1", _answers(B, "us-east-1b"))
    report = _report(tmp_path)
    assert report.complete and report.findings == []
    assert sorted(c.account for c in report.clusters) == [A, B]


def test_one_accounts_groups_never_judge_anothers_nodes(tmp_path: Path) -> None:
    """A's sg-efa is wrong, B's is right: only A's nodes are flagged, though both groups are named sg-efa."""
    _write(tmp_path, _merged(_answers(A, "us-east-1a", group_allows_itself=False), _answers(B, "us-east-1b")))
    report = _report(tmp_path)
    flagged = {(f.rule, f.account) for f in report.findings}
    assert flagged == {("AWS110", A)}
    assert len([f for f in report.findings if f.rule == "AWS110"]) == 2


def test_a_missing_answer_of_one_account_leaves_only_its_facts_unknown(tmp_path: Path) -> None:
    """B's security groups were not collected: B's nodes are not judged on A's (wrong) sg-efa, A's still are,
    and the run is incomplete with the error filed under B."""
    _write(tmp_path / A, _answers(A, "us-east-1a", group_allows_itself=False))
    answers_b = _answers(B, "us-east-1b", group_allows_itself=False)
    del answers_b["describe-security-groups.json"]
    _write(tmp_path / B, answers_b)
    report = _report(tmp_path)
    assert not report.complete
    assert [(e.account, e.code, e.call) for e in report.errors] == [(B, "MissingDump", "describe-security-groups.json")]
    assert {f.account for f in report.findings if f.rule == "AWS110"} == {A}


def test_the_json_report_names_the_account_everywhere(tmp_path: Path) -> None:
    _write(tmp_path / A, _answers(A, "us-east-1a", group_allows_itself=False))
    answers_b = _answers(B, "us-east-1b")
    del answers_b["describe-subnets.json"]
    _write(tmp_path / B, answers_b)
    result = subprocess.run(
        ["fabriccheck", "aws", "--from-dump", str(tmp_path), "-f", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr  # incomplete: B's subnets are missing
    report = json.loads(result.stdout)
    assert [e["account"] for e in report["errors"]] == [B]
    assert {f["account"] for f in report["findings"]} == {A}
    assert sorted(c["account"] for c in report["clusters"]) == [A, B]
