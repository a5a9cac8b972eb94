"""The judge: rules evaluated over the derived facts of clusters and their nodes.

`judge` is the definition: every rule of a cluster's provider and origin, on the cluster and on each of its
nodes. A verdict depends only on the values of the facts its rule reads, so `Verdicts` keeps each verdict by those
values (rule, the cluster facts it reads, the node facts it reads): the nodes of a pool, and pools alike, cost one
CEL evaluation. The node facts a rule reads are picked once per value of a node's facts (FactBuilder.kind).
`judge(..., memo=False)` evaluates every verdict afresh; the tests hold the two to the same findings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from fabriccheck import facts as derived
from fabriccheck.clusters import Cluster, spec_clusters
from fabriccheck.facts import FactBuilder, FactKey, fact_key_of, frozen
from fabriccheck.findings import Finding, sort_findings
from fabriccheck.inventory import Inventory
from fabriccheck.model import Node
from fabriccheck.rulebook import STRING_LITERAL, Rule, cel_module, fact_paths


@dataclass
class Unjudged:
    """A rule not evaluated on collected facts for some nodes (or a whole cluster), and why."""

    rule: str
    reason: str
    resources: list[str] = field(default_factory=list)  # the nodes concerned; empty: the whole cluster


@dataclass
class Evaluation:
    findings: list[Finding]
    unjudged: dict[str, list[Unjudged]]  # by cluster id


Verdict = tuple[bool, tuple[str, ...]]  # matched, and why it could not be judged if it did not


def evaluate(
    rules: list[Rule],
    inventory: Inventory,
    clusters: list[Cluster],
    facts: FactBuilder | None = None,
    specs: list[Cluster] | None = None,
) -> list[Finding]:
    """Findings of `rules` on running clusters, and of node rules on the clusters specs would launch."""
    return judge(rules, inventory, clusters, facts, specs).findings


def judge(
    rules: list[Rule],
    inventory: Inventory,
    clusters: list[Cluster],
    facts: FactBuilder | None = None,
    specs: list[Cluster] | None = None,
    memo: bool = True,
) -> Evaluation:
    """Findings, and for each running cluster whose fabric matters the rules that could not be judged: a fact
    they read that the builder could only call unknown, with why (not collected for the node's account and
    region, a security group referenced but not seen, a type whose capability is unknown)."""
    facts = facts or FactBuilder(inventory)
    judgings = [_Judging(rule) for rule in rules]
    verdicts = Verdicts(memo)
    findings: list[Finding] = []
    unjudged: dict[str, list[Unjudged]] = {}
    chosen: dict[tuple[str, str, bool], _Chosen] = {}
    for cluster in [*clusters, *(specs if specs is not None else spec_clusters(inventory))]:
        origin = cluster.nodes[0].origin if cluster.spec else "running"
        picked = (cluster.provider, origin, cluster.spec)
        if picked not in chosen:
            chosen[picked] = _rules_for(judgings, *picked)
        cluster_rules, node_rules, paths = chosen[picked]
        if not cluster_rules and not node_rules:
            continue
        scene = _Cluster(cluster, origin, facts, paths)
        missed: dict[tuple[str, str], list[str]] = {}  # (rule, reason) -> nodes; [] for the whole cluster
        for judging in cluster_rules:
            matched, reasons = verdicts.cluster(judging, scene)
            if matched:
                named = list(dict.fromkeys(map(named_as, cluster.nodes)))
                findings.append(scene.finding(judging.rule, named, None))
            for reason in reasons:
                missed[(judging.rule.id, reason)] = []
        if scene.facts["multi_node"] and node_rules:
            _judge_nodes(node_rules, scene, verdicts, findings, missed)
        # Only where the fabric matters: a CPU fleet's unknown placement leaves nothing unjudged.
        matters = scene.facts["fabric_cluster"] or "fabric_cluster" in scene.facts["unknown"]
        if missed and matters:
            everyone = len(cluster.nodes)
            unjudged[cluster.id] = [
                Unjudged(rule, reason, [] if len(nodes) == everyone else nodes)
                for (rule, reason), nodes in sorted(missed.items())
            ]
    return Evaluation(sort_findings(findings), unjudged)


class _Chosen(NamedTuple):
    """The rules that judge a cluster of one provider and origin (the same for every such cluster, so chosen once
    per run), and the dotted cluster facts any of them reads."""

    cluster_rules: list[_Judging]
    node_rules: list[_Judging]
    paths: tuple[str, ...]


def _rules_for(judgings: list[_Judging], provider: str, origin: str, spec: bool) -> _Chosen:
    here = [j for j in judgings if j.rule.provider == provider and j.rule.judges(origin)]
    # A spec is judged on its nodes only: it has no placement, zone split or peers yet.
    cluster_rules = [] if spec else [j for j in here if j.rule.scope == "cluster"]
    node_rules = [j for j in here if j.rule.scope == "node"]
    paths = tuple(sorted({path for j in [*cluster_rules, *node_rules] for path in j.cluster_paths}))
    return _Chosen(cluster_rules, node_rules, paths)


def _judge_nodes(
    judgings: list[_Judging],
    scene: _Cluster,
    verdicts: Verdicts,
    findings: list[Finding],
    missed: dict[tuple[str, str], list[str]],
) -> None:
    """Each node rule on each node of the cluster, in order: a finding per node it fires on, and the nodes it could
    not be judged on (not for a spec: its nodes do not exist yet)."""
    nodes = scene.cluster.nodes
    builder = scene.builder
    keys = list(map(fact_key_of, nodes))
    firsts: dict[FactKey, Node] = {}  # each key's first node: a pool's nodes share their verdicts
    for node, key in zip(nodes, keys, strict=True):
        firsts.setdefault(key, node)
    # The number of each pool's facts' value: what kept verdicts are found by (none when they are not kept).
    kinds = {key: builder.kind(key) for key in firsts} if verdicts.memo else dict.fromkeys(firsts, 0)
    for judging in judgings:
        token = scene.token(judging.cluster_paths, judging.cluster_reads)
        if verdicts.memo and judging.shares:
            found = {key: verdicts.node(judging, scene, node, kinds[key], token) for key, node in firsts.items()}
            if not any(matched or reasons for matched, reasons in found.values()):
                continue  # nothing fires and nothing is unknown on any node
            outcomes = [found[key] for key in keys]
        else:
            outcomes = [verdicts.node(judging, scene, n, kinds[k], token) for n, k in zip(nodes, keys, strict=True)]
        said: set[tuple[str, str]] = set()  # (resource, message): a planned group's nodes say it once
        for node, (matched, reasons) in zip(nodes, outcomes, strict=True):
            name = named_as(node)
            if matched:
                finding = scene.finding(judging.rule, [name], node, name)
                if (name, finding.message) not in said:
                    said.add((name, finding.message))
                    findings.append(finding)
            elif reasons and not scene.cluster.spec:
                for reason in reasons:
                    listed = missed.setdefault((judging.rule.id, reason), [])
                    if name not in listed:
                        listed.append(name)


def named_as(node: Node) -> str:
    """What a finding calls a node: a planned node its Terraform address (a group's nodes #0, #1 ... are no address
    a user can find, and say one thing), any other its id."""
    return node.source.address if node.origin == "plan" and node.source is not None else node.id


class _Cluster:
    """One cluster being judged: its facts, its nodes' facts as they are asked for, and its findings' fixed
    fields."""

    def __init__(self, cluster: Cluster, origin: str, facts: FactBuilder, paths: tuple[str, ...]) -> None:
        self.cluster = cluster
        self.origin = origin
        self.builder = facts
        self.facts = facts.cluster(cluster)
        # The value of each dotted cluster fact the rules read, as a dict key: read once for all of them.
        self.values = {path: frozen(_at(self.facts, path)) for path in paths}

    def token(self, paths: tuple[str, ...], names: tuple[str, ...]) -> Any:
        """The values of the cluster facts at `paths` and why any of `names` is unknown, as a key."""
        unknown = self.facts["unknown"]
        return (tuple(unknown.get(name) for name in names), tuple(self.values[path] for path in paths))

    def finding(self, rule: Rule, resources: list[str], node: Node | None, name: str | None = None) -> Finding:
        variables: dict[str, Any] = {"cluster": self.facts}
        if node is not None:
            facts = self.builder.node(node)
            variables["node"] = facts if name is None or name == node.id else {**facts, "id": name}
        return make_finding(rule, self.cluster, self.origin, resources, rule.render(variables, self.origin))


class Verdicts:
    """Each verdict by the values it depends on: the rule, and the values of the cluster and node facts it reads
    (and why any of them is unknown). With `memo` off, every verdict is evaluated afresh (the definition the memo
    must match)."""

    def __init__(self, memo: bool = True) -> None:
        self.memo = memo
        self._found: dict[tuple[Any, ...], Verdict] = {}
        self._node_values: dict[tuple[str, int], Any] = {}  # (rule, facts' kind) -> the values it reads

    def cluster(self, judging: _Judging, scene: _Cluster) -> Verdict:
        if not (self.memo and judging.exact):
            return judging.verdict(scene.facts, None)
        key = (judging.rule.id, scene.token(judging.cluster_paths, judging.cluster_reads))
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = judging.verdict(scene.facts, None)
        return found

    def node(self, judging: _Judging, scene: _Cluster, node: Node, kind: int, token: Any) -> Verdict:
        """`kind` is the number of the value of the node's shared facts (FactBuilder.kind; read only when verdicts
        are kept), `token` the values of the cluster facts the rule reads."""
        if not (self.memo and judging.shares):
            return judging.verdict(scene.facts, scene.builder.node(node))
        values = self._node_values.get((judging.rule.id, kind))
        if values is None:
            facts = scene.builder.of(fact_key_of(node))
            values = self._node_values[(judging.rule.id, kind)] = judging.node_values(facts)
        key = (judging.rule.id, token, values)
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = judging.verdict(scene.facts, scene.builder.node(node))
        return found


_ROOT = re.compile(r"\b(node|cluster)\b(\s*\.\s*[a-z_])?")


class _Judging:
    """A rule as one run judges it: what its condition reads."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        reads = sorted(rule._reads)
        self.node_reads = tuple(r.partition(".")[2] for r in reads if r.startswith("node."))
        self.cluster_reads = tuple(r.partition(".")[2] for r in reads if r.startswith("cluster."))
        # The dotted cluster facts it reads (placement.policy): clusters alike in their values share a verdict.
        self.cluster_paths = tuple(
            sorted({path.partition(".")[2] for path in fact_paths(rule.condition) if path.startswith("cluster.")})
        )
        # Exact: the condition reaches the facts only as node.NAME / cluster.NAME, so the values of those facts
        # decide it. Anything else (node["x"], size(cluster)) is judged on all the facts, node by node.
        stripped = STRING_LITERAL.sub('""', rule.condition)
        self.exact = all(match.group(2) for match in _ROOT.finditer(stripped))
        # Whether nodes alike in the values it reads share its verdict: not when it reads a fact that names the node.
        self.shares = self.exact and not set(self.node_reads) & derived.naming(rule.provider)

    def node_values(self, node_facts: dict[str, Any]) -> Any:
        """The values of the node facts this rule reads and why any of them is unknown, as a key."""
        unknown = node_facts["unknown"]
        why = tuple(unknown.get(name) for name in self.node_reads)
        return (why, tuple(frozen(node_facts.get(name, _ABSENT)) for name in self.node_reads))

    def verdict(self, cluster_facts: dict[str, Any], node_facts: dict[str, Any] | None) -> Verdict:
        """The rule on these facts: whether it fires, and if not, why it could not be judged (a fact it reads
        left unknown). A node fact its source left unknown (a plan's value known only after apply) fires nothing."""
        matched = self.rule.matches(self._context(cluster_facts, node_facts))
        if matched and node_facts is not None and self._reads_unknown(node_facts):
            matched = False
        return matched, () if matched else tuple(_reasons(self.rule, cluster_facts, node_facts))

    def _reads_unknown(self, node_facts: dict[str, Any]) -> bool:
        unknown = node_facts["unknown"]
        return any(name in unknown for name in self.node_reads)

    def _context(self, cluster_facts: dict[str, Any], node_facts: dict[str, Any] | None) -> Any:
        """The CEL context: for an exact rule only the facts it reads (handing CEL a whole cluster's facts costs
        more than evaluating the condition)."""
        if self.exact:
            variables = {"cluster": {k: cluster_facts[k] for k in self.cluster_reads if k in cluster_facts}}
            if node_facts is not None:
                variables["node"] = {k: node_facts[k] for k in self.node_reads if k in node_facts}
        else:
            variables = {"cluster": cluster_facts}
            if node_facts is not None:
                variables["node"] = node_facts
        return cel_module().Context(variables=variables)


