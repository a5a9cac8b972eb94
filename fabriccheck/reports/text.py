"""Text report for people: the clusters that cost most, a block per cluster (worst first), then a summary.

Lines are wrapped to the terminal's width (`terminal_width`) and never exceed it: an id or other token longer
than a line is folded after a `/`, `:` or `,` (`--format json` has it whole). Clusters go by their short names
(names.py); in the top table a cloud column, and a name without the account and region its cloud's rows share
(named above the table), cut from the left when it is still too long.
Colour only when asked for (a terminal without NO_COLOR). Every value that came from the cloud goes through
`safe.visible` and reaches rich only as a `Text` object, never as markup.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from fabriccheck.config import Gate
from fabriccheck.findings import Finding
from fabriccheck.model import UNKNOWN_ACCOUNT, SourceLocation
from fabriccheck.report import ClusterReport, Report
from fabriccheck.reports import changes, evidence, planned
from fabriccheck.reports.columns import MIN_WIDTH, terminal_width, wrap
from fabriccheck.reports.names import DisplayName, shared_scopes
from fabriccheck.reports.outline import (
    cluster_names,
    cluster_status,
    findings_by_cluster,
    needs_attention,
    not_judged_groups,
    ranked,
    rule_groups,
    status_counts,
    suppressed,
    unjudged_states,
    worst_cell,
)
from fabriccheck.reports.safe import visible
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

STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan", "incomplete": "bold magenta", "clean": "green"}
TOP = 10  # rows of the "cost most" table
CLEAN_SHOWN = 3  # clean clusters shown as blocks (and named in the count line) without --verbose
RESOURCES_SHOWN = 6
ERRORS_SHOWN = 10
SKIPPED_SHOWN = 10


def gate_line(gate: Gate) -> str:
    """The gate the run was judged under, in one paragraph: each setting, and where it came from when that is not
    the default (a config file a pull request adds shows here)."""

    def shown(value: object) -> str:
        if isinstance(value, dict):
            return ", ".join(f"{k}={v}" for k, v in value.items()) or "none"
        if isinstance(value, list):
            return ", ".join(map(str, value)) or "none"
        return "none" if value is None else str(value)

    def part(label: str, name: str, empty: str = "none") -> str:
        setting = gate.setting(name)
        text = shown(setting.value) if setting.value not in (None, [], {}) else empty
        return f"{label} {visible(text)}" + ("" if setting.source == "default" else f" ({visible(setting.source)})")

    parts = [
        part("fail-on", "fail-on"),
        part("select", "select", "all rules"),
        part("ignore", "ignore"),
        part("severity", "severity"),
        part("roles", "roles"),
        part("waivers", "waivers"),
        part("baseline", "baseline"),
    ]
    if gate.setting("allow-incomplete").value:
        parts.append(part("allow-incomplete", "allow-incomplete"))
    config = visible(gate.config_file) if gate.config_file else "none (--isolated)" if gate.isolated else "none"
    return "gate: " + "; ".join(parts) + f"; config file {config}"


# ---------------------------------------------------------------------------------------------- layout


class _Page:
    """Lines of styled text, each wrapped to `width` by us (rich is told never to wrap)."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.lines: list[Text] = []

    def blank(self) -> None:
        if self.lines and self.lines[-1].plain:
            self.lines.append(Text())

    def add(self, line: Text) -> None:
        self.lines.append(line)

    def para(self, text: str, first: str = "", rest: str | None = None, style: str = "") -> None:
        """Wrap plain `text` after the indent `first` (later lines after `rest`, default: as wide as first)."""
        for line in wrap(text, self.width, first, " " * len(first) if rest is None else rest):
            self.lines.append(Text(line, style=style))

    def styled(self, parts: Sequence[tuple[str, str]], rest: str) -> None:
        """Wrap a line made of (text, style) parts, keeping each part's style on whatever line it lands."""
        plain = "".join(text for text, _ in parts)
        lines = wrap(plain, self.width, "", rest)
        spans, at = [], 0
        for text, style in parts:
            spans.append((at, at + len(text), style))
            at += len(text)
        # Map each wrapped line back onto the original string: textwrap only drops the spaces it breaks on.
        cursor = 0
        for index, line in enumerate(lines):
            body = line if index == 0 else line[len(rest) :]
            start = plain.index(body, cursor)
            out = Text(line[: len(line) - len(body)])
            end = start + len(body)
            for a, b, style in spans:
                if a < end and b > start:
                    out.append(plain[max(a, start) : min(b, end)], style=style)
            self.lines.append(out)
            cursor = start + len(body)


