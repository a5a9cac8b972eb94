"""The flow from an inventory to a report: clusters -> rules -> findings -> penalty -> Report.

Every command (live, dump, demo, saved inventory) ends here, so they judge alike.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from fabriccheck import baseline as baselines
from fabriccheck import config, cost, examples, judge, penalty, rulebook
from fabriccheck import waivers as waiving
from fabriccheck.baseline import Baseline
from fabriccheck.cloud import HostInstance, resolve, support
from fabriccheck.clusters import JUDGED_STATES, ROLES, Cluster, build_clusters, current_id, spec_clusters
from fabriccheck.errors import FabricCheckError
from fabriccheck.facts import FactBuilder
from fabriccheck.findings import Finding
from fabriccheck.gcpause import paused_gc
from fabriccheck.inventory import Inventory
from fabriccheck.model import SourceLocation
from fabriccheck.report import (
    DESELECTED,
    CloudInstance,
    ClusterReport,
    NodeNotReported,
    NotJudged,
    Report,
    SkippedCluster,
    Summary,
    join_cloud_instances,
    tally,
)
from fabriccheck.version import __version__
from fabriccheck.waivers import Waiver


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
    # them again and again (about 5% of a 5,000-node run). Paused for the run, not frozen after it: a freeze is the
    # whole process's, and would pin a library caller's garbage too (the CLI, which exits after the report, pauses
    # around the run and freezes what it made: cli/finish.py).
    with paused_gc(freeze=False):
        return _run(inventory, options)


def _run(inventory: Inventory, options: Options) -> Report:
    workload = workload_named(options.workload)
    resolve(inventory)  # every source has; an inventory a caller made itself may not have
    loaded, rules = _chosen_rules(inventory, options)
    every_cluster = build_clusters(inventory, options.cluster_tag)
    specs = spec_clusters(inventory)
    # The config names clusters outright: templates and planned groups (specs) as well as running ones.
    config.assign_roles([*every_cluster, *specs], _roles_with_current_ids(options.roles))
    clusters = [c for c in every_cluster if c.judged]
    facts = FactBuilder(inventory)
    evaluation = judge.judge(rules, inventory, clusters, facts, [c for c in specs if c.judged])
    findings = evaluation.findings
    if options.severity:
        config.override_severity(findings, options.severity, _rules(options, None))
    for finding in findings:
        finding.fingerprint = baselines.fingerprint(finding)
    reported = _cluster_reports(clusters, evaluation, _deselected(loaded, rules), workload, options, facts)
    reported, joined = join_cloud_instances(reported)  # a run that saw a cloud and its Kubernetes or Slurm clusters
    skipped = [_skipped(c) for c in [*every_cluster, *specs] if not c.judged]
    # A capability is a type's: each type of the judged nodes is looked up once, not each node.
    # A node whose source names no type (a Slurm node not joined to its instance) has no type to call unknown: what
    # it leaves unjudged is said under its cluster.
    judged_types = {n.instance_type for c in every_cluster for n in c.nodes if n.instance_type}
    states = Counter(n.state for n in inventory.nodes)
    unknown = sorted(t for t in judged_types if facts.type_capability(t) is None)
    judged_nodes = sum(len(c.nodes) for c in reported)
    not_reported = _not_reported(every_cluster, {c.id for c in reported})
    report = Report(
        tool={"name": "fabriccheck", "version": __version__},
        source=inventory.source,
        generated_at=dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        complete=inventory.complete,
        errors=inventory.errors,
        workload={
            "name": workload.name,
            "description": workload.description,
            "source": workload.source,
            "layout": penalty.layout_line(workload),
            "nccl": penalty.release_line(workload),
        },
        rules=rulebook.active_ids(rules),  # the rules that ran: those of the clouds in the inventory
        findings=findings,
        clusters=reported,
        skipped_clusters=skipped,
        nodes_not_reported=not_reported,
        summary=_summary(inventory, states, reported, skipped, findings, judged_nodes, unknown),
        notes=_notes(inventory, unknown, options) + joined,
        locations=_locations(inventory),
        scopes=inventory.scopes,
        scanned=sorted({key.rsplit(":", 1)[0] for key in inventory.collected}),
        gate=options.gate,
    )
    _settle(report, options)
    return report


def _chosen_rules(inventory: Inventory, options: Options) -> tuple[list[rulebook.Rule], list[rulebook.Rule]]:
    """(the rules loaded, the rules chosen to run). Only the rules of the clouds in this inventory are loaded, run
    and listed: an AWS account's report does not list GCP rules as run, and a selection that leaves none of its
    clouds' rules is the same error as none."""
    clouds = frozenset(_providers(inventory) | {e.provider for e in inventory.errors})
    loaded = _rules(options, clouds or None)
    try:
        rules = rulebook.select_rules(loaded, options.select, options.ignore)
    except FabricCheckError:
        if not clouds:
            raise
        rulebook.select_rules(_rules(options, None), options.select, options.ignore)  # names a token of no cloud
        raise FabricCheckError(
            f"--select / --ignore leave no rule to run on {', '.join(sorted(clouds))} (see: fabriccheck rules)"
        ) from None
    if clouds:
        rules = [r for r in rules if r.provider in clouds]  # a --rules-dir may hold other clouds' rules
        if not rules:
            raise FabricCheckError(f"no rule to run on {', '.join(sorted(clouds))} (see: fabriccheck rules)")
    return loaded, rules


