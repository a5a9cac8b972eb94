"""The Python API (fabriccheck.audit) and the JSON Schema of the report (fabriccheck schema)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cli_run import run

from fabriccheck import Dump, Plan, audit, render
from fabriccheck.errors import FabricCheckError

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo"


def schema() -> dict[str, Any]:
    result = run("schema")
    assert result.returncode == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_json_reports_of_demo_plan_and_merge_validate_against_the_schema(tmp_path: Path) -> None:
    validator = jsonschema.Draft202012Validator(schema())
    parts = []
    for name, args in (
        ("demo", ["demo"]),
        ("plans", ["demo", "--plan"]),
        ("aws", ["aws", "--from-dump", str(DEMO / "aws")]),
    ):
        out = tmp_path / f"{name}.json"
        run(*args, "-f", "json", "-o", str(out))
        parts.append(out)
    gcp = tmp_path / "gcp.json"
    run("gcp", "--from-dump", str(DEMO / "gcp"), "-f", "json", "-o", str(gcp))
    merged = run("merge", str(parts[2]), str(gcp), "-f", "json")
    documents = [json.loads(p.read_text()) for p in parts] + [json.loads(merged.stdout)]
    for document in documents:
        errors = [e.message for e in validator.iter_errors(document)]
        assert not errors, errors[:3]
    documents[0]["findings"][0]["severity"] = "fatal"
    assert list(validator.iter_errors(documents[0]))


def test_audit_gives_the_report_the_cli_renders() -> None:
    report = audit("aws", DEMO / "aws")
    cli = json.loads(run("aws", "--from-dump", str(DEMO / "aws"), "-f", "json").stdout)
    assert [f.fingerprint for f in report.findings] == [f["fingerprint"] for f in cli["findings"]]
    assert report.summary.findings == cli["summary"]["findings"]
    assert "AWS111" in render(report, "markdown")


def test_audit_of_a_plan_keeps_the_named_cloud() -> None:
    plan = DEMO / "plans" / "aws-wrong.json"
    report = audit("aws", Plan(plan, terraform_dir=DEMO / "plans" / "aws-wrong"))
    assert report.findings and {f.provider for f in report.findings} == {"aws"}
    assert report.locations  # the configuration's file and line of each block
    plain = audit("aws", plan)  # a JSON file without schema_version is read as a plan
    assert [f.fingerprint for f in plain.findings] == [f.fingerprint for f in report.findings]
    assert not audit("gcp", plan).findings  # another cloud's view of an AWS plan: nothing of its own


def test_audit_refuses_what_it_cannot_do() -> None:
    with pytest.raises(FabricCheckError, match="provider"):
        audit("oracle", Dump(DEMO / "aws"))
    with pytest.raises(FabricCheckError, match="no such file"):
        audit("aws", "/nonexistent")
