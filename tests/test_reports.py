"""The text, markdown and JUnit reports on reports built by hand: order, width, fleets of 300 clusters,
untrusted cloud text, the comment size limit, and JUnit counts; then the demo end to end."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Literal

import pytest

from fabriccheck import reports
from fabriccheck.engine import Finding
from fabriccheck.flow import ClusterReport, NotJudged, Report, SkippedCluster, Summary
from fabriccheck.model import CollectionError
from fabriccheck.penalty import Penalty, Range
from fabriccheck.reports import junit, markdown, text
from fabriccheck.reports.safe import md_code, md_text, visible

Severity = Literal["error", "warning", "info"]
ESC = "\x1b"
EVIL = "evil\x1b[8mhidden\r\x00tail"  # conceal everything after it, return to column 0, a NUL
PREFIX = "aws:111122223333:us-east-1:auto-scaling-group/"


def finding(
    cluster: str | None,
    rule: str = "AWS101",
    severity: Severity = "error",
    resources: Sequence[str] = ("i-1",),
    message: str = "The node has no EFA interface, so NCCL falls back to TCP sockets over the ordinary NIC.",
) -> Finding:
    return Finding(
        rule=rule,
        title=f"title of {rule}",
        severity=severity,
        category="fabric-missing",
        provider="aws",
        account="111122223333",
        cluster=cluster,
        resources=list(resources),
        message=message,
        remediation=f"Summary fix for {rule}.\nConsole: EC2 > Launch templates.\nCLI: aws ec2 do-{rule.lower()} --x",
        effect="tcp-fallback",
        references=["https://docs.aws.amazon.com/efa"],
    )


def penalty(hours: float | None, slowdown: float = 2.0) -> Penalty:
    if hours is None:
        return Penalty(workload="llm-70b-fsdp", estimated=False, reason="no sourced peak throughput for A10G")
    if hours == 0:
        return Penalty(workload="llm-70b-fsdp", estimated=True)
    return Penalty(
        workload="llm-70b-fsdp",
        estimated=True,
        slowdown=Range(low=1.0, high=slowdown),
        extra_gpu_hours_per_day=Range(low=0.0, high=hours),
    )


def cluster(
    cid: str,
    findings: int = 0,
    hours: float | None = 0.0,
    nodes: int = 2,
    status: Literal["clean", "findings", "incomplete"] | None = None,
    not_judged: Sequence[NotJudged] = (),
    grouped_by: str = "Auto Scaling group",
    slowdown: float = 2.0,
) -> ClusterReport:
    return ClusterReport(
        id=cid,
        provider="aws",
        account="111122223333",
        grouped_by=grouped_by,
        nodes=[f"i-{cid[-6:]}-{n}" for n in range(nodes)],
        instance_types=["p5.48xlarge"],
        gpus=8 * nodes,
        findings=findings,
        status=status or ("findings" if findings else "clean"),
        not_judged=list(not_judged),
        penalty=penalty(hours, slowdown),
    )


def make_report(
    clusters: Sequence[ClusterReport],
    findings: Sequence[Finding],
    complete: bool = True,
    errors: Sequence[CollectionError] = (),
    skipped: Sequence[SkippedCluster] = (),
    notes: Sequence[str] = (),
) -> Report:
    hours = sum(c.penalty.extra_gpu_hours_per_day.high for c in clusters if c.penalty.estimated)
    return Report(
        tool={"name": "fabriccheck", "version": "0.1.0"},
        source="test",
        generated_at="2026-01-01T00:00:00+00:00",
        complete=complete,
        errors=list(errors),
        workload={"name": "llm-70b-fsdp", "description": "70B-class dense LLM", "source": "test"},
        rules=["AWS101", "AWS110", "AWS120"],
        findings=list(findings),
        clusters=list(clusters),
        skipped_clusters=list(skipped),
        summary=Summary(
            nodes=sum(len(c.nodes) for c in clusters),
            clusters=len(clusters),
            nodes_not_in_reported_clusters=1,
            findings={s: sum(1 for f in findings if f.severity == s) for s in ("error", "warning", "info")},
            by_category={},
            by_rule={},
            extra_gpu_hours_per_day=Range(low=0, high=hours),
            extra_dollars_per_day=None,
            unknown_instance_types=[],
            skipped_clusters=len(skipped),
            nodes_by_state={"running": 10, "stopped": 3},
        ),
        notes=list(notes),
    )


def ordered_report() -> Report:
    """Six clusters whose worst-first order is known: hours, then severity, then id."""
    specs: list[tuple[str, float | None, Severity | None]] = [
        ("a-clean", 0.0, None),
        ("b-warn-zero", 0.0, "warning"),
        ("c-error-unestimated", None, "error"),
        ("d-error-zero", 0.0, "error"),
        ("e-small", 100.0, "info"),
        ("f-big", 900.0, "warning"),
    ]
    clusters, findings = [], []
    for name, hours, severity in specs:
        cid = PREFIX + name
        if severity:
            findings.append(finding(cid, severity=severity, resources=[f"i-{name}"]))
        clusters.append(cluster(cid, findings=1 if severity else 0, hours=hours))
    return make_report(clusters, findings)


EXPECTED_ORDER = ["f-big", "e-small", "c-error-unestimated", "d-error-zero", "b-warn-zero", "a-clean"]


def fleet(with_findings: int = 30, clean: int = 270, per_cluster: int = 4) -> Report:
    clusters, findings = [], []
    rules: list[tuple[str, Severity]] = [("AWS101", "error"), ("AWS110", "error"), ("AWS120", "warning")]
    rules.append(("AWS150", "info"))
    for i in range(with_findings):
        cid = f"{PREFIX}train-{i:03d}"
        nodes = [f"i-{i:03d}{n:014d}" for n in range(8)]
        for k in range(per_cluster):
            rule, severity = rules[k % len(rules)]
            findings.append(finding(cid, rule=rule, severity=severity, resources=nodes[k : k + 2]))
        clusters.append(cluster(cid, findings=per_cluster, hours=10.0 * (i + 1), nodes=8))
    for i in range(clean):
        clusters.append(cluster(f"{PREFIX}quiet-{i:03d}"))
    return make_report(clusters, findings)


def lines_too_long(output: str, width: int) -> list[str]:
    """Lines longer than `width` (colour codes not counted), except one unbreakable token (an id) and its
    indent."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", output)
    return [line for line in plain.splitlines() if len(line) > width and len(line.split()) > 1]