def _cluster_reports(
    clusters: list[Cluster],
    evaluation: judge.Evaluation,
    deselected: dict[str, list[str]],
    workload: penalty.Workload,
    options: Options,
    facts: FactBuilder,
) -> list[ClusterReport]:
    """A report per judged cluster whose fabric matters, or that has a finding or a rule not judged."""
    by_cluster: dict[str, list[Finding]] = {}
    for finding in evaluation.findings:
        if finding.cluster:
            by_cluster.setdefault(finding.cluster, []).append(finding)
    hosts = _cloud_instances(clusters, facts.inventory)
    reported: list[ClusterReport] = []
    for cluster in clusters:
        cluster_findings = by_cluster.get(cluster.id, [])
        unjudged = evaluation.unjudged.get(cluster.id, [])
        cluster_facts = facts.cluster(cluster)
        if not cluster_findings and not unjudged and not cluster_facts["fabric_cluster"]:
            continue  # trains alone, or has no fabric to use (and that much is known)
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
                network_path=cluster.network_path,
                nodes=[n.id for n in cluster.nodes],
                instance_types=[t for t in cluster_facts["types"] if t],  # untyped_nodes counts the rest
                untyped_nodes=sum(1 for n in cluster.nodes if not n.instance_type),
                gpus=int(cluster_facts["gpus"]),
                findings=len(cluster_findings),
                status=status,
                complete=complete,
                not_judged=not_judged,
                penalty=cost.cluster_cost(cluster, cluster_findings, workload, options.price_per_gpu_hour, facts),
                cloud_instances=[_cloud_instance(h) for h in hosts[cluster.id]],
            )
        )
    return reported


def _cloud_instances(clusters: list[Cluster], inventory: Inventory) -> dict[str, list[HostInstance]]:
    """The cloud instances each scheduler's cluster runs on (CloudSupport.host_instances; none for a cloud's), by
    cluster id: one question a provider, whatever the number of its clusters."""
    by_provider: dict[str, list[Cluster]] = {}
    for cluster in clusters:
        by_provider.setdefault(cluster.provider, []).append(cluster)
    found: dict[str, list[HostInstance]] = {}
    for provider, group in by_provider.items():
        answers = support(provider).host_instances([c.nodes for c in group], inventory)
        found |= {c.id: hosts for c, hosts in zip(group, answers, strict=True)}
    return found


def _cloud_instance(host: HostInstance) -> CloudInstance:
    return CloudInstance(node=host.node, cloud=host.cloud, instance=host.instance, account=host.account,
                         pods=list(host.members))  # fmt: skip


def _not_reported(clusters: list[Cluster], reported: set[str]) -> list[NodeNotReported]:
    """The judged nodes of the clusters not reported, each with why: alone in its group, a group without two
    fabric nodes, or a group skipped as not training."""
    out: list[NodeNotReported] = []
    for cluster in clusters:
        if cluster.id in reported:
            continue
        why = "not-training" if not cluster.judged else "alone" if cluster.size == 1 else "no-fabric"
        out += [
            NodeNotReported(
                id=n.id,
                provider=n.provider,
                account=n.account,
                instance_type=n.instance_type or "",
                cluster=cluster.id,
                reason=why,
            )
            for n in cluster.nodes
        ]
    return out


