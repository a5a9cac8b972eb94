"""The flow from an inventory to a report: clusters -> rules -> findings -> penalty -> Report.

Every command (live, dump, demo, saved inventory) ends here, so they judge alike.
"""

from __future__ import annotations

import datetime as dt
import operator
from collections import Counter
from dataclasses import dataclass, field
from itertools import compress, repeat
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, model_validator

from fabriccheck import __version__, config, cost, engine, penalty
from fabriccheck import baseline as baselines
from fabriccheck import waivers as waiving
from fabriccheck.baseline import Baseline, BaselineSummary
from fabriccheck.cloud import support
from fabriccheck.clusters import JUDGED_STATES, ROLES, Cluster, build_clusters, spec_clusters
from fabriccheck.engine import SEVERITY_RANK, Finding
from fabriccheck.errors import FabricCheckError
from fabriccheck.facts import FactBuilder
from fabriccheck.inventory import Inventory
from fabriccheck.model import Capability, CollectionError, Node, ScopeStatus, SourceLocation
from fabriccheck.sources.common import paused_gc
from fabriccheck.waivers import Waiver, WaiverStatus

REPORT_SCHEMA_VERSION = 1


@dataclass
class Options:
    workload: str = penalty.DEFAULT_WORKLOAD
    price_per_gpu_hour: float | None = None
    cluster_tag: str | None = None
    rules_dirs: list[Path] = field(default_factory=list)
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    # The gate's settings (config.py, waivers.py, baseline.py); --rules-dir etc. come from config too.
    severity: dict[str, str] = field(default_factory=dict)  # rule id or category -> severity
    roles: dict[str, str] = field(default_factory=dict)  # cluster id glob -> training | inference | ignore
    waivers: list[Waiver] = field(default_factory=list)
    waivers_file: str = ""
    baseline: Baseline | None = None
    baseline_file: str = ""
    today: dt.date | None = None  # for waiver expiry; None: today (UTC)
    gate: config.Gate | None = None  # the gate as settled (gate.py), recorded in the report


class NotJudged(BaseModel):
    """A rule that could not be evaluated on a cluster (or some of its nodes), and why."""

    rule: str
    reason: str  # "security groups not collected for 111122223333 us-east-1", "deselected", ...
    resources: list[str] = []  # the nodes concerned; empty means the whole cluster


class ClusterReport(BaseModel):
    id: str
    provider: str
    account: str
    grouped_by: str
    nodes: list[str]
    instance_types: list[str]
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

    @model_validator(mode="before")
    @classmethod
    def _complete_of_older_reports(cls, data: Any) -> Any:
        """A report written before `complete` was recorded (a part given to `merge`): what its not_judged says."""
        if isinstance(data, dict) and "complete" not in data:
            unjudged = [n for n in data.get("not_judged") or () if _reason(n) != DESELECTED]
            data = {**data, "complete": not unjudged}
        return data


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
    # What the reported clusters lose a day, from the findings their rules are certain of (cost.totals).
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
    complete: bool
    errors: list[CollectionError]
    workload: dict[str, str]
    rules: list[str]
    findings: list[Finding]
    clusters: list[ClusterReport]
    skipped_clusters: list[SkippedCluster] = []
    summary: Summary
    notes: list[str]
    waivers: list[WaiverStatus] = []  # what each waiver did: active, expired, stale, not-run
    baseline: BaselineSummary | None = None
    duration_seconds: float | None = None  # the whole command, collection included (set by the CLI)
    api_calls: int | None = None  # cloud API requests sent (0 for a dump or a saved inventory; set by the CLI)
    # Where each planned resource is declared (Terraform address, file and line, cloud id), by node id.
    locations: dict[str, SourceLocation] = {}
    scopes: list[ScopeStatus] = []  # per-scope completeness of a live collection
    # The gate the findings were judged under, each setting with where it came from (set by the CLI; None for a
    # library caller's own Options).
    gate: config.Gate | None = None

    def fully_judged(self) -> bool:
        """Every fact collected and every selected rule judged on every cluster: only such a run can pass a gate,
        whatever waivers and baselines accept of the findings."""
        return self.complete and all(c.complete for c in self.clusters)

    def worst_severity(self) -> str | None:
        """The worst severity among the findings that fail a gate (not waived, not in the baseline)."""
        return max((f.severity for f in self.findings if f.gates), key=SEVERITY_RANK.__getitem__, default=None)


