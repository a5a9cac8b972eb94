"""JSON (the documented contract, schema_version 1) and SARIF 2.1.0."""

from __future__ import annotations

from typing import Any

import orjson

from fabriccheck.baseline import fingerprint
from fabriccheck.findings import Finding
from fabriccheck.penalty import Penalty
from fabriccheck.report import Report, unjudged_rules
from fabriccheck.rulebook import RuleMeta, builtin_evidence_rules, builtin_rules
from fabriccheck.version import __version__

SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def render_json(report: Report, color: bool = False) -> str:
    return orjson.dumps(report.model_dump(mode="json"), option=orjson.OPT_INDENT_2).decode() + "\n"


def render_sarif(report: Report, color: bool = False) -> str:
    known: dict[str, RuleMeta] = {r.id: r for r in [*builtin_rules(), *builtin_evidence_rules()]}
    used = sorted({f.rule for f in report.findings} | set(report.rules))
    rules: list[dict[str, Any]] = []
    for rule_id in used:
        rule = known.get(rule_id)
        example = next((f for f in report.findings if f.rule == rule_id), None)
        title = rule.title if rule else (example.title if example else rule_id)
        rules.append(
            {
                "id": rule_id,
                "name": title,
                "shortDescription": {"text": title},
                "fullDescription": {"text": rule.remediation.summary.strip() if rule else title},
                **_help(
                    rule_id,
                    rule.remediation.as_text() if rule else (example.remediation if example else title),
                    rule.references if rule else (example.references if example else []),
                ),
                "defaultConfiguration": {"level": SARIF_LEVEL[rule.severity] if rule else "warning"},
                "properties": {"category": rule.category if rule else (example.category if example else "")},
            }
        )
    index = {r["id"]: i for i, r in enumerate(rules)}
    costs = {c.id: _cost(c.penalty) for c in report.clusters if c.evidence is None}  # a job measured is not priced
    files = {c.id: c.evidence.file for c in report.clusters if c.evidence is not None}
    results = [
        {
            "ruleId": f.rule,
            "ruleIndex": index[f.rule],
            "level": SARIF_LEVEL[f.severity],
            "message": {"text": f.message},
            "locations": [_location(report, f.cluster, r, files.get(f.cluster or "")) for r in f.resources],
            "properties": {
                "category": f.category,
                "cluster": f.cluster,
                "remediation": f.remediation,
                "confidence": f.confidence,
                **({"cluster_penalty": costs[f.cluster]} if f.cluster in costs else {}),
            },
            **tracking(f),
        }
        for f in report.findings
    ]
    notifications = [
        {
            "level": "error",
            "message": {"text": f"{e.call} ({e.region}): {e.code}: {e.message}"},
            "descriptor": {"id": e.code},  # what kind of failure: AccessDenied, usage, unreadable-input, ...
        }
        for e in report.errors
    ]
    s = report.summary
    totals = {
        "gpu_hours_per_day": s.gpu_hours_per_day,
        "lost_gpu_hours_per_day": s.lost_gpu_hours_per_day.model_dump(),
        "clusters_cannot_run": s.clusters_cannot_run,
        "possible_findings": s.possible_findings,
    }
    if s.possible_lost_gpu_hours_per_day is not None:
        totals["possible_lost_gpu_hours_per_day"] = s.possible_lost_gpu_hours_per_day.model_dump()
    # A cluster with a selected rule not judged (findings or not) keeps the run from passing, as an error does.
    notifications += [
        {"level": "error", "message": {"text": f"{c.id}: not fully judged: {n.rule}: {n.reason}"}}
        for c in report.clusters
        if not c.complete
        for n in unjudged_rules(c)
    ]
    sarif = sarif_document(rules, results, report.fully_judged(), notifications, totals)
    if report.gate is not None:  # the gate the results were judged under, each setting with where it came from
        sarif["runs"][0].setdefault("properties", {})["gate"] = report.gate.model_dump(mode="json")
    return orjson.dumps(sarif, option=orjson.OPT_INDENT_2).decode() + "\n"


