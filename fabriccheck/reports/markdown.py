"""Markdown: for a pull-request comment or a ticket.

It fits one GitHub comment (at most `LIMIT` characters): the summary and the "cost most" table first, then a
section per cluster in the text report's order (worst first); when the next section would not fit, no more
are added and a line says how many clusters and findings were left out (`--format json` has them all). Lists
that can grow with the fleet (collection errors, clean and skipped clusters, notes, a rule's resources) are
capped. Cloud values are ids in code spans or escaped text (`safe.md_code`, `safe.md_text`): a tag can
neither break a table row nor start a heading.
"""

from __future__ import annotations

from fabriccheck.findings import Finding
from fabriccheck.jobs import JobEvidence
from fabriccheck.model import UNKNOWN_ACCOUNT, SourceLocation
from fabriccheck.report import ClusterReport, Report
from fabriccheck.reports import evidence, planned
from fabriccheck.reports.names import DisplayName
from fabriccheck.reports.outline import (
    cluster_names,
    findings_by_cluster,
    needs_attention,
    not_judged_groups,
    ranked,
    rule_groups,
    status_counts,
    worst,
    worst_cell,
)
from fabriccheck.reports.safe import md_code, md_text
from fabriccheck.reports.wording import (
    cost_lines,
    lost_cell,
    node_types,
    penalty_line,
    plural,
    possible_line,
    possible_rules,
    slowdown_cell,
)

LIMIT = 65_000  # GitHub rejects comments over 65,536 characters
TOP = 10
LISTED = 20  # collection errors, clean ids, skipped clusters, notes
RESOURCES_SHOWN = 10
TEXT_CAP = 2_000  # one cloud-derived message


def _cap(text: str, limit: int = TEXT_CAP) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _codes(values: list[str], shown: int = RESOURCES_SHOWN) -> str:
    listed = ", ".join(md_code(v) for v in values[:shown])
    return listed + (f" (+{len(values) - shown:,} more)" if len(values) > shown else "")


def account(value: str) -> str:
    return "" if value == UNKNOWN_ACCOUNT else md_text(value) + " "


def _head(report: Report) -> list[str]:
    s = report.summary
    kind = f"{report.evidence} " if report.evidence else ""
    out = [f"# fabriccheck {kind}report: {md_text(report.source)}", ""]
    if not report.collected():
        out.append(
            f"> **Incomplete:** {plural(len(report.errors), 'collection error')}; some facts could not be "
            "collected, so this report cannot pass a gate."
        )
        for e in report.errors[:LISTED]:
            need = f" (needs {md_code(e.permission)})" if e.permission else ""
            out.append(
                f"> - {md_code(e.call)} ({account(e.account)}{md_text(e.region or '-')}): {md_text(e.code)}: "
                f"{md_text(_cap(e.message, 500))}{need}"
            )
        if len(report.errors) > LISTED:
            out.append(f"> - … and {len(report.errors) - LISTED:,} more (see `--format json`)")
        out.append("")
    counts = status_counts(report)
    judged = [f"{counts['findings']:,} with findings", f"{counts['clean']:,} clean"]
    if counts["incomplete"]:
        judged.append(f"{counts['incomplete']:,} not fully judged")
    skipped = len(report.skipped_clusters) or s.skipped_clusters
    judged_what = "job" if report.evidence else "training cluster"  # an evidence report judged the job its file shows
    line = (
        f"{plural(s.nodes, 'node')}, {plural(s.clusters, judged_what)} judged ({', '.join(judged)})"
        + (f", {plural(skipped, 'cluster')} skipped (not training)" if skipped else "")
        + f"; findings: {plural(s.findings.get('error', 0), 'error')}, "
        f"{plural(s.findings.get('warning', 0), 'warning')}, {plural(s.findings.get('info', 0), 'info', 'info')}."
    )
    if report.workload:  # an evidence report prices nothing, so it assumes no workload
        line += (
            f" Workload assumed: {md_code(report.workload.get('name', ''))} "
            f"({md_text(report.workload.get('description', ''))})"
            + (f"; {md_text(report.workload['nccl'])}." if report.workload.get("nccl") else ".")
        )
    out.append(line)
    if s.waived or s.in_baseline:
        out += ["", f"Not failing the gate: {plural(s.waived, 'finding')} waived, {s.in_baseline:,} in the baseline."]
    for cost in cost_lines(report):
        out += ["", md_text(cost)]
    unjudged = sum(1 for c in report.clusters if not c.complete)
    if unjudged:
        out += [
            "",
            f"**Not fully judged:** {plural(unjudged, 'cluster')} {'has' if unjudged == 1 else 'have'} a selected "
            "rule that could not be judged, so this result cannot pass a gate, whatever waivers and baselines accept.",
        ]
    if not report.collected():
        out += ["", "**Incomplete run:** this result cannot pass a gate."]
    return out


