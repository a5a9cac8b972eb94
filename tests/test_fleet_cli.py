"""The installed command over a whole AWS organization on 127.0.0.1: exit codes of an incomplete fleet run with
and without --allow-incomplete, per-scope completeness and retries in the report, the per-scope log of
--verbose, SIGTERM, and the fleet options' one-line errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from aws_fleet_replay import FleetReplay, serve
from cli_run import one_clean_line, run
from loopback import silent_endpoint

from fabriccheck.sources.retries import RETRIES

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "aws"
ACCOUNTS = ["111111111111", "222222222222", "333333333333"]
FLEET = ["aws", "--org-role", "Auditor", "-r", "us-east-1"]


def organization() -> FleetReplay:
    answers = {p.name: json.loads(p.read_text()) for p in DEMO.glob("describe-*.json")}
    return FleetReplay({a: {"us-east-1": answers} for a in ACCOUNTS})


def fleet_run(replay: FleetReplay, *args: str) -> subprocess.CompletedProcess[str]:
    with serve(replay) as url:
        return run(*FLEET, *args, env={**os.environ, "AWS_ENDPOINT_URL": url})


def test_an_incomplete_fleet_exits_2_unless_allowed_then_the_findings_decide() -> None:
    replay = organization()
    replay.deny_assume = {ACCOUNTS[0]}
    strict = fleet_run(replay, "-f", "json")
    assert strict.returncode == 2, strict.stderr
    report: dict[str, Any] = json.loads(strict.stdout)
    assert report["complete"] is False
    [denied] = report["errors"]
    assert (denied["account"], denied["call"], denied["permission"]) == (ACCOUNTS[0], "AssumeRole", "sts:AssumeRole")
    scopes = {(s["account"], s["region"]): s for s in report["scopes"]}
    assert scopes[(ACCOUNTS[0], None)]["complete"] is False
    assert scopes[(ACCOUNTS[0], None)]["reason"] == "AssumeRole: AccessDenied"
    assert all(scopes[(a, "us-east-1")]["complete"] for a in ACCOUNTS[1:])
    assert report["summary"]["scopes_incomplete"] == 1 and report["summary"]["api_calls"] > 0
    # The demo's accounts have error findings: with --allow-incomplete they decide the exit code (1) ...
    allowed = fleet_run(replay, "-f", "json", "--allow-incomplete")
    assert allowed.returncode == 1, allowed.stderr
    assert json.loads(allowed.stdout)["complete"] is False  # ... and the report still says it was incomplete
    # ... and with nothing at or above --fail-on, 0.
    assert fleet_run(replay, "-f", "json", "--allow-incomplete", "--fail-on", "never").returncode == 0
    complete = fleet_run(organization(), "-f", "json", "--fail-on", "never")
    assert complete.returncode == 0 and json.loads(complete.stdout)["complete"] is True


def test_verbose_logs_one_line_per_scope_and_the_text_report_counts_them() -> None:
    replay = organization()
    replay.throttle = {"RequestLimitExceeded": 1}
    result = fleet_run(replay, "--verbose", "--fail-on", "never", "--concurrency", "2")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    scope_lines = [line for line in lines if " us-east-1: " in line]
    assert len(scope_lines) == len(ACCOUNTS)
    assert all(line.startswith("fabriccheck: aws ") and ": complete, 35 nodes, " in line for line in scope_lines)
    assert all("retries [" in line and "scopes done" in line for line in scope_lines)
    assert f"{len(ACCOUNTS)}/{len(ACCOUNTS) * 2} scopes done" in result.stderr or "scopes done" in lines[-1]
    summary = next(line for line in result.stdout.splitlines() if "Collected " in line)
    assert f"Collected {len(ACCOUNTS) * 2} scopes" in summary and "retries after throttling" in summary


def test_sigterm_stops_without_waiting_for_the_calls_under_way_with_143_and_writes_nothing(tmp_path: Path) -> None:
    """The endpoint never answers: a process that waited for its calls would wait out their 60 s read timeout, so
    one that ends inside the guard (half of it) did not wait, however busy the machine."""
    out = tmp_path / "out"
    out.mkdir()
    with silent_endpoint() as (url, connected):
        args = ["fabriccheck", "aws", "--endpoint-url", url, "-f", "json", "-o", str(out / "report.json")]
        args += ["--save-inventory", str(out / "inventory.json"), "-r", "us-east-1", "-r", "eu-west-1"]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/")
        try:
            assert connected.wait(30), "the collector never called the endpoint"
            time.sleep(0.5)
            assert proc.poll() is None
            proc.send_signal(signal.SIGTERM)
            stdout, stderr = proc.communicate(timeout=RETRIES.read_timeout / 2)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 143, stderr
    assert (stdout, stderr) == ("", "fabriccheck: terminated\n")
    assert list(out.iterdir()) == []


def test_the_printed_policy_follows_the_fleet_options() -> None:
    single = json.loads(run("aws", "--print-iam-policy").stdout)
    org = json.loads(run("aws", "--print-iam-policy", "--org-role", "Auditor").stdout)
    role = json.loads(run("aws", "--print-iam-policy", "--role-arn", "arn:aws:iam::111111111111:role/R").stdout)
    assert [s["Sid"] for s in single["Statement"]] == ["FabricCheckReadOnly"]
    assert [s["Sid"] for s in org["Statement"]] == [
        "FabricCheckReadOnly",
        "FabricCheckListAccounts",
        "FabricCheckAssumeRole",
    ]
    assert role["Statement"][-1]["Resource"] == "arn:aws:iam::111111111111:role/R"
    assert "--region" in one_clean_line(run("aws", "--print-iam-policy", "--org-role", "A", "--region", "us-east-1"))


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["aws", "--accounts", "111111111111"], "--accounts filters the organization's accounts"),
        (["aws", "--org-role", "A", "--concurrency", "0"], "--concurrency"),
        (["aws", "--from-dump", str(DEMO), "--org-role", "A"], "--from-dump and --org-role cannot be used together"),
        (["azure", "--from-dump", str(DEMO), "--management-group", "g"], "--from-dump and --management-group"),
        (["gcp", "--from-dump", str(DEMO), "--organization", "1"], "--from-dump and --organization"),
    ],
)
def test_fleet_options_misused_are_one_line(args: list[str], named: str) -> None:
    assert named in one_clean_line(run(*args))
