"""Rule engine: load YAML rules, check them, and evaluate their CEL conditions over the derived facts.

A rule file carries everything about a rule (id, severity, category, condition, effect, message,
remediation, references, passing and failing examples), so docs, reports and tests share one source.
Conditions are compiled once per run; facts are prepared once per node and per cluster, not per rule.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from fabriccheck.clusters import Cluster
from fabriccheck.errors import FabricCheckError
from fabriccheck.facts import FactBuilder
from fabriccheck.model import Inventory

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
Effect = Literal["tcp-fallback", "partial-fabric", "unreachable", "loose-placement", "weaker-fabric", "none"]
SCOPE_VARIABLES = {"node": {"node", "cluster"}, "cluster": {"cluster"}, "template": {"template"}}


class RuleModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


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


class Examples(RuleModel):
    passing: list[Example] = Field(min_length=1)
    failing: list[Example] = Field(min_length=1)


class Rule(RuleModel):
    id: str = Field(pattern=r"^[A-Z]+[0-9]{3}$")
    title: str
    severity: Severity
    category: Category
    provider: Literal["aws", "azure", "gcp"]
    scope: Literal["node", "cluster", "template"]
    condition: str
    effect: Effect
    message: str
    remediation: Remediation
    references: list[str] = Field(min_length=1)
    examples: Examples
    _program: Any = PrivateAttr(default=None)
    _path: str = PrivateAttr(default="")

    @field_validator("references")
    @classmethod
    def _urls(cls, refs: list[str]) -> list[str]:
        for ref in refs:
            if not ref.startswith(("https://", "http://")):
                raise ValueError(f"not a URL: {ref!r}")
        return refs

    @property
    def path(self) -> str:
        return self._path

    def matches(self, variables: Any) -> bool:
        try:
            result = self._program.execute(variables)
        except (KeyError, ValueError, TypeError, RuntimeError) as exc:
            raise FabricCheckError(f"{self._path}: rule {self.id}: condition failed: {exc}") from None
        if not isinstance(result, bool):
            raise FabricCheckError(f"{self._path}: rule {self.id}: condition returned {result!r}, not true/false")
        return result

    def render(self, facts: dict[str, Any]) -> str:
        return _render(self.message, facts, self)


class Finding(BaseModel):
    rule: str
    title: str
    severity: Severity
    category: str
    provider: str
    cluster: str | None
    resources: list[str]
    message: str
    remediation: str
    effect: str
    references: list[str]


_PLACEHOLDER = re.compile(r"\{([a-z_]+(?:\.[a-z_]+)*)\}")


def _lookup(facts: dict[str, Any], dotted: str) -> Any:
    value: Any = facts
    for part in dotted.split("."):
        value = value[part]
    return value


def _render(template: str, facts: dict[str, Any], rule: Rule) -> str:
    def one(match: re.Match[str]) -> str:
        try:
            value = _lookup(facts, match.group(1))
        except (KeyError, TypeError):
            raise FabricCheckError(
                f"{rule.path}: rule {rule.id}: message names unknown fact {{{match.group(1)}}}"
            ) from None
        if isinstance(value, float):
            return f"{value:g}"
        if isinstance(value, list):
            return ", ".join(str(v) for v in value)
        return str(value)

    return _PLACEHOLDER.sub(one, template.strip())


# ---------------------------------------------------------------------------------------------- loading


def builtin_rules_dir() -> Path:
    packaged = resources.files("fabriccheck") / "rules"
    if packaged.is_dir():  # installed wheel: rules/ is carried inside the package
        return Path(str(packaged))
    return Path(__file__).resolve().parent.parent / "rules"  # source tree / editable install


def _load_file(path: Path) -> Rule:
    import cel

    try:
        doc = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        raise FabricCheckError(f"{path}: {where}not valid YAML ({getattr(exc, 'problem', exc)})") from None
    except OSError as exc:
        raise FabricCheckError(f"{path}: cannot read ({exc.strerror})") from None
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
    allowed = SCOPE_VARIABLES[rule.scope]
    # Comprehension variables (the x in list.exists(x, ...)) show up too; only top-level names matter.
    roots = {v for v in rule._program.variables() if "." not in v}
    bad = sorted(v for v in roots if v not in allowed and not re.fullmatch(r"[a-z]", v))
    if bad:
        raise FabricCheckError(
            f"{path}: field condition: unknown variable {bad[0]!r} for scope {rule.scope} "
            f"(use {', '.join(sorted(allowed))})"
        )
    for name in _PLACEHOLDER.findall(rule.message):
        if name.split(".")[0] not in allowed:
            raise FabricCheckError(f"{path}: field message: unknown fact {{{name}}} for scope {rule.scope}")
    return rule


def load_rules(extra_dirs: Iterable[Path] = ()) -> list[Rule]:
    rules: dict[str, Rule] = {}
    for directory in (builtin_rules_dir(), *extra_dirs):
        if not directory.is_dir():
            raise FabricCheckError(f"--rules-dir {directory}: not a folder")
        for path in sorted(directory.rglob("*.yaml")) + sorted(directory.rglob("*.yml")):
            rule = _load_file(path)
            if rule.id in rules:
                raise FabricCheckError(f"{path}: field id: {rule.id} is already defined in {rules[rule.id].path}")
            rules[rule.id] = rule
    return sorted(rules.values(), key=lambda r: r.id)


@functools.cache
def builtin_rules() -> tuple[Rule, ...]:
    return tuple(load_rules())


def select_rules(rules: list[Rule], select: list[str], ignore: list[str]) -> list[Rule]:
    """--select / --ignore take rule ids, id prefixes (AWS1) or categories."""

    def hits(token: str) -> list[Rule]:
        found = [r for r in rules if r.id == token or r.category == token or r.id.startswith(token)]
        if not found:
            raise FabricCheckError(f"no rule or category matches {token!r} (see: fabriccheck rules)")
        return found

    chosen = rules if not select else [r for r in rules if any(r in hits(t) for t in _tokens(select))]
    dropped = {r.id for t in _tokens(ignore) for r in hits(t)}
    return [r for r in chosen if r.id not in dropped]


def _tokens(values: list[str]) -> list[str]:
    return [t.strip() for v in values for t in v.split(",") if t.strip()]


# ---------------------------------------------------------------------------------------------- evaluate


def evaluate(
    rules: list[Rule], inventory: Inventory, clusters: list[Cluster], facts: FactBuilder | None = None
) -> list[Finding]:
    import cel

    facts = facts or FactBuilder(inventory)
    findings: list[Finding] = []
    by_scope: dict[str, list[Rule]] = {"node": [], "cluster": [], "template": []}
    for rule in rules:
        by_scope[rule.scope].append(rule)

    for cluster in clusters:
        rules_here = [r for r in by_scope["cluster"] if r.provider == cluster.provider]
        node_rules = [r for r in by_scope["node"] if r.provider == cluster.provider]
        if not rules_here and not node_rules:
            continue
        cluster_facts = facts.cluster(cluster)
        context = cel.Context(variables={"cluster": cluster_facts})
        for rule in rules_here:
            if rule.matches(context):
                findings.append(_finding(rule, cluster.id, [n.id for n in cluster.nodes], {"cluster": cluster_facts}))
        if not cluster_facts["multi_node"] or not node_rules:
            continue  # a node that trains alone does not use the inter-node fabric
        # Nodes of one cluster mostly share their facts but for their names: evaluate each distinct shape
        # once (a 500-node group costs one evaluation, not 500).
        verdicts: dict[Any, list[Rule]] = {}
        shared = not any(_NAMING_REFERENCE.search(r.condition) for r in node_rules)
        for node in cluster.nodes:
            node_facts = facts.node(node)
            shape = _shape(node_facts) if shared else node.id
            matched = verdicts.get(shape)
            if matched is None:
                context.add_variable("node", node_facts)
                matched = verdicts[shape] = [rule for rule in node_rules if rule.matches(context)]
            for rule in matched:
                findings.append(_finding(rule, cluster.id, [node.id], {"node": node_facts, "cluster": cluster_facts}))

    template_rules = by_scope["template"]
    for template in inventory.launch_templates if template_rules else ():
        template_facts = facts.template(template)
        context = cel.Context(variables={"template": template_facts})
        for rule in template_rules:
            if rule.provider == "aws" and rule.matches(context):
                findings.append(_finding(rule, None, [template_facts["label"]], {"template": template_facts}))
    return sort_findings(findings)


# Facts that name a node rather than describe it; two nodes differing only in these judge alike.
_NAMING_FACTS = frozenset({"id", "efa_security_groups"})
_NAMING_REFERENCE = re.compile(r"node\.(id|efa_security_groups)\b")


def _shape(facts: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(
        (k, tuple(sorted(v.items())) if isinstance(v, dict) else v) for k, v in facts.items() if k not in _NAMING_FACTS
    )


def _finding(rule: Rule, cluster: str | None, resources_: list[str], facts: dict[str, Any]) -> Finding:
    return Finding(
        rule=rule.id,
        title=rule.title,
        severity=rule.severity,
        category=rule.category,
        provider=rule.provider,
        cluster=cluster,
        resources=resources_,
        message=rule.render(facts),
        remediation=rule.remediation.as_text(),
        effect=rule.effect,
        references=rule.references,
    )


def sort_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (-SEVERITY_RANK[f.severity], f.rule, f.cluster or "", f.resources))


# ---------------------------------------------------------------------------------------------- examples

ALL_FACTS = (
    "instances",
    "instance_types",
    "placement_groups",
    "security_groups",
    "subnets",
    "launch_templates",
    "capacity_reservations",
    "topology",
)


def example_inventory(example: Example) -> Inventory:
    """An example's inventory; unless it says otherwise, every fact counts as collected for its regions."""
    data = dict(example.inventory)
    if "collected" not in data:
        regions = {n.get("region", "us-east-1") for n in data.get("nodes", [])}
        regions |= {t.get("region", "us-east-1") for t in data.get("launch_templates", [])}
        data["collected"] = [f"{r}:{f}" for r in sorted(regions) for f in ALL_FACTS]
    return Inventory.model_validate(data)


def run_example(rule: Rule, example: Example) -> list[str]:
    """The resources `rule` flags in `example`, sorted."""
    from fabriccheck.clusters import build_clusters

    inventory = example_inventory(example)
    findings = evaluate([rule], inventory, build_clusters(inventory))
    return sorted({r for f in findings for r in f.resources})
