"""`fabriccheck merge A.json B.json ...`: one report from the JSON reports of jobs run separately.

A platform team that audits one account (subscription, project) per CI job gets one report per job; this
puts them together as if one run had seen the whole estate. The merged report is complete only if every part
is, so a gate on it is green only if every part could see everything. Parts must be JSON reports of the same
schema version, judged under the same workload (their penalties add up), and must not overlap: a cluster
reported by two parts would be counted twice.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path

from fabriccheck.errors import FabricCheckError
from fabriccheck.findings import sort_findings
from fabriccheck.gate import carried
from fabriccheck.report import Report, Summary, join_cloud_instances, load_report, tally
from fabriccheck.version import __version__


def merge_files(paths: list[Path]) -> Report:
    if not paths:
        raise FabricCheckError("merge: name the JSON reports to merge (fabriccheck merge A.json B.json ...)")
    seen: dict[Path, Path] = {}
    for path in paths:
        real = path.resolve()
        if real in seen:
            raise FabricCheckError(f"merge: {path} is named twice (as {seen[real]}); each report counts once")
        seen[real] = path
    return merge([(path, load_report(path)) for path in paths])


def merge(parts: list[tuple[Path, Report]]) -> Report:
    # An evidence report (nccl-log, nccl-tests) prices nothing, so it assumed no workload: the priced parts must
    # agree on theirs. Its job is listed beside the other parts' clusters, joined to none of them.
    priced = [(path, report) for path, report in parts if report.evidence is None] or parts
    first_path, first = priced[0]
    owner: dict[str, Path] = {}
    for path, report in parts:
        if report.evidence is None and report.workload.get("name") != first.workload.get("name"):
            raise FabricCheckError(
                f"merge: {path} assumed workload {report.workload.get('name')}, {first_path} assumed "
                f"{first.workload.get('name')}; their penalties do not add up (run both with the same --workload)"
            )
        for cluster_id in [c.id for c in report.clusters] + [c.id for c in report.skipped_clusters]:
            if cluster_id in owner and owner[cluster_id] != path:
                raise FabricCheckError(
                    f"merge: cluster {cluster_id} is in both {owner[cluster_id]} and {path}; merge reports of "
                    "separate accounts, subscriptions or projects"
                )
            owner[cluster_id] = path
    reports = [r for _, r in parts]
    findings = sort_findings([f for r in reports for f in r.findings])
    clusters, joined = join_cloud_instances([c for r in reports for c in r.clusters])
    skipped = [c for r in reports for c in r.skipped_clusters]
    nodes_by_state: Counter[str] = Counter()
    for report in reports:
        nodes_by_state.update(report.summary.nodes_by_state)
    summary = Summary(
        nodes=sum(r.summary.nodes for r in reports),
        nodes_not_in_reported_clusters=sum(r.summary.nodes_not_in_reported_clusters for r in reports),
        unknown_instance_types=sorted({t for r in reports for t in r.summary.unknown_instance_types}),
        nodes_by_state=dict(sorted(nodes_by_state.items())),
        scopes=sum(r.summary.scopes for r in reports),
        scopes_incomplete=sum(r.summary.scopes_incomplete for r in reports),
        api_calls=sum(r.summary.api_calls for r in reports),
        retries=sum(r.summary.retries for r in reports),
        **tally(findings, clusters, skipped),
    )
    calls = [r.api_calls for r in reports if r.api_calls is not None]
    return Report(
        tool={"name": "fabriccheck", "version": __version__},
        source="merge of " + "; ".join(f"{path} ({report.source})" for path, report in parts),
        generated_at=dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        complete=all(r.complete for r in reports),
        errors=[e for r in reports for e in r.errors],
        workload=first.workload,
        rules=sorted({rule for r in reports for rule in r.rules}),
        findings=findings,
        clusters=clusters,
        skipped_clusters=skipped,
        nodes_not_reported=[n for r in reports for n in r.nodes_not_reported],
        summary=summary,
        notes=list(dict.fromkeys([*(note for r in reports for note in r.notes), *joined])),
        # What each part's waivers did, its planned resources' locations and its API calls carry over; the parts
        # ran side by side, so the merged duration is the longest part's.
        waivers=[w for r in reports for w in r.waivers],
        scopes=[s for r in reports for s in r.scopes],
        scanned=sorted({scope for r in reports for scope in r.scanned}),
        locations={k: v for r in reports for k, v in r.locations.items()},
        api_calls=sum(calls) if calls else None,
        duration_seconds=max((r.duration_seconds for r in reports if r.duration_seconds is not None), default=None),
        gate=carried([(str(path), report.gate) for path, report in parts]),
        # Every part judged the same kind of evidence: so did the merge; else it is an audit with jobs beside it.
        evidence=first.evidence if all(r.evidence == first.evidence for r in reports) else None,
    )
