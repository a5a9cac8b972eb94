"""Rule engine: load YAML rules, check them, and evaluate their CEL conditions over the derived facts.

A rule file carries everything about a rule (id, severity, category, condition, effect, message,
remediation, references, passing and failing examples), so docs, reports and tests share one source.
Conditions are compiled once per run; facts are prepared once per node and per cluster, not per rule.
"""

from __future__ import annotations

import functools
import operator
import re
import sys
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from importlib import resources
from itertools import compress, repeat
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, cast

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from fabriccheck import celbudget, rule_wording, shipped, textfiles, trusted
from fabriccheck import facts as derived
from fabriccheck.cloud import support
from fabriccheck.clusters import Cluster, build_clusters, spec_clusters
from fabriccheck.errors import FabricCheckError
from fabriccheck.facts import FactBuilder
from fabriccheck.inventory import Inventory
from fabriccheck.model import PROVIDERS, Origin, Provider, fact_key

Severity = Literal["error", "warning", "info"]
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
# The stable category vocabulary (DESIGN.md): dashboards and waivers key on it.
Category = Literal[
    "fabric-missing",
    "fabric-partial",
    "fabric-isolated",
    "placement",
    "instance-choice",
    "network-config",
    "software",
]
# What a finding does to the cluster's fabric; the penalty model reads this, never a number in the rule.
Effect = Literal[
    "tcp-fallback", "partial-fabric", "unreachable", "loose-placement", "weaker-fabric", "split-nvlink-domain", "none"
]
# certain: the facts decide the finding; possible: the rule says it may be wrong (a custom image may carry its own
# drivers), so its cost is counted apart from the headline.
Confidence = Literal["certain", "possible"]
SCOPE_VARIABLES = {"node": {"node", "cluster"}, "cluster": {"cluster"}}
ORIGINS: tuple[Origin, ...] = ("running", "template", "plan")


class RuleModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _urls(refs: list[str]) -> list[str]:
    for ref in refs:
        if not ref.startswith(("https://", "http://")):
            raise ValueError(f"not a URL: {ref!r}")
    return refs


class Remediation(RuleModel):
    summary: str
    console: str | None = None
    cli: str | None = None
    terraform: str | None = None

    def as_text(self) -> str:
        parts = [self.summary.strip()]
        for label, text in (("Console", self.console), ("CLI", self.cli), ("Terraform", self.terraform)):
            if text:
                parts.append(f"{label}: {text.strip()}")
        return "\n".join(parts)


class Example(RuleModel):
    name: str
    inventory: dict[str, Any]
    flags: list[str] = Field(default_factory=list)  # resources a failing example must flag, exactly


class Variant(RuleModel):
    """How a rule reports on nodes of one origin. One condition judges a running node and a node a template
    would launch; the finding on a template keeps the id (and severity and wording) it had before the two
    were one rule, because dashboards, waivers and --ignore lists key on ids."""

    id: str | None = Field(default=None, pattern=r"^[A-Z]+[0-9]{3}$")
    severity: Severity | None = None
    title: str | None = None
    message: str | None = None
    remediation: Remediation | None = None
    references: list[str] | None = None

    @field_validator("references")
    @classmethod
    def _urls(cls, refs: list[str] | None) -> list[str] | None:
        return _urls(refs) if refs is not None else None


class Examples(RuleModel):
    passing: list[Example] = Field(min_length=1)
    failing: list[Example] = Field(min_length=1)