def _reasons(rule: Rule, cluster_facts: dict[str, Any], node_facts: dict[str, Any] | None) -> list[str]:
    """Why `rule` could not be judged here, if it could not: a fact it reads was left unknown, with why."""
    reasons = []
    for read in sorted(rule._reads):
        root, _, top = read.partition(".")
        known = cluster_facts if root == "cluster" else node_facts
        reason = (known or {}).get("unknown", {}).get(top)
        if reason and reason not in reasons:
            reasons.append(reason)
    return reasons


_ABSENT = ("absent",)


def _at(facts: dict[str, Any], path: str) -> Any:
    """The value at a dotted fact path, or _ABSENT (with where) when a part of it is missing."""
    value: Any = facts
    for depth, part in enumerate(path.split(".")):
        if type(value) is not dict or part not in value:
            return (_ABSENT, depth)
        value = value[part]
    return value


def make_finding(rule: Rule, cluster: Cluster, origin: str, resources: list[str], message: str) -> Finding:
    """A finding of `rule` on `resources` of `cluster`, validated (in pydantic's core: faster than `model_construct`'s
    Python)."""
    variant = rule.variant(origin)
    remediation = variant.remediation or rule.remediation
    return Finding(
        rule=rule.id_for(origin),
        title=variant.title or rule.title,
        severity=variant.severity or rule.severity,
        category=rule.category,
        provider=rule.provider,
        account=cluster.account,
        # Findings on what a template or plan would launch belong to no running cluster.
        cluster=None if cluster.spec else cluster.id,
        resources=resources,
        message=message,
        remediation=remediation.as_text(),
        effect=rule.effect,
        references=list(variant.references or rule.references),
        confidence=rule.confidence,
        fingerprint="",
        waiver=None,
        baseline=None,
    )
