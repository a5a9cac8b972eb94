"""HTML report: one self-contained page a platform lead opens in a browser, made from the same Report as every
other format.

At the top what the fabric loses a day (GPU-hours; dollars with --price-per-gpu-hour), the clusters by status and
what could not be seen; then the clusters ranked as the text report ranks them (outline.ranked), each with its
findings, resources and fixes (console, CLI, Terraform) and, for one that runs slower than it should, its expected
busbw against message size (busbw.py); then what was not judged and why. With --previous, what changed since.

The page is a Jinja2 template (templates/report.html.j2) with autoescaping on; every string placed in it also goes
through safe.visible (the environment's `finalize`), so a tag value can neither add markup nor hide or reorder
text. The CSS is inline and the charts are inline SVG (svg.py); there is no script, and a Content-Security-Policy
forbids any (and any request): the page makes none.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from fabriccheck.findings import Finding
from fabriccheck.model import UNKNOWN_ACCOUNT, SourceLocation
from fabriccheck.report import DESELECTED, ClusterReport, Report, TrendFinding
from fabriccheck.reports import busbw, changes, evidence, planned, svg
from fabriccheck.reports.names import DisplayName, display_name
from fabriccheck.reports.outline import (
    cluster_names,
    cluster_status,
    findings_by_cluster,
    needs_attention,
    not_judged_groups,
    ranked,
    rule_groups,
    status_counts,
    unjudged_states,
    worst_cell,
)
from fabriccheck.reports.safe import visible
from fabriccheck.reports.wording import (
    lost_cell,
    lost_hours,
    node_types,
    penalty_line,
    plural,
    possible_cost_line,
    possible_line,
    possible_rules,
    slowdown_cell,
    span,
    verdict_line,
)

RESOURCES_SHOWN = 8  # a rule's resources listed in full; the rest behind "more"
RESOURCES_MAX = 200  # past this, --format json has them
CHART_BARS = 15  # clusters in the lost GPU-hours chart
BUSBW_CHARTS = 50  # degraded clusters drawn with their busbw (~7 KB each), worst first; the rest name the command
TOP = 10
_STEP_LABELS = ("Console", "CLI", "Terraform")
_BREAK_AFTER = re.compile("[/:,]")  # in escaped text: no entity holds one


def _shown(value: Any) -> Any:
    """Every value the template prints: markup made here (charts) as it is; text with its control characters and
    invisible Unicode written out (then autoescaped); nothing for None."""
    if isinstance(value, Markup):
        return value
    if value is None:
        return ""
    return visible(value) if isinstance(value, str) else value


def breakable(value: object) -> Markup:
    """An id or name escaped, with a line-break opportunity after each `/`, `:` and `,` (a narrow screen breaks
    `aws/111122223333/us-east-1/asg vision-train` between its parts, not inside them)."""
    text = escape(visible(value))
    return Markup(_BREAK_AFTER.sub(lambda m: m.group() + "<wbr>", str(text)))


@functools.cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("fabriccheck.reports", "templates"),
        autoescape=True,
        finalize=_shown,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["breakable"] = breakable
    return env


# ---------------------------------------------------------------------------------------------- what a page shows


@dataclass
class Step:
    label: str  # "", Console, CLI or Terraform
    text: str
    code: bool  # shown as a command or a block of configuration


@dataclass
class FindingGroup:
    """One rule's findings in one cluster (or among the templates), with the fix once."""

    severity: str
    rule: str
    category: str
    title: str
    possible: bool
    resources: list[str]
    more: int
    message: str
    alike: int
    suppressed: str | None
    steps: list[Step]
    references: list[str]
    fix_anchor: str = ""  # where its fix is shown
    fix_ref: str = ""  # the fix shown above, when it is the same


@dataclass
class ClusterView:
    rank: int
    anchor: str
    name: str
    id: str
    cloud: str
    status: str
    css: str  # error, warning, info, incomplete, clean, accepted
    grouped_by: str
    nodes: int
    types: str
    gpus: int
    shape: str  # nodes, types and accelerators in words (wording.node_types)
    workload: str
    penalty: str
    possible: str | None
    findings: list[FindingGroup]
    not_judged: list[tuple[str, list[str], list[str]]]
    chart: Markup | None = None
    chart_note: str | None = None
    evidence: evidence.Section | None = None  # an evidence job: its lines and table, in place of a penalty
    cells: dict[str, str] = field(default_factory=dict)  # the "cost most" table's