class Rule(RuleModel):
    id: str = Field(pattern=r"^[A-Z]+[0-9]{3}$")
    title: str
    severity: Severity
    category: Category
    provider: Provider
    scope: Literal["node", "cluster"]
    condition: str
    effect: Effect
    confidence: Confidence = "certain"
    message: str
    remediation: Remediation
    references: list[str] = Field(min_length=1)
    by_origin: dict[Origin, Variant] = Field(default_factory=dict)
    examples: Examples
    _program: Any = PrivateAttr(default=None)
    _path: str = PrivateAttr(default="")
    _origins: frozenset[str] = PrivateAttr(default=frozenset(ORIGINS))  # what --select/--ignore left on
    _reads: frozenset[str] = PrivateAttr(default=frozenset())  # top-level facts read: "node.efa_security"
    _cost: celbudget.Cost | None = PrivateAttr(default=None)  # what an evaluation can cost (None: nothing loops)

    def variant(self, origin: str) -> Variant:
        return self.by_origin.get(cast(Origin, origin), _PLAIN)

    def id_for(self, origin: str) -> str:
        return self.variant(origin).id or self.id

    def finding_ids(self) -> dict[str, set[str]]:
        """Each id this rule's findings can carry, with the origins it covers."""
        ids: dict[str, set[str]] = {}
        for origin in ORIGINS:
            ids.setdefault(self.id_for(origin), set()).add(origin)
        return ids

    @property
    def aliases(self) -> list[str]:
        return sorted(i for i in self.finding_ids() if i != self.id)

    def judges(self, origin: str) -> bool:
        return origin in self._origins

    @field_validator("references")
    @classmethod
    def _urls(cls, refs: list[str]) -> list[str]:
        return _urls(refs)

    @property
    def path(self) -> str:
        return self._path

    def matches(self, variables: Any) -> bool:
        celbudget.check(self._cost, variables, f"{self._path}: rule {self.id}")  # before CEL holds the process
        try:
            result = self._program.execute(variables)
        except (KeyError, ValueError, TypeError, RuntimeError) as exc:
            raise FabricCheckError(f"{self._path}: rule {self.id}: condition failed: {exc}") from None
        if not isinstance(result, bool):
            raise FabricCheckError(f"{self._path}: rule {self.id}: condition returned {result!r}, not true/false")
        return result

    def render(self, facts: dict[str, Any], origin: str = "running") -> str:
        return _render(self.variant(origin).message or self.message, facts, self)


_PLAIN = Variant()


class Waived(BaseModel):
    """Why a finding is waived (waivers.py): reported as it is, but it does not fail the gate."""

    reason: str
    expires: str | None = None
    source: str  # the waivers file and the waiver's number in it


class Finding(BaseModel):
    rule: str
    title: str
    severity: Severity
    category: str
    provider: str
    account: str
    cluster: str | None
    resources: list[str]
    message: str
    remediation: str
    effect: str
    references: list[str]
    confidence: Confidence = "certain"
    # Set after judging (flow.py): rule + resource identity (baseline.py), the waiver that covers the finding,
    # and whether a --baseline holds it. A waived or existing finding is reported but does not fail the gate.
    fingerprint: str = ""
    waiver: Waived | None = None
    baseline: Literal["new", "existing"] | None = None

    @property
    def gates(self) -> bool:
        return self.waiver is None and self.baseline != "existing"


_PLACEHOLDER = re.compile(r"\{([a-z_]+(?:\.[a-z_]+)*)\}")


def _render(template: str, facts: dict[str, Any], rule: Rule) -> str:
    start, placeholders = _template(template)
    out = [start]
    for name, parts, literal in placeholders:
        value: Any = facts
        try:
            for part in parts:
                value = value[part]
        except (KeyError, TypeError):
            raise FabricCheckError(f"{rule.path}: rule {rule.id}: message names unknown fact {{{name}}}") from None
        kind = type(value)
        if kind is str:
            out.append(value)
        elif isinstance(value, float):
            out.append(f"{value:g}")
        elif isinstance(value, list):
            out.append(", ".join(str(v) for v in value))
        else:
            out.append(str(value))
        out.append(literal)
    return "".join(out)


@functools.lru_cache(maxsize=1024)
def _template(template: str) -> tuple[str, tuple[tuple[str, tuple[str, ...], str], ...]]:
    """A message split once into its leading text and, for each placeholder, (its fact name, the name's parts,
    the text after it): a fleet's findings render the few messages of its rules hundreds of times."""
    pieces = _PLACEHOLDER.split(template.strip())
    names, texts = pieces[1::2], pieces[2::2]
    return pieces[0], tuple((name, tuple(name.split(".")), text) for name, text in zip(names, texts, strict=True))


