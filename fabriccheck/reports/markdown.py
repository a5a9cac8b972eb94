"""Markdown: for a pull-request comment or a ticket."""

from __future__ import annotations

from fabriccheck.flow import Report
from fabriccheck.reports.text import dollars, penalty_line


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(report: Report, color: bool = False) -> str:
    s = report.summary
    out = [f"# fabriccheck report: {report.source}", ""]
    if not report.complete:
        out += ["> **Incomplete:** some facts could not be collected; this report cannot pass a gate.", ""]
        out += [f"> - `{e.call}` ({e.region or '-'}): {e.code}: {e.message}" for e in report.errors]
        out.append("")
    out.append(
        f"{s.nodes} nodes, {s.clusters} training clusters judged; findings: {s.findings['error']} errors, "
        f"{s.findings['warning']} warnings, {s.findings['info']} info. Workload assumed: "
        f"`{report.workload['name']}` ({report.workload['description']})."
    )
    extra = s.extra_gpu_hours_per_day
    if extra.high > 0:
        line = f"Estimated waste: {extra.low:,.0f}–{extra.high:,.0f} extra GPU-hours per day"
        if s.extra_dollars_per_day:
            line += f", {dollars(s.extra_dollars_per_day.low)}–{dollars(s.extra_dollars_per_day.high)} per day"
        out.append(line + ".")
    out += [
        "",
        "## Clusters",
        "",
        "| cluster | grouped by | nodes | types | GPUs | findings | penalty |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in report.clusters:
        out.append(
            f"| `{c.id}` | {c.grouped_by} | {len(c.nodes)} | {', '.join(c.instance_types)} | {c.gpus} | "
            f"{c.findings} | {_cell(penalty_line(c.penalty))} |"
        )
    out += ["", "## Findings", ""]
    if not report.findings:
        out.append("No findings.")
    for f in report.findings:
        out += [
            f"### {f.severity.upper()} {f.rule}: {f.title}",
            "",
            f"- **Cluster:** `{f.cluster or '(launch template)'}`",
            f"- **Resources:** {', '.join(f'`{r}`' for r in f.resources)}",
            f"- **Category:** {f.category}",
            "",
            f.message,
            "",
            "**Fix:** " + f.remediation.replace("\n", "  \n"),
            "",
        ]
    if report.notes:
        out += ["## Notes", ""] + [f"- {n}" for n in report.notes] + [""]
    return "\n".join(out) + "\n"