def _steps(finding: Finding, locations: dict[str, SourceLocation]) -> list[Step]:
    steps = []
    for step in planned.fix(finding, locations).steps:
        label, _, text = step.partition(": ")
        if label in _STEP_LABELS and text:
            steps.append(Step(label, text, label != "Console"))
        else:
            steps.append(Step("", step, False))
    return steps


Fixes = dict[tuple[str, ...], str]  # the steps of a fix shown on the page -> the anchor of where they are


def finding_groups(
    findings: Sequence[Finding], locations: dict[str, SourceLocation], fixes: Fixes | None = None
) -> list[FindingGroup]:
    """One group per rule (and per reason it does not gate), as the text report groups them. A fix already in
    `fixes` (shown above, under another cluster) is linked rather than repeated: a rule that fires on 300 clusters
    prints its console, CLI and Terraform steps once."""
    fixes = {} if fixes is None else fixes
    groups = rule_groups(findings)
    out = []
    for (_, why), found in groups.items():
        first = found[0]
        steps = _steps(first, locations)
        key = tuple(f"{step.label}: {step.text}" for step in steps)
        seen = fixes.get(key, "")
        anchor = "" if seen else fixes.setdefault(key, f"fix-{len(fixes) + 1}")
        every = list(dict.fromkeys(r for f in found for r in f.resources))
        listed = every[:RESOURCES_MAX]
        out.append(
            FindingGroup(
                severity=first.severity,
                rule=first.rule,
                category=first.category,
                title=first.title,
                possible=first.confidence == "possible",
                resources=planned.named(listed, locations),
                more=len(every) - len(listed),
                message=first.message,
                alike=len(found) - 1,
                suppressed=why,
                steps=[] if seen else steps,
                fix_anchor=anchor,
                fix_ref=seen,
                references=[r for r in first.references if r.startswith(("https://", "http://"))],
            )
        )
    return out


def cluster_view(
    rank: int,
    c: ClusterReport,
    findings: list[Finding],
    name: DisplayName,
    report: Report,
    draw: bool = True,
    fixes: Fixes | None = None,
) -> ClusterView:
    """A cluster's section; `draw`: with its busbw chart when it is degraded (else the command that gives it)."""
    status, css = cluster_status(c, findings)
    caveat = " (from the rules that could be judged)" if c.not_judged and not findings else ""
    view = ClusterView(
        rank=rank,
        anchor=f"cluster-{rank}",
        name=str(name),
        id=c.id,
        cloud=c.provider,
        status=status,
        css=css,
        grouped_by=c.grouped_by,
        nodes=len(c.nodes),
        types=", ".join(c.instance_types),
        shape=node_types(len(c.nodes), ", ".join(c.instance_types), c.untyped_nodes, c.gpus),
        gpus=c.gpus,
        workload=c.penalty.workload,
        penalty=penalty_line(c.penalty) + caveat,
        possible=possible_line(c.penalty, possible_rules(findings)),
        findings=finding_groups(findings, report.locations, fixes),
        not_judged=[g for g in not_judged_groups(c.not_judged) if g[0] != DESELECTED],
        cells={
            "worst": worst_cell(c, findings),
            "slowdown": slowdown_cell(c.penalty),
            "lost": lost_cell(c.penalty),
        },
    )
    if c.evidence is not None:
        view.evidence = evidence.section(c.evidence)
    if busbw.degraded(c):
        drawn = busbw.curves(c, findings)
        if isinstance(drawn, str):
            view.chart_note = f"No busbw chart: {drawn}."
        elif not draw:
            view.chart_note = f"No busbw chart: only the {BUSBW_CHARTS} degraded clusters that rank first have one" + (
                f"; the figures: {drawn.command}" if drawn.command else ""
            )
        else:
            title = f"Expected all_reduce busbw on {drawn.nodes} × {drawn.instance_type}: healthy against {drawn.state}"
            view.chart = svg.busbw(f"busbw-{rank}", title, drawn)
            view.chart_note = title + (f" (the figures of: {drawn.command})" if drawn.command else "")
    return view