def _top_table(
    order: list[ClusterReport], by_cluster: dict[str | None, list[Finding]], names: dict[str, DisplayName]
) -> list[str]:
    attention = [c for c in order if needs_attention(c) and c.evidence is None]  # a job measured is not priced
    if not attention:
        if any(c.evidence for c in order):
            return []  # the jobs' sections follow
        return ["", "No cluster has findings." if order else "No training cluster was judged."]
    out = [
        "",
        "## Clusters that cost most",
        "",
        "Slowdown and GPU-hours lost a day are the high end of each estimate.",
        "",
        "| # | cloud | cluster | nodes | worst | slowdown | GPU-h lost/day |",
        "|---:|---|---|---:|---|---:|---:|",
    ]
    for rank, c in enumerate(attention[:TOP], 1):
        severity = worst_cell(c, by_cluster.get(c.id, []))
        name = names[c.id]
        out.append(
            f"| {rank} | {md_text(name.cloud)} | {md_code(name.in_cloud(), table=True)} | {len(c.nodes):,} | "
            f"{severity} | {slowdown_cell(c.penalty)} | {md_text(lost_cell(c.penalty))} |"
        )
    if any(lost_cell(c.penalty).endswith("*") for c in attention[:TOP]):
        out += ["", "\\* more if the findings marked possible hold (see the cluster)."]
    if len(attention) > TOP:
        out += ["", f"… and {plural(len(attention) - TOP, 'more cluster')} with findings or not fully judged."]
    return out


def _step(step: str) -> str:
    """A remediation line; the command of a `CLI:` line as code, so it can be copied as written."""
    label, sep, command = step.partition(": ")
    if sep and label == "CLI" and command.strip():
        return f"CLI: {md_code(command.strip())}"
    return md_text(step)


def _located(resources: list[str], locations: dict[str, SourceLocation]) -> str:
    """Resources in code spans, a plan's with the file:line of their block (reports/planned.py)."""
    shown = ", ".join(planned.named(resources[:RESOURCES_SHOWN], locations, md_code))
    return shown + (f" (+{len(resources) - RESOURCES_SHOWN:,} more)" if len(resources) > RESOURCES_SHOWN else "")


def _fix_lines(first: Finding, rule: str, seen: set[str], locations: dict[str, SourceLocation]) -> list[str]:
    """The fix: in full the first time the rule appears in the comment, its first step after that. On a plan's
    resource the Terraform change comes first, as a fenced HCL block naming the block to change."""
    fix = planned.fix(first, locations)
    if not fix.steps:
        return []
    if fix.terraform is not None:
        resource = first.resources[0] if first.resources else ""
        return ["**Fix in Terraform:**", "", *planned.hcl_lines(fix, resource, locations)]
    if rule in seen:
        return [f"**Fix:** {md_text(fix.steps[0])} (all steps: the first {md_text(rule)} above)"]
    return ["**Fix:** " + "  \n".join(_step(step) for step in fix.steps)]


def _finding_sections(
    findings: list[Finding], seen: set[str], locations: dict[str, SourceLocation] | None = None
) -> list[str]:
    """One section per rule: the resources it flags, the first message, the fix."""
    groups = rule_groups(findings)
    out: list[str] = []
    for (rule, why), rule_findings in groups.items():
        first = rule_findings[0]
        resources = [r for f in rule_findings for r in f.resources]
        alike = f" (and {len(rule_findings) - 1} more alike)" if len(rule_findings) > 1 else ""
        out += [
            "",
            f"### {first.severity.upper()} {md_text(rule)}: {md_text(first.title)}",
            "",
            f"- **Resources:** {_located(resources, locations or {})}",
            f"- **Category:** {md_text(first.category)}",
            *(["- **Confidence:** possible (the rule may be wrong here)"] if first.confidence == "possible" else []),
            *([f"- **Not failing:** {md_text(why)}"] if why else []),
            "",
            md_text(_cap(first.message), line_start=True) + alike,
            "",
        ]
        out += _fix_lines(first, rule, seen, locations or {})
        seen.add(rule)
    return out


def _cluster_section(
    rank: int,
    c: ClusterReport,
    findings: list[Finding],
    seen: set[str],
    name: DisplayName,
    locations: dict[str, SourceLocation] | None = None,
) -> list[str]:
    severity = worst(f for f in findings if f.gates)
    if findings and not severity:
        status = f"{plural(len(findings), 'finding')}, none failing the gate (waived or in the baseline)"
    elif findings:
        status = f"{plural(len(findings), 'finding')}, worst {severity}"
    elif c.status == "incomplete":
        status = "not fully judged"
    else:
        status = "clean"
    if findings and not c.complete:  # findings, and a rule not judged: both hold
        status += "; not fully judged"
    types = ", ".join(md_code(t) for t in c.instance_types)
    out = [
        "",
        f"## {rank}. {md_code(c.id if c.evidence else name)}",
        "",
        f"{status} · {md_text(c.grouped_by)} · {node_types(len(c.nodes), types, c.untyped_nodes, c.gpus)}  ",
    ]
    if c.evidence is not None:  # what the file shows (it may name no host and no rank), and no penalty: measured
        hosts = _codes(c.nodes) if c.nodes else "no host named"
        ranks = f" · {plural(c.gpus, 'rank')}" if c.gpus else ""
        out[-1] = f"{status} · {md_text(c.grouped_by)}: {hosts}{ranks}  "
        out += _job_lines(c.evidence)
    else:
        out.append(f"Penalty ({md_text(c.penalty.workload)}): {md_text(penalty_line(c.penalty))}")
    possible = possible_line(c.penalty, possible_rules(findings))
    if possible:
        out[-1] += "  "
        out.append(md_text(possible))
    out += _finding_sections(findings, seen, locations)
    groups = not_judged_groups(c.not_judged)
    if groups:
        out += ["", "**Not judged:**", ""]
        for reason, rules, resources in groups:
            where = f" (on {_located(resources, locations or {})})" if resources else ""
            out.append(f"- {', '.join(md_text(r) for r in rules)}: {md_text(_cap(reason, 500))}{where}")
    return out