def _skipped(cluster: Cluster) -> SkippedCluster:
    return SkippedCluster(
        id=cluster.id,
        provider=cluster.provider,
        account=cluster.account,
        nodes=[n.id for n in cluster.nodes],
        instance_types=sorted({n.instance_type or "" for n in cluster.nodes}),
        role=cluster.role,
        reason=cluster.role_reason,
    )


def _locations(inventory: Inventory) -> dict[str, SourceLocation]:
    """Where in its source each node came from, for the nodes that have one (plans and templates)."""
    # By node id, and by Terraform address: a finding names a planned group's nodes by their address (judge.named_as).
    located = [(node.id, node.source) for node in [*inventory.nodes, *inventory.specs] if node.source is not None]
    return {key: source for node_id, source in located for key in (node_id, source.address)}


def _roles_with_current_ids(roles: dict[str, str]) -> dict[str, str]:
    """The config's role globs, each followed by its current id when it names a cluster by a former one (a
    signal's slug renamed since): the role still applies."""
    out: dict[str, str] = {}
    for glob, role in roles.items():
        out.setdefault(glob, role)
        new = current_id(glob)
        if new is not None:
            out.setdefault(new, role)
    return out


def _providers(inventory: Inventory) -> set[str]:
    """The clouds an inventory's nodes, templates and collected facts belong to."""
    return (
        {n.provider for n in inventory.nodes}
        | {n.provider for n in inventory.specs}
        | {c.split(":", 1)[0] for c in inventory.collected}
    )


def _settle(report: Report, options: Options) -> None:
    """Waivers and baseline: mark the findings they cover, and say what each did."""
    # Ids an earlier version gave clusters (a signal's slug renamed since) still match, with a note naming the new.
    renamed = current_id
    if options.waivers:
        today = options.today or dt.datetime.now(dt.UTC).date()
        found = waiving.apply(report.findings, options.waivers, options.waivers_file, today, report.rules, renamed)
        report.waivers = found
        report.notes += waiving.notes(found) + waiving.renamed_notes(options.waivers, options.waivers_file, renamed)
    if options.baseline is not None:
        report.baseline = baselines.apply(report.findings, options.baseline, options.baseline_file, renamed)
        report.notes += baselines.renamed_notes(options.baseline, options.baseline_file, renamed)
    report.summary.waived = sum(1 for f in report.findings if f.waiver is not None)
    report.summary.in_baseline = sum(1 for f in report.findings if f.baseline == "existing")


def _rules(options: Options, clouds: frozenset[str] | None) -> list[rulebook.Rule]:
    if options.rules_dirs:
        return examples.load_rules(options.rules_dirs, clouds)
    return list(rulebook.builtin_rules(clouds))


def _deselected(loaded: list[rulebook.Rule], chosen: list[rulebook.Rule]) -> dict[str, list[str]]:
    """Finding ids the user's --select / --ignore turned off, by provider."""
    on = set(rulebook.active_ids(chosen))
    off: dict[str, list[str]] = {}
    for rule in loaded:
        for finding_id, origins in rule.finding_ids().items():
            if "running" in origins and finding_id not in on:
                off.setdefault(rule.provider, []).append(finding_id)
    return off


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
    for provider in sorted(_providers(inventory)):
        cloud = support(provider)
        odd = sorted(
            {
                f"{n.tags[cloud.role_tag]!r} on {n.id}"
                for n in inventory.nodes
                if cloud.role_tag in n.tags
                and n.provider == provider
                and n.tags[cloud.role_tag].strip().lower() not in ROLES
            }
        )
        if odd:
            notes.append(
                f"{cloud.role_tag} takes training, inference or ignore; judged as training: {', '.join(odd[:5])}"
                + (f" (+{len(odd) - 5} more)" if len(odd) > 5 else "")
            )
        notes += cloud.notes(inventory)
    return notes
