"""The judge: rules evaluated over the derived facts of clusters and their nodes.

Facts are prepared once per node and per cluster (facts.py), not per rule; findings are built from the rule's
fixed fields and the facts that fired it.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import compress, repeat
from typing import Any

from fabriccheck import facts as derived
from fabriccheck import trusted
from fabriccheck.clusters import Cluster, spec_clusters
from fabriccheck.facts import FactBuilder
from fabriccheck.findings import Finding, sort_findings
from fabriccheck.inventory import Inventory
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
) -> Evaluation:
    """Findings, and for each running cluster whose fabric matters the rules that could not be judged: a fact
    they read that the builder could only call unknown, with why (not collected for the node's account and
    region, a security group referenced but not seen, a type whose capability is unknown)."""
    facts = facts or FactBuilder(inventory)
    findings: list[Finding] = []
    unjudged: dict[str, list[Unjudged]] = {}
    by_scope: dict[str, list[_Judging]] = {"node": [], "cluster": []}
    for rule in rules:
        by_scope[rule.scope].append(_Judging(rule))
    _share_cluster_reads([*by_scope["node"], *by_scope["cluster"]])
    # One verdict per rule and distinct values of the facts it reads (with why any of them is unknown), for the
    # whole run: the nodes of a pool, and pools alike, cost one CEL evaluation, not one each.
    verdicts: dict[tuple[Any, ...], tuple[bool, tuple[str, ...]]] = {}
    freezer = _Freezer()
    make = _FindingMaker()
    groups: dict[tuple[str, str], _NodeRules] = {}  # the node rules of a provider and origin
    # What the node rules of a group make of a node, by the values it and its cluster read: the nodes of a pool,
    # and of pools alike, are judged once; each other node costs a look-up.
    node_verdicts: dict[tuple[Any, ...], tuple[list[Rule], list[tuple[str, str]]]] = {}

    for cluster in [*clusters, *(specs if specs is not None else spec_clusters(inventory))]:
        origin = cluster.nodes[0].origin if cluster.spec else "running"
        # A spec is judged on its nodes only: it has no placement, zone split or peers yet.
        rules_here = (
            []
            if cluster.spec
            else [r for r in by_scope["cluster"] if r.provider == cluster.provider and origin in r.origins]
        )
        group = groups.get((cluster.provider, origin))
        if group is None:
            group = groups[(cluster.provider, origin)] = _NodeRules(
                [r for r in by_scope["node"] if r.provider == cluster.provider and origin in r.origins]
            )
        node_rules = group.judgings
        if not rules_here and not node_rules:
            continue
        cluster_facts = facts.cluster(cluster)
        scope = _Scope(cluster_facts, freezer)
        missed: dict[tuple[str, str], list[str]] = {}  # (rule, reason) -> nodes
        for judging in rules_here:
            matched, reasons = judging.verdict(verdicts, scope, None)
            if matched:
                findings.append(make(judging.rule, cluster, [n.id for n in cluster.nodes], {"cluster": cluster_facts}))
            else:
                for reason in reasons:
                    missed[(judging.rule.id, reason)] = []
        if cluster_facts["multi_node"] and node_rules:
            # Nodes mostly share their facts but for their names: the nodes whose facts read by the node rules
            # are alike (and whose clusters' facts read by them are alike) share one verdict per rule. A pool's
            # nodes are told apart by a few passes over the whole list, not by a loop of look-ups per node.
            around = (group, scope.read(group.cluster_paths, group.cluster_reads))
            nodes = cluster.nodes
            # Rules that read no node's name are judged on facts the nodes of a shape share (no copy per node).
            every_facts = facts.shared(nodes) if group.nameless else facts.nodes(nodes)
            shapes: list[Any] = (
                freezer.reader(group.node_reads).many(every_facts) if group.exact else list(map(id, nodes))
            )
            if any(map(_NODE_UNKNOWN, nodes)):
                # A fact the node's source left unknown fires nothing (below): which ones is part of its shape.
                shapes = [
                    (shape, tuple(n.unknown) if n.unknown else None) for shape, n in zip(shapes, nodes, strict=True)
                ]
            here: dict[Any, tuple[list[Rule], list[tuple[str, str]]]] = {}
            firsts = derived.first_indexes(shapes)  # each shape's first node
            for shape in dict.fromkeys(shapes):
                node, node_facts = nodes[firsts[shape]], every_facts[firsts[shape]]
                key = (*around, shape)
                verdict = node_verdicts.get(key)
                if verdict is None:
                    matched_rules: list[Rule] = []
                    unknown: list[tuple[str, str]] = []
                    for judging in node_rules:
                        # The shape means these facts' values only with the same facts read: both are the key.
                        matched, reasons = judging.verdict(verdicts, scope, node_facts, (group.node_reads, shape))
                        if matched and _reads_unknown(judging.rule, node.unknown):
                            # A fact the node's source left unknown (a plan's value known only after apply)
                            # fires nothing; the rule is reported as not judged.
                            matched, reasons = False, tuple(_reasons(judging.rule, scope.facts, node_facts))
                        if matched:
                            matched_rules.append(judging.rule)
                        else:
                            unknown += [(judging.rule.id, reason) for reason in reasons]
                    verdict = node_verdicts[key] = (matched_rules, unknown)
                here[shape] = verdict
            if len(here) == 1:  # one shape: every node alike
                matched_rules, unknown = here[shapes[0]]
                for node, node_facts in zip(nodes, facts.nodes(nodes), strict=True) if matched_rules else ():
                    for rule in matched_rules:
                        findings.append(make(rule, cluster, [node.id], {"node": node_facts, "cluster": cluster_facts}))
                if unknown and not cluster.spec:
                    ids = [n.id for n in nodes]
                    for missing in unknown:
                        missed.setdefault(missing, []).extend(ids)
            else:  # only the nodes of shapes with a finding or a rule not judged need a look
                busy = {shape for shape, (matched_rules, unknown) in here.items() if matched_rules or unknown}
                for index in compress(range(len(nodes)), map(busy.__contains__, shapes)):
                    node = nodes[index]
                    node_facts = facts.node(node)  # its own, which name it
                    matched_rules, unknown = here[shapes[index]]
                    for rule in matched_rules:
                        findings.append(make(rule, cluster, [node.id], {"node": node_facts, "cluster": cluster_facts}))
                    if unknown and not cluster.spec:
                        for missing in unknown:
                            missed.setdefault(missing, []).append(node.id)
        # Only where the fabric matters: a CPU fleet's unknown placement leaves nothing unjudged.
        matters = cluster_facts["fabric_cluster"] or "fabric_cluster" in cluster_facts["unknown"]
        if missed and matters:
            everyone = len(cluster.nodes)
            unjudged[cluster.id] = [
                Unjudged(rule, reason, [] if len(nodes) == everyone else nodes)
                for (rule, reason), nodes in sorted(missed.items())
            ]
    return Evaluation(sort_findings(findings), unjudged)


def _share_cluster_reads(judgings: list[_Judging]) -> None:
    """Give the rules of each provider the cluster facts any of them reads: a cluster's values are then frozen
    into one token (_Scope.read) that every rule's verdict is keyed by, not one token per rule. Keyed by more
    facts than it reads, a verdict is shared by fewer clusters, never by clusters it would judge otherwise."""
    paths: dict[str, set[str]] = {}
    names: dict[str, set[str]] = {}
    for judging in judgings:
        paths.setdefault(judging.provider, set()).update(judging.cluster_paths)
        names.setdefault(judging.provider, set()).update(judging.cluster_reads)
    for judging in judgings:
        judging.cluster_paths = tuple(sorted(paths[judging.provider]))
        judging.cluster_reads = tuple(sorted(names[judging.provider]))


def _reads_unknown(rule: Rule, unknown: dict[str, str]) -> bool:
    return bool(unknown) and any(r.partition(".")[2] in unknown for r in rule._reads if r.startswith("node."))


_ROOT = re.compile(r"\b(node|cluster)\b(\s*\.\s*[a-z_])?")


class _Scope:
    """One cluster's facts and, made only when some verdict is not known yet, its CEL context."""

    def __init__(self, cluster_facts: dict[str, Any], freezer: _Freezer) -> None:
        self.facts = cluster_facts
        self._freezer = freezer
        self._context: Any = None
        self._node: Any = None
        self._read: dict[tuple[tuple[str, ...], tuple[str, ...]], int] = {}

    def read(self, paths: tuple[str, ...], names: tuple[str, ...]) -> int:
        """The values at the cluster fact `paths` and why any of the facts `names` is unknown, as a token: rules
        mostly read the same few cluster facts, so each set is frozen once per cluster."""
        found = self._read.get((paths, names))
        if found is None:
            found = self._read[(paths, names)] = self._freezer.reader(paths, names)(self.facts)
        return found

    def context(self, node_facts: dict[str, Any] | None) -> Any:
        if self._context is None:
            self._context = cel_module().Context(variables={"cluster": self.facts})
        if node_facts is not None and node_facts is not self._node:
            self._context.add_variable("node", node_facts)
            self._node = node_facts
        return self._context


