"""--format prometheus: node_exporter textfile metrics, parsed back with prometheus-client's own parser and
held against the JSON report of the same run."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest
from cli_run import run
from prometheus_client.parser import text_string_to_metric_families

from fabriccheck import flow
from fabriccheck.cli import demo_inventory
from fabriccheck.model import CollectionError
from fabriccheck.reports import render
from fabriccheck.waivers import Waiver


def metrics(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


def test_findings_by_labels_match_the_report() -> None:
    waiver = Waiver(rule="AWS110", resources=["*"], reason="accepted")
    report = flow.run(demo_inventory(), flow.Options(waivers=[waiver], waivers_file="w.yaml"))
    parsed = metrics(render(report, "prometheus"))
    counted: Counter[tuple[str, str, str, str, str]] = Counter()
    for labels, value in parsed["fabriccheck_findings"]:
        counted[(labels["rule"], labels["severity"], labels["account"], labels["cluster"], labels["status"])] += int(
            value
        )
    expected = Counter(
        (f.rule, f.severity, f.account, f.cluster or "", "waived" if f.waiver else "open") for f in report.findings
    )
    assert counted == expected and sum(expected.values()) == len(report.findings)
    assert any(status == "waived" for (*_, status) in counted)
    assert parsed["fabriccheck_scan_complete"] == [({}, 1.0)]
    assert dict((labels["status"], v) for labels, v in parsed["fabriccheck_waivers"]) == {"active": 1.0}


def test_cost_metrics_are_the_reports_bounded_figures() -> None:
    """Per estimated cluster: GPU-hours paid for, the share and GPU-hours lost (never more than paid for), dollars,
    whether it cannot run, and apart what the findings marked possible would add (the demo's AZ140)."""
    report = flow.run(demo_inventory(), flow.Options(price_per_gpu_hour=2.0))
    parsed = metrics(render(report, "prometheus"))
    assert "fabriccheck_extra_gpu_hours_per_day" not in parsed

    def by_cluster(name: str) -> dict[tuple[str, str], float]:
        return {(labels["cluster"], labels.get("bound", "")): value for labels, value in parsed.get(name, [])}

    paid, cannot = by_cluster("fabriccheck_cluster_gpu_hours_per_day"), by_cluster("fabriccheck_cluster_cannot_run")
    share, lost = by_cluster("fabriccheck_lost_share"), by_cluster("fabriccheck_lost_gpu_hours_per_day")
    money, possible = (
        by_cluster("fabriccheck_lost_dollars_per_day"),
        by_cluster("fabriccheck_possible_lost_gpu_hours_per_day"),
    )
    estimated = [c for c in report.clusters if c.penalty.estimated]
    assert estimated and len(paid) == len(estimated) < len(report.clusters)  # none for the unestimated
    for cluster in estimated:
        p = cluster.penalty
        assert p.lost_share is not None and p.lost_gpu_hours_per_day is not None
        assert paid[(cluster.id, "")] == cluster.gpus * 24 and cannot[(cluster.id, "")] == float(p.cannot_run)
        for bound in ("low", "high"):
            assert share[(cluster.id, bound)] == getattr(p.lost_share, bound)
            assert lost[(cluster.id, bound)] == getattr(p.lost_gpu_hours_per_day, bound) <= cluster.gpus * 24
            assert money[(cluster.id, bound)] == pytest.approx(2.0 * lost[(cluster.id, bound)])
    unreachable = sum(1 for c in report.clusters if c.penalty.cannot_run)
    assert sum(cannot.values()) == report.summary.clusters_cannot_run == unreachable >= 2
    [(custom, _)] = {key for key in possible if key[1] == "high"}
    assert custom.endswith("/nd-a100-custom") and lost[(custom, "high")] == 0.0
    assert report.summary.possible_lost_gpu_hours_per_day is not None
    assert possible[(custom, "high")] == pytest.approx(report.summary.possible_lost_gpu_hours_per_day.high)


def test_incomplete_scan_says_so() -> None:
    inventory = demo_inventory()
    inventory.errors.append(CollectionError(call="DescribeInstances", code="AccessDenied", message="no"))
    parsed = metrics(render(flow.run(inventory, flow.Options()), "prometheus"))
    assert parsed["fabriccheck_scan_complete"] == [({}, 0.0)]
    assert parsed["fabriccheck_collection_errors"] == [({}, 1.0)]


def test_cli_writes_the_textfile_whole_with_duration_and_api_calls(tmp_path: Path) -> None:
    target = tmp_path / "fabriccheck.prom"
    target.write_text("old\n")
    started = time.monotonic()
    result = run("demo", "-f", "prometheus", "-o", str(target))
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fabriccheck.prom"]  # no temporary file left behind
    parsed = metrics(target.read_text())
    [(_, duration)] = parsed["fabriccheck_scan_duration_seconds"]
    assert 0 < duration <= elapsed  # the scan's own time, within the process that ran it (no speed asserted)
    assert parsed["fabriccheck_api_calls"] == [({}, 0.0)]  # the demo reads dumps: no cloud call
    report = json.loads(run("demo", "-f", "json").stdout)
    assert sum(v for _, v in parsed["fabriccheck_findings"]) == len(report["findings"])


def test_api_calls_are_the_requests_the_cloud_received(tmp_path: Path) -> None:
    """A live AWS audit against EC2's protocol on 127.0.0.1: the metric counts exactly the requests served."""
    from ec2_replay import Ec2Replay, serve

    replay = Ec2Replay.from_dump(Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "aws")
    target = tmp_path / "fabriccheck.prom"
    with serve(replay) as url:
        result = run("aws", "--endpoint-url", url, "--region", "us-east-1", "-f", "prometheus", "-o", str(target))
    assert result.returncode == 1, result.stderr  # the demo account has error findings
    parsed = metrics(target.read_text())
    assert replay.calls and parsed["fabriccheck_api_calls"] == [({}, float(len(replay.calls)))]