# ---------------------------------------------------------------------------------------------- loading


def builtin_rules_dir() -> Path:
    packaged = resources.files("fabriccheck") / "rules"
    if packaged.is_dir():  # installed wheel: rules/ is carried inside the package
        return Path(str(packaged))
    return Path(__file__).resolve().parent.parent / "rules"  # source tree / editable install


def _cel() -> Any:
    """The CEL evaluator. The `cel` package's __init__ also imports its interactive shell (prompt_toolkit and
    friends, about 170 ms, a fifth of the demo's run time) that fabriccheck never uses; unless something
    imported `cel` already, that shell module is stood in for by an empty one."""
    if "cel" not in sys.modules:
        sys.modules.setdefault("cel.cli", ModuleType("cel.cli"))
    import cel

    return cel


def _load_file(path: Path) -> Rule:
    cel = _cel()

    try:
        doc = shipped.load_yaml(textfiles.read_text(path))  # UTF-8 only: one line naming the file otherwise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        raise FabricCheckError(f"{path}: {where}not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(doc, dict):
        raise FabricCheckError(f"{path}: a rule file must be a mapping of fields")
    try:
        rule = Rule.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise FabricCheckError(f"{path}: field {field}: {first['msg']}") from None
    rule._path = str(path)
    try:
        rule._program = cel.compile(rule.condition)
    except ValueError as exc:
        detail = next((line for line in str(exc).splitlines() if "ERROR" in line), str(exc).splitlines()[0])
        raise FabricCheckError(f"{path}: field condition: does not compile: {detail.strip()}") from None
    rule._cost = celbudget.cost_of(rule.condition)
    celbudget.check(rule._cost, {}, f"{path}: rule {rule.id}")  # its own lists alone may be over budget
    allowed = SCOPE_VARIABLES[rule.scope]
    # Comprehension variables (the x in list.exists(x, ...)) show up too; only top-level names matter.
    roots = {v for v in rule._program.variables() if "." not in v}
    bad = sorted(v for v in roots if v not in allowed and not re.fullmatch(r"[a-z]", v))
    if bad:
        raise FabricCheckError(
            f"{path}: field condition: unknown variable {bad[0]!r} for scope {rule.scope} "
            f"(use {', '.join(sorted(allowed))})"
        )
    node_facts, cluster_facts = derived.schema(rule.provider)
    known = {"node": node_facts, "cluster": cluster_facts}
    reads = set()
    for fact in _fact_paths(rule.condition):
        root, _, rest = fact.partition(".")
        if root in allowed and rest not in known[root]:
            raise FabricCheckError(
                f"{path}: field condition: {fact} is not a {rule.provider} {root} fact (see: fabriccheck rules --facts)"
            )
        reads.add(f"{root}.{rest.split('.')[0]}")
    rule._reads = frozenset(reads)
    messages = [("message", rule.message)] + [
        (f"by_origin.{o}.message", v.message) for o, v in rule.by_origin.items() if v.message
    ]
    for field_name, message in messages:
        for name in _PLACEHOLDER.findall(message):
            root, _, rest = name.partition(".")
            if root not in allowed or rest not in known[root]:
                raise FabricCheckError(f"{path}: field {field_name}: unknown fact {{{name}}} for scope {rule.scope}")
        disagreement = rule_wording.disagreement(rule.effect, message)
        if disagreement:
            raise FabricCheckError(f"{path}: field {field_name}: {disagreement}")
    return rule


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_FACT_PATH = re.compile(r"\b(node|cluster)((?:\.[a-z_][a-z0-9_]*)+)(\s*\()?")


def _fact_paths(condition: str) -> set[str]:
    """The dotted fact paths a condition reads (`node.fabric.kind`), method calls (`.exists(`) left out."""
    found = set()
    for match in _FACT_PATH.finditer(_STRING.sub('""', condition)):
        parts = (match.group(1) + match.group(2)).split(".")
        if match.group(3):  # the last part is a method: node.types.exists(...)
            parts = parts[:-1]
        found.add(".".join(parts))
    return found


