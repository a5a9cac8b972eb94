"""The installed command, run as a user runs it: exit codes, formats, bad input as one line."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run, run_installed
from ec2_replay import Ec2Replay, serve

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo" / "aws"


def report(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode in (0, 1), result.stderr
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def finding_pairs(result: subprocess.CompletedProcess[str]) -> list[tuple[str, tuple[str, ...]]]:
    """Each finding as (rule, resources), sorted: what two runs over the same fleet must agree on."""
    return sorted((f["rule"], tuple(f["resources"])) for f in json.loads(result.stdout)["findings"])


def test_demo_runs_outside_the_source_tree_and_shows_every_category() -> None:
    result = run("demo", "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["schema_version"] == 1 and report["complete"] is True and report["errors"] == []
    categories = {(f["provider"], f["category"]) for f in report["findings"]}
    aws = {"fabric-missing", "fabric-partial", "fabric-isolated", "placement", "instance-choice", "network-config"}
    assert {c for p, c in categories if p == "aws"} == aws
    # The Azure subscription shows every Azure category: no InfiniBand (Flexible), split partitions, choice,
    # network and drivers.
    assert {c for p, c in categories if p == "azure"} == {
        "fabric-missing",
        "fabric-isolated",
        "instance-choice",
        "network-config",
        "software",
    }
    # The GCP project shows every GCP category: missing and partial GPU NICs, isolation, placement, choice, MTU.
    assert {c for p, c in categories if p == "gcp"} == aws
    # The Kubernetes clusters (EKS, GKE, AKS) show missing fabric and a missing daemon (software).
    assert {c for p, c in categories if p == "k8s"} == {"fabric-missing", "software"}
    # The Slurm cluster (a ParallelCluster on the AWS account) has a partition and a job over two zones.
    assert {c for p, c in categories if p == "slurm"} == {"fabric-isolated"}
    clean = {c["provider"] for c in report["clusters"] if c["status"] == "clean"}
    assert clean == {"aws", "azure", "gcp", "k8s", "slurm"}
    clusters = {c["id"]: c for c in report["clusters"]}
    slurm = {name: clusters[f"slurm:llm:slurm:{name}"]["status"] for name in (
        "slurm-partition/train", "slurm-job/101", "slurm-partition/spot", "slurm-job/102")}
    assert list(slurm.values()) == ["clean", "clean", "findings", "findings"]
    clean = clusters["aws:111122223333:us-east-1:auto-scaling-group/llm-prod"]
    assert clean["findings"] == 0 and clean["penalty"]["slowdown"] == {"low": 1.0, "high": 1.0}
    missing = clusters["aws:111122223333:us-east-1:eks-node-group/research/llm-exp"]
    assert missing["penalty"]["slowdown"]["high"] > missing["penalty"]["slowdown"]["low"] > 1.0
    assert missing["penalty"]["workload"] == "llm-70b-fsdp"
    for finding in report["findings"]:
        assert {"rule", "severity", "category", "provider", "cluster", "resources", "message", "remediation"} <= set(
            finding
        )
        assert finding["resources"] and finding["remediation"]
    assert report["summary"]["findings"]["error"] > 0


def test_fail_on_sets_the_exit_code() -> None:
    assert run("demo", "--fail-on", "error", "-f", "json").returncode == 1
    assert run("demo", "--fail-on", "never", "-f", "json").returncode == 0
    only_info = run("demo", "--select", "AWS150", "--fail-on", "warning", "-f", "json")
    assert only_info.returncode == 0 and json.loads(only_info.stdout)["summary"]["findings"]["info"] == 1
    assert run("demo", "--select", "AWS150", "--fail-on", "info", "-f", "json").returncode == 1


def test_text_report_is_plain_when_piped(tmp_path: Path) -> None:
    result = run("demo", "--price-per-gpu-hour", "4.5")
    assert result.returncode == 0
    assert "\x1b[" not in result.stdout
    # The clean clusters (five since the Azure node array's two scale sets are judged apart) collapse to one line,
    # each by its short name (reports/names.py).
    assert "clean clusters: aws/111122223333/us-east-1/asg llm-prod" in result.stdout
    assert "AWS101 fabric-missing" in result.stdout and "Summary:" in result.stdout
    assert "$" in result.stdout  # dollars appear once a price is given


def test_sarif_junit_markdown(tmp_path: Path) -> None:
    sarif_file = tmp_path / "out.sarif"
    assert run("demo", "-f", "sarif", "-o", str(sarif_file)).returncode == 0
    sarif = json.loads(sarif_file.read_text())
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"AWS101", "AWS142"}
    assert all(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results)
    junit = ET.fromstring(run("demo", "-f", "junit", "--fail-on", "error").stdout)
    assert int(junit.get("failures", "0")) > 0
    markdown = run("demo", "-f", "markdown").stdout
    assert markdown.startswith("# fabriccheck report") and "### ERROR AWS101" in markdown


def test_save_inventory_then_check_gives_the_same_findings(tmp_path: Path) -> None:
    saved = tmp_path / "inventory.json"
    first = run("demo", "-f", "json", "--save-inventory", str(saved))
    again = run("check", str(saved), "-f", "json", "--fail-on", "never")
    assert again.returncode == 0, again.stderr
    assert finding_pairs(first) == finding_pairs(again)
    assert json.loads(saved.read_text())["schema_version"] == 3


DEMO_ACCOUNT = "111122223333"


def _copy_demo(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for path in DEMO.glob("*.json"):
        shutil.copyfile(path, folder / path.name)
    return folder


def _findings_by_scope(
    result: subprocess.CompletedProcess[str],
) -> list[tuple[str, tuple[str, ...], str, str | None]]:
    """Each finding as (rule, resources, account, cluster); launch-template findings have no cluster (None)."""
    found = [(f["rule"], tuple(f["resources"]), f["account"], f["cluster"]) for f in report(result)["findings"]]
    return sorted(found, key=lambda f: (f[0], f[1], f[2], f[3] or ""))


def test_from_dump_reads_region_and_account_folder_layouts(tmp_path: Path) -> None:
    """The same answers give the same findings whether the dump is flat, in a region folder, or in an account
    folder holding region folders; an account folder's name is the account its nodes are filed under."""

    def from_dump(directory: Path) -> subprocess.CompletedProcess[str]:
        return run("aws", "--from-dump", str(directory), "-f", "json", "--fail-on", "never")

    flat = from_dump(DEMO)
    assert flat.returncode == 0, flat.stderr
    expected = _findings_by_scope(flat)
    assert expected and {account for _, _, account, _ in expected} == {DEMO_ACCOUNT}
    # Launch-template findings belong to no cluster; every other names its cluster, keyed by account and region.
    clustered = [cluster for _, _, _, cluster in expected if cluster is not None]
    assert clustered and all(f":{DEMO_ACCOUNT}:us-east-1:" in cluster for cluster in clustered)

    _copy_demo(tmp_path / "by-region" / "us-east-1")
    _copy_demo(tmp_path / "by-account" / DEMO_ACCOUNT / "us-east-1")
    for layout in ("by-region", "by-account"):
        result = from_dump(tmp_path / layout)
        assert result.returncode == 0, result.stderr
        assert report(result)["complete"] is True and report(result)["errors"] == [], layout
        assert _findings_by_scope(result) == expected, layout

    # The folder's account wins over the OwnerId the answers carry: every node, cluster and finding is its.
    other = "999988887777"
    _copy_demo(tmp_path / "renamed" / other / "us-east-1")
    renamed_run = from_dump(tmp_path / "renamed")
    assert renamed_run.returncode == 0, renamed_run.stderr
    assert finding_pairs(renamed_run) == finding_pairs(flat)
    renamed = report(renamed_run)
    assert renamed["complete"] is True and renamed["errors"] == []
    assert renamed["findings"] and {f["account"] for f in renamed["findings"]} == {other}
    assert renamed["clusters"] and {c["account"] for c in renamed["clusters"]} == {other}
    assert all(f":{other}:" in c["id"] and DEMO_ACCOUNT not in c["id"] for c in renamed["clusters"])
    assert all(f["cluster"] is None or f":{other}:" in f["cluster"] for f in renamed["findings"])


