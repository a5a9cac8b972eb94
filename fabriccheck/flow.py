"""The flow from an inventory to a report: clusters -> rules -> findings -> penalty -> Report.

Every command (live, dump, demo, saved inventory) ends here, so they judge alike.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from pydantic import BaseModel, ValidationError

from fabriccheck import __version__, engine, penalty
from fabriccheck.clusters import Cluster, build_clusters
from fabriccheck.engine import SEVERITY_RANK, Finding
from fabriccheck.errors import FabricCheckError
from fabriccheck.facts import FactBuilder
from fabriccheck.model import SCHEMA_VERSION, CollectionError, Inventory

REPORT_SCHEMA_VERSION = 1


@dataclass
class Options:
    workload: str = penalty.DEFAULT_WORKLOAD
    price_per_gpu_hour: float | None = None
    cluster_tag: str | None = None
    rules_dirs: list[Path] = field(default_factory=list)
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)


class ClusterReport(BaseModel):
    id: str
    provider: str
    grouped_by: str
    nodes: list[str]
    instance_types: list[str]
    gpus: int
    findings: int
    penalty: penalty.Penalty


class Summary(BaseModel):
    nodes: int
    clusters: int  # clusters reported: multi-node clusters with a fabric, or with a finding
    nodes_not_in_reported_clusters: int  # single nodes and clusters without a fabric to use
    findings: dict[str, int]
    by_category: dict[str, int]
    by_rule: dict[str, int]
    extra_gpu_hours_per_day: penalty.Range
    extra_dollars_per_day: penalty.Range | None
    unknown_instance_types: list[str]


class Report(BaseModel):
    schema_version: int = REPORT_SCHEMA_VERSION
    tool: dict[str, str]
    source: str
    generated_at: str
    complete: bool
    errors: list[CollectionError]
    workload: dict[str, str]
    rules: list[str]
    findings: list[Finding]
    clusters: list[ClusterReport]
    summary: Summary
    notes: list[str]

    def worst_severity(self) -> str | None:
        return max((f.severity for f in self.findings), key=SEVERITY_RANK.__getitem__, default=None)


def workload_named(name: str) -> penalty.Workload:
    try:
        return penalty.WORKLOADS[name]
    except KeyError:
        raise FabricCheckError(
            f"--workload {name}: unknown workload (choose from {', '.join(sorted(penalty.WORKLOADS))})"
        ) from None


def run(inventory: Inventory, options: Options) -> Report:
    workload = workload_named(options.workload)
    rules = engine.load_rules(options.rules_dirs) if options.rules_dirs else list(engine.builtin_rules())
    rules = engine.select_rules(rules, options.select, options.ignore)
    clusters = build_clusters(inventory, options.cluster_tag)
    facts = FactBuilder(inventory)
    findings = engine.evaluate(rules, inventory, clusters, facts)

    by_cluster: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.cluster:
            by_cluster.setdefault(finding.cluster, []).append(finding)
    reported: list[ClusterReport] = []
    judged_nodes = 0
    for cluster in clusters:
        cluster_findings = by_cluster.get(cluster.id, [])
        if not cluster_findings and not _fabric_cluster(facts, cluster):
            continue
        judged_nodes += cluster.size
        reported.append(_cluster_report(cluster, cluster_findings, inventory, workload, options, facts))

    unknown = sorted({n.instance_type for n in inventory.nodes if facts.capability(n.instance_type) is None})
    return Report(
        tool={"name": "fabriccheck", "version": __version__},
        source=inventory.source,
        generated_at=dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        complete=inventory.complete,
        errors=inventory.errors,
        workload={"name": workload.name, "description": workload.description, "source": workload.source},
        rules=[r.id for r in rules],
        findings=findings,
        clusters=reported,
        summary=_summary(inventory, reported, findings, judged_nodes, unknown),
        notes=_notes(inventory, unknown),
    )


def _fabric_cluster(facts: FactBuilder, cluster: Cluster) -> bool:
    return bool(facts.cluster(cluster)["fabric_cluster"])


def _cluster_report(
    cluster: Cluster,
    findings: list[Finding],
    inventory: Inventory,
    workload: penalty.Workload,
    options: Options,
    facts: FactBuilder,
) -> ClusterReport:
    return ClusterReport(
        id=cluster.id,
        provider=cluster.provider,
        grouped_by=cluster.signal,
        nodes=[n.id for n in cluster.nodes],
        instance_types=sorted({n.instance_type for n in cluster.nodes}),
        gpus=int(facts.cluster(cluster)["gpus"]),
        findings=len(findings),
        penalty=penalty.estimate(cluster, findings, inventory, workload, options.price_per_gpu_hour, facts),
    )


def _summary(
    inventory: Inventory,
    clusters: list[ClusterReport],
    findings: list[Finding],
    judged_nodes: int,
    unknown: list[str],
) -> Summary:
    estimated = [c.penalty for c in clusters if c.penalty.estimated]
    dollars = [p.extra_dollars_per_day for p in estimated if p.extra_dollars_per_day is not None]
    return Summary(
        nodes=len(inventory.nodes),
        clusters=len(clusters),
        nodes_not_in_reported_clusters=len(inventory.nodes) - judged_nodes,
        findings={s: sum(1 for f in findings if f.severity == s) for s in ("error", "warning", "info")},
        by_category=dict(sorted(Counter(f.category for f in findings).items())),
        by_rule=dict(sorted(Counter(f.rule for f in findings).items())),
        extra_gpu_hours_per_day=penalty.Range(
            low=sum(p.extra_gpu_hours_per_day.low for p in estimated),
            high=sum(p.extra_gpu_hours_per_day.high for p in estimated),
        ),
        extra_dollars_per_day=penalty.Range(low=sum(d.low for d in dollars), high=sum(d.high for d in dollars))
        if dollars
        else None,
        unknown_instance_types=unknown,
    )


def _notes(inventory: Inventory, unknown: list[str]) -> list[str]:
    notes = []
    if unknown:
        notes.append(
            "fabric capability unknown for instance type(s) "
            + ", ".join(unknown)
            + ": not in the live answer or the catalog, so their nodes were not judged for fabric"
        )
    regions = sorted({c.split(":", 1)[0] for c in inventory.collected})
    live_types = any(c.endswith(":instance_types") for c in inventory.collected)
    if inventory.nodes and not live_types:
        notes.append("instance-type capabilities come from the shipped catalog (no DescribeInstanceTypes answer)")
    if regions and not any(c.endswith(":topology") for c in inventory.collected):
        notes.append("EC2 topology not collected (aws --topology, or describe-instance-topology.json in a dump)")
    return notes


# ---------------------------------------------------------------------------------------------- snapshots


def save_inventory(inventory: Inventory, path: Path) -> None:
    try:
        path.write_bytes(orjson.dumps(inventory.model_dump(mode="json"), option=orjson.OPT_INDENT_2))
    except OSError as exc:
        raise FabricCheckError(f"--save-inventory {path}: cannot write ({exc.strerror})") from None


def load_inventory(path: Path) -> Inventory:
    try:
        data = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise FabricCheckError(f"{path}: cannot read ({exc.strerror})") from None
    except orjson.JSONDecodeError as exc:
        raise FabricCheckError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise FabricCheckError(f"{path}: not a saved inventory (expected a JSON object)")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise FabricCheckError(
            f"{path}: field schema_version: {version!r} is not a version this fabriccheck reads ({SCHEMA_VERSION})"
        )
    try:
        inventory = Inventory.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise FabricCheckError(f"{path}: field {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    inventory.source = f"snapshot {path} (of {inventory.source})"
    return inventory