def _job_lines(job: JobEvidence) -> list[str]:
    """An evidence job's lines and table (reports.evidence), its first ROWS_MAX rows."""
    found = evidence.section(job)
    out = [md_text(line) + "  " for line in found.lines]
    if found.rows:
        out += ["", "| " + " | ".join(found.heads) + " |", "|" + "---|" * len(found.heads)]
        out += ["| " + " | ".join(md_text(cell) for cell in row) + " |" for row in found.rows[: evidence.ROWS_MAX]]
        if len(found.rows) > evidence.ROWS_MAX:
            out += ["", f"… and {len(found.rows) - evidence.ROWS_MAX:,} more rows (see `--format json`)"]
    return out


def _tail(report: Report, clean: list[ClusterReport], names: dict[str, DisplayName]) -> list[str]:
    out: list[str] = []
    if clean:
        listed = _codes([str(names[c.id]) for c in clean])
        out += ["", "## Clean clusters", "", f"{plural(len(clean), 'clean cluster')}: {listed}."]
    if report.skipped_clusters:
        out += ["", "## Skipped (not training clusters)", ""]
        for s in report.skipped_clusters[:LISTED]:
            out.append(f"- {md_code(names[s.id])} — {md_text(_cap(s.reason, 500))}")
        if len(report.skipped_clusters) > LISTED:
            out.append(f"- … and {len(report.skipped_clusters) - LISTED:,} more (see `--format json`)")
    if report.notes:
        out += ["", "## Notes", ""] + [f"- {md_text(_cap(n, 1_000))}" for n in report.notes[:LISTED]]
        if len(report.notes) > LISTED:
            out.append(f"- … and {len(report.notes) - LISTED:,} more (see `--format json`)")
    return out


def _size(lines: list[str]) -> int:
    return sum(len(line) + 1 for line in lines)


def render(report: Report, color: bool = False, limit: int = LIMIT) -> str:
    by_cluster = findings_by_cluster(report)
    order = ranked(report)
    # An evidence job is shown whether clean or not: its figures are what the user ran it for.
    attention = [c for c in order if needs_attention(c) or c.evidence is not None]
    shown = {c.id for c in attention}
    clean = [c for c in order if c.id not in shown]
    names = cluster_names(report)
    head = _head(report) + _top_table(order, by_cluster, names)
    tail = _tail(report, clean, names)
    reserve = 400  # the "left out" line

    seen: set[str] = set()
    sections: list[tuple[list[str], int, int]] = []  # (lines, clusters, findings)
    for rank, c in enumerate(attention, 1):
        section = _cluster_section(rank, c, by_cluster.get(c.id, []), seen, names[c.id], report.locations)
        sections.append((section, 1, len(by_cluster.get(c.id, []))))
    templates = by_cluster.get(None, [])
    if templates:
        found = _finding_sections(templates, seen, report.locations)
        lines = ["", "## Launch templates (judged before any node launches)", *found]
        sections.append((lines, 0, len(templates)))
    if not report.findings:
        sections.append((["", "No findings."], 0, 0))

    body: list[str] = []
    used = _size(head) + _size(tail) + reserve
    left_clusters = left_findings = 0
    for index, (lines, _, _) in enumerate(sections):
        if used + _size(lines) > limit:
            left = sections[index:]
            left_clusters = sum(n for _, n, _ in left)
            left_findings = sum(n for _, _, n in left)
            break
        body += lines
        used += _size(lines)
    if left_clusters or left_findings:
        body += [
            "",
            f"**Left out to fit a comment of {limit:,} characters:** {plural(left_clusters, 'cluster')} with "
            f"{plural(left_findings, 'finding')} (the least costly). Run with `--format json` for all of them.",
        ]
    text = "\n".join(head + body + tail) + "\n"
    if len(text) > limit:  # only if the capped head and tail alone are too long: cut at a line
        notice = "\n\n**Cut to fit a comment.** Run with `--format json` for the whole report.\n"
        text = text[: text.rfind("\n", 0, limit - len(notice))] + notice
    return text