def _shorten(value: str, room: int) -> str:
    """A name cut to `room` from the left, whole segments first ("…/asg vision-train"): its end says what it is."""
    if len(value) <= room:
        return value
    parts = value.split("/")
    for start in range(1, len(parts)):
        tail = "…/" + "/".join(parts[start:])
        if len(tail) <= room:
            return tail
    return "…" + value[len(value) - (room - 1) :]


# ---------------------------------------------------------------------------------------------- blocks


def _top_table(
    page: _Page,
    clusters: list[ClusterReport],
    by_cluster: dict[str | None, list[Finding]],
    names: dict[str, DisplayName],
) -> None:
    priced = [c for c in clusters if needs_attention(c) and c.evidence is None]  # a job measured is not priced
    shown = priced[:TOP]
    if not shown:
        return
    more = len(priced) - len(shown)
    # A cloud whose every row shares its account and region (its resource group, on Azure) names it once, above.
    where = shared_scopes(names[c.id] for c in shown)
    rows = []
    for rank, c in enumerate(shown, 1):
        name = names[c.id]
        rows.append(
            (
                str(rank),
                visible(name.cloud),
                visible(name.in_cloud(bool(where.get(name.cloud)))),
                f"{len(c.nodes):,}",
                worst_cell(c, by_cluster.get(c.id, [])),
                slowdown_cell(c.penalty),
                lost_cell(c.penalty),
            )
        )
    heads = ("#", "cloud", "cluster", "nodes", "worst", "slowdown", "GPU-h lost")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    fixed = 2 + sum(widths) - widths[2] + 2 * (len(heads) - 1)
    widths[2] = min(widths[2], max(len(heads[2]), page.width - fixed))
    page.para("Clusters that cost most (high end of each estimate; GPU-hours lost a day)", "", "  ", style="bold")
    scopes = [f"{visible(cloud)} {visible(scope)}" for cloud, scope in sorted(where.items()) if scope]
    if scopes:
        page.para("clusters of " + ", ".join(scopes), "  ", "    ", style="dim")

    def row(cells: Sequence[str], severity: str | None = None) -> Text:
        line = Text("  ")
        for i, (cell, width) in enumerate(zip(cells, widths, strict=True)):
            if i:
                line.append("  ")
            if i in (1, 2):
                line.append((_shorten(cell, width) if i == 2 else cell).ljust(width))
            elif i == 4:
                line.append(cell.ljust(width), style=STYLE.get(severity or "", ""))
            else:
                line.append(cell.rjust(width))
        line.rstrip()
        return line

    page.add(row(heads))
    for cells in rows:
        page.add(row(cells, cells[4]))
    if any(cells[6].endswith("*") for cells in rows):
        page.para("* more if the findings marked possible hold (see the cluster)", "  ", "    ", style="dim")
    if more:
        page.para(f"… and {plural(more, 'more cluster')} with findings or not fully judged, below.", "  ")


def _finding_blocks(
    page: _Page, findings: list[Finding], verbose: bool, locations: dict[str, SourceLocation] | None = None
) -> None:
    """One block per rule in a cluster: the nodes it flags, the first message, the fix. A rule that flags
    every node of a 500-node cluster prints once, not 500 times (JSON keeps one finding per node). A plan's
    resources are shown with their file:line, and their fix in Terraform (reports/planned.py)."""
    groups = rule_groups(findings)
    indent = " " * 10
    locations = locations or {}
    for rule_findings in groups.values():
        first = rule_findings[0]
        every = [r for f in rule_findings for r in f.resources]
        resources = planned.named(every if verbose else every[:RESOURCES_SHOWN], locations, visible)
        shown = ", ".join(resources)
        if len(every) > len(resources):
            shown += f" (+{len(every) - RESOURCES_SHOWN} more)"
        page.styled(
            [
                ("  ", ""),
                (f"{first.severity:<7}", STYLE[first.severity]),
                (f" {visible(first.rule)} {visible(first.category)}: {visible(first.title)}", "bold"),
                *([(" (possible: the rule may be wrong here)", "dim")] if first.confidence == "possible" else []),
            ],
            indent,
        )
        page.para(f"on {shown}", indent)
        alike = f" (and {len(rule_findings) - 1} more alike)" if len(rule_findings) > 1 else ""
        page.para(visible(first.message) + alike, indent)
        why = suppressed(first)
        if why:
            page.styled([(indent, ""), (visible(why), "bold")], indent)
        fix = planned.fix(first, locations)
        label = "fix (Terraform):" if fix.terraform else "fix:"
        if fix.steps:
            step = fix.terraform or fix.steps[0]
            page.styled([(indent, ""), (label, "bold"), (" " + visible(step), "")], indent)