def test_live_command_against_a_local_endpoint() -> None:
    """`fabriccheck aws --endpoint-url` as a subprocess, boto3 speaking EC2's protocol to 127.0.0.1."""
    replay = Ec2Replay.from_dump(DEMO)
    with serve(replay) as url:
        live = run_installed(
            "aws", "--endpoint-url", url, "--region", "us-east-1", "--topology", "-f", "json", "--fail-on", "never"
        )
    assert live.returncode == 0, live.stderr
    demo = run("aws", "--from-dump", str(DEMO), "-f", "json", "--fail-on", "never")
    assert finding_pairs(live) == finding_pairs(demo)
    assert json.loads(live.stdout)["source"].startswith("aws live")


def test_access_denied_makes_the_run_incomplete_exit_2() -> None:
    replay = Ec2Replay.from_dump(DEMO)
    replay.deny = {"DescribeSecurityGroups"}
    with serve(replay) as url:
        result = run("aws", "--endpoint-url", url, "-r", "us-east-1", "-f", "json", "--fail-on", "never")
    assert result.returncode == 2
    report = json.loads(result.stdout)
    assert report["complete"] is False
    assert report["errors"][0]["permission"] == "ec2:DescribeSecurityGroups"
    assert "AWS110" not in {f["rule"] for f in report["findings"]}  # not judged on facts it could not see


def test_print_iam_policy() -> None:
    policy = json.loads(run("aws", "--print-iam-policy").stdout)
    actions = policy["Statement"][0]["Action"]
    assert "ec2:DescribeInstances" in actions and all(a.startswith("ec2:Describe") for a in actions)


