"""The report: what one run found, the schema every renderer, merge, waiver and baseline reads.

Clusters with their status and penalty, skipped clusters, the summary's counts and cost figures, and the gate
the findings were judged under. Nothing here judges (flow.py fills it in); renderers import this module and
findings.py, never the judge or the flow.
"""

from __future__ import annotations

import reprlib
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError, model_validator

from fabriccheck import config, losses, penalty
from fabriccheck.baseline import BaselineSummary
from fabriccheck.errors import STDIN_NAME, FabricCheckError
from fabriccheck.findings import SEVERITY_RANK, Finding
from fabriccheck.jobs import EvidenceKind, JobEvidence
from fabriccheck.model import CollectionError, NetworkPath, ScopeStatus, SourceLocation
from fabriccheck.penalty import Range
from fabriccheck.provider import declared
from fabriccheck.waivers import WaiverStatus

REPORT_SCHEMA_VERSION = 1
DESELECTED = "deselected (--select / --ignore)"


# ---------------------------------------------------------------------------------------------- the trend
# What changed since an earlier report (--previous; trend.py fills it in, `fabriccheck diff` prints it).


class TrendFinding(BaseModel):
    """A finding as the trend names it: enough to say what it is and where, without its message."""

    fingerprint: str
    rule: str
    severity: str
    category: str
    title: str
    provider: str
    account: str
    cluster: str | None
    resources: list[str]
    gates: bool = True  # not waived and not in a baseline (in the report that has it)


class Change(BaseModel):
    """A figure in the earlier report and now (low and high bounds), and now minus then at each bound, put low to
    high."""

    previous: Range | None
    current: Range | None
    change: Range


class ClusterChange(BaseModel):
    id: str
    lost_gpu_hours_per_day: Change


class Trend(BaseModel):
    previous: str  # the earlier report's file
    previous_generated_at: str
    new: list[TrendFinding]
    fixed: list[TrendFinding]
    unchanged: list[TrendFinding]
    lost_gpu_hours_per_day: Change
    lost_dollars_per_day: Change | None  # when both reports were priced
    clusters: list[ClusterChange]  # clusters whose lost GPU-hours changed, most changed first
    notes: list[str] = []


class NotJudged(BaseModel):
    """A rule that could not be evaluated on a cluster (or some of its nodes), and why."""

    rule: str
    reason: str  # "security groups not collected for 111122223333 us-east-1", "deselected", ...
    resources: list[str] = []  # the nodes concerned; empty means the whole cluster


class CloudInstance(BaseModel):
    """A Kubernetes node as its cloud names it (from spec.providerID), or a Slurm node as the instance it was joined
    to: what joins a k8s or Slurm report to a cloud report of the same estate in `fabriccheck merge`."""

    node: str  # the Kubernetes node, or the Slurm node
    cloud: str  # aws | gcp | azure
    # As the cloud report names its nodes: the EC2 instance id, the GCE instance's name, the Azure VM's resource id.
    instance: str
    account: str | None = None  # the GCP project or Azure subscription it is in (an AWS providerID names none)
    pods: list[str]  # the cluster's pods on it (ids in its nodes); for a Slurm node, the node itself


class ClusterReport(BaseModel):
    id: str
    provider: str
    account: str
    grouped_by: str  # what grouped its nodes, in words (a signal's label): for people, nothing reads it
    # The path its nodes' NCCL sockets take, as its grouping signal declares it (cloud.TagSignal.network_path): what
    # the penalty priced. None: a report written before it was recorded.
    network_path: NetworkPath | None = None
    nodes: list[str]
    instance_types: list[str]
    # Nodes whose instance type is unknown (a Slurm node joined to no cloud instance, whose InstanceType Slurm does
    # not set): counted in nodes, not in instance_types or gpus.
    untyped_nodes: int = 0
    gpus: int
    findings: int
    # clean: every applicable selected rule was judged on collected facts and none fired; findings: at least
    # one finding; incomplete: no finding, but some rule could not be judged (see not_judged).
    status: Literal["clean", "findings", "incomplete"]
    # Every selected applicable rule was judged (deselected ones do not count). Apart from status: a cluster
    # with findings may still have a rule that could not be judged, and such a run never passes a gate.
    complete: bool = True
    not_judged: list[NotJudged] = []
    penalty: penalty.Penalty
    # Provider k8s: the cloud instances the workload's scheduled pods run on (a pending pod has none yet); provider
    # slurm: the instances its nodes were joined to (a powered-down node joined by its queue has none).
    cloud_instances: list[CloudInstance] = []
    # Set by `merge` (and a demo run) on a k8s or Slurm cluster: the clusters of the merged cloud reports those
    # instances belong to.
    cloud_clusters: list[str] = []
    # Set for the job an evidence file shows (nccl-log, nccl-tests): what the file says of it. Such a cluster is
    # measured, not priced (its penalty is not estimated and its GPUs count in no cost figure), and is joined to no
    # other: a log names hosts, not the cloud's instances.
    evidence: JobEvidence | None = None

    @model_validator(mode="before")
    @classmethod
    def _complete_of_older_reports(cls, data: Any) -> Any:
        """A report written before `complete` was recorded (a part given to `merge`): what its not_judged says."""
        if isinstance(data, dict) and "complete" not in data:
            unjudged = [n for n in data.get("not_judged") or () if _reason(n) != DESELECTED]
            data = {**data, "complete": not unjudged}
        return data