# ---------------------------------------------------------------------------------------------- text: order


def test_text_top_table_and_blocks_worst_first() -> None:
    out = text.render(ordered_report(), False, width=100)
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Clusters that cost most"))
    rows = [line.split()[1] for line in lines[start + 1 :] if re.match(r"^\s+\d+\s", line)]
    # The table names clusters after the prefix they all share (said above it); clean ones are not in it.
    assert rows == EXPECTED_ORDER[:-1]
    assert f"every id below starts with {PREFIX}" in out
    blocks = re.findall(r"^Cluster \S+/(\S+)", out, flags=re.M)
    assert blocks == EXPECTED_ORDER
    row = next(line for line in lines if " f-big " in line)
    assert row.split()[2:] == ["2", "warning", "2.00x", "900"]
    unestimated = next(line for line in lines if " c-error-unestimated " in line)
    assert "not estimated" in unestimated and unestimated.rstrip().endswith("—")
    no_slowdown = next(line for line in lines if " d-error-zero " in line)
    assert no_slowdown.split()[-2:] == ["—", "—"]


def test_markdown_uses_the_same_order() -> None:
    out = markdown.render(ordered_report())
    sections = re.findall(r"^## \d+\. `\S+/(\S+)`", out, flags=re.M)
    assert sections == EXPECTED_ORDER[:-1]
    rows = re.findall(r"^\| \d+ \| `\S+/(\S+)` \|", out, flags=re.M)
    assert rows == EXPECTED_ORDER[:-1]
    assert "1 clean cluster: `" + PREFIX + "a-clean`" in out


