"""Text report for people: the clusters that cost most, a block per cluster (worst first), then a summary.

Lines are wrapped to the terminal's width (`terminal_width`); an id or other token longer than a line is
never broken (it overflows its line instead, so it can still be copied and searched for), and in the top
table a long cluster id loses the prefix every cluster shares (named above the table) and then its middle.
Colour only when asked for (a terminal without NO_COLOR). Every value that came from the cloud goes through
`safe.visible` and reaches rich only as a `Text` object, never as markup.
"""

from __future__ import annotations

import io
import os
import sys
import textwrap
from collections.abc import Iterable, Sequence

from rich.console import Console
from rich.text import Text

from fabriccheck.config import Gate
from fabriccheck.engine import SEVERITY_RANK, Finding
from fabriccheck.flow import ClusterReport, NotJudged, Report
from fabriccheck.model import UNKNOWN_ACCOUNT
from fabriccheck.penalty import Penalty
from fabriccheck.reports.safe import visible

STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan", "incomplete": "bold magenta", "clean": "green"}
MIN_WIDTH = 60
DEFAULT_WIDTH = 100  # when the output is not a terminal and COLUMNS is not set
TOP = 10  # rows of the "cost most" table
CLEAN_SHOWN = 3  # clean clusters shown as blocks (and named in the count line) without --verbose
RESOURCES_SHOWN = 6
ERRORS_SHOWN = 10
SKIPPED_SHOWN = 10
_STATUS_RANK = {"findings": 0, "incomplete": 1, "clean": 2}
_JUDGED_STATES = ("running", "pending", "planned")


# ---------------------------------------------------------------------------------------------- shared


def dollars(value: float) -> str:
    return f"${value:,.0f}"


def plural(count: int, word: str, many: str | None = None) -> str:
    """`1 training cluster`, `2 training clusters`, `3 info` (with many="info")."""
    return f"{count:,} {word if count == 1 else (many if many is not None else word + 's')}"


def penalty_line(p: Penalty) -> str:
    if not p.estimated:
        return f"not estimated: {p.reason}"
    if p.cannot_run or p.slowdown is None:
        line = f"cannot run: {p.reason}; +{p.extra_gpu_hours_per_day.high:,.0f} GPU-hours/day lost"
        if p.extra_dollars_per_day is not None:
            line += f", {dollars(p.extra_dollars_per_day.high)}/day"
        return line
    if p.slowdown.high < 1.005:
        return p.reason or "no slowdown (the fabric is fully used)"
    line = (
        f"{p.slowdown.low:.2f}x–{p.slowdown.high:.2f}x slower steps, "
        f"+{p.extra_gpu_hours_per_day.low:,.0f}–{p.extra_gpu_hours_per_day.high:,.0f} GPU-hours/day"
    )
    if p.extra_dollars_per_day is not None:
        line += f", {dollars(p.extra_dollars_per_day.low)}–{dollars(p.extra_dollars_per_day.high)}/day"
    return line


def slowdown_cell(p: Penalty) -> str:
    """The high end of the slowdown, for tables."""
    if not p.estimated:
        return "not estimated"
    if p.cannot_run or p.slowdown is None:
        return "cannot run"
    return "—" if p.slowdown.high < 1.005 else f"{p.slowdown.high:.2f}x"


def gpu_hours_cell(p: Penalty) -> str:
    if not p.estimated or p.extra_gpu_hours_per_day.high < 0.5:
        return "—"
    return f"{p.extra_gpu_hours_per_day.high:,.0f}"


def findings_by_cluster(report: Report) -> dict[str | None, list[Finding]]:
    groups: dict[str | None, list[Finding]] = {}
    for f in report.findings:
        groups.setdefault(f.cluster, []).append(f)
    return groups


def suppressed(finding: Finding) -> str | None:
    """Why a finding does not fail the gate though it is reported: its waiver, or the baseline that holds it."""
    if finding.waiver is not None:
        until = f" (until {finding.waiver.expires})" if finding.waiver.expires else ""
        return f"waived: {finding.waiver.reason}{until}"
    if finding.baseline == "existing":
        return "in the baseline: not new, not failing the gate"
    return None


def worst(findings: Iterable[Finding]) -> str | None:
    return max((f.severity for f in findings), key=SEVERITY_RANK.__getitem__, default=None)


def worst_cell(c: ClusterReport, findings: list[Finding]) -> str:
    """A cluster's "worst" column: the worst severity among findings that fail the gate. A cluster whose every
    finding is waived or in the baseline says so, rather than showing an error nobody is asked to act on."""
    gating = worst(f for f in findings if f.gates)
    if gating:
        return gating
    if findings:
        return "waived" if all(f.waiver for f in findings) else "accepted"  # waived or in the baseline
    return "incomplete" if c.status == "incomplete" else "—"