class NodeNotReported(BaseModel):
    """A judged (running or pending) node in no reported cluster: the nodes summary.nodes_not_in_reported_clusters
    counts, each with why."""

    id: str
    provider: str
    account: str
    instance_type: str  # "" when its source names none
    cluster: str  # the group it was put in (its own id when it trains alone)
    # alone: the only node of its group; no-fabric: its group has fewer than two nodes that have, or should have, a
    # fabric; not-training: its group is a skipped cluster (skipped_clusters says why).
    reason: Literal["alone", "no-fabric", "not-training"]


class SkippedCluster(BaseModel):
    """Nodes that are not a training cluster by the user's word (role tag) or by their type (inference)."""

    id: str
    provider: str
    account: str
    nodes: list[str]
    instance_types: list[str]
    role: str  # inference | ignore
    reason: str


class Summary(BaseModel):
    nodes: int
    clusters: int  # clusters reported: multi-node clusters with a fabric, or with a finding
    nodes_not_in_reported_clusters: int  # single nodes and clusters without a fabric to use
    findings: dict[str, int]
    by_category: dict[str, int]
    by_rule: dict[str, int]
    # What the reported clusters lose a day, from the findings their rules are certain of (losses.totals).
    gpu_hours_per_day: float  # what is paid for: the reported clusters' GPUs x 24
    lost_gpu_hours_per_day: penalty.Range
    lost_dollars_per_day: penalty.Range | None
    clusters_cannot_run: int
    # Counted apart from the figures above: findings whose rules say they may be wrong, and what they would
    # lose on top of them if they hold.
    possible_findings: int
    possible_lost_gpu_hours_per_day: penalty.Range | None
    possible_lost_dollars_per_day: penalty.Range | None
    unknown_instance_types: list[str]
    clusters_by_status: dict[str, int] = {}  # clean, findings, incomplete
    clusters_not_fully_judged: int = 0  # clusters with a selected rule not judged, findings or not (complete false)
    skipped_clusters: int = 0
    nodes_by_state: dict[str, int] = {}  # every instance seen, by state; only running and pending are judged
    waived: int = 0  # findings a waiver covers (counted in `findings` too; they do not fail the gate)
    in_baseline: int = 0  # findings the --baseline holds (counted in `findings` too; they do not fail the gate)
    # A live collection's scopes (account x region, subscription, project) and the requests they took.
    scopes: int = 0
    scopes_incomplete: int = 0
    api_calls: int = 0
    retries: int = 0


