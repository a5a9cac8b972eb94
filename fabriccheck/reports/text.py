"""Text report for people: a table per training cluster, its findings and what they cost, then a summary.

Colour and box drawing only on a terminal; piped or written to a file it is plain text.
"""

from __future__ import annotations

import io
import textwrap

from rich.console import Console
from rich.text import Text

from fabriccheck.engine import Finding
from fabriccheck.flow import Report
from fabriccheck.penalty import Penalty

STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
WIDTH = 110


def dollars(value: float) -> str:
    return f"${value:,.0f}"


def penalty_line(p: Penalty) -> str:
    if not p.estimated:
        return f"not estimated: {p.reason}"
    if p.slowdown.high < 1.005:
        return p.reason or "no slowdown (the fabric is fully used)"
    line = (
        f"{p.slowdown.low:.2f}x–{p.slowdown.high:.2f}x slower steps, "
        f"+{p.extra_gpu_hours_per_day.low:,.0f}–{p.extra_gpu_hours_per_day.high:,.0f} GPU-hours/day"
    )
    if p.extra_dollars_per_day is not None:
        line += f", {dollars(p.extra_dollars_per_day.low)}–{dollars(p.extra_dollars_per_day.high)}/day"
    return line


def _finding_blocks(console: Console, findings: list[Finding]) -> None:
    """One block per rule in a cluster: the nodes it flags, the first message, the fix. A rule that flags
    every node of a 500-node cluster prints once, not 500 times (JSON keeps one finding per node)."""
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.rule, []).append(f)
    for rule_findings in groups.values():
        first = rule_findings[0]
        resources = [r for f in rule_findings for r in f.resources]
        shown = ", ".join(resources[:6]) + (f" (+{len(resources) - 6} more)" if len(resources) > 6 else "")
        head = Text("  ")
        head.append(f"{first.severity:<7}", style=STYLE[first.severity])
        head.append(f" {first.rule} {first.category}: {first.title}", style="bold")
        console.print(head)
        console.print(Text(f"          on {shown}"))
        message = first.message + (f" (and {len(rule_findings) - 1} more alike)" if len(rule_findings) > 1 else "")
        for line in textwrap.wrap(message, width=WIDTH - 10):
            console.print(Text("          " + line))
        for line in textwrap.wrap("fix: " + first.remediation.splitlines()[0], width=WIDTH - 10):
            console.print(Text("          " + line, style="dim"))


def render(report: Report, color: bool = False) -> str:
    buffer = io.StringIO()
    console = Console(
        file=buffer, force_terminal=color, no_color=not color, width=WIDTH + 10, highlight=False, soft_wrap=True
    )
    console.print(Text(f"fabriccheck {report.tool['version']} · {report.source}", style="bold"))
    console.print(f"workload assumed: {report.workload['name']} ({report.workload['description']})")
    if not report.complete:
        console.print(
            Text("\nINCOMPLETE: some facts could not be collected; this result cannot pass a gate.", style="bold red")
        )
        for e in report.errors:
            need = f" (needs {e.permission})" if e.permission else ""
            console.print(f"  - {e.call} in {e.region or '?'}: {e.code}: {e.message}{need}")

    by_cluster: dict[str | None, list[Finding]] = {}
    for f in report.findings:
        by_cluster.setdefault(f.cluster, []).append(f)
    for c in report.clusters:
        status = (
            Text("clean", style="green")
            if not c.findings
            else Text(f"{c.findings} finding(s)", style=STYLE[_worst(by_cluster.get(c.id, []))])
        )
        console.print()
        head = Text(f"Cluster {c.id}", style="bold")
        head.append(f"  ({c.grouped_by}: {len(c.nodes)} × {', '.join(c.instance_types)}, {c.gpus} accelerators) ")
        head.append(status)
        console.print(head)
        _finding_blocks(console, by_cluster.get(c.id, []))
        console.print(f"  penalty ({c.penalty.workload}): {penalty_line(c.penalty)}")
    templates = by_cluster.get(None, [])
    if templates:
        console.print()
        console.print(Text("Templates (judged before any node launches)", style="bold"))
        _finding_blocks(console, templates)

    s = report.summary
    console.print()
    summary = Text("Summary: ", style="bold")
    summary.append(
        f"{s.nodes} nodes; {s.clusters} training clusters judged; {s.nodes_not_in_reported_clusters} nodes "
        f"train alone or have no fabric to use. "
    )
    for severity in ("error", "warning", "info"):
        summary.append(
            f"{s.findings[severity]} {severity}{'s' if s.findings[severity] != 1 else ''}",
            style=STYLE[severity] if s.findings[severity] else "",
        )
        summary.append(", " if severity != "info" else ".")
    console.print(summary)
    if s.extra_gpu_hours_per_day.high > 0:
        waste = (
            f"Estimated waste: {s.extra_gpu_hours_per_day.low:,.0f}–{s.extra_gpu_hours_per_day.high:,.0f} "
            "extra GPU-hours per day of training"
        )
        if s.extra_dollars_per_day:
            waste += f", {dollars(s.extra_dollars_per_day.low)}–{dollars(s.extra_dollars_per_day.high)} per day"
        else:
            waste += " (pass --price-per-gpu-hour for dollars)"
        console.print(waste + ".")
    for note in report.notes:
        console.print(Text(f"note: {note}", style="dim"))
    if report.findings:
        console.print(Text("Details and full fixes: fabriccheck rules RULE_ID", style="dim"))
    return buffer.getvalue()


def _worst(findings: list[Finding]) -> str:
    order = ("error", "warning", "info")
    return next((s for s in order if any(f.severity == s for f in findings)), "info")