def ranked(report: Report) -> list[ClusterReport]:
    """Clusters worst first: most extra GPU-hours a day (high end), then worst severity, then findings before
    incomplete before clean, then id. The text and markdown reports share this order."""
    by_cluster = findings_by_cluster(report)

    def key(c: ClusterReport) -> tuple[float, int, int, str]:
        hours = c.penalty.extra_gpu_hours_per_day.high if c.penalty.estimated else 0.0
        severity = worst(f for f in by_cluster.get(c.id, []) if f.gates)
        return (-hours, -SEVERITY_RANK.get(severity or "", -1), _STATUS_RANK.get(c.status, 0), c.id)

    return sorted(report.clusters, key=key)


def needs_attention(c: ClusterReport) -> bool:
    return c.status != "clean" or c.findings > 0 or bool(c.not_judged)


def status_counts(report: Report) -> dict[str, int]:
    counts = {"clean": 0, "findings": 0, "incomplete": 0}
    for c in report.clusters:
        counts[c.status] = counts.get(c.status, 0) + 1
    return counts


def common_prefix(ids: Sequence[str]) -> str:
    """The longest prefix ending in ':' or '/' that every id shares and none is entirely ("aws:1111…:us-east-1:")."""
    if not ids:
        return ""
    first, last = min(ids), max(ids)
    size = next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), min(len(first), len(last)))
    prefix = first[: max(first.rfind(":", 0, size), first.rfind("/", 0, size)) + 1]
    return prefix if all(len(i) > len(prefix) for i in ids) else ""


def not_judged_groups(items: Sequence[NotJudged]) -> list[tuple[str, list[str], list[str]]]:
    """Not-judged entries grouped by reason: (reason, rules, resources concerned; empty = whole cluster)."""
    groups: dict[str, tuple[list[str], list[str]]] = {}
    for item in items:
        rules, resources = groups.setdefault(item.reason, ([], []))
        if item.rule not in rules:
            rules.append(item.rule)
        resources.extend(r for r in item.resources if r not in resources)
    return [(reason, rules, resources) for reason, (rules, resources) in groups.items()]


def terminal_width() -> int:
    """COLUMNS if set, else the terminal's width when stdout is one, else 100; never below 60."""
    width: int | None = None
    env = os.environ.get("COLUMNS", "").strip()
    if env:
        try:
            width = int(env)
        except ValueError:
            width = None
    if width is None and sys.stdout is not None and sys.stdout.isatty():
        try:
            width = os.get_terminal_size(sys.stdout.fileno()).columns
        except (OSError, ValueError):
            width = None
    return max(MIN_WIDTH, width or DEFAULT_WIDTH)


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