class _Judging:
    """A rule as one run judges it: what its condition reads, and its verdicts by the values read."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.provider = rule.provider
        self.origins = rule._origins
        reads = sorted(rule._reads)
        self.node_reads = tuple(r.partition(".")[2] for r in reads if r.startswith("node."))
        self.cluster_reads = tuple(r.partition(".")[2] for r in reads if r.startswith("cluster."))
        # The dotted cluster facts it reads (placement.policy): clusters differ in facts beside those (their
        # names: placement.policies), and a verdict keyed by the values read is shared by clusters alike in them.
        self.cluster_paths = tuple(
            sorted({path.partition(".")[2] for path in fact_paths(rule.condition) if path.startswith("cluster.")})
        )
        # Exact: the condition reaches the facts only as node.NAME / cluster.NAME, so the values of those
        # facts decide it. Anything else (node["x"], size(cluster)) is judged on all the facts, node by node.
        stripped = STRING_LITERAL.sub('""', rule.condition)
        self.exact = all(match.group(2) for match in _ROOT.finditer(stripped))

    def verdict(
        self,
        verdicts: dict[tuple[Any, ...], tuple[bool, tuple[str, ...]]],
        scope: _Scope,
        node: dict[str, Any] | None,
        shape: Any = (),
    ) -> tuple[bool, tuple[str, ...]]:
        """(matches, why it could not be judged if it does not: `_reasons`) for these facts. `shape` stands
        for the node's facts: the values of (at least) those this rule reads."""
        if self.exact:
            key: tuple[Any, ...] = (self, scope.read(self.cluster_paths, self.cluster_reads), shape)
        else:
            key = (self, id(scope.facts), id(node))
        found = verdicts.get(key)
        if found is None:
            matched = self.rule.matches(self._context(scope, node))
            found = verdicts[key] = (matched, () if matched else tuple(_reasons(self.rule, scope.facts, node)))
        return found

    def _context(self, scope: _Scope, node: dict[str, Any] | None) -> Any:
        """The CEL context: for an exact rule only the facts it reads (handing CEL a whole cluster's facts costs
        more than evaluating the condition)."""
        if not self.exact:
            return scope.context(node)
        variables = {"cluster": {k: scope.facts[k] for k in self.cluster_reads if k in scope.facts}}
        if node is not None:
            variables["node"] = {k: node[k] for k in self.node_reads if k in node}
        return cel_module().Context(variables=variables)