def _not_judged(page: _Page, c: ClusterReport, locations: dict[str, SourceLocation] | None = None) -> None:
    for reason, rules, resources in not_judged_groups(c.not_judged):
        where = ""
        if resources:
            names = planned.named(resources[:RESOURCES_SHOWN], locations or {}, visible)
            where = " on " + ", ".join(names)
            where += f" (+{len(resources) - RESOURCES_SHOWN} more)" if len(resources) > RESOURCES_SHOWN else ""
        page.styled(
            [
                ("  ", ""),
                ("not judged", STYLE["incomplete"]),
                (f" {', '.join(map(visible, rules))}{where}: ", ""),
                (visible(reason), ""),
            ],
            " " * 6,
        )


def _cluster_block(
    page: _Page,
    c: ClusterReport,
    findings: list[Finding],
    verbose: bool,
    name: DisplayName,
    locations: dict[str, SourceLocation] | None = None,
) -> None:
    status, kind = cluster_status(c, findings)
    style = "dim" if kind == "accepted" else STYLE[kind]
    page.blank()
    what, shown = ("Job ", visible(c.id)) if c.evidence is not None else ("Cluster ", visible(name))
    if len(f"{what}{shown}  {status}") <= page.width:
        page.styled([(what, "bold"), (shown, "bold"), ("  ", ""), (status, style)], "  ")
    else:  # the name alone may be wider than the line; the status is never split from its count
        page.styled([(what, "bold"), (shown, "bold")], "  ")
        page.styled([("  ", ""), (status, style)], "  ")
    if c.evidence is not None:
        _job_block(page, c, findings, verbose)
        return
    if verbose:
        page.para(f"id {visible(c.id)}", "  ", "    ", style="dim")
    types = ", ".join(visible(t) for t in c.instance_types)
    page.para(f"{visible(c.grouped_by)}: {node_types(len(c.nodes), types, c.untyped_nodes, c.gpus)}", "  ")
    _finding_blocks(page, findings, verbose, locations)
    _not_judged(page, c, locations)
    caveat = " (from the rules that could be judged)" if c.not_judged and not findings else ""
    page.para(f"penalty ({visible(c.penalty.workload)}): {visible(penalty_line(c.penalty))}{caveat}", "  ", " " * 4)
    possible = possible_line(c.penalty, possible_rules(findings))
    if possible:
        page.para(visible(possible), "  ", " " * 4)


def _job_block(page: _Page, c: ClusterReport, findings: list[Finding], verbose: bool) -> None:
    """An evidence job: what its file is and was compared with, its table (processes, or measured busbw against
    expected), its findings and what could not be judged; it is measured, so no penalty line."""
    assert c.evidence is not None
    found = evidence.section(c.evidence)
    for line in found.lines:
        page.para(visible(line), "  ", "    ")
    table = evidence.text_table(found, page.width, verbose)
    if table:
        page.blank()
    for line in table:
        page.add(Text(line))
    page.blank()
    if not findings:  # an incomplete job never reads as "no findings": what was not judged may hold them
        page.para("no findings" if c.complete else "no findings in what could be judged: see the notes", "  ")
    _finding_blocks(page, findings, verbose)
    _not_judged(page, c)


def _clean_line(page: _Page, clean: list[ClusterReport], names: dict[str, DisplayName]) -> None:
    shown = ", ".join(visible(names[c.id]) for c in clean[:CLEAN_SHOWN])
    page.blank()
    page.styled(
        [
            (plural(len(clean), "clean cluster"), STYLE["clean"]),
            (f": {shown}, … (use --verbose to list them)", ""),
        ],
        "  ",
    )


def _skipped(page: _Page, report: Report, verbose: bool, names: dict[str, DisplayName]) -> None:
    skipped = report.skipped_clusters
    if not skipped:
        return
    page.blank()
    page.para("Skipped (not training clusters):", style="bold")
    shown = skipped if verbose else skipped[:SKIPPED_SHOWN]
    for s in shown:
        types = ", ".join(visible(t) for t in s.instance_types)
        detail = f" ({plural(len(s.nodes), 'node')} × {types})" if s.nodes else ""
        page.para(f"{visible(names[s.id])}{detail} — {visible(s.reason)}", "  ", " " * 4)
    if len(shown) < len(skipped):
        page.para(f"… and {len(skipped) - len(shown):,} more (use --verbose to list them)", "  ")