def workload_named(name: str) -> penalty.Workload:
    """A preset by name, or a user's workload from a YAML/TOML file (the fields of estimate --workload-file), so
    a scan prices the job the team actually runs."""
    if name not in penalty.WORKLOADS and penalty.is_workload_file(name):
        from pathlib import Path

        from fabriccheck.estimate import workload_from_file

        return workload_from_file(Path(name), "--workload")
    try:
        return penalty.WORKLOADS[name]
    except KeyError:
        raise FabricCheckError(
            f"--workload {name}: unknown workload (choose from {', '.join(sorted(penalty.WORKLOADS))}, "
            "or give a .yaml/.toml workload file)"
        ) from None


def run(inventory: Inventory, options: Options) -> Report:
    # Judging builds many small objects (facts, findings, reports) and frees few: the cyclic collector would walk
    # them again and again (about 5% of a 5,000-node run). Paused for the run, not frozen after it, so that a
    # library caller's repeated runs leave nothing behind.
    with paused_gc(freeze=False):
        return _run(inventory, options)


def _run(inventory: Inventory, options: Options) -> Report:
    workload = workload_named(options.workload)
    # Only the rules of the clouds in this inventory are loaded, run and listed: an AWS account's report does not
    # list GCP rules as run, and a selection that leaves none of its clouds' rules is the same error as none.
    clouds = frozenset(
        {*map(_PROVIDER, inventory.nodes), *map(_PROVIDER, inventory.specs)}
        | {e.provider for e in inventory.errors}
        | {c.split(":", 1)[0] for c in inventory.collected}
    )
    loaded = _rules(options, clouds or None)
    try:
        rules = engine.select_rules(loaded, options.select, options.ignore)
    except FabricCheckError:
        if not clouds:
            raise
        engine.select_rules(_rules(options, None), options.select, options.ignore)  # names a token of no cloud
        raise FabricCheckError(
            f"--select / --ignore leave no rule to run on {', '.join(sorted(clouds))} (see: fabriccheck rules)"
        ) from None
    if clouds:
        rules = [r for r in rules if r.provider in clouds]  # a --rules-dir may hold other clouds' rules
        if not rules:
            raise FabricCheckError(f"no rule to run on {', '.join(sorted(clouds))} (see: fabriccheck rules)")
    every_cluster = build_clusters(inventory, options.cluster_tag)
    specs = spec_clusters(inventory)
    # The config names clusters outright: templates and planned groups (specs) as well as running ones.
    config.assign_roles([*every_cluster, *specs], options.roles)
    clusters = [c for c in every_cluster if c.judged]
    facts = FactBuilder(inventory)
    evaluation = engine.judge(rules, inventory, clusters, facts, [c for c in specs if c.judged])
    findings = evaluation.findings
    if options.severity:
        config.override_severity(findings, options.severity, _rules(options, None))
    for finding in findings:
        finding.fingerprint = baselines.fingerprint(finding)
    deselected = _deselected(loaded, rules)

    by_cluster: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.cluster:
            by_cluster.setdefault(finding.cluster, []).append(finding)
    reported: list[ClusterReport] = []
    judged_nodes = 0
    for cluster in clusters:
        cluster_findings = by_cluster.get(cluster.id, [])
        unjudged = evaluation.unjudged.get(cluster.id, [])
        if not cluster_findings and not unjudged and not facts.cluster(cluster)["fabric_cluster"]:
            continue  # trains alone, or has no fabric to use (and that much is known)
        judged_nodes += cluster.size
        not_judged = [NotJudged(rule=u.rule, reason=u.reason, resources=u.resources) for u in unjudged]
        status: Literal["clean", "findings", "incomplete"] = (
            "findings" if cluster_findings else "incomplete" if not_judged else "clean"
        )
        complete = not not_judged  # before the deselected rules are listed: they were not asked for
        not_judged += [NotJudged(rule=rule_id, reason=DESELECTED) for rule_id in deselected.get(cluster.provider, [])]
        reported.append(
            ClusterReport(
                id=cluster.id,
                provider=cluster.provider,
                account=cluster.account,
                grouped_by=cluster.signal,
                nodes=list(map(_ID, cluster.nodes)),
                instance_types=list(facts.cluster(cluster)["types"]),
                gpus=int(facts.cluster(cluster)["gpus"]),
                findings=len(cluster_findings),
                status=status,
                complete=complete,
                not_judged=not_judged,
                penalty=cluster_cost(cluster, cluster_findings, workload, options.price_per_gpu_hour, facts),
            )
        )
    skipped = [
        SkippedCluster(
            id=c.id,
            provider=c.provider,
            account=c.account,
            nodes=[n.id for n in c.nodes],
            instance_types=sorted({n.instance_type or "" for n in c.nodes}),
            role=c.role,
            reason=c.role_reason,
        )
        for c in [*every_cluster, *specs]
        if not c.judged
    ]

    # A capability is a type's: each type of the judged nodes (the clusters' nodes, each cluster's read in C) is
    # looked up once, not each node. Every node's state is counted in C.
    judged_types = {kind or "" for c in every_cluster for kind in dict.fromkeys(map(_TYPE, c.nodes))}
    states = Counter(map(_STATE, inventory.nodes))
    unknown = sorted(t for t in judged_types if facts.type_capability(t) is None)
    report = Report(
        tool={"name": "fabriccheck", "version": __version__},
        source=inventory.source,
        generated_at=dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        complete=inventory.complete,
        errors=inventory.errors,
        workload={"name": workload.name, "description": workload.description, "source": workload.source},
        rules=engine.active_ids(rules),  # the rules that ran: those of the clouds in the inventory
        findings=findings,
        clusters=reported,
        skipped_clusters=skipped,
        summary=_summary(inventory, states, reported, skipped, findings, judged_nodes, unknown),
        notes=_notes(inventory, unknown, options),
        locations=_locations(inventory),
        scopes=inventory.scopes,
        gate=options.gate,
    )
    _settle(report, options)
    return report


