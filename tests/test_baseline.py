"""Baselines: today's findings recorded; later runs fail only on new ones, matched on rule + resource identity
(never the message); a missing or malformed baseline is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import one_clean_line, run

from fabriccheck import baseline, flow
from fabriccheck.cli import demo_inventory
from fabriccheck.errors import FabricCheckError
from fabriccheck.findings import Finding

CLUSTER = "aws:111122223333:us-east-1:auto-scaling-group/trn"


def finding(resources: list[str], cluster: str | None = CLUSTER, message: str = "m", rule: str = "AWS112") -> Finding:
    return Finding(
        rule=rule,
        title="t",
        severity="warning",
        category="fabric-isolated",
        provider="aws",
        account="111122223333",
        cluster=cluster,
        resources=resources,
        message=message,
        remediation="r",
        effect="none",
        references=["https://example.com"],
    )


def test_identity_is_the_cluster_for_cluster_findings_and_the_resource_otherwise() -> None:
    assert baseline.identity(finding(["i-1", "i-2"])) == CLUSTER
    assert baseline.identity(finding(["i-1"])) == "aws:111122223333:i-1"
    assert baseline.identity(finding(["module.gpu.aws_instance.w[0]"], cluster=None)) == (
        "aws:111122223333:module.gpu.aws_instance.w[0]"
    )
    # A cluster that grows keeps its finding; the message (node counts, bandwidths) never matters.
    assert baseline.fingerprint(finding(["i-1", "i-2"], message="2 nodes")) == baseline.fingerprint(
        finding(["i-1", "i-2", "i-3"], message="3 nodes")
    )
    assert baseline.fingerprint(finding(["i-1"])) != baseline.fingerprint(finding(["i-1"], rule="AWS110"))
    assert baseline.fingerprint(finding(["i-1"])) != baseline.fingerprint(finding(["i-2"]))


def test_apply_marks_new_and_existing_and_counts_fixed() -> None:
    old = [finding(["i-1"]), finding(["i-2"])]
    recorded = baseline.build(old)
    now = [finding(["i-1"], message="changed wording"), finding(["i-3"])]
    summary = baseline.apply(now, recorded, "b.json")
    assert [f.baseline for f in now] == ["existing", "new"]
    assert (summary.recorded, summary.existing, summary.new, summary.fixed) == (2, 1, 1, 1)


def test_write_then_load_round_trips(tmp_path: Path) -> None:
    report = flow.run(demo_inventory(), flow.Options())
    path = tmp_path / "b.json"
    baseline.write(report.findings, path)
    loaded = baseline.load(path)
    assert {e.fingerprint for e in loaded.findings} == {f.fingerprint for f in report.findings}
    again = flow.run(demo_inventory(), flow.Options(baseline=loaded, baseline_file=str(path)))
    assert again.findings and all(f.baseline == "existing" for f in again.findings)
    assert again.worst_severity() is None and again.summary.in_baseline == len(again.findings)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{", "not valid JSON"),
        ("[]", "not a fabriccheck baseline"),
        ('{"baseline_version": 7, "findings": []}', "baseline_version 7 is not supported"),
        ('{"baseline_version": 1, "findings": [{"rule": "AWS101"}]}', "field findings.0.identity"),
    ],
)
def test_malformed_baselines(tmp_path: Path, content: str, needle: str) -> None:
    path = tmp_path / "b.json"
    path.write_text(content)
    with pytest.raises(FabricCheckError) as caught:
        baseline.load(path)
    assert str(caught.value).startswith(f"baseline {path}: ") and needle in str(caught.value)


def test_cli_write_baseline_then_fail_only_on_new(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    args = ["demo", "--fail-on", "warning", "-f", "json"]
    assert run(*args).returncode == 1
    written = run(*args, "--select", "AWS1", "--write-baseline", str(path))
    assert written.returncode == 0, written.stderr  # judged against what it just wrote
    recorded = json.loads(path.read_text())
    assert recorded["baseline_version"] == 1 and {e["rule"][:4] for e in recorded["findings"]} == {"AWS1"}
    # The same findings pass; the other clouds' findings (not recorded) are new and fail.
    same = run(*args, "--select", "AWS1", "--baseline", str(path))
    assert same.returncode == 0
    assert json.loads(same.stdout)["baseline"]["new"] == 0
    wider = run(*args, "--baseline", str(path))
    assert wider.returncode == 1
    report = json.loads(wider.stdout)
    new = {f["rule"] for f in report["findings"] if f["baseline"] == "new"}
    assert new and not any(rule.startswith("AWS1") for rule in new)
    # Editing a recorded message does not matter; dropping a recorded finding makes it new again.
    for entry in recorded["findings"]:
        entry["message"] = "edited by hand"
    dropped = recorded["findings"].pop(0)
    path.write_text(json.dumps(recorded))
    edited = json.loads(run(*args, "--select", "AWS1", "--baseline", str(path)).stdout)
    assert {f["rule"] for f in edited["findings"] if f["baseline"] == "new"} == {dropped["rule"]}
    sarif = json.loads(run("demo", "-f", "sarif", "--select", "AWS1", "--baseline", str(path)).stdout)
    states = {r["baselineState"] for r in sarif["runs"][0]["results"]}
    assert states == {"new", "unchanged"}


def test_cli_missing_or_malformed_baseline_is_exit_2(tmp_path: Path) -> None:
    line = one_clean_line(run("demo", "--baseline", str(tmp_path / "absent.json")))
    assert "absent.json: no such file" in line
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    assert "not valid JSON" in one_clean_line(run("demo", "--baseline", str(bad)))
    out = tmp_path / "same.json"
    assert "name the same file" in one_clean_line(run("demo", "-o", str(out), "--write-baseline", str(out)))