def test_rules_listing_and_explain() -> None:
    listing = run("rules")
    assert listing.returncode == 0 and "AWS101" in listing.stdout and "fabric-missing" in listing.stdout
    explain = run("rules", "AWS110", "--examples")
    assert "Failing examples (run now):" in explain.stdout and "flags i-1, i-2" in explain.stdout
    # Without --examples (issue 30 item 8): the page and a count of the examples, none of them run or shown.
    page = run("rules", "AWS110").stdout
    assert "examples (run now)" not in page and "flags i-1" not in page
    assert "--examples shows one rule's examples: give its ID" in one_clean_line(run("rules", "--examples"))
    assert re.search(r"Examples: \d+ passing, \d+ failing \(show them: fabriccheck rules AWS110\s+--examples\)", page)
    data = json.loads(run("rules", "AWS120", "-f", "json").stdout)
    assert data["examples"]["failing"][0]["flags"] == ["i-1", "i-2"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["aws", "--from-dump", "/nonexistent/dump"], "--from-dump /nonexistent/dump: not a folder"),
        (["demo", "--format", "yaml"], "'yaml' is not one of"),
        (["demo", "--workload", "gpt5"], "'--workload': unknown workload 'gpt5'"),
        (["demo", "--select", "AWS999"], "no rule or category matches 'AWS999'"),
        (["demo", "--price-per-gpu-hour", "-3"], "--price-per-gpu-hour"),
        (["check", "/nonexistent.json"], "/nonexistent.json: cannot read"),
        (["rules", "AWS999"], "no rule AWS999"),
        (["aws", "--nonsense"], "No such option: --nonsense"),
        (["aws", "--profile", "missing-profile", "-r", "us-east-1"], "--profile missing-profile: no such AWS profile"),
    ],
)
def test_bad_usage_is_one_line_exit_2(args: list[str], needle: str) -> None:
    assert needle in one_clean_line(run(*args))


def test_malformed_and_misshapen_dumps(tmp_path: Path) -> None:
    for path in DEMO.glob("*.json"):
        (tmp_path / path.name).write_text(path.read_text())
    (tmp_path / "describe-subnets.json").write_text("{not json")
    line = one_clean_line(run("aws", "--from-dump", str(tmp_path)))
    assert "describe-subnets.json: not valid JSON" in line
    (tmp_path / "describe-subnets.json").write_text('{"Subnets": {"SubnetId": "x"}}')
    assert "describe-subnets.json: field Subnets: expected a list" in one_clean_line(
        run("aws", "--from-dump", str(tmp_path))
    )
    (tmp_path / "describe-subnets.json").write_text('{"Subnets": [{"VpcId": "vpc-1"}]}')
    assert "describe-subnets.json: unexpected shape: missing field 'SubnetId'" in one_clean_line(
        run("aws", "--from-dump", str(tmp_path))
    )


def test_missing_dump_file_is_reported_and_incomplete(tmp_path: Path) -> None:
    for path in DEMO.glob("*.json"):
        if path.name != "describe-security-groups.json":
            (tmp_path / path.name).write_text(path.read_text())
    result = run("aws", "--from-dump", str(tmp_path), "-f", "json")
    assert result.returncode == 2
    errors = json.loads(result.stdout)["errors"]
    assert errors[0]["code"] == "MissingDump" and "describe-security-groups.json" in errors[0]["message"]
    text = run("aws", "--from-dump", str(tmp_path))
    assert "INCOMPLETE" in text.stdout


def test_unreachable_endpoint_is_incomplete_not_a_traceback() -> None:
    result = run("aws", "--endpoint-url", "http://127.0.0.1:9", "-r", "us-east-1", "-f", "json")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert json.loads(result.stdout)["errors"][0]["code"] == "Unreachable"


def test_no_credentials_is_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ACCESS") and not k.startswith("AWS_SECRET")}
    line = one_clean_line(run("aws", "-r", "us-east-1", env=env))
    assert "no AWS credentials found" in line


def test_help_imports_no_cloud_sdk_cel_pydantic_or_provider_support() -> None:
    """`--help` loads only the CLI: no cloud SDK, no CEL, no pydantic, and none of the provider support modules
    that fabriccheck.cloud.support() imports on first use. (How long it takes is benchmarks/bench_help.py's.)"""
    support_modules = [f"fabriccheck.providers.{p}.support" for p in ("aws", "azure", "gcp")]
    assert all(importlib.util.find_spec(m) for m in support_modules)  # the names checked below are real modules
    code = (
        "import json, sys, fabriccheck.cli as c; c.main(['--help']); "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('boto3', 'botocore', 'azure', 'google', 'cel', 'pydantic') "
        "or (m.startswith('fabriccheck.providers.') and m.endswith('.support')))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "Usage" in out.stdout
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