def _locations(inventory: Inventory) -> dict[str, SourceLocation]:
    """Where in its source each node came from, for the nodes that have one (plans and templates)."""
    nodes = [*inventory.nodes, *inventory.specs]
    sources = list(map(_SOURCE, nodes))
    if sources.count(None) == len(sources):  # a live or dump inventory: none
        return {}
    return {node.id: source for node, source in zip(nodes, sources, strict=True) if source is not None}


# Read off every node in C: a fleet has thousands.
_PROVIDER = operator.attrgetter("provider")
_ID = operator.attrgetter("id")
_TYPE = operator.attrgetter("instance_type")
_STATE = operator.attrgetter("state")
_SOURCE = operator.attrgetter("source")
_TAGS = operator.attrgetter("tags")


def _settle(report: Report, options: Options) -> None:
    """Waivers and baseline: mark the findings they cover, and say what each did."""
    if options.waivers:
        today = options.today or dt.datetime.now(dt.UTC).date()
        report.waivers = waiving.apply(report.findings, options.waivers, options.waivers_file, today, report.rules)
        report.notes += waiving.notes(report.waivers)
    if options.baseline is not None:
        report.baseline = baselines.apply(report.findings, options.baseline, options.baseline_file)
    report.summary.waived = sum(1 for f in report.findings if f.waiver is not None)
    report.summary.in_baseline = sum(1 for f in report.findings if f.baseline == "existing")


def _rules(options: Options, clouds: frozenset[str] | None) -> list[engine.Rule]:
    if options.rules_dirs:
        return engine.load_rules(options.rules_dirs, clouds)
    return list(engine.builtin_rules(clouds))


DESELECTED = "deselected (--select / --ignore)"


def unjudged_rules(cluster: ClusterReport) -> list[NotJudged]:
    """The selected rules a cluster could not be judged by (its not_judged without the deselected ones)."""
    return [n for n in cluster.not_judged if n.reason != DESELECTED]


def _reason(item: Any) -> Any:
    return item.get("reason") if isinstance(item, dict) else getattr(item, "reason", None)


