"""The evidence rules (NCCL2xx) in the one rule book and behind the one gate: `fabriccheck rules` lists and explains
them, and `nccl-log` / `nccl-tests` take a scan's --select, --ignore, --severity, waivers and baselines.

The log is a real one (tests/fixtures/nccl/SOURCES.md): two ranks of one run, one on IB (x1) and one on sockets
(x0), so it holds two findings: NCCL201 (sockets) and NCCL206 (the ranks used different networks)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cli_run import one_clean_line, run

FIXTURES = Path(__file__).parent / "fixtures" / "nccl"
MIXED_LOG = str(FIXTURES / "log_mixed_networks.txt")
TCP_RUN = str(FIXTURES / "tests_rank_prefixed_truncated.txt")  # NVIDIA/nccl#1453: ~5 GB/s above 32 MiB
IB_LOG = str(FIXTURES / "log_ib_gdrdma_channels.txt")
ISOLATED = {**os.environ, "FABRICCHECK_ISOLATED": "1"}


def log_report(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    result = run("nccl-log", MIXED_LOG, "--format", "json", *args, env=env or ISOLATED)
    return result.returncode, json.loads(result.stdout)


def rules_of(report: dict[str, Any]) -> list[str]:
    return sorted(f["rule"] for f in report["findings"])


def test_the_log_holds_both_findings_without_a_gate() -> None:
    code, report = log_report()
    assert code == 1 and rules_of(report) == ["NCCL201", "NCCL206"]
    assert report["waivers"] == [] and report["baseline"] is None


def test_rules_lists_and_explains_the_evidence_rules() -> None:
    listed = run("rules").stdout
    for rule_id, judges in (("NCCL201", "nccl-log"), ("NCCL206", "nccl-log"), ("NCCL210", "nccl-tests")):
        (line,) = [x for x in listed.splitlines() if x.startswith(rule_id)]
        assert line.split()[3] == judges
    rows = {r["id"]: r for r in json.loads(run("rules", "--format", "json").stdout)}
    assert rows["NCCL212"]["kind"] == "evidence" and rows["NCCL212"]["source"] == "nccl-tests"
    assert rows["AWS101"]["kind"] == "inventory" and rows["AWS101"]["source"] == "aws"
    explained = json.loads(run("rules", "nccl201", "--format", "json").stdout)
    assert explained["check"] == "fabriccheck.evidence.judge.sockets"
    # The examples are run, not copied: every failing one flags something, every passing one nothing.
    assert all(e["flags"] for e in explained["examples"]["failing"])
    assert not any(e["flags"] for e in explained["examples"]["passing"])
    assert "Flags when (judged on `fabriccheck nccl-tests` input)" in run("rules", "NCCL210").stdout


def test_select_and_ignore_choose_evidence_rules() -> None:
    code, report = log_report("--ignore", "NCCL206")
    assert code == 1 and rules_of(report) == ["NCCL201"]
    code, report = log_report("--select", "fabric-isolated")  # a category, as for the cloud rules
    assert code == 1 and rules_of(report) == ["NCCL206"]
    code, report = log_report("--ignore", "NCCL2")  # a prefix: nothing left of this command's rules
    assert code == 2 and report["errors"][0]["code"] == "usage"
    assert "leave no nccl-log rule to run" in report["errors"][0]["message"]


def test_a_selection_of_cloud_rules_leaves_no_evidence_rule_and_a_typo_fails() -> None:
    result = run("nccl-log", MIXED_LOG, "--select", "AWS1", env=ISOLATED)
    assert result.returncode == 2 and "leave no nccl-log rule to run" in one_clean_line(result)
    result = run("nccl-log", MIXED_LOG, "--select", "NCCL299", env=ISOLATED)
    assert result.returncode == 2 and "--select NCCL299: no rule or category matches" in one_clean_line(result)
    # nccl-tests has its own rules: a log-only selection leaves it none.
    result = run("nccl-tests", TCP_RUN, "--instance-type", "p4d.24xlarge", "--select", "NCCL201", env=ISOLATED)
    assert result.returncode == 2 and "leave no nccl-tests rule to run" in one_clean_line(result)


def test_severity_overrides_change_the_gate() -> None:
    code, report = log_report("--severity", "NCCL201=warning", "--severity", "fabric-isolated=info")
    assert code == 0
    assert {f["rule"]: f["severity"] for f in report["findings"]} == {"NCCL201": "warning", "NCCL206": "info"}
    assert log_report("--severity", "NCCL201=warning", "--severity", "NCCL206=info", "--fail-on", "warning")[0] == 1


def waivers_file(tmp_path: Path, body: str) -> str:
    path = tmp_path / "waivers.yaml"
    path.write_text(body)
    return str(path)


def test_waivers_cover_evidence_findings_in_every_format(tmp_path: Path) -> None:
    one = waivers_file(tmp_path, "waivers:\n  - rule: NCCL201\n    resources: ['x0:*']\n    reason: host x0 is out\n")
    code, report = log_report("--waivers", one)
    assert code == 1  # NCCL206 still fails
    waived = {f["rule"]: f["waiver"] for f in report["findings"]}
    assert waived["NCCL201"]["reason"] == "host x0 is out" and waived["NCCL206"] is None
    assert [(w["rule"], w["status"], w["matched"]) for w in report["waivers"]] == [("NCCL201", "active", 1)]
    both = waivers_file(
        tmp_path,
        "waivers:\n  - rule: NCCL201\n    resources: ['x0:*']\n    reason: host x0 is out\n"
        "  - category: fabric-isolated\n    resources: ['*']\n    reason: mixed on purpose\n",
    )
    assert log_report("--waivers", both)[0] == 0
    text = run("nccl-log", MIXED_LOG, "--waivers", both, env=ISOLATED)
    assert text.returncode == 0 and "waived: host x0 is out" in text.stdout
    sarif = json.loads(run("nccl-log", MIXED_LOG, "--waivers", both, "--format", "sarif", env=ISOLATED).stdout)
    results = sarif["runs"][0]["results"]
    assert all(r["suppressions"][0]["status"] == "accepted" for r in results) and len(results) == 2
    assert all(r["partialFingerprints"]["fabriccheck/v1"] for r in results)


def test_an_expired_waiver_waives_nothing_and_says_so(tmp_path: Path) -> None:
    old = waivers_file(
        tmp_path, "waivers:\n  - rule: NCCL201\n    resources: ['*']\n    reason: r\n    expires: 2020-01-31\n"
    )
    code, report = log_report("--waivers", old)
    assert code == 1 and all(f["waiver"] is None for f in report["findings"])
    assert any("expired on 2020-01-31" in n for n in report["notes"])


def test_a_waiver_for_a_rule_nobody_has_is_one_line(tmp_path: Path) -> None:
    bad = waivers_file(tmp_path, "waivers:\n  - rule: NCCL299\n    resources: ['*']\n    reason: r\n")
    result = run("nccl-log", MIXED_LOG, "--waivers", bad, env=ISOLATED)
    assert result.returncode == 2 and "NCCL299" in one_clean_line(result)


def test_baselines_record_and_then_hold_evidence_findings(tmp_path: Path) -> None:
    recorded = tmp_path / "baseline.json"
    code, report = log_report("--write-baseline", str(recorded))
    assert code == 0 and report["baseline"]["existing"] == 2  # judged against what it writes
    assert sorted(e["rule"] for e in json.loads(recorded.read_text())["findings"]) == ["NCCL201", "NCCL206"]
    code, report = log_report("--baseline", str(recorded))
    assert code == 0 and {f["baseline"] for f in report["findings"]} == {"existing"}
    # A clean log against the same baseline: nothing new, both recorded findings fixed.
    clean = run("nccl-log", IB_LOG, "--baseline", str(recorded), "--format", "json", env=ISOLATED)
    assert clean.returncode == 0 and json.loads(clean.stdout)["baseline"]["fixed"] == 2
    # A baseline holding only NCCL206: NCCL201 is new and fails the gate.
    only = tmp_path / "only.json"
    written = run("nccl-log", MIXED_LOG, "--select", "NCCL206", "--write-baseline", str(only), env=ISOLATED)
    assert written.returncode == 0
    code, report = log_report("--baseline", str(only))
    assert code == 1 and {f["rule"]: f["baseline"] for f in report["findings"]} == {
        "NCCL201": "new",
        "NCCL206": "existing",
    }


def test_the_baseline_is_never_written_over_the_evidence(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    original = Path(MIXED_LOG).read_text()
    log.write_text(original)
    result = run("nccl-log", str(log), "--write-baseline", str(log), env=ISOLATED)
    assert result.returncode == 2 and "is the evidence being judged" in one_clean_line(result)
    assert log.read_text() == original


def test_the_config_file_and_variables_reach_the_evidence_gate(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FABRICCHECK_")}
    (tmp_path / "fabriccheck.toml").write_text('ignore = ["NCCL206"]\n')
    result = run("nccl-log", MIXED_LOG, "--format", "json", cwd=tmp_path, env=env)
    assert result.returncode == 1 and rules_of(json.loads(result.stdout)) == ["NCCL201"]
    warned = run("nccl-log", MIXED_LOG, cwd=tmp_path, env={**env, "FABRICCHECK_SEVERITY": "NCCL201=warning"})
    assert warned.returncode == 0, warned.stderr