NOT_REPORTED = {"alone": "Train alone", "no-fabric": "No fabric to use", "not-training": "Not training (skipped)"}


def _not_reported(page: _Page, report: Report) -> None:
    """--verbose: the nodes the summary counts as training alone or having no fabric, by id, by why."""
    if not report.nodes_not_reported:
        return
    page.blank()
    page.para("Nodes in no reported cluster", style="bold")
    for reason, label in NOT_REPORTED.items():
        nodes = [n for n in report.nodes_not_reported if n.reason == reason]
        if nodes:
            named = ", ".join(f"{visible(n.id)} ({visible(n.instance_type or '?')})" for n in nodes)
            page.para(f"{label} ({len(nodes):,}): {named}", "  ", "    ")


def _summary(page: _Page, report: Report) -> None:
    s = report.summary
    counts = status_counts(report)
    page.blank()
    judged = [plural(counts["findings"], "with findings", "with findings"), f"{counts['clean']:,} clean"]
    if counts["incomplete"]:
        judged.append(f"{counts['incomplete']:,} not fully judged")
    skipped = len(report.skipped_clusters) or s.skipped_clusters
    alone = (
        f"{plural(s.nodes_not_in_reported_clusters, 'node')} "
        f"{'trains' if s.nodes_not_in_reported_clusters == 1 else 'train'} alone or "
        f"{'has' if s.nodes_not_in_reported_clusters == 1 else 'have'} no fabric to use"
    )
    # An evidence report judged the one job its file shows, on the hosts the file names.
    seen = f"{plural(s.clusters, 'job')} judged ({', '.join(judged)}) on" if report.evidence else None
    parts: list[tuple[str, str]] = [
        ("Summary: ", "bold"),
        (
            f"{seen} {plural(s.nodes, 'node')}"
            if seen
            else f"{plural(s.nodes, 'node')}; {plural(s.clusters, 'training cluster')} judged ({', '.join(judged)}); "
            f"{alone}",
            "",
        ),
    ]
    if skipped:
        parts.append((f"; {plural(skipped, 'cluster')} skipped (not training)", ""))
    parts.append((". ", ""))
    for severity, many in (("error", None), ("warning", None), ("info", "info")):
        n = s.findings.get(severity, 0)
        parts.append((plural(n, severity, many), STYLE[severity] if n else ""))
        parts.append((", " if severity != "info" else ".", ""))
    page.styled(parts, "  ")
    if s.scopes:
        failed = f" ({s.scopes_incomplete:,} incomplete)" if s.scopes_incomplete else ""
        page.para(
            f"Collected {plural(s.scopes, 'scope')}{failed} with {plural(s.api_calls, 'API request')}, "
            f"{plural(s.retries, 'retry', 'retries')} after throttling or errors.",
            "",
            "  ",
        )
    if s.waived or s.in_baseline:
        page.para(
            f"Not failing the gate: {plural(s.waived, 'finding')} waived, {s.in_baseline:,} in the baseline "
            "(reported above all the same).",
            "",
            "  ",
        )
    states = unjudged_states(s)
    if states:
        listed = ", ".join(f"{n:,} {visible(state)}" for state, n in sorted(states.items()))
        page.para(f"Instances not judged: {listed} (only running and pending instances are judged).", "", "  ")
    for line in cost_lines(report):
        page.para(visible(line), "", "  ")
    _cannot_pass(page, report)


def _cannot_pass(page: _Page, report: Report) -> None:
    """The summary's last words when the result cannot pass a gate: a cluster not fully judged, an incomplete run."""
    unjudged = sum(1 for c in report.clusters if not c.complete)
    if unjudged and report.evidence:  # one job, its file: what was not judged is under it and in the notes
        page.styled(
            [
                ("INCOMPLETE: ", STYLE["error"]),
                ("something asked for could not be judged (see the notes); this result cannot pass a gate.", ""),
            ],
            "  ",
        )
    elif unjudged:
        page.styled(
            [
                ("NOT FULLY JUDGED: ", STYLE["error"]),
                (
                    f"{plural(unjudged, 'cluster')} {'has' if unjudged == 1 else 'have'} a selected rule that could "
                    "not be judged (under each cluster), so this result cannot pass a gate, whatever waivers and "
                    "baselines accept.",
                    "",
                ),
            ],
            "  ",
        )
    if not report.collected():
        page.styled(
            [
                ("INCOMPLETE: ", STYLE["error"]),
                (
                    f"{plural(len(report.errors), 'collection error')} (listed at the top); some facts were not "
                    "collected, so this result cannot pass a gate.",
                    "",
                ),
            ],
            "  ",
        )