def wrap(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    lines = textwrap.wrap(
        text,
        width=width,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,  # ids, ARNs and paths stay whole (and copyable); they overflow instead
        break_on_hyphens=False,
    )
    return lines or [first.rstrip()]


def _shorten(value: str, room: int) -> str:
    if len(value) <= room:
        return value
    # The end of an id names the group (".../llm-prod"); its start is mostly the account and region.
    return "…" + value[len(value) - (room - 1) :]


# ---------------------------------------------------------------------------------------------- blocks


def _top_table(page: _Page, clusters: list[ClusterReport], by_cluster: dict[str | None, list[Finding]]) -> None:
    shown = [c for c in clusters if needs_attention(c)][:TOP]
    if not shown:
        return
    more = sum(1 for c in clusters if needs_attention(c)) - len(shown)
    prefix = common_prefix([c.id for c in clusters])
    rows = []
    for rank, c in enumerate(shown, 1):
        severity = worst_cell(c, by_cluster.get(c.id, []))
        rows.append(
            (
                str(rank),
                visible(c.id[len(prefix) :]),
                f"{len(c.nodes):,}",
                severity,
                slowdown_cell(c.penalty),
                gpu_hours_cell(c.penalty),
            )
        )
    heads = ("#", "cluster", "nodes", "worst", "slowdown", "GPU-h/day")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    fixed = 2 + sum(widths) - widths[1] + 2 * (len(heads) - 1)
    widths[1] = min(widths[1], max(len(heads[1]), page.width - fixed))
    page.para("Clusters that cost most (high end of each estimate)", "", "  ", style="bold")
    if prefix:
        page.para(f"every id below starts with {visible(prefix)}", "  ", "    ", style="dim")

    def row(cells: Sequence[str], severity: str | None = None) -> Text:
        line = Text("  ")
        for i, (cell, width) in enumerate(zip(cells, widths, strict=True)):
            if i:
                line.append("  ")
            if i == 1:
                line.append(_shorten(cell, width).ljust(width))
            elif i == 3:
                line.append(cell.ljust(width), style=STYLE.get(severity or "", ""))
            else:
                line.append(cell.rjust(width))
        line.rstrip()
        return line

    page.add(row(heads))
    for cells in rows:
        page.add(row(cells, cells[3]))
    if more:
        page.para(f"… and {plural(more, 'more cluster')} with findings or not fully judged, below.", "  ")


def _finding_blocks(page: _Page, findings: list[Finding], verbose: bool) -> None:
    """One block per rule in a cluster: the nodes it flags, the first message, the fix. A rule that flags
    every node of a 500-node cluster prints once, not 500 times (JSON keeps one finding per node)."""
    groups: dict[tuple[str, str | None], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.rule, suppressed(f)), []).append(f)  # waived ones apart, with their reason
    indent = " " * 10
    for rule_findings in groups.values():
        first = rule_findings[0]
        resources = [visible(r) for f in rule_findings for r in f.resources]
        if verbose or len(resources) <= RESOURCES_SHOWN:
            shown = ", ".join(resources)
        else:
            shown = ", ".join(resources[:RESOURCES_SHOWN]) + f" (+{len(resources) - RESOURCES_SHOWN} more)"
        page.styled(
            [
                ("  ", ""),
                (f"{first.severity:<7}", STYLE[first.severity]),
                (f" {visible(first.rule)} {visible(first.category)}: {visible(first.title)}", "bold"),
            ],
            indent,
        )
        page.para(f"on {shown}", indent)
        alike = f" (and {len(rule_findings) - 1} more alike)" if len(rule_findings) > 1 else ""
        page.para(visible(first.message) + alike, indent)
        why = suppressed(first)
        if why:
            page.styled([(indent, ""), (visible(why), "bold")], indent)
        fix = first.remediation.splitlines()[0] if first.remediation.strip() else ""
        if fix:
            page.styled([(indent, ""), ("fix:", "bold"), (" " + visible(fix), "")], indent)


def _not_judged(page: _Page, c: ClusterReport) -> None:
    for reason, rules, resources in not_judged_groups(c.not_judged):
        where = ""
        if resources:
            names = [visible(r) for r in resources]
            where = " on " + ", ".join(names[:RESOURCES_SHOWN])
            where += f" (+{len(names) - RESOURCES_SHOWN} more)" if len(names) > RESOURCES_SHOWN else ""
        page.styled(
            [
                ("  ", ""),
                ("not judged", STYLE["incomplete"]),
                (f" {', '.join(map(visible, rules))}{where}: ", ""),
                (visible(reason), ""),
            ],
            " " * 6,
        )


def _cluster_block(page: _Page, c: ClusterReport, findings: list[Finding], verbose: bool) -> None:
    severity = worst(f for f in findings if f.gates)
    if findings and not severity:  # every finding waived or in the baseline
        status, style = f"{plural(len(findings), 'finding')}, none failing the gate", "dim"
    elif findings:
        status, style = plural(len(findings), "finding"), STYLE[severity or "info"]
    elif c.status == "incomplete":
        status, style = "incomplete: not fully judged", STYLE["incomplete"]
    else:
        status, style = "clean", STYLE["clean"]
    if findings and not c.complete:  # findings, and a rule not judged: both hold
        status += "; not fully judged"
    page.blank()
    name = visible(c.id)
    if len(f"Cluster {name}  {status}") <= page.width:
        page.styled([("Cluster ", "bold"), (name, "bold"), ("  ", ""), (status, style)], "  ")
    else:  # the id alone may be wider than the line; the status is never split from its count
        page.styled([("Cluster ", "bold"), (name, "bold")], "  ")
        page.styled([("  ", ""), (status, style)], "  ")
    types = ", ".join(visible(t) for t in c.instance_types)
    page.para(
        f"{visible(c.grouped_by)}: {plural(len(c.nodes), 'node')} × {types}, {plural(c.gpus, 'accelerator')}", "  "
    )
    _finding_blocks(page, findings, verbose)
    _not_judged(page, c)
    caveat = " (from the rules that could be judged)" if c.not_judged and not findings else ""
    page.para(f"penalty ({visible(c.penalty.workload)}): {visible(penalty_line(c.penalty))}{caveat}", "  ", " " * 4)