def _deselected(loaded: list[engine.Rule], chosen: list[engine.Rule]) -> dict[str, list[str]]:
    """Finding ids the user's --select / --ignore turned off, by provider."""
    on = set(engine.active_ids(chosen))
    off: dict[str, list[str]] = {}
    for rule in loaded:
        for finding_id, origins in rule.finding_ids().items():
            if "running" in origins and finding_id not in on:
                off.setdefault(rule.provider, []).append(finding_id)
    return off


def cluster_cost(
    cluster: Cluster,
    findings: list[Finding],
    workload: penalty.Workload,
    price_per_gpu_hour: float | None,
    facts: FactBuilder,
) -> penalty.Penalty:
    """The cluster's penalty from the findings their rules are certain of; when some that may be wrong (confidence
    possible) act on the fabric, also what it would be if they hold (`possible`), counted apart."""
    certain = [f for f in findings if f.confidence == "certain"]
    found = cluster_penalty(cluster, certain, workload, price_per_gpu_hour, facts)
    if any(f.confidence != "certain" and f.effect != "none" for f in findings):
        found.possible = cluster_penalty(cluster, findings, workload, price_per_gpu_hour, facts)
    return found


# What a finding's effect does to the fabric of the node it names (or of every node, for a cluster finding).
_TCP_EFFECTS = {"tcp-fallback", "weaker-fabric"}


def cluster_penalty(
    cluster: Cluster,
    findings: list[Finding],
    workload: penalty.Workload,
    price_per_gpu_hour: float | None,
    facts: FactBuilder,
) -> penalty.Penalty:
    """Map a cluster's findings to a fabric state per node, and ask the penalty core what that costs.

    The nodes of a pool share their type and mostly their findings' effects: a node's fabric and state follow
    from (type, effects, NICs attached if partial), so each distinct such key is mapped once per cluster, each
    type's description and each state once per run, and each distinct cluster's slowdown once per run."""
    capabilities = {t or "": facts.type_capability(t) for t in dict.fromkeys(map(_TYPE, cluster.nodes))}
    known = [c for c in capabilities.values() if c is not None]
    if len(known) < len(capabilities):
        return penalty.Penalty(
            workload=workload.name, estimated=False, reason="an instance type's capability is unknown"
        )
    # A finding naming one node of the cluster acts on that node; any other (a cluster finding) on every node.
    everyone: set[str] = set()
    own: dict[str, set[str]] = {}
    if findings:
        ids = {n.id for n in cluster.nodes}
        for finding in findings:
            if len(finding.resources) == 1 and finding.resources[0] in ids:
                own.setdefault(finding.resources[0], set()).add(finding.effect)
            else:
                everyone.add(finding.effect)
    base = frozenset(everyone)

    def key_of(node: Node) -> _MemberKey:
        effects = base | own[node.id] if node.id in own else base
        partial = "partial-fabric" in effects and not effects & _DOWN_EFFECTS
        return (node.instance_type or "", effects, int(facts.node(node)["fabric"]["attached"]) if partial else None)

    distinct: dict[_MemberKey, None] = {}
    if "partial-fabric" in base and not base & _DOWN_EFFECTS:  # every node's NICs count
        distinct = dict.fromkeys(key_of(n) for n in cluster.nodes)
    elif own and len(capabilities) == 1:  # one type: the nodes no finding names all have the type's key
        named = list(map(own.__contains__, map(_ID, cluster.nodes)))  # in C; the named nodes are few
        keys = {index: key_of(node) for index, node in compress(enumerate(cluster.nodes), named)}
        if False in named:  # placed at the first node no finding names
            keys[named.index(False)] = (next(iter(capabilities)), base, None)
        distinct = dict.fromkeys(keys[index] for index in sorted(keys))
    elif own:  # a node no finding names takes the cluster's effects: its type is its key
        for node in cluster.nodes:
            distinct[key_of(node) if node.id in own else (node.instance_type or "", base, None)] = None
    else:  # a clean pool, or findings on the whole cluster only
        distinct = dict.fromkeys((t, base, None) for t in capabilities)
    # The slowdown depends on the node count and the distinct members in order (the first names the accelerator),
    # so on the distinct keys in order: clusters alike in them share it. Keys hash cheaply; the members (frozen
    # dataclasses) and the workload would be hashed field by field, so a run's slowdowns are kept per workload.
    by_workload: dict[int, tuple[penalty.Workload, dict[tuple[object, ...], penalty.Slowdown]]] = facts.cached(
        "penalty:slowdowns", dict
    )
    kept = by_workload.get(id(workload))
    if kept is None or kept[0] is not workload:  # the workload is kept with its slowdowns: its id stays its own
        kept = by_workload[id(workload)] = (workload, {})
    # What the findings cannot say but the cluster does: how its sockets reach the network (a Kubernetes node group's
    # pods may not use host networking) and the NVLink domains it spans, when a finding says it is spread.
    split = any("split-nvlink-domain" in effects for _, effects, _ in distinct)
    where = (penalty.socket_path_of(cluster.signal), int(facts.cluster(cluster)["nvlink"]["domains"]) if split else 0)
    shape = (cluster.provider, cluster.size, where, *distinct)
    slowdown = kept[1].get(shape)
    if slowdown is None:
        members = {key: _member(key, cluster.provider, capabilities, facts, where) for key in distinct}
        every = [members[key_of(n)] for n in cluster.nodes]
        slowdown = kept[1][shape] = penalty.estimate_members(every, workload)
    gpus = min(c.accelerators for c in known) * cluster.size
    # Pools alike cost alike: the Penalty is made once per slowdown, GPU count and price (the slowdown kept with
    # it, so that its id stays its own), and each cluster gets its own copy of it.
    made: dict[tuple[int, int, float | None], tuple[penalty.Slowdown, penalty.Penalty]] = facts.cached(
        "penalty:penalties", dict
    )
    key = (id(slowdown), gpus, price_per_gpu_hour)
    found = made.get(key)
    if found is None or found[0] is not slowdown:
        found = made[key] = (slowdown, penalty.penalty_of(slowdown, workload, gpus, price_per_gpu_hour))
    return found[1].model_copy()  # its ranges are shared with its likes: nothing changes a made Penalty