# ---------------------------------------------------------------------------------------------- the top


def headline(report: Report) -> dict[str, Any]:
    """The figures at the top: GPU-hours lost a day out of those paid for, dollars, clusters that cannot run."""
    s = report.summary
    lost = s.lost_gpu_hours_per_day
    dollars = s.lost_dollars_per_day
    share = (
        span(lost.low / s.gpu_hours_per_day, lost.high / s.gpu_hours_per_day, "{:.0%}") if s.gpu_hours_per_day else ""
    )
    losing = s.gpu_hours_per_day > 0 and (lost.high >= 0.5 or s.clusters_cannot_run > 0)
    return {
        "losing": losing,
        "lost": span(lost.low, lost.high),
        "share": share,
        "paid": f"{s.gpu_hours_per_day:,.0f}",
        "dollars": span(dollars.low, dollars.high, "${:,.0f}") if dollars is not None else None,
        "cannot_run": s.clusters_cannot_run,
        "cannot_pass": not report.fully_judged(),
        "more": [line for line in [possible_cost_line(report)] if line],  # what findings marked possible would add
    }


def statuses(report: Report) -> list[tuple[str, int, str]]:
    counts = status_counts(report)
    skipped = len(report.skipped_clusters) or report.summary.skipped_clusters
    return [
        ("with findings", counts["findings"], "error" if counts["findings"] else "clean"),
        ("clean", counts["clean"], "clean"),
        ("incomplete", counts["incomplete"], "incomplete" if counts["incomplete"] else "clean"),
        ("skipped (not training)", skipped, "muted"),
    ]


def unseen(report: Report, names: dict[str, DisplayName]) -> list[str]:
    """What this run could not see: collection errors, rules not judged, instances not judged, unknown types,
    clusters whose penalty could not be estimated."""
    out = []
    for e in report.errors:
        account = "" if e.account == UNKNOWN_ACCOUNT else e.account
        where = " ".join(w for w in (account, e.region or "") if w) or "?"
        need = f" (needs {e.permission})" if e.permission else ""
        out.append(f"{e.call} in {where}: {e.code}: {e.message}{need}")
    unjudged = sum(1 for c in report.clusters if not c.complete)
    if unjudged:
        out.append(
            f"{plural(unjudged, 'cluster')} {'has' if unjudged == 1 else 'have'} a selected rule that could not be "
            "judged (see Not judged below): this result cannot pass a gate"
        )
    states = unjudged_states(report.summary)
    if states:
        listed = ", ".join(f"{n:,} {state}" for state, n in sorted(states.items()))
        out.append(f"instances not judged: {listed} (only running and pending instances are judged)")
    if report.summary.unknown_instance_types:
        out.append("instance types not in the catalog: " + ", ".join(report.summary.unknown_instance_types))
    for c in report.clusters:
        if not c.penalty.estimated and c.penalty.reason and len(c.nodes) > 1:
            out.append(f"{names[c.id]}: penalty not estimated: {c.penalty.reason}")
    return out


def charts(report: Report, order: list[ClusterReport], names: dict[str, DisplayName]) -> dict[str, Markup | None]:
    rows: list[svg.Bar] = []
    for rank, c in enumerate(order, 1):
        lost = c.penalty.lost_gpu_hours_per_day
        if lost is not None and lost_hours(c.penalty) >= 0.5 and len(rows) < CHART_BARS:
            words = span(lost.low, lost.high) + (" (cannot run)" if c.penalty.cannot_run else "")
            rows.append(svg.Bar(str(names[c.id]), lost.low, lost.high, words, f"#cluster-{rank}"))
    counts: dict[str, dict[str, int]] = {}
    for f in report.findings:
        by = counts.setdefault(f.category, {})
        by[f.provider] = by.get(f.provider, 0) + 1
    ordered = dict(sorted(counts.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])))
    return {
        "lost": svg.bars("lost-by-cluster", "GPU-hours lost a day, by cluster", rows) if rows else None,
        "findings": svg.stacked("findings-by-category", "Findings by category and cloud", ordered) if ordered else None,
    }