class _NodeRules:
    """The node rules of one provider and origin, and the facts they read between them."""

    def __init__(self, judgings: list[_Judging]) -> None:
        self.judgings = judgings
        self.node_reads = tuple(sorted({name for j in judgings for name in j.node_reads}))
        self.cluster_reads = tuple(sorted({name for j in judgings for name in j.cluster_reads}))
        self.cluster_paths = tuple(sorted({path for j in judgings for path in j.cluster_paths}))
        self.exact = all(j.exact for j in judgings)
        # Whether verdicts may be taken on facts a shape's nodes share: only the node facts named below differ
        # between them, and only exact conditions are known to read nothing else.
        self.nameless = self.exact and not _NAMING_FACTS & set(self.node_reads)


def _frozen(value: Any) -> Any:
    """A fact's value as a dict key. True and 1 are equal in Python but not in CEL: bools keep their type."""
    kind = type(value)
    if kind is str or kind is int or kind is float or value is None:
        return value
    if kind is bool:
        return (bool, value)
    if kind is dict:
        return (dict, *[(k, _frozen(v)) for k, v in value.items()])
    if kind is list:
        return (list, *[_frozen(v) for v in value])
    return (kind, value)


_ABSENT = object()


def _at(facts: dict[str, Any], parts: tuple[str, ...]) -> Any:
    """The value at a dotted fact path: _ABSENT if its last part is missing (CEL's has() is false), and which
    part is missing if one before is (CEL fails there)."""
    value: Any = facts
    for depth, part in enumerate(parts):
        if type(value) is not dict or part not in value:
            return _ABSENT if depth == len(parts) - 1 and type(value) is dict else ("no such fact", depth)
        value = value[part]
    return value


