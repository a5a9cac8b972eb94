"""What a line or a report quotes cannot act on whoever reads it (issue 18, item 16): error lines write control
characters out, markdown never @mentions anyone, Prometheus label values carry no control character.

The cloud text comes from the demo's AWS dump (fixtures/demo/aws, made by tools/build_demo.py) with one Auto
Scaling group's name (the tag its nodes carry) holding an escape sequence and a carriage return."""

from __future__ import annotations

import re
from pathlib import Path

from cli_run import one_clean_line, run
from ec2_shapes import demo_with_groups_renamed
from prometheus_client.parser import text_string_to_metric_families

from fabriccheck.reports.safe import md_code, md_text

FORGED = "\x1b[2J\nfabriccheck: all clear"


def test_an_error_line_writes_out_what_it_quotes(tmp_path: Path) -> None:
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text(
        'waivers:\n  - rule: AWS110\n    resources: ["*"]\n    reason: r\n    "\\e[2J\\nfabriccheck: all clear": 1\n'
    )
    line = one_clean_line(run("demo", "--waivers", str(waivers)))  # one line: the newline did not forge another
    assert "\x1b" not in line and line.endswith("unknown key waivers[1].\\x1b[2J\\nfabriccheck: all clear")
    line = one_clean_line(run("demo", "--select", FORGED))
    assert "\x1b" not in line and "--select \\x1b[2J\\nfabriccheck: all clear: no rule or category" in line


def test_markdown_mentions_nobody() -> None:
    assert md_text("ask @octocat or @acme/sre") == "ask @&#8203;octocat or @&#8203;acme/sre"
    assert md_code("@octocat") == "`@octocat`"  # no mention is made inside a code span


def test_a_waiver_reason_in_a_pull_request_comment_mentions_nobody(tmp_path: Path) -> None:
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text('waivers:\n  - rule: AWS110\n    resources: ["*"]\n    reason: "agreed with @octocat"\n')
    markdown = run("demo", "-f", "markdown", "--waivers", str(waivers)).stdout
    assert "agreed with @&#8203;octocat" in markdown and "@octocat" not in markdown


def _tagged_dump(tmp_path: Path) -> Path:
    return demo_with_groups_renamed(tmp_path / "aws", {"bert-ft": "bert\x1b[2J\r\x00ft"})


def test_prometheus_label_values_carry_no_control_character(tmp_path: Path) -> None:
    result = run("aws", "--from-dump", str(_tagged_dump(tmp_path)), "-f", "prometheus")
    assert result.returncode == 1, result.stderr
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", result.stdout)  # newlines end samples; nothing else
    clusters = {
        sample.labels["cluster"]
        for family in text_string_to_metric_families(result.stdout)
        for sample in family.samples
        if "cluster" in sample.labels
    }
    assert "aws:111122223333:us-east-1:auto-scaling-group/bert\\x1b[2J\\r\\x00ft" in clusters