_MemberKey = tuple[str, frozenset[str], int | None]  # a node's type, its findings' effects, NICs attached if partial
# Effects that decide a node's state ahead of partial-fabric (see _member): its attached NICs do not matter then.
_DOWN_EFFECTS = frozenset({"unreachable", *_TCP_EFFECTS})


def _member(
    key: _MemberKey,
    provider: str,
    capabilities: dict[str, Capability | None],
    facts: FactBuilder,
    where: tuple[penalty.SocketPath, int],
) -> tuple[penalty.FabricDescription, penalty.FabricState]:
    """A node's fabric and its state, from its (type, findings' effects, fabric NICs attached if partial)."""
    instance_type, effects, attached = key
    cap = capabilities[instance_type]
    assert cap is not None  # cluster_penalty estimates only clusters whose types are all known
    descriptions: dict[str, penalty.FabricDescription] = facts.cached("penalty:descriptions", dict)
    states: dict[tuple[penalty.FabricHealth, int | None, bool, tuple[str, int]], penalty.FabricState] = facts.cached(
        "penalty:states", dict
    )
    fabric = descriptions.get(cap.instance_type)
    if fabric is None:
        fabric = descriptions[cap.instance_type] = penalty.FabricDescription.from_capability(cap)
    if "weaker-fabric" in effects and not fabric.fabric_gbps:
        # Healthy would be the fabric of the same-generation type the instance-choice rule suggests,
        # scaled to this type's accelerators; the node keeps its own ordinary NIC.
        pick = next(
            (
                s.capability
                for s in facts.siblings(provider, cap.instance_type)
                if s.capability.accelerators >= cap.accelerators
            ),
            None,
        )
        if pick is not None and pick.accelerators:
            borrowed = f"{cap.instance_type} as {pick.instance_type}"
            fabric = descriptions.get(borrowed)
            if fabric is None:
                fabric = descriptions[borrowed] = penalty.FabricDescription.borrowed(cap, pick)
    loose = "loose-placement" in effects
    state_key: tuple[penalty.FabricHealth, int | None, bool, tuple[penalty.SocketPath, int]]
    if "unreachable" in effects:
        state_key = ("unreachable", None, loose, where)
    elif effects & _TCP_EFFECTS:
        state_key = ("tcp-fallback", None, loose, where)
    elif "partial-fabric" in effects:
        state_key = ("partial", attached, loose, where)
    else:
        state_key = ("healthy", None, loose, where)
    state = states.get(state_key)
    if state is None:
        state = states[state_key] = penalty.FabricState(
            state_key[0], nics_used=state_key[1], loose_placement=loose, socket_path=where[0],
            nvlink_domains=where[1] if "split-nvlink-domain" in effects else None,
        )  # fmt: skip
    return fabric, state