class _Freezer:
    """The values of some facts (and why any is unknown) as a small int, a token: equal values, equal tokens.
    Verdicts are looked up by token: an int hashes at once, a frozen nested dict is walked on every hash."""

    def __init__(self) -> None:
        self._tokens: dict[Any, int] = {}  # frozen values -> token
        self._dicts: dict[int, tuple[Any, Any]] = {}  # id -> (a dict many facts share, kept; frozen)
        self._readers: dict[tuple[tuple[str, ...], tuple[str, ...] | None], _Reader] = {}

    def reader(self, paths: tuple[str, ...], names: tuple[str, ...] | None = None) -> _Reader:
        """A reader of the values at `paths` and why any of the facts `names` (default: `paths`) is unknown."""
        found = self._readers.get((paths, names))
        if found is None:
            found = self._readers[(paths, names)] = _Reader(self, paths, paths if names is None else names)
        return found

    def token(self, why: tuple[str | None, ...] | None, values: tuple[Any, ...]) -> int:
        return self._tokens.setdefault((why, *map(self._frozen, values)), len(self._tokens))

    def _frozen(self, value: Any) -> Any:
        if type(value) is not dict:
            return _frozen(value)
        known = self._dicts.get(id(value))
        if known is None:
            known = self._dicts[id(value)] = (value, _frozen(value))
        return known[1]


