"""`fabriccheck diff OLD.json NEW.json`: findings new, fixed and unchanged by fingerprint, the change in lost
GPU-hours, and an exit code a scheduled job can act on (1 only for a new finding at or above --fail-on; 2 when
the new report could not see everything)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from cli_run import one_clean_line, run

DEMO_AWS = Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "aws"


def _reports(tmp_path: Path) -> tuple[Path, Path]:
    """Last week's report did not yet run AWS101 (EFA-capable node without EFA); this week's does."""
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    run("aws", "--from-dump", str(DEMO_AWS), "-f", "json", "-o", str(old), "--ignore", "AWS101")
    run("aws", "--from-dump", str(DEMO_AWS), "-f", "json", "-o", str(new))
    return old, new


def test_a_new_error_fails_and_is_named_with_the_change_in_cost(tmp_path: Path) -> None:
    old, new = _reports(tmp_path)
    result = run("diff", str(old), str(new))
    assert result.returncode == 1, result.stderr
    assert "2 new, 0 fixed, 17 unchanged findings." in result.stdout
    assert result.stdout.count("error AWS101 aws:111122223333:us-east-1:auto-scaling-group/vision-train") == 2
    assert "Lost GPU-hours a day: 1,938-1,944 -> 2,123-2,133 (+185 to +189)." in result.stdout
    # the same change, told as fixed, passes; a new warning-level gate would still fail on the error
    back = run("diff", str(new), str(old), "-f", "json")
    assert back.returncode == 0, back.stderr
    found = json.loads(back.stdout)
    assert (len(found["new"]), len(found["fixed"]), len(found["unchanged"])) == (0, 2, 17)
    assert {f["rule"] for f in found["fixed"]} == {"AWS101"}
    assert found["lost_gpu_hours_per_day"]["change"]["high"] < -180
    assert run("diff", str(old), str(new), "--fail-on", "never").returncode == 0


def test_markdown_escapes_and_an_unchanged_estate_is_quiet(tmp_path: Path) -> None:
    _, new = _reports(tmp_path)
    result = run("diff", str(new), str(new), "-f", "markdown")
    assert result.returncode == 0
    assert result.stdout.startswith("# fabriccheck diff:")
    assert "0 new, 0 fixed, 19 unchanged findings." in result.stdout
    assert "## New findings" not in result.stdout and "## Fixed findings" not in result.stdout


def test_an_incomplete_new_report_is_no_green_diff(tmp_path: Path) -> None:
    old, _ = _reports(tmp_path)
    partial = tmp_path / "partial"
    shutil.copytree(DEMO_AWS, partial)
    (partial / "describe-placement-groups.json").unlink()
    incomplete = tmp_path / "incomplete.json"
    run("aws", "--from-dump", str(partial), "-f", "json", "-o", str(incomplete))
    assert run("diff", str(old), str(incomplete), "--fail-on", "never").returncode == 2
    assert run("diff", str(old), str(incomplete), "--fail-on", "never", "--allow-incomplete").returncode == 0


def test_bad_input_is_one_line_naming_it(tmp_path: Path) -> None:
    old, new = _reports(tmp_path)
    not_a_report = tmp_path / "inventory.json"
    not_a_report.write_text('{"nodes": []}')
    assert one_clean_line(run("diff", str(not_a_report), str(new))) == (
        f"fabriccheck: error: {not_a_report}: not a fabriccheck JSON report (make one with --format json)"
    )
    assert one_clean_line(run("diff", str(old), str(new), "-f", "sarif")) == (
        "fabriccheck: error: --format sarif: diff writes text, json or markdown"
    )


def test_a_report_read_from_standard_input(tmp_path: Path) -> None:
    """`-` is standard input, for diff and merge alike: a scheduled job pipes this week's report in."""
    old, new = _reports(tmp_path)
    piped = subprocess.run(
        ["fabriccheck", "diff", str(old), "-"], input=new.read_bytes(), capture_output=True, timeout=120
    )
    assert piped.returncode == 1 and b"2 new, 0 fixed, 17 unchanged findings." in piped.stdout, piped.stderr
    broken = subprocess.run(["fabriccheck", "merge", "-"], input=b"{", capture_output=True, timeout=120)
    assert broken.returncode == 2
    assert broken.stderr.decode().startswith("fabriccheck: error: standard input (-): not valid JSON")
