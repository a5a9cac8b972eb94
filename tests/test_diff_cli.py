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


# ---------------------------------------------------------------------------------------------- scopes
# Issue 29 item 9 and issue 30 item 8: reports of another scope (cloud, account, region, or kind of input) are not
# compared, and a finding of a scope the later report never scanned is not "fixed".

DEMO = DEMO_AWS.parent


def _scan(tmp_path: Path, name: str, *args: str) -> Path:
    out = tmp_path / name
    result = run(*args, "-f", "json", "-o", str(out))
    assert result.returncode in (0, 1), result.stderr
    return out


def test_reports_of_another_cloud_or_kind_are_not_compared(tmp_path: Path) -> None:
    aws = _scan(tmp_path, "aws.json", "aws", "--from-dump", str(DEMO / "aws"))
    gcp = _scan(tmp_path, "gcp.json", "gcp", "--from-dump", str(DEMO / "gcp"))
    plan = _scan(tmp_path, "plan.json", "plan", str(DEMO / "plans" / "gcp-wrong.json"))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert one_clean_line(run("diff", str(aws), str(gcp), "-o", str(tmp_path / "changes.txt"))) == (
        f"fabriccheck: error: {aws} scanned aws:111122223333:us-east-1, and {gcp} gcp:fabriccheck-demo:global, "
        "gcp:fabriccheck-demo:us-central1: no scope in common, so no finding is new or fixed between them"
    )
    assert one_clean_line(run("diff", str(plan), str(gcp))) == (
        f"fabriccheck: error: {plan} judged a Terraform plan and {gcp} what runs: there is nothing to compare"
    )
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # no changes.txt, every report kept


def test_another_region_of_the_same_account_is_another_scope(tmp_path: Path) -> None:
    east = _scan(tmp_path, "east.json", "aws", "--from-dump", str(DEMO / "aws"))
    document = json.loads(east.read_text())
    document["scanned"] = ["aws:111122223333:us-west-2"]  # the same account's audit of another region
    west = tmp_path / "west.json"
    west.write_text(json.dumps(document))
    line = one_clean_line(run("diff", str(west), str(east)))
    assert "scanned aws:111122223333:us-west-2, and " in line and "no scope in common" in line


def test_findings_of_a_scope_the_new_report_never_scanned_are_not_fixed(tmp_path: Path) -> None:
    """The demo's report holds AWS, Azure, GCP and Kubernetes; the later report scanned GCP only. Before, every
    finding of the other clouds read "fixed"; now only what both scanned is compared."""
    demo = _scan(tmp_path, "demo.json", "demo")
    gcp = _scan(tmp_path, "gcp.json", "gcp", "--from-dump", str(DEMO / "gcp"))
    result = run("diff", str(demo), str(gcp), "-f", "json")
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    everything = json.loads(demo.read_text())["findings"]
    outside = [f for f in everything if f["provider"] != "gcp"]
    assert (len(found["fixed"]), len(found["new"]), len(found["unchanged"])) == (0, 0, len(everything) - len(outside))
    assert found["notes"][0].startswith(
        f"{len(outside)} finding(s) of the earlier report are in scopes this report did not scan (aws:111122223333:"
    )
    assert not any(c["id"].startswith(("aws:", "azure:", "k8s:")) for c in found["clusters"])


def test_what_clusters_of_an_unscanned_scope_lose_is_not_counted_as_saved(tmp_path: Path) -> None:
    """The demo (every cloud) then an AWS-only scan of the same account: nothing changed where both looked, so the
    change in lost GPU-hours is zero, not the other clouds' 2,700-odd GPU-hours a day read as saved."""
    demo = _scan(tmp_path, "demo.json", "demo")
    aws = _scan(tmp_path, "aws.json", "aws", "--from-dump", str(DEMO / "aws"))
    found = json.loads(run("diff", str(demo), str(aws), "-f", "json").stdout)
    lost = found["lost_gpu_hours_per_day"]
    assert lost["previous"] == lost["current"] == json.loads(aws.read_text())["summary"]["lost_gpu_hours_per_day"]
    assert lost["change"] == {"low": 0.0, "high": 0.0}
    assert "left out of the change in cost" in found["notes"][0]
    # The other way, the clouds the AWS scan never looked at are new findings, and their cost is new too.
    grown = json.loads(run("diff", str(aws), str(demo), "-f", "json").stdout)["lost_gpu_hours_per_day"]
    assert grown["change"]["low"] > 2000


def test_previous_of_another_scope_gives_no_trend_and_says_so(tmp_path: Path) -> None:
    """`--previous` does not change the exit code (docs/html-report.md): the scan's report is written, with no
    trend and a note, and one warning line says why."""
    aws = _scan(tmp_path, "aws.json", "aws", "--from-dump", str(DEMO / "aws"))
    out = tmp_path / "gcp.json"
    result = run("gcp", "--from-dump", str(DEMO / "gcp"), "--previous", str(aws), "-f", "json", "-o", str(out))
    said = (
        f"--previous {aws} scanned aws:111122223333:us-east-1, and this report gcp:fabriccheck-demo:global, "
        "gcp:fabriccheck-demo:us-central1: no scope in common, so no finding is new or fixed between them"
    )
    assert (result.returncode, result.stderr) == (1, f"fabriccheck: warning: {said}\n")
    report = json.loads(out.read_text())
    assert report["trend"] is None
    assert report["notes"][-1] == f"no change since the earlier report is shown: {said}"
