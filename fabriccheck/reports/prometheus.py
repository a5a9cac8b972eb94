"""Prometheus metrics for node_exporter's textfile collector (`--output DIR/fabriccheck.prom`) and for a
Pushgateway (`--pushgateway URL`): one registry, built once, for both.

A scheduled audit writes this file; node_exporter serves it; alerts key on the labels. The file is written
atomically (`--output` always is: outputs.write_atomic), so the collector never reads half a scrape.
Waived findings and those a baseline holds are counted under their own `status`, so an alert on
`status="open"` stays quiet about accepted exceptions while a dashboard still shows them.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter

from prometheus_client import CollectorRegistry, Gauge, generate_latest

from fabriccheck.findings import Finding
from fabriccheck.losses import added_by_possible
from fabriccheck.report import Report
from fabriccheck.reports.safe import visible


def finding_status(finding: Finding) -> str:
    if finding.waiver is not None:
        return "waived"
    if finding.baseline == "existing":
        return "baselined"
    return "open"


def _labels(*values: str) -> tuple[str, ...]:
    """Label values with every control character written out (`\\x1b`, `\\r`): the exposition format escapes only
    backslash, quote and newline, so an ESC, a carriage return or a NUL in a cluster id would reach whatever
    shows the file (and some parsers stop at a NUL)."""
    return tuple(map(visible, values))


def _cost(report: Report, registry: CollectorRegistry) -> None:
    """Per estimated cluster: what it is paid for and what it loses (penalty.Penalty), by bound of the range; what
    its findings marked possible would add on top, apart."""
    labels = ["provider", "account", "cluster"]

    def gauge(name: str, doc: str, bound: bool = True) -> Gauge:
        return Gauge(name, doc, labels + (["bound"] if bound else []), registry=registry)

    paid = gauge(
        "fabriccheck_cluster_gpu_hours_per_day", "The cluster's GPUs x 24: what its figures are out of.", False
    )
    cannot = gauge("fabriccheck_cluster_cannot_run", "1 when the cluster's peers cannot reach each other.", False)
    share = gauge("fabriccheck_lost_share", "Share of each GPU-hour lost to the findings: 1 - 1/slowdown (low, high).")
    hours = gauge("fabriccheck_lost_gpu_hours_per_day", "GPU-hours a day lost, never more than the cluster's own.")
    money = gauge("fabriccheck_lost_dollars_per_day", "Dollars a day lost (with --price-per-gpu-hour).")
    possible = gauge(
        "fabriccheck_possible_lost_gpu_hours_per_day",
        "GPU-hours a day more that findings marked possible (their rules may be wrong) would lose if they hold.",
    )
    for cluster in report.clusters:
        p, key = cluster.penalty, _labels(cluster.provider, cluster.account, cluster.id)
        if not p.estimated or p.lost_share is None or p.lost_gpu_hours_per_day is None:
            continue
        paid.labels(*key).set(p.gpu_hours_per_day or 0.0)
        cannot.labels(*key).set(1 if p.cannot_run else 0)
        added = added_by_possible(p)
        for bound in ("low", "high"):
            share.labels(*key, bound).set(getattr(p.lost_share, bound))
            hours.labels(*key, bound).set(getattr(p.lost_gpu_hours_per_day, bound))
            if p.lost_dollars_per_day is not None:
                money.labels(*key, bound).set(getattr(p.lost_dollars_per_day, bound))
            if added is not None:
                possible.labels(*key, bound).set(getattr(added[0], bound))


def _busbw(report: Report, registry: CollectorRegistry) -> None:
    """nccl-tests' bus bandwidth at each judged message size, measured and expected of the fabric, by job and run:
    what a dashboard plots against the fabric (only in an nccl-tests report that compared a fabric)."""
    rows = [
        (c.id, run, size) for c in report.clusters if c.evidence for run in c.evidence.runs for size in run.comparisons
    ]
    if not rows:
        return
    busbw = Gauge(
        "fabriccheck_nccl_busbw_gbytes_per_s",
        "nccl-tests bus bandwidth (GB/s) at a message size: measured, and expected of a healthy fabric (figure).",
        ["cluster", "run", "op", "bytes", "figure"],
        registry=registry,
    )
    for cluster, run, size in rows:
        key = _labels(cluster, str(run.run), run.op or "", str(size.bytes))
        busbw.labels(*key, "measured").set(size.busbw_gbytes_per_s)
        busbw.labels(*key, "expected").set(size.expected_busbw_gbytes_per_s)


def render(report: Report, color: bool = False) -> str:
    """The textfile: the metrics of `registry_of(report)` in Prometheus' text exposition format."""
    return generate_latest(registry_of(report)).decode()


def registry_of(report: Report) -> CollectorRegistry:
    """The report's metrics, built once for both ways out: the textfile (render) and a Pushgateway push
    (fabriccheck.pushgateway). Their names and labels are a contract (docs/scheduled-audit.md lists them)."""
    registry = CollectorRegistry()
    findings = Gauge(
        "fabriccheck_findings",
        "Findings of the last audit, by rule, severity, category, account and cluster (status: open, waived, "
        "baselined; only open ones fail the gate).",
        ["rule", "severity", "category", "provider", "account", "cluster", "status"],
        registry=registry,
    )
    counts = Counter(
        _labels(f.rule, f.severity, f.category, f.provider, f.account, f.cluster or "", finding_status(f))
        for f in report.findings
    )
    for labels, count in sorted(counts.items()):
        findings.labels(*labels).set(count)

    _cost(report, registry)
    _busbw(report, registry)
    clusters = Gauge("fabriccheck_clusters", "Training clusters judged, by status.", ["status"], registry=registry)
    for status, count in sorted(report.summary.clusters_by_status.items()):
        clusters.labels(status).set(count)

    Gauge(
        "fabriccheck_scan_complete",
        "1 when every fact was collected and every cluster judged, 0 when the audit is incomplete (it cannot pass "
        "a gate).",
        registry=registry,
    ).set(1 if report.complete else 0)
    Gauge(
        "fabriccheck_collection_errors", "Calls that failed (denied, throttled, unreachable).", registry=registry
    ).set(len(report.errors))
    if report.duration_seconds is not None:
        Gauge(
            "fabriccheck_scan_duration_seconds", "How long the audit took, collection included.", registry=registry
        ).set(report.duration_seconds)
    if report.api_calls is not None:
        Gauge("fabriccheck_api_calls", "Cloud API requests the audit sent.", registry=registry).set(report.api_calls)
    Gauge(
        "fabriccheck_last_run_timestamp_seconds", "When the audit's report was made (Unix time).", registry=registry
    ).set(dt.datetime.fromisoformat(report.generated_at).timestamp())
    if report.waivers:
        waivers = Gauge(
            "fabriccheck_waivers", "Waivers by status (active, expired, stale, not-run).", ["status"], registry=registry
        )
        for status, count in sorted(Counter(w.status for w in report.waivers).items()):
            waivers.labels(status).set(count)
    return registry