def tally(findings: list[Finding], clusters: list[ClusterReport], skipped: list[SkippedCluster]) -> dict[str, Any]:
    """The summary's counts of findings and clusters and what the clusters lose: one report's, or a merge of
    several."""
    return {
        "clusters": len(clusters),
        "findings": {s: sum(1 for f in findings if f.severity == s) for s in ("error", "warning", "info")},
        "by_category": dict(sorted(Counter(f.category for f in findings).items())),
        "by_rule": dict(sorted(Counter(f.rule for f in findings).items())),
        **cost.totals([(c.gpus, c.penalty) for c in clusters]),
        "possible_findings": sum(1 for f in findings if f.confidence == "possible"),
        "clusters_by_status": {
            s: sum(1 for c in clusters if c.status == s) for s in ("clean", "findings", "incomplete")
        },
        "clusters_not_fully_judged": sum(1 for c in clusters if not c.complete),
        "skipped_clusters": len(skipped),
        "waived": sum(1 for f in findings if f.waiver is not None),
        "in_baseline": sum(1 for f in findings if f.baseline == "existing"),
    }


def _summary(
    inventory: Inventory,
    states: Counter[str],
    clusters: list[ClusterReport],
    skipped: list[SkippedCluster],
    findings: list[Finding],
    judged_nodes: int,
    unknown: list[str],
) -> Summary:
    judged_state = sum(count for state, count in states.items() if state in JUDGED_STATES)
    return Summary(
        nodes=judged_state,
        nodes_not_in_reported_clusters=judged_state - judged_nodes,
        unknown_instance_types=unknown,
        **tally(findings, clusters, skipped),
        nodes_by_state=dict(sorted(states.items())),
        scopes=len(inventory.scopes),
        scopes_incomplete=sum(1 for s in inventory.scopes if not s.complete),
        api_calls=sum(s.api_calls for s in inventory.scopes),
        retries=sum(s.retries for s in inventory.scopes),
    )


def _notes(inventory: Inventory, unknown: list[str], options: Options) -> list[str]:
    notes = list(inventory.notes)
    if unknown:
        notes.append(
            "fabric capability unknown for instance type(s) "
            + ", ".join(unknown)
            + ": not in the live answer or the catalog, so their nodes were not judged for fabric"
        )
    if options.cluster_tag and not any(options.cluster_tag in n.tags for n in inventory.nodes):
        notes.append(f"no node carries the tag {options.cluster_tag}; nodes were grouped by the usual signals")
    providers = sorted(
        {*map(_PROVIDER, inventory.nodes), *map(_PROVIDER, inventory.specs)}
        | {c.split(":", 1)[0] for c in inventory.collected}
    )
    for provider in providers:
        cloud = support(provider)
        # Only the nodes with the role tag are looked at, found in C.
        tagged = compress(inventory.nodes, map(operator.contains, map(_TAGS, inventory.nodes), repeat(cloud.role_tag)))
        odd = sorted(
            {
                f"{n.tags[cloud.role_tag]!r} on {n.id}"
                for n in tagged
                if n.provider == provider and n.tags[cloud.role_tag].strip().lower() not in ROLES
            }
        )
        if odd:
            notes.append(
                f"{cloud.role_tag} takes training, inference or ignore; judged as training: {', '.join(odd[:5])}"
                + (f" (+{len(odd) - 5} more)" if len(odd) > 5 else "")
            )
        notes += cloud.notes(inventory)
    return notes
