"""A rule that could not be judged keeps its cluster incomplete even when another rule fired (issue 18, item 3).

The dump is the demo's AWS account (fixtures/demo/aws, made by tools/build_demo.py) with the EFA interfaces of
the `llm-exp` node group moved to a security group the account's describe-security-groups answer does not hold
(a group deleted, or another account's): AWS102 still fires on its nodes (one of 32 EFA interfaces), AWS110
(the group lets EFA traffic to itself) cannot be judged. Waiving AWS102, or a baseline holding it, must not
turn that run green: the gate exits 2 until every selected rule was judged (or --allow-incomplete)."""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from cli_run import run

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo" / "aws"
LLM_EXP = "aws:111122223333:us-east-1:eks-node-group/research/llm-exp"
UNSEEN = "sg-0dead00000000beef"
# Only the two rules at stake, so that no other cluster's finding decides the exit code.
ONLY = ["--select", "AWS102", "--select", "AWS110"]


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("dump") / "aws"
    shutil.copytree(DEMO, folder)
    path = folder / "describe-instances.json"
    answer = json.loads(path.read_text())
    moved = 0
    for reservation in answer["Reservations"]:
        for instance in reservation["Instances"]:
            if {"Key": "eks:nodegroup-name", "Value": "llm-exp"} in instance.get("Tags", []):
                for nic in instance["NetworkInterfaces"]:
                    nic["Groups"] = [{"GroupId": UNSEEN, "GroupName": "deleted"}]
                moved += 1
    assert moved == 4
    path.write_text(json.dumps(answer, indent=2))
    return folder


def _json(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


def _cluster(report: dict[str, Any], cluster_id: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in report["clusters"] if c["id"] == cluster_id)
    return found


def test_findings_and_a_rule_not_judged_both_hold(dump: Path) -> None:
    result = run("aws", "--from-dump", str(dump), "-f", "json")
    assert result.returncode == 2, result.stderr  # not judged: not green, whatever else fired
    report = _json(result)
    # Every call was answered (no error), but the gap in judging means this run cannot pass a gate: `complete`
    # says so as the exit code does (issue 28, "complete" contract).
    assert report["errors"] == [] and report["complete"] is False
    llm = _cluster(report, LLM_EXP)
    assert llm["status"] == "findings" and llm["findings"] == 4
    assert llm["complete"] is False
    assert [(n["rule"], UNSEEN in n["reason"]) for n in llm["not_judged"]] == [("AWS110", True)]
    others = [c for c in report["clusters"] if c["id"] != LLM_EXP]
    assert others and all(c["complete"] for c in others)
    assert report["summary"]["clusters_not_fully_judged"] == 1
    assert report["summary"]["clusters_by_status"]["incomplete"] == 0  # status as before: findings first


def test_a_waiver_of_the_finding_does_not_make_the_unjudged_rule_pass(dump: Path, tmp_path: Path) -> None:
    waivers = tmp_path / "waivers.yaml"
    # Every finding of both rules waived (llm-exp's AWS102, bert-ft's AWS110): only the rule not judged is left.
    waivers.write_text(
        'waivers:\n  - rule: AWS102\n    resources: ["*"]\n    reason: "known, JIRA-7"\n'
        '  - rule: AWS110\n    resources: ["*"]\n    reason: "known, JIRA-8"\n'
    )
    result = run("aws", "--from-dump", str(dump), *ONLY, "--waivers", str(waivers), "-f", "json")
    assert result.returncode == 2, result.stderr
    report = _json(result)
    assert report["summary"]["waived"] == len(report["findings"]) == 6
    assert report["summary"]["clusters_not_fully_judged"] == 1
    # --allow-incomplete lets the findings decide, and they are all waived.
    allowed = run("aws", "--from-dump", str(dump), *ONLY, "--waivers", str(waivers), "--allow-incomplete")
    assert allowed.returncode == 0, allowed.stderr
    assert "NOT FULLY JUDGED" in allowed.stdout  # the report still says so
    assert "INCOMPLETE:" not in allowed.stdout  # every fact was collected: no collection error is claimed


def test_a_baseline_holding_the_finding_does_not_make_the_unjudged_rule_pass(dump: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    written = run("aws", "--from-dump", str(dump), *ONLY, "--write-baseline", str(baseline), "-f", "json")
    assert written.returncode == 2 and _json(written)["summary"]["in_baseline"] == 6  # every finding held
    again = run("aws", "--from-dump", str(dump), *ONLY, "--baseline", str(baseline), "-f", "json")
    assert again.returncode == 2, again.stderr
    assert _json(again)["summary"]["in_baseline"] == 6
    allowed = run("aws", "--from-dump", str(dump), *ONLY, "--baseline", str(baseline), "--allow-incomplete")
    assert allowed.returncode == 0, allowed.stderr


def test_a_deselected_rule_does_not_count_as_not_judged(dump: Path) -> None:
    result = run("aws", "--from-dump", str(dump), "--select", "AWS102", "-f", "json")
    llm = _cluster(_json(result), LLM_EXP)
    assert llm["complete"] is True and any(n["rule"] == "AWS110" for n in llm["not_judged"])  # listed: deselected
    assert result.returncode == 1  # the AWS102 errors decide


def test_complete_agrees_with_the_exit_code(dump: Path) -> None:
    """Issue 28's contract: `complete` is false exactly when the run cannot pass a gate for something not judged
    (exit 2), and true when every selected rule was judged (the findings decide)."""
    unjudged = run("aws", "--from-dump", str(dump), *ONLY, "-f", "json")
    judged = run("aws", "--from-dump", str(dump), "--select", "AWS102", "-f", "json")
    assert (unjudged.returncode, _json(unjudged)["complete"]) == (2, False)
    assert (judged.returncode, _json(judged)["complete"]) == (1, True)
    # A report read back (merge) is held to the same: its unjudged cluster keeps it incomplete.
    from fabriccheck.report import Report

    reread = json.loads(unjudged.stdout)
    reread["complete"] = True  # as a report written before this contract said it
    assert Report.model_validate(reread).complete is False


def test_every_format_says_it(dump: Path, tmp_path: Path) -> None:
    out = {fmt: tmp_path / f"report.{ext}" for fmt, ext in (("text", "txt"), ("markdown", "md"), ("sarif", "sarif"))}
    out["junit"] = tmp_path / "report.xml"
    for fmt, path in out.items():
        assert run("aws", "--from-dump", str(dump), *ONLY, "-f", fmt, "-o", str(path)).returncode == 2
    text = out["text"].read_text()
    assert "4 findings; not fully judged" in text and "NOT FULLY JUDGED: 1 cluster has a selected rule" in text
    markdown = out["markdown"].read_text()
    assert "worst error; not fully judged" in markdown and "**Not fully judged:** 1 cluster" in markdown
    run_ = json.loads(out["sarif"].read_text())["runs"][0]
    invocation = run_["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert any(
        LLM_EXP in n["message"]["text"] and "AWS110" in n["message"]["text"]
        for n in invocation["toolExecutionNotifications"]
    )
    suite = ET.parse(out["junit"]).getroot().find("testsuite")
    assert suite is not None and suite.get("errors") == "1"
    judging = suite.find("testcase[@classname='fabriccheck.judging']/error")
    assert judging is not None and f"{LLM_EXP}: AWS110" in (judging.text or "")
    assert suite.find(f"testcase[@name='{LLM_EXP} not fully judged']/skipped") is not None