def _cost(p: Penalty) -> dict[str, Any]:
    """What the finding's cluster loses (penalty.Penalty's figures; the possible ones apart), for a result's
    properties: code scanning shows no report, so each result says what its cluster costs."""
    return p.model_dump(
        mode="json",
        include={
            "workload",
            "estimated",
            "reason",
            "cannot_run",
            "slowdown",
            "gpu_hours_per_day",
            "lost_share",
            "lost_gpu_hours_per_day",
            "lost_dollars_per_day",
        },
    )


def _help(rule_id: str, fix: str, references: list[str]) -> dict[str, Any]:
    """A rule's help: the fix in text and markdown, its references, and a help URI (its first reference) when it
    has one (a rule from --rules-dir need not)."""
    links = "".join(f"\n- <{url}>" for url in references)
    out: dict[str, Any] = {
        "help": {
            "text": fix + ("\n\nReferences:\n" + "\n".join(references) if references else ""),
            "markdown": f"**Fix ({rule_id})**\n\n{fix}" + (f"\n\n**References**\n{links}" if references else ""),
        }
    }
    if references:
        out["helpUri"] = references[0]
    return out


def tracking(f: Finding) -> dict[str, Any]:
    """What lets code scanning follow a finding across runs: a fingerprint of rule + resource identity (never the
    message), the waiver that suppresses it, and whether a --baseline holds it."""
    out: dict[str, Any] = {"partialFingerprints": {"fabriccheck/v1": f.fingerprint or fingerprint(f)}}
    if f.waiver is not None:
        until = f" (until {f.waiver.expires})" if f.waiver.expires else ""
        out["suppressions"] = [
            {
                "kind": "external",
                "status": "accepted",
                "justification": f"{f.waiver.reason}{until}",
                "properties": {"source": f.waiver.source},
            }
        ]
    if f.baseline is not None:
        out["baselineState"] = "unchanged" if f.baseline == "existing" else "new"
    return out


def _location(report: Report, cluster: str | None, resource: str, evidence_file: str | None = None) -> dict[str, Any]:
    """Live resources have no file: the cloud's own id stands in as the location (as posture tools do). A planned
    resource is located at its block's file and line when known, and named by its Terraform address and, once it
    exists, its cloud id. A process or run of an evidence job is located in the evidence file."""
    source = report.locations.get(resource)
    logical = [
        {
            "name": resource,
            "kind": "resource",
            "fullyQualifiedName": f"{cluster}/{resource}" if cluster else resource,
        }
    ]
    if source is None:
        uri = evidence_file if evidence_file is not None else resource
        return {"physicalLocation": {"artifactLocation": {"uri": uri}}, "logicalLocations": logical}
    logical = [{"name": source.address, "kind": "resource", "fullyQualifiedName": source.address}]
    if source.cloud_id:
        logical.append({"name": source.cloud_id, "kind": "resource", "fullyQualifiedName": source.cloud_id})
    physical: dict[str, Any] = {"artifactLocation": {"uri": source.file or source.address}}
    if source.file and source.line:
        physical["region"] = {"startLine": source.line}
    return {"physicalLocation": physical, "logicalLocations": logical}


def sarif_document(
    rules: list[dict[str, Any]],
    results: list[dict[str, Any]],
    complete: bool,
    notifications: list[dict[str, Any]],
    properties: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One SARIF 2.1.0 run of fabriccheck, as code scanning reads it (audits and evidence alike); `properties`,
    the run's own (an audit's cost totals)."""
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "fabriccheck", "version": __version__, "rules": rules}},
        "invocations": [{"executionSuccessful": complete, "toolExecutionNotifications": notifications}],
        "results": results,
    }
    if properties:
        run["properties"] = properties
    return {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [run]}