class Report(BaseModel):
    schema_version: int = REPORT_SCHEMA_VERSION
    tool: dict[str, str]
    source: str
    generated_at: str
    # False whenever the run cannot pass a gate: a fact not collected (`errors`) or a cluster some selected rule
    # could not judge (its `complete` false); the exit code is then 2 unless --allow-incomplete.
    complete: bool
    errors: list[CollectionError]
    workload: dict[str, str]
    rules: list[str]
    findings: list[Finding]
    clusters: list[ClusterReport]
    skipped_clusters: list[SkippedCluster] = []
    # The nodes summary.nodes_not_in_reported_clusters counts, by id. Empty in reports made before it.
    nodes_not_reported: list[NodeNotReported] = []
    summary: Summary
    notes: list[str]
    waivers: list[WaiverStatus] = []  # what each waiver did: active, expired, stale, not-run
    baseline: BaselineSummary | None = None
    duration_seconds: float | None = None  # the whole command, collection included (set by the CLI)
    api_calls: int | None = None  # cloud API requests sent (0 for a dump or a saved inventory; set by the CLI)
    # Where each planned resource is declared (Terraform address, file and line, cloud id), by node id.
    locations: dict[str, SourceLocation] = {}
    scopes: list[ScopeStatus] = []  # per-scope completeness of a live collection
    # What the run read facts of, as "provider:account:region" (its inventory's `collected` without the facts):
    # `--previous` and `diff` compare findings only where both reports looked. Empty in reports made before it.
    scanned: list[str] = []
    # The gate the findings were judged under, each setting with where it came from (set by the CLI; None for a
    # library caller's own Options).
    gate: config.Gate | None = None
    # What changed since the earlier report of --previous (trend.compare; set by the CLI): None without one.
    trend: Trend | None = None
    # The evidence the report judged (`nccl-log`, `nccl-tests`; its clusters carry what it showed); None for an audit
    # of what runs or is planned, and for a merge.
    evidence: EvidenceKind | None = None

    @model_validator(mode="after")
    def _complete_only_when_fully_judged(self) -> Report:
        """`complete` is false whenever the run cannot pass a gate: a fact not collected (errors) or a cluster a
        selected rule could not judge, as the exit code (cli.finish.exit_for) decides; a report read back (merge,
        diff, --previous) is held to the same."""
        if self.complete and not all(c.complete for c in self.clusters):
            self.complete = False
        return self

    def collected(self) -> bool:
        """Every fact was collected (no collection error); `complete` also asks every cluster to be judged."""
        return not self.errors

    def fully_judged(self) -> bool:
        """Every fact collected and every selected rule judged on every cluster: only such a run can pass a gate,
        whatever waivers and baselines accept of the findings."""
        return self.complete and all(c.complete for c in self.clusters)

    def worst_severity(self) -> str | None:
        """The worst severity among the findings that fail a gate (not waived, not in the baseline)."""
        return max((f.severity for f in self.findings if f.gates), key=SEVERITY_RANK.__getitem__, default=None)


def join_cloud_instances(clusters: list[ClusterReport]) -> tuple[list[ClusterReport], list[str]]:
    """The clusters, each Kubernetes one with the cloud clusters beside it (one run of the demo, or a merge) that its
    pods' nodes are instances of (cloud_clusters), and a note per join: what the cloud audit found on those instances
    bears on the workload."""
    if not any(c.cloud_instances for c in clusters):
        return clusters, []  # no Kubernetes workload: nothing to join (most runs)
    owners: dict[tuple[str, str], list[ClusterReport]] = {}
    for cluster in clusters:
        # A workload's pods name no machine; a log's host names are not instances.
        if _unplaced(cluster.provider) != "pending" and cluster.evidence is None:
            for node in cluster.nodes:
                owners.setdefault(_key(cluster.provider, node), []).append(cluster)
    if not owners:
        return clusters, []
    joined: list[ClusterReport] = []
    notes = []
    for cluster in clusters:
        found: dict[str, tuple[ClusterReport, list[CloudInstance]]] = {}
        for instance in cluster.cloud_instances:
            for owner in owners.get(_key(instance.cloud, instance.instance), ()):
                # A GCE name is unique in its project only; an Azure id names its subscription.
                if instance.account is None or instance.account.lower() == owner.account.lower():
                    found.setdefault(owner.id, (owner, []))[1].append(instance)
        if found:
            cluster = cluster.model_copy(update={"cloud_clusters": sorted(found)})
            for owner_id, (owner, instances) in sorted(found.items()):
                held = ": its findings there hold for this workload too" if owner.findings else ""
                notes.append(
                    f"{cluster.id} runs on {len(instances)} of its {len(cluster.cloud_instances)} node(s) in "
                    f"{owner_id} ({owner.provider} audit: {owner.status}){held}"
                )
        joined.append(cluster)
    return joined, notes


def _key(cloud: str, instance: str) -> tuple[str, str]:
    # Azure resource ids are case-insensitive (an AKS providerID writes the node resource group as it likes).
    provider = declared(cloud)
    return cloud, instance.lower() if provider is not None and provider.ids_ignore_case else instance


