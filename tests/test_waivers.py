"""Waivers: accepted exceptions stay in every report, marked with their reason, and do not fail the gate; an
expired waiver stops waiving and says so; one that matches nothing is stale; a bad file is one line, exit 2."""

from __future__ import annotations

import datetime as dt
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from cli_run import one_clean_line, run

from fabriccheck import flow, waivers
from fabriccheck.cli import demo_inventory
from fabriccheck.errors import FabricCheckError
from fabriccheck.findings import Finding

BERT = "aws:111122223333:us-east-1:auto-scaling-group/bert-ft"
TODAY = dt.date(2026, 11, 30)


def finding(rule: str = "AWS110", resources: tuple[str, ...] = ("i-1",), cluster: str | None = BERT) -> Finding:
    return Finding(
        rule=rule,
        title="t",
        severity="error",
        category="fabric-isolated",
        provider="aws",
        account="111122223333",
        cluster=cluster,
        resources=list(resources),
        message="m",
        remediation="r",
        effect="unreachable",
        references=["https://example.com"],
    )


def waiver(**fields: object) -> waivers.Waiver:
    return waivers.Waiver.model_validate({"rule": "AWS110", "resources": ["*"], "reason": "accepted", **fields})


def test_globs_cover_ids_clusters_and_terraform_addresses_literally() -> None:
    assert waiver(resources=["i-1"]).covers_resources(finding())
    assert waiver(resources=[BERT]).covers_resources(finding(resources=("i-1", "i-2")))
    assert waiver(resources=["aws:111122223333:*/bert-*"]).covers_resources(finding())
    assert not waiver(resources=["i-2"]).covers_resources(finding())
    # Brackets are part of a Terraform address, not a character class: worker[3] is not worker3.
    address = finding(resources=("module.gpu.aws_instance.worker[3]",), cluster=None)
    assert waiver(resources=["module.gpu.aws_instance.worker[3]"]).covers_resources(address)
    assert waiver(resources=["module.gpu.aws_instance.worker[*]"]).covers_resources(address)
    assert not waiver(resources=["module.gpu.aws_instance.worker3"]).covers_resources(address)
    # One node of a finding that names two does not hide the other.
    assert not waiver(resources=["i-1"]).covers_resources(finding(resources=("i-1", "i-2"), cluster="other"))


def test_rule_or_category() -> None:
    assert waiver(rule="aws110").covers_rule(finding())
    assert not waiver(rule="AWS111").covers_rule(finding())
    by_category = waivers.Waiver.model_validate({"category": "fabric-isolated", "resources": ["*"], "reason": "x"})
    assert by_category.covers_rule(finding())


def test_apply_marks_findings_and_reports_expired_and_stale() -> None:
    findings = [finding(resources=("i-1",)), finding(resources=("i-2",)), finding(rule="AWS120")]
    statuses = waivers.apply(
        findings,
        [
            waiver(resources=["i-1"], reason="migrating next sprint", expires="2026-12-31"),
            waiver(resources=["i-2"], expires="2026-11-29"),  # yesterday
            waiver(resources=["i-9"]),
            waiver(rule="GCP101"),
        ],
        "w.yaml",
        TODAY,
        ran=["AWS110", "AWS120"],
    )
    assert findings[0].waiver is not None and findings[0].waiver.reason == "migrating next sprint"
    assert findings[0].waiver.expires == "2026-12-31" and findings[0].waiver.source == "w.yaml #1"
    assert findings[1].waiver is None and findings[2].waiver is None
    assert [s.status for s in statuses] == ["active", "expired", "stale", "not-run"]
    assert [s.matched for s in statuses] == [1, 1, 0, 0]
    notes = waivers.notes(statuses)
    assert len(notes) == 2
    assert "expired on 2026-11-29" in notes[0] and "count again" in notes[0]
    assert "waiver 3" in notes[1] and "stale" in notes[1]


def test_a_waiver_is_good_through_its_expiry_date() -> None:
    assert not waiver(expires="2026-11-30").expired(TODAY)
    assert waiver(expires="2026-11-29").expired(TODAY)