def load_rules(extra_dirs: Iterable[Path] = (), providers: Collection[str] | None = None) -> list[Rule]:
    """The built-in rules (of `providers` only, when given: rules/<provider>/) and the user's, each checked, and
    the user's examples run. The built-in rules' examples are run by the test suite (tests/test_rules.py) for
    the rules as shipped; running them again on every audit cost more than judging a thousand nodes."""
    rules: dict[str, Rule] = {}
    owners: dict[str, Rule] = {}  # every id a finding can carry, and the rule that defines it
    builtin = builtin_rules_dir()
    # Only providers the model knows (a saved inventory's `collected` names them), and only those with rules.
    chosen = [builtin / p for p in sorted(providers or ()) if p in PROVIDERS and (builtin / p).is_dir()]
    builtins = [builtin] if providers is None else chosen
    for index, directory in enumerate((*builtins, *extra_dirs)):
        users = index >= len(builtins)
        if not directory.is_dir():
            raise FabricCheckError(f"--rules-dir {directory}: not a folder")
        for path in sorted(directory.rglob("*.yaml")) + sorted(directory.rglob("*.yml")):
            rule = _load_file(path)
            for finding_id in rule.finding_ids():
                if finding_id in owners:
                    field = "id" if finding_id == rule.id else "by_origin"
                    raise FabricCheckError(
                        f"{path}: field {field}: {finding_id} is already defined in {owners[finding_id].path}"
                    )
            for finding_id in rule.finding_ids():
                owners[finding_id] = rule
            if users:
                check_examples(rule)
            rules[rule.id] = rule
    return sorted(rules.values(), key=lambda r: r.id)


@functools.cache
def builtin_rules(providers: frozenset[str] | None = None) -> tuple[Rule, ...]:
    return tuple(load_rules(providers=providers))


def select_rules(rules: list[Rule], select: list[str], ignore: list[str]) -> list[Rule]:
    """--select / --ignore take finding ids (a rule's own id, or the id it reports on templates, e.g.
    AWS140), id prefixes (AWS1) or categories, in any case. Ignoring AWS140 silences AWS101 on templates only.
    A token that matches nothing, an empty token, and a selection that leaves no rule are errors: a gate
    that runs no rule must not pass."""

    def hits(option: str, token: str) -> list[tuple[Rule, set[str]]]:
        wanted = token.upper()
        found = [
            (rule, origins)
            for rule in rules
            for finding_id, origins in rule.finding_ids().items()
            if finding_id == wanted or rule.category == token.lower() or finding_id.startswith(wanted)
        ]
        if not found:
            raise FabricCheckError(f"{option} {token}: no rule or category matches {token!r} (see: fabriccheck rules)")
        return found

    on: dict[str, set[str]] = {}
    if select:
        for token in _tokens("--select", select):
            for rule, origins in hits("--select", token):
                on.setdefault(rule.id, set()).update(origins)
    else:
        on = {rule.id: set(ORIGINS) for rule in rules}
    for token in _tokens("--ignore", ignore):
        for rule, origins in hits("--ignore", token):
            on.get(rule.id, set()).difference_update(origins)
    chosen = []
    for rule in rules:
        origins = on.get(rule.id, set())
        if origins:
            copy = rule.model_copy()
            copy._program, copy._path, copy._origins = rule._program, rule._path, frozenset(origins)
            copy._reads, copy._cost = rule._reads, rule._cost
            chosen.append(copy)
    if not chosen:
        raise FabricCheckError("--select / --ignore leave no rule to run (see: fabriccheck rules)")
    return chosen


def active_ids(rules: list[Rule]) -> list[str]:
    """The finding ids the chosen rules can report, for the report's `rules` list."""
    return sorted({i for r in rules for i, origins in r.finding_ids().items() if origins & r._origins})