def gate_rows(report: Report) -> list[tuple[str, str, str]]:
    """The gate the run was judged under: each setting, its value and where it came from."""
    gate = report.gate
    if gate is None:
        return []
    rows = []
    empty = {"select": "all rules"}
    for name in ("fail-on", "select", "ignore", "severity", "roles", "waivers", "baseline", "allow-incomplete"):
        setting = gate.setting(name)
        value = setting.value
        if isinstance(value, bool):
            value = "yes" if value else "no"
        elif isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        elif isinstance(value, list):
            value = ", ".join(map(str, value))
        rows.append((name, str(value) if value not in (None, "") else empty.get(name, "none"), setting.source))
    rows.append(("config file", gate.config_file or ("none (--isolated)" if gate.isolated else "none"), ""))
    return rows


def trend_view(report: Report) -> dict[str, Any] | None:
    """What changed since the earlier report of --previous, with the figures written as the text report writes them."""
    found = report.trend
    if found is None:
        return None

    def listed(items: Sequence[TrendFinding]) -> list[dict[str, Any]]:
        return [
            {
                "severity": f.severity,
                "rule": f.rule,
                "cluster": str(display_name(f.cluster)) if f.cluster else f.account,
                "title": f.title,
                "resources": ", ".join(f.resources[:3])
                + (f" (+{len(f.resources) - 3} more)" if len(f.resources) > 3 else ""),
                "gates": f.gates,
            }
            for f in items
        ]

    lost, dollars = found.lost_gpu_hours_per_day, found.lost_dollars_per_day
    return {
        "previous": found.previous,
        "generated_at": found.previous_generated_at,
        "counts": (len(found.new), len(found.fixed), len(found.unchanged)),
        "lost": (changes.span_text(lost.previous), changes.span_text(lost.current), changes.signed(lost.change)),
        "worse": lost.change.high > 0.5,
        "better": lost.change.high < -0.5,
        "dollars": None
        if dollars is None
        else (changes.span_text(dollars.previous), changes.span_text(dollars.current), changes.signed(dollars.change)),
        "notes": found.notes,
        "new": listed(found.new),
        "fixed": listed(found.fixed),
        "clusters": [
            (str(display_name(c.id)), changes.signed(c.lost_gpu_hours_per_day.change)) for c in found.clusters
        ],
    }


# ---------------------------------------------------------------------------------------------- render


def render(report: Report, color: bool = False) -> str:
    """The HTML page (`color` is the text report's; a page has its own)."""
    by_cluster = findings_by_cluster(report)
    order = ranked(report)
    names = cluster_names(report)
    degraded = [c.id for c in order if busbw.degraded(c)][:BUSBW_CHARTS]
    drawn, fixes = set(degraded), Fixes()
    views = [
        cluster_view(rank, c, by_cluster.get(c.id, []), names[c.id], report, c.id in drawn, fixes)
        for rank, c in enumerate(order, 1)
    ]
    # An evidence job is shown whether clean or not (its figures are what it was run for), and is not priced.
    attention = [v for v, c in zip(views, order, strict=True) if needs_attention(c) or c.evidence is not None]
    priced = [v for v in attention if v.evidence is None]
    deselected = sorted({n.rule for c in report.clusters for n in c.not_judged if n.reason == DESELECTED})
    context = {
        "report": report,
        "version": report.tool.get("version", ""),
        "workload": report.workload,
        "headline": headline(report),
        "statuses": statuses(report),
        "unseen": unseen(report, names),
        "gate": gate_rows(report),
        "charts": charts(report, order, names),
        "top": priced[:TOP],
        "more_top": max(0, len(priced) - TOP),
        "starred": any(v.cells["lost"].endswith("*") for v in priced[:TOP]),
        "clusters": attention,
        "clean": [v for v, c in zip(views, order, strict=True) if not needs_attention(c) and c.evidence is None],
        "verdict": verdict_line(report),
        "evidence_rows": evidence.ROWS_MAX,
        "templates": finding_groups(by_cluster.get(None, []), report.locations, fixes),
        "skipped": [(str(names[s.id]), s) for s in report.skipped_clusters],
        "not_judged": [v for v in views if v.not_judged],
        "deselected": deselected,
        "trend": trend_view(report),
        "resources_shown": RESOURCES_SHOWN,
    }
    return environment().get_template("report.html.j2").render(context)