def _trend(page: _Page, report: Report) -> None:
    """What changed since the earlier report of --previous (changes.lines, escaped there), after the summary."""
    found = report.trend
    if found is None:
        return
    page.blank()
    page.para(f"Since the earlier report of {visible(found.previous_generated_at)}:", style="bold")
    page.para(f"read from {visible(found.previous)}", "  ", "    ")
    for line in changes.lines(found):
        if line.startswith("  "):  # a finding or a cluster under its heading
            page.para(line.strip(), "    ", "      ")
        elif line:
            page.para(line, "  ", "    ")


# ---------------------------------------------------------------------------------------------- render


def render(report: Report, color: bool = False, verbose: bool = False, width: int | None = None) -> str:
    """The text report. `verbose` lists every clean cluster, skipped cluster, resource and collection error;
    `width` defaults to `terminal_width()` and is never below 60."""
    page = _Page(max(MIN_WIDTH, width) if width is not None else terminal_width())
    judged = f"{report.evidence} · " if report.evidence else ""  # what an evidence command read, before its file
    page.styled(
        [
            ("fabriccheck ", "bold"),
            (f"{visible(report.tool.get('version', ''))} · {judged}{visible(report.source)}", "bold"),
        ],
        "  ",
    )
    if report.workload:  # an evidence report prices nothing, so it assumes no workload
        page.para(
            f"workload assumed: {visible(report.workload.get('name', ''))} "
            f"({visible(report.workload.get('description', ''))})"
            + (f"; {visible(report.workload['nccl'])}" if report.workload.get("nccl") else ""),
            "",
            "  ",
        )
    if report.gate is not None:
        page.para(gate_line(report.gate), "", "  ")
    if not report.collected():
        page.blank()
        page.para(
            "INCOMPLETE: some facts could not be collected; this result cannot pass a gate.", style=STYLE["error"]
        )
        errors = report.errors if verbose else report.errors[:ERRORS_SHOWN]
        for e in errors:
            need = f" (needs {visible(e.permission)})" if e.permission else ""
            account = "" if e.account == UNKNOWN_ACCOUNT else visible(e.account)
            # An account-wide error (a role that could not be assumed) has no region.
            where = " ".join(w for w in (account, visible(e.region or "")) if w) or "?"
            page.para(f"- {visible(e.call)} in {where}: {visible(e.code)}: {visible(e.message)}{need}", "  ", "    ")
        if len(errors) < len(report.errors):
            page.para(f"… and {len(report.errors) - len(errors):,} more (use --verbose or --format json)", "  ")

    by_cluster = findings_by_cluster(report)
    order = ranked(report)
    names = cluster_names(report)
    page.blank()
    _top_table(page, order, by_cluster, names)
    clean = [c for c in order if not needs_attention(c)]
    collapse = not verbose and len(clean) > CLEAN_SHOWN
    for c in order:
        if collapse and not needs_attention(c):
            continue
        _cluster_block(page, c, by_cluster.get(c.id, []), verbose, names[c.id], report.locations)
    if collapse:
        _clean_line(page, clean, names)
    templates = by_cluster.get(None, [])
    if templates:
        page.blank()
        page.para("Templates (judged before any node launches)", style="bold")
        _finding_blocks(page, templates, verbose, report.locations)
    _skipped(page, report, verbose, names)
    if verbose:
        _not_reported(page, report)
    _summary(page, report)
    _trend(page, report)
    for note in report.notes:
        page.para(f"note: {visible(note)}", "", "      ", style="dim")
    if report.findings:
        page.para("Details and full fixes: fabriccheck rules RULE_ID", style="dim")

    buffer = io.StringIO()
    console = Console(
        file=buffer,
        force_terminal=color,
        no_color=not color,
        width=max(page.width, 1000),
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=True,
    )
    for line in page.lines:
        console.print(line)
    return buffer.getvalue()
