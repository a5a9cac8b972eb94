"""`nccl-log` and `nccl-tests` write the one report every command writes (issue 30, item 3): every format through the
shared writers, the JSON valid against `fabriccheck schema`, `--previous` and `merge` on evidence reports.

The evidence files are the sample logs and tables of tests/fixtures/nccl (each one's source in its SOURCES.md row,
repeated beside its constant here).
"""

from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from browser import CHROMIUM, Browser
from cli_run import run
from prometheus_client.parser import text_string_to_metric_families

from fabriccheck.report import load_report
from fabriccheck.schema import report_schema

FIXTURES = Path(__file__).parent / "fixtures" / "nccl"
DEMO = Path(__file__).parent.parent / "fixtures" / "demo"
SARIF_SCHEMA = json.loads((Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json").read_text())
# NVIDIA/nccl issue #690 (the maintainer's quote of both sides): host x1 on IB, host x0 on Socket (NCCL206, NCCL201).
MIXED_LOG = FIXTURES / "log_mixed_networks.txt"
# NVIDIA/nccl issue #707: channels `via NET/IB/5/GDRDMA` on two hosts, nothing wrong.
HEALTHY_LOG = FIXTURES / "log_ib_gdrdma_channels.txt"
# NVIDIA/nccl issue #1453: all_reduce busbw falls to ~5 GB/s above 32 MiB on 2 x p4d (NCCL210).
TCP_TABLE = FIXTURES / "tests_rank_prefixed_truncated.txt"
TCP_ARGS = ["--instance-type", "p4d.24xlarge", "--nodes", "2"]
FORMATS = ("text", "json", "sarif", "junit", "markdown", "prometheus", "html")
COMMANDS = {"nccl-log": [str(MIXED_LOG)], "nccl-tests": [str(TCP_TABLE), *TCP_ARGS]}


def _written(tmp_path: Path, command: str, fmt: str, *args: str) -> str:
    out = tmp_path / f"{command}.{fmt}.out"
    result = run(command, *args, "-f", fmt, "-o", str(out))
    assert result.returncode == 1, result.stderr  # each sample has an error finding
    return out.read_text()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_format_of_an_evidence_report(tmp_path: Path, command: str) -> None:
    args = COMMANDS[command]
    document = json.loads(_written(tmp_path, command, "json", *args))
    jsonschema.Draft202012Validator(report_schema()).validate(document)
    (job,) = document["clusters"]
    assert document["evidence"] == command and job["evidence"]["kind"] == command
    assert {f["cluster"] for f in document["findings"]} == {job["id"]} and job["findings"] == len(document["findings"])
    rules = {f["rule"] for f in document["findings"]}

    sarif = json.loads(_written(tmp_path, command, "sarif", *args))
    errors = list(jsonschema.Draft4Validator(SARIF_SCHEMA).iter_errors(sarif))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    driver = sarif["runs"][0]["tool"]["driver"]
    assert {r["id"] for r in driver["rules"]} == set(document["rules"])  # every rule run, not only those that fired
    uris = {
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for r in sarif["runs"][0]["results"]
        for loc in r["locations"]
    }
    assert uris == {args[0]}  # a process or run is located in the evidence file

    junit = ET.fromstring(_written(tmp_path, command, "junit", *args))
    failed = {case.get("classname") for case in junit.iter("testcase") if case.find("failure") is not None}
    assert failed == {f"fabriccheck.{job['provider']}.{rule}" for rule in rules}

    families = {f.name: f for f in text_string_to_metric_families(_written(tmp_path, command, "prometheus", *args))}
    found = {(s.labels["rule"], s.labels["cluster"]) for s in families["fabriccheck_findings"].samples}
    assert found == {(rule, job["id"]) for rule in rules}
    assert families["fabriccheck_scan_complete"].samples[0].value == 1.0

    markdown = _written(tmp_path, command, "markdown", *args)
    html = _written(tmp_path, command, "html", *args)
    assert job["id"] in markdown and f'data-cluster="{job["id"]}"' in html
    text = _written(tmp_path, command, "text", *args)
    assert f"Job {job['id']}" in text and all(rule in text for rule in rules)


def test_the_measured_figures_are_in_each_format_for_people(tmp_path: Path) -> None:
    document = json.loads(_written(tmp_path, "nccl-tests", "json", *COMMANDS["nccl-tests"]))
    (run_,) = document["clusters"][0]["evidence"]["runs"]
    last = run_["comparisons"][-1]
    assert (run_["verdict"], last["bytes"]) == ("tcp-fallback", 536870912)
    measured, expected = f"{last['busbw_gbytes_per_s']:.2f}", f"{last['expected_busbw_gbytes_per_s']:.2f}"
    for fmt in ("text", "markdown", "html"):
        shown = _written(tmp_path, "nccl-tests", fmt, *COMMANDS["nccl-tests"])
        assert measured in shown and expected in shown and "measured/expected" in shown, fmt
    textfile = _written(tmp_path, "nccl-tests", "prometheus", *COMMANDS["nccl-tests"])
    (family,) = [f for f in text_string_to_metric_families(textfile) if f.name == "fabriccheck_nccl_busbw_gbytes_per_s"]
    plotted = {(int(s.labels["bytes"]), s.labels["figure"]): s.value for s in family.samples}
    assert plotted == {
        (c["bytes"], figure): c[key]
        for c in run_["comparisons"]
        for figure, key in (("measured", "busbw_gbytes_per_s"), ("expected", "expected_busbw_gbytes_per_s"))
    }


def test_the_text_report_fits_columns_and_keeps_its_verdict() -> None:
    result = run("nccl-log", str(MIXED_LOG), env={**os.environ, "COLUMNS": "60"})
    assert result.returncode == 1 and max(len(line) for line in result.stdout.splitlines()) <= 60
    assert "transport" in result.stdout and "NCCL201" in result.stdout
    quiet = run("nccl-log", str(MIXED_LOG), "--quiet")
    assert quiet.stdout == "fabriccheck nccl-log: 2 errors, 0 warnings, 0 info in 1 job on 2 nodes\n"


def test_help_lists_the_formats_each_command_writes_and_they_are_accepted(tmp_path: Path) -> None:
    for command, args in COMMANDS.items():
        help_text = " ".join(run(command, "--help", env={**os.environ, "COLUMNS": "200"}).stdout.split())
        assert "text, json, sarif, junit, markdown, prometheus or html" in help_text
        for fmt in FORMATS:
            result = run(command, *args, "-f", fmt, "-o", str(tmp_path / f"{command}-{fmt}"))
            assert result.returncode == 1, (command, fmt, result.stderr)


def test_previous_says_what_was_fixed_and_what_is_new(tmp_path: Path) -> None:
    log = tmp_path / "nccl.log"  # the same job's log, rerun: the same file name, so the same job id
    shutil.copy(MIXED_LOG, log)
    before = tmp_path / "before.json"
    assert run("nccl-log", str(log), "-f", "json", "-o", str(before)).returncode == 1
    shutil.copy(HEALTHY_LOG, log)
    fixed = json.loads(run("nccl-log", str(log), "-f", "json", "--previous", str(before)).stdout)
    assert sorted(f["rule"] for f in fixed["trend"]["fixed"]) == ["NCCL201", "NCCL206"]
    assert fixed["trend"]["new"] == [] and fixed["findings"] == []
    after = tmp_path / "after.json"
    assert run("nccl-log", str(log), "-f", "json", "-o", str(after)).returncode == 0
    shutil.copy(MIXED_LOG, log)
    again = run("nccl-log", str(log), "--previous", str(after))
    assert again.returncode == 1 and "2 new" in again.stdout
    assert sorted(f.rule for f in load_report(after).findings) == []  # the earlier report, read back as a report


def test_previous_of_another_kind_of_report_is_not_compared(tmp_path: Path) -> None:
    cloud = tmp_path / "aws.json"
    assert (
        run("aws", "--from-dump", str(DEMO / "aws"), "-f", "json", "-o", str(cloud), "--fail-on", "never").returncode
        == 0
    )
    result = run("nccl-log", str(MIXED_LOG), "-f", "json", "--previous", str(cloud))
    report = json.loads(result.stdout)
    assert report["trend"] is None and "nccl-log evidence" in result.stderr
    assert any("nothing to compare" in note for note in report["notes"])


def _eks_log(tmp_path: Path) -> Path:
    """MIXED_LOG with its hosts named as the EC2 instances of the demo's EKS MPIJob nccl-tests (EC2's resource-based
    hostnames are the instance id): a log whose host names equal instance ids must still not be joined to the
    workload, nor its GPUs counted against it."""
    text = MIXED_LOG.read_text().replace("x0:", "i-0000000000000008b:")
    path = tmp_path / "eks-nccl.log"
    path.write_text(text.replace("x1:", "i-000000000000000d0:"))
    return path


def test_merge_lists_an_evidence_job_beside_a_k8s_report(tmp_path: Path) -> None:
    k8s, log = tmp_path / "k8s.json", tmp_path / "log.json"
    assert (
        run("k8s", "--from-dump", str(DEMO / "k8s"), "-f", "json", "-o", str(k8s), "--fail-on", "never").returncode == 0
    )
    made = run("nccl-log", str(_eks_log(tmp_path)), "--provider", "aws", "-f", "json", "-o", str(log))
    assert made.returncode == 1, made.stderr
    merged = run("merge", str(k8s), str(log), "-f", "json")
    assert merged.returncode == 1, merged.stderr
    report: dict[str, Any] = json.loads(merged.stdout)
    parts = [json.loads(k8s.read_text()), json.loads(log.read_text())]
    assert [c["id"] for c in report["clusters"]] == [c["id"] for part in parts for c in part["clusters"]]
    assert len(report["findings"]) == sum(len(part["findings"]) for part in parts)
    # Side by side, joined to nothing: the workload's cloud clusters are none, and the job prices no GPU-hour.
    assert all(c["cloud_clusters"] == [] for c in report["clusters"])
    assert report["workload"] == parts[0]["workload"] and report["evidence"] is None
    assert report["summary"]["gpu_hours_per_day"] == parts[0]["summary"]["gpu_hours_per_day"]
    assert report["summary"]["lost_gpu_hours_per_day"] == parts[0]["summary"]["lost_gpu_hours_per_day"]
    text = run("merge", str(k8s), str(log)).stdout
    assert "Job nccl-log:eks-nccl.log" in text


def test_a_failed_run_writes_a_schema_valid_report(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = run("nccl-tests", str(TCP_TABLE), "--instance-type", "x9.huge", "-f", "json", "-o", str(out))
    assert result.returncode == 2
    document = json.loads(out.read_text())
    jsonschema.Draft202012Validator(report_schema()).validate(document)
    assert document["complete"] is False and [e["code"] for e in document["errors"]] == ["unknown-model"]
    assert load_report(out).errors[0].provider == "nccl-tests"


@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing (Debian's chromium package)")
def test_the_evidence_page_in_a_browser(tmp_path: Path) -> None:
    page_file = tmp_path / "report.html"
    assert run("nccl-tests", str(TCP_TABLE), *TCP_ARGS, "-f", "html", "-o", str(page_file)).returncode == 1
    with Browser() as browser:
        page = browser.open(page_file.as_uri())
        assert page.requests == [page.url] and page.errors == []
        shown = page.evaluate("[...document.querySelectorAll('article.cluster')].map(a => a.dataset.cluster)")
        assert shown == ["nccl-tests:tests_rank_prefixed_truncated.txt"]
        rows = page.evaluate("[...document.querySelectorAll('table.evidence tr')].map(r => r.cells.length)")
        assert rows == [7] * 6  # the heads and the five judged sizes
        verdict = page.evaluate("document.querySelector('.headline .big').textContent")
        assert verdict == "fabriccheck nccl-tests: 1 error, 0 warnings, 0 info in 1 job on 2 nodes"