def _unplaced(provider: str) -> str | None:
    found = declared(provider)
    return found.unplaced if found is not None else None


def unjudged_rules(cluster: ClusterReport) -> list[NotJudged]:
    """The selected rules a cluster could not be judged by (its not_judged without the deselected ones)."""
    return [n for n in cluster.not_judged if n.reason != DESELECTED]


def _reason(item: Any) -> Any:
    return item.get("reason") if isinstance(item, dict) else getattr(item, "reason", None)


def tally(findings: list[Finding], clusters: list[ClusterReport], skipped: list[SkippedCluster]) -> dict[str, Any]:
    """The summary's counts of findings and clusters and what the clusters lose: one report's, or a merge of
    several. An evidence job is counted, but not in the cost figures: it was measured, not priced."""
    priced = [c for c in clusters if c.evidence is None]
    return {
        "clusters": len(clusters),
        "findings": {s: sum(1 for f in findings if f.severity == s) for s in ("error", "warning", "info")},
        "by_category": dict(sorted(Counter(f.category for f in findings).items())),
        "by_rule": dict(sorted(Counter(f.rule for f in findings).items())),
        **losses.totals([(c.gpus, c.penalty) for c in priced], [machines(c) for c in priced]),
        "possible_findings": sum(1 for f in findings if f.confidence == "possible"),
        "clusters_by_status": {
            s: sum(1 for c in clusters if c.status == s) for s in ("clean", "findings", "incomplete")
        },
        "clusters_not_fully_judged": sum(1 for c in clusters if not c.complete),
        "skipped_clusters": len(skipped),
        "waived": sum(1 for f in findings if f.waiver is not None),
        "in_baseline": sum(1 for f in findings if f.baseline == "existing"),
    }


def machines(cluster: ClusterReport) -> frozenset[str]:
    """The machines a cluster runs on, named as the cloud names them: a cloud cluster's nodes, a Kubernetes
    workload's cloud instances (its pending pods, on no machine yet, by their own names), a Slurm cluster's joined
    instances (its nodes joined to none by their own names). Two reports of the same estate name the same machine
    alike, so its GPU-hours are paid for once."""
    unplaced = _unplaced(cluster.provider)
    if unplaced == "named":
        on = {i.node for i in cluster.cloud_instances}
        return frozenset("/".join(_key(i.cloud, i.instance)) for i in cluster.cloud_instances) | frozenset(
            "/".join(_key(cluster.provider, node)) for node in cluster.nodes if node not in on
        )
    if unplaced is None:
        return frozenset("/".join(_key(cluster.provider, node)) for node in cluster.nodes)
    placed = frozenset("/".join(_key(i.cloud, i.instance)) for i in cluster.cloud_instances)
    pending = max(0, len(cluster.nodes) - len(cluster.cloud_instances))
    return placed | frozenset(f"{cluster.provider}:{cluster.account}:{cluster.id}:pending:{n}" for n in range(pending))


def load_report(path: Path) -> Report:
    """A JSON report (`--format json`; `-`: standard input), checked: one line naming the file for anything else
    (`merge`, `diff`, --previous)."""
    from fabriccheck.jsonfiles import read_json
    from fabriccheck.sources.shape import describe

    doc: Any = read_json(path)
    name = STDIN_NAME if str(path) == "-" else str(path)  # as read_json names it
    if not isinstance(doc, dict) or "findings" not in doc or "summary" not in doc:
        raise FabricCheckError(f"{name}: not a fabriccheck JSON report (make one with --format json)")
    version = doc.get("schema_version")
    if version != REPORT_SCHEMA_VERSION:
        raise FabricCheckError(
            f"{name}: report schema_version {reprlib.repr(version)}, but this fabriccheck merges version "
            f"{REPORT_SCHEMA_VERSION}; make the reports again with the same fabriccheck version"
        )
    summary = doc["summary"]
    if isinstance(summary, dict) and "extra_gpu_hours_per_day" in summary:
        raise FabricCheckError(
            f"{name}: made by an older fabriccheck (extra_gpu_hours_per_day, since replaced by "
            "lost_gpu_hours_per_day); make the reports again with the same fabriccheck version"
        )
    try:
        return Report.model_validate(doc)
    except ValidationError as exc:
        raise FabricCheckError(f"{name}: not a fabriccheck JSON report ({describe(exc)})") from None
