"""What every report for people shows in the same way: clusters ranked worst first, their findings grouped,
why a finding does not gate, short names, status counts and not-judged groups. The text, markdown and JUnit
reports read these, so a cluster ranks and reads alike in each."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fabriccheck.findings import SEVERITY_RANK, Finding
from fabriccheck.report import ClusterReport, NotJudged, Report, Summary
from fabriccheck.reports.names import DisplayName, display_names
from fabriccheck.reports.wording import lost_hours, plural

_STATUS_RANK = {"findings": 0, "incomplete": 1, "clean": 2}


def findings_by_cluster(report: Report) -> dict[str | None, list[Finding]]:
    groups: dict[str | None, list[Finding]] = {}
    for f in report.findings:
        groups.setdefault(f.cluster, []).append(f)
    return groups


def rule_groups(findings: Iterable[Finding]) -> dict[tuple[str, str | None], list[Finding]]:
    """A cluster's findings by rule, the ones that do not gate apart with their reason (`suppressed`), in order:
    a rule that flags every node of a 500-node cluster reads once, not 500 times."""
    groups: dict[tuple[str, str | None], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.rule, suppressed(f)), []).append(f)
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
    """Clusters worst first: those that cannot run, then most GPU-hours lost a day (high end, to the hour; the
    findings marked possible do not count), then worst severity, then findings before incomplete before clean,
    then id. The text and markdown reports share this order."""
    by_cluster = findings_by_cluster(report)

    def key(c: ClusterReport) -> tuple[bool, int, int, int, str]:
        severity = worst(f for f in by_cluster.get(c.id, []) if f.gates)
        return (
            not c.penalty.cannot_run,
            -round(lost_hours(c.penalty)),
            -SEVERITY_RANK.get(severity or "", -1),
            _STATUS_RANK.get(c.status, 0),
            c.id,
        )

    return sorted(report.clusters, key=key)


def cluster_names(report: Report) -> dict[str, DisplayName]:
    """Short names for the report's clusters and skipped clusters, unique within it (names.py)."""
    return display_names(
        [(c.id, c.nodes) for c in report.clusters] + [(s.id, s.nodes) for s in report.skipped_clusters]
    )


def needs_attention(c: ClusterReport) -> bool:
    return c.status != "clean" or c.findings > 0 or bool(c.not_judged)


def status_counts(report: Report) -> dict[str, int]:
    counts = {"clean": 0, "findings": 0, "incomplete": 0}
    for c in report.clusters:
        counts[c.status] = counts.get(c.status, 0) + 1
    return counts


def not_judged_groups(items: Sequence[NotJudged]) -> list[tuple[str, list[str], list[str]]]:
    """Not-judged entries grouped by reason: (reason, rules, resources concerned; empty = whole cluster)."""
    groups: dict[str, tuple[list[str], list[str]]] = {}
    for item in items:
        rules, resources = groups.setdefault(item.reason, ([], []))
        if item.rule not in rules:
            rules.append(item.rule)
        resources.extend(r for r in item.resources if r not in resources)
    return [(reason, rules, resources) for reason, (rules, resources) in groups.items()]


def cluster_status(c: ClusterReport, findings: list[Finding]) -> tuple[str, str]:
    """A cluster's status in words, and its kind (a severity, `accepted`: every finding waived or in the baseline,
    `incomplete`, `clean`) for a renderer's style. Findings and a rule not judged: both are said."""
    severity = worst(f for f in findings if f.gates)
    if findings and not severity:
        status, kind = f"{plural(len(findings), 'finding')}, none failing the gate", "accepted"
    elif findings:
        status, kind = plural(len(findings), "finding"), severity or "info"
    elif c.status == "incomplete":
        status, kind = "incomplete: not fully judged", "incomplete"
    else:
        status, kind = "clean", "clean"
    if findings and not c.complete:
        status += "; not fully judged"
    return status, kind


# Instances in these states are judged; others (stopped, deallocated, terminated) are counted apart.
JUDGED_STATES = ("running", "pending", "planned")


def unjudged_states(summary: Summary) -> dict[str, int]:
    """Instances not judged, by state (only running and pending instances are; a plan's are planned)."""
    return {k: v for k, v in summary.nodes_by_state.items() if k not in JUDGED_STATES and v}