def test_yaml_and_toml_files(tmp_path: Path) -> None:
    yaml_file = tmp_path / "w.yaml"
    yaml_file.write_text(
        "waivers:\n  - rule: AWS110\n    resources: ['i-1']\n    reason: known\n    expires: 2027-01-31\n"
    )
    toml_file = tmp_path / "w.toml"
    toml_file.write_text(
        '[[waivers]]\ncategory = "placement"\nresources = ["*"]\nreason = "known"\nexpires = 2027-01-31\n'
    )
    assert waivers.load(yaml_file)[0].expires == dt.date(2027, 1, 31)
    assert waivers.load(toml_file)[0].category == "placement"


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("w.yaml", "waivers:\n  - rule: AWS110\n    resources: ['i-1']\n", "waivers[1].reason: required"),
        ("w.yaml", "waivers:\n  - rule: AWS110\n    resources: ['i-1']\n    reason: '  '\n", "needs a reason"),
        (
            "w.yaml",
            "waivers:\n  - rule: AWS110\n    category: placement\n    resources: ['*']\n    reason: r\n",
            "exactly one of rule or category",
        ),
        ("w.yaml", "waivers:\n  - rule: AWS110\n    resources: []\n    reason: r\n", "waivers[1].resources"),
        (
            "w.yaml",
            "waivers:\n  - rule: AWS110\n    resources: ['*']\n    reason: r\n    owner: me\n",
            "unknown key waivers[1].owner",
        ),
        (
            "w.yaml",
            "waivers:\n  - rule: AWS110\n    resources: ['*']\n    reason: r\n    expires: soon\n",
            "waivers[1].expires",
        ),
        ("w.yaml", "waivers: [\n", "not valid YAML"),
        ("w.yaml", "- rule: AWS110\n", "expected a table with a `waivers` list"),
        ("w.toml", "[[waivers]\n", "not valid TOML"),
    ],
)
def test_bad_files_are_one_line_naming_the_file(tmp_path: Path, name: str, content: str, needle: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(FabricCheckError) as caught:
        waivers.load(path)
    assert str(caught.value).startswith(f"waivers file {path}: ") and needle in str(caught.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FabricCheckError, match="no such file"):
        waivers.load(tmp_path / "absent.yaml")


def test_flow_keeps_waived_findings_and_they_do_not_fail_the_gate() -> None:
    options = flow.Options(
        select=["AWS110"],
        waivers=[waiver(resources=[BERT], reason="isolated on purpose")],
        waivers_file="w.yaml",
        today=TODAY,
    )
    report = flow.run(demo_inventory(), options)
    assert report.findings and all(f.rule == "AWS110" for f in report.findings)
    assert all(f.waiver is not None and f.waiver.reason == "isolated on purpose" for f in report.findings)
    assert report.worst_severity() is None
    assert report.summary.waived == len(report.findings) == report.summary.findings["error"]
    assert report.waivers[0].status == "active"
    unwaived = flow.run(demo_inventory(), flow.Options(select=["AWS110"]))
    assert unwaived.worst_severity() == "error" and unwaived.summary.waived == 0


def _waivers_file(folder: Path, expires: str = "2099-01-01") -> Path:
    path = folder / "waivers.yaml"
    path.write_text(
        "waivers:\n"
        f"  - rule: AWS110\n    resources: ['{BERT}']\n    reason: bert is isolated on purpose\n"
        f"    expires: {expires}\n"
        "  - rule: AWS110\n    resources: ['i-nothing-*']\n    reason: nothing\n"
    )
    return path


def test_cli_every_format_marks_waived_findings_and_exit_code_follows(tmp_path: Path) -> None:
    path = _waivers_file(tmp_path)
    base = ["demo", "--select", "AWS110", "--fail-on", "error", "--waivers", str(path)]
    assert run("demo", "--select", "AWS110", "--fail-on", "error", "-f", "json").returncode == 1
    result = run(*base, "-f", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert {f["waiver"]["reason"] for f in report["findings"]} == {"bert is isolated on purpose"}
    assert [w["status"] for w in report["waivers"]] == ["active", "stale"]
    assert any("stale" in n for n in report["notes"])
    text = run(*base).stdout
    assert "waived: bert is isolated on purpose (until 2099-01-01)" in text and "AWS110" in text
    # The cluster whose every finding is waived shows that in the top table and its block, not "error".
    bert_row = next(line for line in text.splitlines() if "bert-ft" in line and "GPU-h/day" not in line)
    assert " waived " in bert_row and "error" not in bert_row
    assert "2 findings, none failing the gate" in text
    unwaived_text = run("demo", "--select", "AWS110").stdout
    assert " error " in next(line for line in unwaived_text.splitlines() if "bert-ft" in line)
    markdown = run(*base, "-f", "markdown").stdout
    assert "**Not failing:** waived: bert is isolated on purpose" in markdown
    assert "none failing the gate (waived or in the baseline)" in markdown
    assert any("bert-ft" in line and "| waived |" in line for line in markdown.splitlines())
    junit = ET.fromstring(run(*base, "-f", "junit").stdout)
    assert junit.get("failures") == "0" and junit.find(".//testcase") is not None
    assert "waived: bert is isolated on purpose" in ET.tostring(junit, encoding="unicode")
    sarif = json.loads(run(*base, "-f", "sarif").stdout)
    results = sarif["runs"][0]["results"]
    assert results and all(
        r["suppressions"][0]["kind"] == "external"
        and r["suppressions"][0]["justification"] == "bert is isolated on purpose (until 2099-01-01)"
        for r in results
    )


def test_cli_expired_waiver_stops_waiving_and_says_so(tmp_path: Path) -> None:
    path = _waivers_file(tmp_path, expires="2020-01-01")
    result = run("demo", "--select", "AWS110", "--fail-on", "error", "--waivers", str(path), "-f", "json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert all(f["waiver"] is None for f in report["findings"])
    assert report["waivers"][0]["status"] == "expired"
    assert any("expired on 2020-01-01" in n for n in report["notes"])


def test_cli_missing_or_malformed_waivers_file_is_exit_2(tmp_path: Path) -> None:
    line = one_clean_line(run("demo", "--waivers", str(tmp_path / "nope.yaml")))
    assert "waivers file" in line and "nope.yaml: no such file" in line
    bad = tmp_path / "bad.yaml"
    bad.write_text("waivers:\n  - rule: AWS110\n    resources: ['*']\n")
    line = one_clean_line(run("check", str(tmp_path / "absent.json"), "--waivers", str(bad)))
    assert "waivers[1].reason: required" in line  # read before the inventory: it fails before any work