class _Reader:
    """The token of the values at some fact paths (and why any of the facts `names` is unknown), looked up first by
    the identity of the objects read.

    The nodes of a pool share their facts' objects but for their names (facts.py builds a pool's facts once), and
    the same objects are the same values: most nodes cost a look-up by ids, not a freeze. Every object so looked up
    is kept here, so that no id is reused while the reader lives; nothing changes facts while they are judged."""

    def __init__(self, freezer: _Freezer, paths: tuple[str, ...], names: tuple[str, ...]) -> None:
        self._freezer = freezer
        self.paths = paths
        self.names = names
        split = [tuple(path.split(".")) for path in paths]
        self._values: Callable[[dict[str, Any]], tuple[Any, ...]] = (
            (lambda facts: tuple(_at(facts, parts) for parts in split))
            if any(len(parts) > 1 for parts in split)
            else operator.itemgetter(*paths)
            if len(paths) > 1
            else lambda facts: tuple(facts[path] for path in paths)
        )
        self._known: dict[tuple[int, ...], int] = {}  # ids of the values, when no fact read is unknown -> token
        self._seen: dict[tuple[Any, ...], int] = {}  # (why each of `names` is unknown, ids of the values) -> token
        self._kept: list[tuple[Any, ...]] = []  # the values looked up

    def __call__(self, facts: dict[str, Any]) -> int:
        unknown = facts.get("unknown")
        try:
            values = self._values(facts)
        except KeyError:  # a fact this provider's facts lack: absent is a value too
            values = tuple(facts.get(path, _ABSENT) for path in self.paths)
        why = tuple(map(unknown.get, self.names)) if unknown else None
        if why is None or not any(why):  # nothing read is unknown (other facts may be: they decide nothing here)
            return self._token(self._known, tuple(map(id, values)), None, values)
        return self._token(self._seen, (why, *map(id, values)), why, values)

    def many(self, every: list[dict[str, Any]]) -> list[int]:
        """The tokens of many facts: for facts of which nothing is unknown (a fleet's, mostly), in passes over the
        list that run in C but for what is seen for the first time."""
        try:
            if any(map(_FACTS_UNKNOWN, every)):
                return list(map(self, every))
            values = list(map(self._values, every))
        except KeyError:  # facts without an `unknown`, or without a fact read: one by one
            return list(map(self, every))
        keys = list(map(tuple, map(map, repeat(id), values)))
        tokens = list(map(self._known.get, keys))
        if None in tokens:
            for index, token in enumerate(tokens):
                if token is None:
                    tokens[index] = self._token(self._known, keys[index], None, values[index])
        return tokens  # type: ignore[return-value]  # no None is left

    def _token(self, seen: dict[Any, int], key: tuple[Any, ...], why: Any, values: tuple[Any, ...]) -> int:
        token = seen.get(key)
        if token is None:
            token = seen[key] = self._freezer.token(why, values)
            self._kept.append(values)
        return token


_NAMING_FACTS = frozenset({"id", "label"})  # the node facts that differ between the nodes of one shape
_FACTS_UNKNOWN = operator.itemgetter("unknown")
_NODE_UNKNOWN = operator.attrgetter("unknown")


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


class _FindingMaker:
    """Findings of one run. A rule's findings on nodes of one origin differ only in where they are and in their
    message, so the rest (remediation text included) is made once per rule and origin, and a finding is built
    from values the rule's loading already checked, without validating each again (trusted.py)."""

    def __init__(self) -> None:
        self._fixed: dict[tuple[int, str], tuple[Rule, dict[str, Any]]] = {}  # the rule kept: its id stays its own

    def __call__(self, rule: Rule, cluster: Cluster, resources_: list[str], facts: dict[str, Any]) -> Finding:
        origin = cluster.nodes[0].origin if cluster.spec else "running"
        fixed = self._fixed.get((id(rule), origin))
        if fixed is None:
            # Every field, in order, with the defaults (immutable: no default factory) the finding starts with.
            every = {**_fixed_fields(rule, origin), "account": "", "cluster": None, "resources": [], "message": ""}
            fixed = self._fixed[(id(rule), origin)] = (rule, trusted.complete(Finding, every))
        values = fixed[1].copy()
        values["account"] = cluster.account
        # Findings on what a template or plan would launch belong to no running cluster.
        values["cluster"] = None if cluster.spec else cluster.id
        values["resources"] = resources_
        values["message"] = rule.render(facts, origin)
        values["references"] = list(values["references"])  # each finding its own list, as validation gives
        return trusted.make(Finding, values)


def _fixed_fields(rule: Rule, origin: str) -> dict[str, Any]:
    """A finding's fields that only its rule and origin decide."""
    variant = rule.variant(origin)
    remediation = variant.remediation or rule.remediation
    return {
        "rule": rule.id_for(origin),
        "title": variant.title or rule.title,
        "severity": variant.severity or rule.severity,
        "category": rule.category,
        "provider": rule.provider,
        "remediation": remediation.as_text(),
        "effect": rule.effect,
        "references": variant.references or rule.references,
        "confidence": rule.confidence,
    }