def _tokens(option: str, values: list[str]) -> list[str]:
    tokens = [t.strip() for v in values for t in v.split(",")]
    if any(not t for t in tokens):
        raise FabricCheckError(f"{option}: an empty rule id or category (take ids, prefixes or categories)")
    return tokens


# ---------------------------------------------------------------------------------------------- evaluate


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
            self._context = _cel().Context(variables={"cluster": self.facts})
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
            sorted({path.partition(".")[2] for path in _fact_paths(rule.condition) if path.startswith("cluster.")})
        )
        # Exact: the condition reaches the facts only as node.NAME / cluster.NAME, so the values of those
        # facts decide it. Anything else (node["x"], size(cluster)) is judged on all the facts, node by node.
        stripped = _STRING.sub('""', rule.condition)
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
        return _cel().Context(variables=variables)


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


def sort_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (-SEVERITY_RANK[f.severity], f.rule, f.account, f.cluster or "", f.resources))


# ---------------------------------------------------------------------------------------------- examples

EXAMPLE_ACCOUNT = "example-account"


def example_inventory(rule: Rule, example: Example) -> Inventory:
    """An example's inventory. Nodes and specs default to the rule's provider, an example account and
    us-east-1; unless the example says otherwise, every fact its provider collects counts as collected for
    every account and region in it."""
    data = dict(example.inventory)
    scopes: set[tuple[str, str]] = set()
    for key in ("nodes", "specs"):
        items = []
        for item in _mappings(rule, example, key, data.get(key, [])):
            item = {"provider": rule.provider, "account": EXAMPLE_ACCOUNT, "region": "us-east-1", **item}
            if key == "specs":
                item.setdefault("origin", "template")
            scopes.add((item["account"], item["region"]))
            items.append(item)
        data[key] = items
    for namespace in PROVIDERS:
        if isinstance(data.get(namespace), dict):
            data[namespace] = {
                kind: [
                    {"account": EXAMPLE_ACCOUNT, "region": "us-east-1", **item}
                    for item in _mappings(rule, example, f"{namespace}.{kind}", items)
                ]
                for kind, items in data[namespace].items()
            }
    if "collected" not in data:
        data["collected"] = [
            fact_key(rule.provider, account, region, fact)
            for account, region in sorted(scopes)
            for fact in support(rule.provider).collected_facts
        ]
    try:
        return Inventory.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise FabricCheckError(f"{rule.path}: example {example.name!r}: field {where}: {first['msg']}") from None


def _mappings(rule: Rule, example: Example, field: str, items: Any) -> list[dict[str, Any]]:
    """An example's nodes (or resources): a list of mappings, or one line naming the file, example and field."""
    bad = next((i for i, x in enumerate(items) if not isinstance(x, dict)), None) if isinstance(items, list) else -1
    if bad is not None:
        where = f"{field}[{bad}]: expected a mapping of fields" if bad >= 0 else f"{field}: expected a list"
        raise FabricCheckError(f"{rule.path}: example {example.name!r}: field inventory.{where}")
    return cast(list[dict[str, Any]], items)


def check_examples(rule: Rule) -> None:
    """A rule whose examples do not give what they declare is broken: an error naming the file and example."""
    for kind, examples in (("passing", rule.examples.passing), ("failing", rule.examples.failing)):
        for example in examples:
            flagged = run_example(rule, example)
            expected = sorted(example.flags) if kind == "failing" else []
            if kind == "failing" and not expected:
                raise FabricCheckError(
                    f"{rule.path}: example {example.name!r}: a failing example must list what it flags (flags:)"
                )
            if flagged != expected:
                raise FabricCheckError(
                    f"{rule.path}: {kind} example {example.name!r} flags {', '.join(flagged) or 'nothing'}, "
                    f"but declares {', '.join(expected) or 'nothing'}"
                )


def run_example(rule: Rule, example: Example) -> list[str]:
    """The resources `rule` flags in `example`, sorted."""
    inventory = example_inventory(rule, example)
    findings = evaluate([rule], inventory, build_clusters(inventory))
    return sorted({r for f in findings for r in f.resources})
