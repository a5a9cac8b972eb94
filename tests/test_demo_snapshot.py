"""The demo's JSON report, held against the one recorded before accounts were part of every key: the rework
may add scope (an `account` on findings, clusters and errors, and the account in cluster ids) and nothing
else. A change to a verdict, a message or a penalty shows here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fabriccheck import flow
from fabriccheck.providers.aws.dump import load_dump
from fabriccheck.reports import render

ROOT = Path(__file__).resolve().parent.parent
BEFORE = Path(__file__).parent / "snapshots" / "demo-report-before-scope.json"
DEMO_ACCOUNT = "111122223333"


def _demo_report() -> dict[str, Any]:
    report = flow.run(load_dump(ROOT / "fixtures" / "demo" / "aws"), flow.Options())
    loaded: dict[str, Any] = json.loads(render(report, "json"))
    return loaded


def _without_scope(report: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps({k: v for k, v in report.items() if k not in ("generated_at", "source")})
    stripped: dict[str, Any] = json.loads(text.replace(f":{DEMO_ACCOUNT}:", ":"))
    for key in ("findings", "clusters", "errors"):
        for item in stripped[key]:
            item.pop("account")
    return stripped


def test_demo_report_differs_from_before_only_by_scope() -> None:
    report = _demo_report()
    before = json.loads(BEFORE.read_text())
    before = {k: v for k, v in before.items() if k not in ("generated_at", "source")}
    assert _without_scope(report) == before


def test_every_finding_and_cluster_of_the_demo_carries_its_account() -> None:
    report = _demo_report()
    assert report["findings"] and report["clusters"]
    assert {f["account"] for f in report["findings"]} == {DEMO_ACCOUNT}
    assert {c["account"] for c in report["clusters"]} == {DEMO_ACCOUNT}
    assert all(c["id"].startswith(f"aws:{DEMO_ACCOUNT}:us-east-1:") for c in report["clusters"])