def _clean_line(page: _Page, clean: list[ClusterReport]) -> None:
    names = ", ".join(visible(c.id) for c in clean[:CLEAN_SHOWN])
    page.blank()
    page.styled(
        [
            (plural(len(clean), "clean cluster"), STYLE["clean"]),
            (f": {names}, … (use --verbose to list them)", ""),
        ],
        "  ",
    )


def _skipped(page: _Page, report: Report, verbose: bool) -> None:
    skipped = report.skipped_clusters
    if not skipped:
        return
    page.blank()
    page.para("Skipped (not training clusters):", style="bold")
    shown = skipped if verbose else skipped[:SKIPPED_SHOWN]
    for s in shown:
        types = ", ".join(visible(t) for t in s.instance_types)
        detail = f" ({plural(len(s.nodes), 'node')} × {types})" if s.nodes else ""
        page.para(f"{visible(s.id)}{detail} — {visible(s.reason)}", "  ", " " * 4)
    if len(shown) < len(skipped):
        page.para(f"… and {len(skipped) - len(shown):,} more (use --verbose to list them)", "  ")


def _summary(page: _Page, report: Report) -> None:
    s = report.summary
    counts = status_counts(report)
    page.blank()
    judged = [plural(counts["findings"], "with findings", "with findings"), f"{counts['clean']:,} clean"]
    if counts["incomplete"]:
        judged.append(f"{counts['incomplete']:,} not fully judged")
    skipped = len(report.skipped_clusters) or s.skipped_clusters
    parts: list[tuple[str, str]] = [
        ("Summary: ", "bold"),
        (
            f"{plural(s.nodes, 'node')}; {plural(s.clusters, 'training cluster')} judged ({', '.join(judged)}); "
            f"{plural(s.nodes_not_in_reported_clusters, 'node')} "
            f"{'trains' if s.nodes_not_in_reported_clusters == 1 else 'train'} alone or "
            f"{'has' if s.nodes_not_in_reported_clusters == 1 else 'have'} no fabric to use",
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
    states = {k: v for k, v in s.nodes_by_state.items() if k not in _JUDGED_STATES and v}
    if states:
        listed = ", ".join(f"{n:,} {visible(state)}" for state, n in sorted(states.items()))
        page.para(f"Instances not judged: {listed} (only running and pending instances are judged).", "", "  ")
    if s.extra_gpu_hours_per_day.high > 0:
        waste = (
            f"Estimated waste: {s.extra_gpu_hours_per_day.low:,.0f}–{s.extra_gpu_hours_per_day.high:,.0f} "
            "extra GPU-hours per day of training"
        )
        if s.extra_dollars_per_day:
            waste += f", {dollars(s.extra_dollars_per_day.low)}–{dollars(s.extra_dollars_per_day.high)} per day"
        else:
            waste += " (pass --price-per-gpu-hour for dollars)"
        page.para(waste + ".", "", "  ")
    _cannot_pass(page, report)


def _cannot_pass(page: _Page, report: Report) -> None:
    """The summary's last words when the result cannot pass a gate: a cluster not fully judged, an incomplete run."""
    unjudged = sum(1 for c in report.clusters if not c.complete)
    if unjudged:
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
    if not report.complete:
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


# ---------------------------------------------------------------------------------------------- render


def render(report: Report, color: bool = False, verbose: bool = False, width: int | None = None) -> str:
    """The text report. `verbose` lists every clean cluster, skipped cluster, resource and collection error;
    `width` defaults to `terminal_width()` and is never below 60."""
    page = _Page(max(MIN_WIDTH, width) if width is not None else terminal_width())
    page.styled(
        [("fabriccheck ", "bold"), (f"{visible(report.tool.get('version', ''))} · {visible(report.source)}", "bold")],
        "  ",
    )
    page.para(
        f"workload assumed: {visible(report.workload.get('name', ''))} "
        f"({visible(report.workload.get('description', ''))})",
        "",
        "  ",
    )
    if report.gate is not None:
        page.para(gate_line(report.gate), "", "  ")
    if not report.complete:
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
    page.blank()
    _top_table(page, order, by_cluster)
    clean = [c for c in order if not needs_attention(c)]
    collapse = not verbose and len(clean) > CLEAN_SHOWN
    for c in order:
        if collapse and not needs_attention(c):
            continue
        _cluster_block(page, c, by_cluster.get(c.id, []), verbose)
    if collapse:
        _clean_line(page, clean)
    templates = by_cluster.get(None, [])
    if templates:
        page.blank()
        page.para("Templates (judged before any node launches)", style="bold")
        _finding_blocks(page, templates, verbose)
    _skipped(page, report, verbose)
    _summary(page, report)
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
