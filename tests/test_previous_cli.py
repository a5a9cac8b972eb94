"""`--previous OLD.json` on a scan: the report adds what changed since the earlier one (trend.compare): the text
report a section after its summary, the JSON report its `trend`. A missing or bad OLD file is one line naming
--previous and exit 2, before anything is collected; a scheduled job may read and overwrite the same file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
from cli_run import one_clean_line, run

from fabriccheck.schema import report_schema

DEMO_AWS = Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "aws"


def _last_week(tmp_path: Path) -> Path:
    """Last week's report did not yet run AWS101 (EFA-capable node without EFA); this week's does."""
    old = tmp_path / "old.json"
    result = run("aws", "--from-dump", str(DEMO_AWS), "-f", "json", "-o", str(old), "--ignore", "AWS101")
    assert result.returncode == 1, result.stderr
    return old


def test_the_text_report_says_what_changed_since(tmp_path: Path) -> None:
    old = _last_week(tmp_path)
    result = run("aws", "--from-dump", str(DEMO_AWS), "--previous", str(old))
    assert result.returncode == 1, result.stderr
    section = result.stdout[result.stdout.index("Since the earlier report of ") :]
    assert str(old) in "".join(section.split())  # its path, folded over lines if it is long
    assert "2 new, 0 fixed, 17 unchanged findings." in section
    assert "Lost GPU-hours a day: 1,938-1,944 -> 2,123-2,133 (+185 to +189)." in section
    assert section.count("error AWS101 aws:111122223333:us-east-1:auto-scaling-group/vision-train") == 2
    # without --previous the report has no such section
    assert "Since " not in run("aws", "--from-dump", str(DEMO_AWS)).stdout


def test_the_json_report_carries_the_trend(tmp_path: Path) -> None:
    old = _last_week(tmp_path)
    result = run("aws", "--from-dump", str(DEMO_AWS), "--previous", str(old), "-f", "json")
    report = json.loads(result.stdout)
    trend = report["trend"]
    new = {f["fingerprint"] for f in report["findings"] if f["rule"] == "AWS101"}
    assert {f["fingerprint"] for f in trend["new"]} == new and len(new) == 2
    assert not trend["fixed"] and len(trend["unchanged"]) == 17
    assert trend["previous"] == str(old)
    assert json.loads(old.read_text())["trend"] is None  # made without --previous
    validator = jsonschema.Draft202012Validator(report_schema())  # what `fabriccheck schema` prints
    assert not [e.message for e in validator.iter_errors(report)][:3]
    report["trend"]["new"][0]["fingerprint"] = 7
    assert list(validator.iter_errors(report))  # the trend's own fields are in the schema


def test_a_job_may_read_last_weeks_report_and_write_this_weeks_over_it(tmp_path: Path) -> None:
    report = _last_week(tmp_path)
    result = run("aws", "--from-dump", str(DEMO_AWS), "--previous", str(report), "-f", "json", "-o", str(report))
    assert result.returncode == 1, result.stderr
    written = json.loads(report.read_text())
    assert len(written["trend"]["new"]) == 2  # compared with what the file held before it was replaced
    again = run("aws", "--from-dump", str(DEMO_AWS), "--previous", str(report), "-f", "json")
    assert json.loads(again.stdout)["trend"]["new"] == []


def test_a_missing_or_bad_previous_report_is_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.json"
    result = run("demo", "--previous", str(missing))
    assert result.returncode == 2
    assert one_clean_line(result) == (
        f"fabriccheck: error: --previous: {missing}: cannot read (No such file or directory)"
    )
    inventory = tmp_path / "inventory.json"
    inventory.write_text('{"nodes": []}')
    assert one_clean_line(run("demo", "--previous", str(inventory))) == (
        f"fabriccheck: error: --previous: {inventory}: not a fabriccheck JSON report (make one with --format json)"
    )
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    line = one_clean_line(run("demo", "--previous", str(broken), "-f", "html"))
    assert line.startswith(f"fabriccheck: error: --previous: {broken}: not valid JSON")


def test_the_previous_report_from_standard_input(tmp_path: Path) -> None:
    old = _last_week(tmp_path)
    piped = subprocess.run(
        ["fabriccheck", "aws", "--from-dump", str(DEMO_AWS), "--previous", "-", "-f", "json"],
        input=old.read_bytes(),
        capture_output=True,
        timeout=120,
    )
    assert piped.returncode == 1, piped.stderr
    trend = json.loads(piped.stdout)["trend"]
    assert trend["previous"] == "standard input" and len(trend["new"]) == 2
    both = subprocess.run(
        ["fabriccheck", "plan", "-", "--previous", "-"], input=b"{}", capture_output=True, timeout=120
    )
    assert both.returncode == 2
    assert both.stderr.decode() == (
        "fabriccheck: error: the plan and --previous both read standard input (-): give all but one of them as files\n"
    )
    # Any two inputs that read standard input: the manifests would otherwise find it emptied by --previous.
    manifests = subprocess.run(
        ["fabriccheck", "k8s", "--manifests", "-", "--nodes-from", str(DEMO_AWS.parent / "k8s" / "eks-train"),
         "--previous", "-"],
        input=old.read_bytes(), capture_output=True, timeout=120,
    )  # fmt: skip
    assert manifests.returncode == 2
    assert "--manifests and --previous both read standard input (-)" in manifests.stderr.decode()
    twice = subprocess.run(["fabriccheck", "merge", "-", "-"], input=old.read_bytes(), capture_output=True, timeout=120)
    assert twice.returncode == 2 and "merge: - is named twice" in twice.stderr.decode()


def test_the_html_report_says_what_changed_since(tmp_path: Path) -> None:
    old = _last_week(tmp_path)
    page = run("aws", "--from-dump", str(DEMO_AWS), "--previous", str(old), "-f", "html").stdout
    trend = page[page.index('id="trend"') : page.index("</section>", page.index('id="trend"'))]
    assert "<b>2</b> new, <b>0</b> fixed, <b>17</b> unchanged findings." in trend
    assert '1,938-1,944 → 2,123-2,133 (<span class="worse">+185 to +189</span>)' in trend
    assert 'id="trend"' not in run("aws", "--from-dump", str(DEMO_AWS), "-f", "html").stdout