def test_top_table_is_short() -> None:
    out = text.render(fleet(with_findings=30, clean=0), False, width=100)
    table = out.split("Clusters that cost most", 1)[1].split("\nCluster ", 1)[0]
    assert len(re.findall(r"^\s+\d+\s", table, flags=re.M)) == text.TOP
    assert "… and 20 more clusters with findings or not fully judged, below." in table
    # The costliest of the fleet (most GPU-hours) comes first.
    assert re.search(r"^\s+1\s+\S*train-029\s", table, flags=re.M)


# ---------------------------------------------------------------------------------------------- text: width


@pytest.mark.parametrize("width", [60, 80, 120])
def test_text_wraps_to_columns(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    long_id = "aws:111122223333:us-east-1:eks-node-group/research-team-with-a-long-name/h200-very-long"
    report = fleet(with_findings=5, clean=5)
    report.clusters.append(cluster(long_id, findings=1, hours=5000.0))
    report.findings.append(finding(long_id, resources=["i-" + "0" * 70], message="word " * 80))
    report.notes.append("a note " * 40)
    monkeypatch.setenv("COLUMNS", str(width))
    out = text.render(report, False)
    assert not lines_too_long(out, width)
    # The long id is never broken: it stays whole, on a line of its own in the block header when it must.
    header = next(line for line in out.splitlines() if long_id in line)
    assert header.strip() == long_id if width < len("Cluster " + long_id) else header.startswith("Cluster " + long_id)
    assert any(len(line) > width - 20 for line in out.splitlines())  # the width is used, not just respected
    assert not lines_too_long(text.render(report, True), width)  # colour adds escapes, not columns
    table = re.split(r"\nCluster\b", out.split("Clusters that cost most", 1)[1], maxsplit=1)[0]
    assert all(len(line) <= width for line in table.splitlines())  # table ids are shortened, never overflow
    assert "…" in table if width < 100 else True


def test_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    assert text.terminal_width() == 60
    monkeypatch.setenv("COLUMNS", "132")
    assert text.terminal_width() == 132
    monkeypatch.delenv("COLUMNS")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert text.terminal_width() == 100
    assert not lines_too_long(text.render(fleet(5, 5), False, width=10), 60)  # an explicit width is floored too


def test_fix_line_is_not_dim() -> None:
    out = text.render(ordered_report(), True, width=100)
    fix_lines = [line for line in out.splitlines() if "fix:" in line]
    assert fix_lines
    for line in fix_lines:
        assert "\x1b[2m" not in line and ";2m" not in line and "Summary fix for AWS101." in line


# ---------------------------------------------------------------------------------------------- text: fleets


def test_clean_clusters_collapse_at_300_and_verbose_lists_them() -> None:
    report = fleet()
    out = text.render(report, False, width=100)
    assert len(re.findall(r"^Cluster ", out, flags=re.M)) == 30
    collapsed = [line for line in out.splitlines() if "clean clusters:" in line]
    assert len(collapsed) == 1 and collapsed[0].startswith("270 clean clusters: " + PREFIX + "quiet-000")
    assert "(use --verbose to list them)" in out
    assert len(out.splitlines()) < 30 * 25
    verbose = text.render(report, False, verbose=True, width=100)
    assert len(re.findall(r"^Cluster ", verbose, flags=re.M)) == 300
    assert all(f"{PREFIX}quiet-{i:03d}" in verbose for i in range(270))
    assert "clean clusters:" not in verbose


def test_a_few_clean_clusters_are_shown() -> None:
    out = text.render(fleet(with_findings=2, clean=2), False, width=100)
    assert out.count("  clean") == 2 and "clean clusters:" not in out


def test_incomplete_clusters_skipped_and_summary() -> None:
    reason = "security groups not collected for 111122223333 us-east-1"
    incomplete = cluster(
        PREFIX + "blind",
        status="incomplete",
        not_judged=[
            NotJudged(rule="AWS110", reason=reason),
            NotJudged(rule="AWS112", reason=reason, resources=["i-9"]),
            NotJudged(rule="AWS120", reason="deselected"),
        ],
    )
    skipped = SkippedCluster(
        id=PREFIX + "serving",
        provider="aws",
        account="111122223333",
        nodes=["i-s1", "i-s2"],
        instance_types=["inf2.48xlarge"],
        role="inference",
        reason="Inferentia instances serve, they do not train",
    )
    error = CollectionError(call="DescribeSecurityGroups", region="us-east-1", code="AccessDenied", message="no")
    one = make_report([incomplete], [finding(None, rule="AWS142")], complete=False, errors=[error], skipped=[skipped])
    out = text.render(one, False, width=160)
    assert "Cluster " + PREFIX + "blind  incomplete: not fully judged" in out
    assert f"  not judged AWS110, AWS112 on i-9: {reason}" in out
    assert "  not judged AWS120: deselected" in out
    assert "Skipped (not training clusters):" in out
    assert f"  {PREFIX}serving (2 nodes × inf2.48xlarge) — Inferentia instances serve, they do not train" in out
    summary = " ".join(out.split("\nSummary: ", 1)[1].split())
    assert summary.startswith("2 nodes; 1 training cluster judged (0 with findings, 0 clean, 1 not fully judged)")
    assert "1 node trains alone or has no fabric to use; 1 cluster skipped (not training)" in summary
    assert "1 error, 0 warnings, 0 info." in summary
    assert "INCOMPLETE: 1 collection error (listed at the top)" in summary  # not only in the header
    assert "3 stopped" in summary
    assert out.index("INCOMPLETE: some facts") < out.index("Clusters that cost most")
    rows = out.split("Clusters that cost most", 1)[1].split("\nCluster ", 1)[0]
    assert "incomplete" in rows

    two = make_report([cluster(PREFIX + "x", 2, 5.0), cluster(PREFIX + "y")], [finding(PREFIX + "x")] * 2)
    summary = text.render(two, False).split("\nSummary: ", 1)[1]
    assert "2 training clusters judged" in summary and "2 errors" in summary and "INCOMPLETE" not in summary


# ---------------------------------------------------------------------------------------------- untrusted text


def hostile_report() -> Report:
    cid = f"{PREFIX}{EVIL}|x"
    bad = finding(
        cid,
        resources=[f"i-{EVIL}", "i-[bold red]boom[/]"],
        message=f"tag {EVIL}\n# Heading | a | b\n- item `code` *em* <b>x</b> @team",
    )
    return make_report(
        [cluster(cid, findings=1, hours=50.0, grouped_by="tag x\n# Heading"), cluster(PREFIX + "ok")],
        [bad],
        notes=[f"note {EVIL}"],
    )


@pytest.mark.parametrize("color", [False, True])
def test_text_escapes_control_characters_and_markup(color: bool) -> None:
    out = text.render(hostile_report(), color, width=120)
    if color:
        assert "\x1b[8m" not in out  # the cloud's sequence; rich's own colour codes are fine
    else:
        assert ESC not in out
    assert "\r" not in out and "\x00" not in out
    assert "evil\\x1b[8mhidden\\r\\x00tail" in out  # visible, and the rest of the line is still there
    assert "tag x\\n# Heading" in out
    assert "i-[bold red]boom[/]" in out  # rich markup from a tag is printed as written
    for line in out.splitlines():
        assert not line.startswith("# Heading")


def test_markdown_escapes_cloud_text() -> None:
    out = markdown.render(hostile_report())
    assert ESC not in out and "\r" not in out and "\x00" not in out
    assert all(
        not line.lstrip("> ").startswith("#") or line.startswith(("# fabriccheck", "## ", "### "))
        for line in out.splitlines()
    )
    # Visible escapes, themselves escaped for markdown (the comment shows `evil\x1b[8mhidden\r\x00tail`).
    assert "evil\\\\x1b\\[8mhidden\\\\r\\\\x00tail" in out and "\\# Heading" in out
    row = next(line for line in out.splitlines() if line.startswith("| 1 |"))
    assert len(re.findall(r"(?<!\\)\|", row)) == 7  # the | in the id is escaped: still six cells
    assert "\\<b\\>x\\</b\\>" in out and "\\*em\\*" in out and "\\`code\\`" in out
    assert "tag x\\\\n\\# Heading" in out  # grouped_by, with its newline


def test_safe_helpers() -> None:
    assert visible("a\x1b[31mb\tc\u202ed\x7f\n") == "a\\x1b[31mb\\tc\\u202ed\\x7f\\n"
    assert md_text("- item", line_start=True) == "\\- item"
    assert md_text("1. item", line_start=True) == "1\\. item"
    assert md_text("a|b_c") == "a\\|b\\_c"
    assert md_code("a`b") == "``a`b``"
    assert md_code("`a") == "`` `a ``"
    assert md_code("a|b", table=True) == "`a\\|b`"


def test_junit_with_control_characters_is_valid_xml() -> None:
    root = ET.fromstring(junit.render(hostile_report()))
    body = root.find("testsuite/testcase/failure")
    assert body is not None and body.text is not None
    assert "evil\\x1b[8mhidden" in body.text and ESC not in body.text


# ---------------------------------------------------------------------------------------------- markdown size


def test_markdown_fits_a_comment_at_300_clusters() -> None:
    report = fleet(with_findings=300, clean=0, per_cluster=6)
    out = markdown.render(report)
    assert len(out) <= markdown.LIMIT
    assert len(markdown.render(fleet(with_findings=300, clean=0, per_cluster=6), limit=10**9)) > markdown.LIMIT
    shown = re.findall(r"^## \d+\. `\S+train-(\d+)`", out, flags=re.M)
    assert shown and shown[0] == "299" and len(shown) < 300  # worst first, and some left out
    match = re.search(
        r"\*\*Left out to fit a comment of 65,000 characters:\*\* ([\d,]+) clusters with ([\d,]+) findings", out
    )
    assert match, out[-500:]
    assert int(match.group(1).replace(",", "")) == 300 - len(shown)
    assert int(match.group(2).replace(",", "")) == 6 * (300 - len(shown))
    assert "`--format json`" in out.split("**Left out", 1)[1]
    assert out.count("### ") == 4 * len(shown)  # a section per rule: six findings of four rules


def test_markdown_with_clean_fleet_and_compatible_headings() -> None:
    out = markdown.render(fleet(with_findings=2, clean=298))
    assert out.startswith("# fabriccheck report") and "### ERROR AWS101" in out
    assert "298 clean clusters: " in out and "(+288 more)" in out
    assert "Left out" not in out


# ---------------------------------------------------------------------------------------------- junit


def parse(xml: str) -> ET.Element:
    root = ET.fromstring(xml)
    suite = root.find("testsuite")
    assert suite is not None
    return suite


@pytest.mark.parametrize(("fail_on", "failing"), [("error", 2), ("warning", 3), ("info", 4), ("never", 0)])
def test_junit_case_per_finding_and_fail_on(fail_on: str, failing: int) -> None:
    cid = PREFIX + "mixed"
    findings = [
        finding(cid, rule="AWS101", resources=["i-1"]),
        finding(cid, rule="AWS110", resources=["i-1", "i-2", "i-3", "i-4", "i-5"]),
        finding(cid, rule="AWS120", severity="warning", resources=["i-1", "i-2"]),
        finding(None, rule="AWS150", severity="info", resources=["lt-1:1"]),
    ]
    report = make_report([cluster(cid, 3, 10.0), cluster(PREFIX + "quiet1"), cluster(PREFIX + "quiet2")], findings)
    suite = parse(junit.render(report, False, fail_on=fail_on))
    cases = suite.findall("testcase")
    assert len(cases) == int(suite.get("tests", "")) == len(findings) + 2
    assert len(suite.findall("testcase/failure")) == int(suite.get("failures", "")) == failing
    assert suite.get("errors") == "0"
    assert len({c.get("name") for c in cases}) == len(cases)
    wide = next(c for c in cases if (c.get("name") or "").startswith("AWS110"))
    body = "".join(wide.itertext())
    assert all(f"  i-{n}\n" in body + "\n" for n in range(1, 6)) and "(+2 more)" in (wide.get("name") or "")
    clean = [c for c in cases if (c.get("name") or "").endswith(" clean")]
    assert len(clean) == 2 and all(len(c) == 0 for c in clean)  # passing
    if fail_on in ("error", "never"):
        passing_warning = next(c for c in cases if (c.get("name") or "").startswith("AWS120"))
        out = passing_warning.find("system-out")
        assert (out is not None and "below --fail-on" in (out.text or "")) or fail_on == "never"


def test_junit_incomplete_run_has_an_error() -> None:
    errors = [
        CollectionError(call="DescribeInstances", region="eu-west-1", code="Unreachable", message="timeout"),
        CollectionError(call="DescribeSubnets", region="us-east-1", code="AccessDenied", message="denied"),
    ]
    incomplete_cluster = cluster(
        PREFIX + "blind", status="incomplete", not_judged=[NotJudged(rule="AWS110", reason="not collected")]
    )
    report = make_report([cluster(PREFIX + "ok"), incomplete_cluster], [], complete=False, errors=errors)
    xml = junit.render(report)
    root = ET.fromstring(xml)
    suite = parse(xml)
    # Two errors: the collection, and the cluster a selected rule could not judge (either keeps it from passing).
    assert root.get("errors") == suite.get("errors") == "2"
    error = suite.find("testcase/error")
    assert error is not None and "2 collection errors" in (error.get("message") or "")
    assert "DescribeSubnets" in (error.text or "") and "eu-west-1" in (error.text or "")
    judging = suite.find("testcase[@classname='fabriccheck.judging']/error")
    assert judging is not None and "1 cluster not fully judged" in (judging.get("message") or "")
    assert "blind: AWS110: not collected" in (judging.text or "")
    assert suite.get("skipped") == "1" and suite.get("tests") == "4"
    skipped = suite.find("testcase/skipped")
    assert skipped is not None and "AWS110: not collected" in (skipped.get("message") or "")
    complete = parse(junit.render(make_report([cluster(PREFIX + "ok")], [])))
    assert complete.get("errors") == "0" and complete.get("tests") == "1" and complete.get("failures") == "0"
    with pytest.raises(ValueError, match="fail_on"):
        junit.render(report, fail_on="warn")


def test_render_dispatch_passes_options() -> None:
    report = fleet(with_findings=1, clean=10)
    assert "clean clusters:" not in reports.render(report, "text", verbose=True, width=80)
    assert "clean clusters:" in reports.render(report, "text", width=80)
    assert parse(reports.render(report, "junit", fail_on="never")).get("failures") == "0"
    assert parse(reports.render(report, "junit")).get("failures") == "2"
    assert reports.render(report, "markdown").startswith("# fabriccheck report")


# ---------------------------------------------------------------------------------------------- the demo


def run_demo(*args: str, columns: int = 80) -> str:
    env = {**os.environ, "COLUMNS": str(columns)}
    env.pop("NO_COLOR", None)
    result = subprocess.run(
        [sys.executable, "-m", "fabriccheck", "demo", *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_demo_end_to_end() -> None:
    data = json.loads(run_demo("-f", "json"))
    out = run_demo(columns=80)
    assert not lines_too_long(out, 80) and ESC not in out
    assert out.index("Clusters that cost most") < out.index("\nCluster ") < out.index("\nSummary: ")
    worst = max(data["clusters"], key=lambda c: (c["penalty"]["extra_gpu_hours_per_day"]["high"], c["id"]))
    # A long id stands on its own line under "Cluster".
    assert re.split(r"\nCluster\b(?! that)", out, maxsplit=1)[1].lstrip().startswith(worst["id"])
    md = run_demo("-f", "markdown")
    assert len(md) <= markdown.LIMIT and "### ERROR AWS101" in md
    suite = parse(run_demo("-f", "junit"))
    clean = sum(1 for c in data["clusters"] if c["status"] == "clean" and not c["findings"])
    incomplete = sum(1 for c in data["clusters"] if c["status"] == "incomplete" and not c["findings"])
    assert int(suite.get("tests", "")) == len(data["findings"]) + clean + incomplete
