"""The rule book: rule files loaded, checked and selected.

A rule file carries everything about a rule (id, severity, category, condition, effect, message,
remediation, references, passing and failing examples), so docs, reports and tests share one source.
Conditions are compiled once when a file is loaded; the judge (judge.py) evaluates them over derived facts.

Two kinds of rule share the metadata (`RuleMeta`) and the files: an inventory rule (`Rule`, rules/<cloud>/) judges
an inventory with a CEL `condition`; an evidence rule (`EvidenceRule`, rules/evidence/) judges the output of a
running cluster (`evidence: nccl-log` or `nccl-tests`) with the Python check registered under its id
(evidence/registry.py), and its examples are evidence text. Selection, severity overrides, waivers and baselines
read only the shared metadata, so they treat both alike.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import sys
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, TypeVar, cast, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from fabriccheck import celbudget, rule_wording, shipped, textfiles
from fabriccheck import facts as derived
from fabriccheck.errors import FabricCheckError, in_our_words
from fabriccheck.findings import Category, Confidence, Effect, Severity
from fabriccheck.model import PROVIDERS, Origin, Provider

# Letters (a digit may follow the first, as in K8S) then three digits: AWS101, K8S101.
RULE_ID = r"^[A-Z][A-Z0-9]*[A-Z][0-9]{3}$|^[A-Z][0-9]{3}$"
SCOPE_VARIABLES = {"node": {"node", "cluster"}, "cluster": {"cluster"}}
ORIGINS: tuple[Origin, ...] = ("running", "template", "plan")


# A message split at its placeholders (_template): its leading text, then (fact name, its parts, text after) each.
Template = tuple[str, tuple[tuple[str, tuple[str, ...], str], ...]]


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

    id: str | None = Field(default=None, pattern=RULE_ID)
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


class RuleMeta(RuleModel):
    """What every rule says about itself, whatever judges it: the fields selection, severity overrides, waivers,
    baselines, reports and `fabriccheck rules` read."""

    id: str = Field(pattern=RULE_ID)
    title: str
    severity: Severity
    category: Category
    effect: Effect
    confidence: Confidence = "certain"
    remediation: Remediation
    references: list[str] = Field(min_length=1)
    _path: str = PrivateAttr(default="")
    _origins: frozenset[str] = PrivateAttr(default=frozenset(ORIGINS))  # what --select/--ignore left on

    def finding_ids(self) -> dict[str, set[str]]:
        """Each id this rule's findings can carry, with the origins it covers."""
        return {self.id: set(ORIGINS)}

    def judges(self, origin: str) -> bool:
        return origin in self._origins

    @field_validator("references")
    @classmethod
    def _urls(cls, refs: list[str]) -> list[str]:
        return _urls(refs)

    @property
    def path(self) -> str:
        return self._path


class EvidenceExample(RuleModel):
    """Evidence an evidence rule judges: the text of a file (an NCCL log, or nccl-tests output with or without
    NCCL lines) and the command's options (`instance_type`, `nodes`, `provider`, ...)."""

    name: str
    text: str
    options: dict[str, Any] = Field(default_factory=dict)
    flags: list[str] = Field(default_factory=list)  # resources a failing example must flag, exactly


class EvidenceExamples(RuleModel):
    passing: list[EvidenceExample] = Field(min_length=1)
    failing: list[EvidenceExample] = Field(min_length=1)


class EvidenceRule(RuleMeta):
    """A rule judged on evidence from a running cluster by the check registered under its id
    (evidence/registry.py); its findings' messages are the check's, its provider the evidence's."""

    evidence: Literal["nccl-log", "nccl-tests"]
    examples: EvidenceExamples


class Rule(RuleMeta):
    provider: Provider
    scope: Literal["node", "cluster"]
    condition: str
    message: str
    by_origin: dict[Origin, Variant] = Field(default_factory=dict)
    examples: Examples
    _program: Any = PrivateAttr(default=None)
    _reads: frozenset[str] = PrivateAttr(default=frozenset())  # top-level facts read: "node.efa_security"
    _cost: celbudget.Cost | None = PrivateAttr(default=None)  # what an evaluation can cost (None: nothing loops)
    _templates: dict[str, Template] = PrivateAttr(default_factory=dict)  # its messages, split: "" and by origin

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
        template = self._templates.get(origin) or self._templates.get("") or _template(self.message)
        return _render(template, facts, self)


_PLAIN = Variant()


_PLACEHOLDER = re.compile(r"\{([a-z_]+(?:\.[a-z_]+)*)\}")


def _render(template: Template, facts: dict[str, Any], rule: Rule) -> str:
    start, placeholders = template
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


def _template(template: str) -> Template:
    """A message split into its leading text and, for each placeholder, (its fact name, the name's parts, the text
    after it): once, when the rule is loaded."""
    pieces = _PLACEHOLDER.split(template.strip())
    names, texts = pieces[1::2], pieces[2::2]
    return pieces[0], tuple((name, tuple(name.split(".")), text) for name, text in zip(names, texts, strict=True))


# ---------------------------------------------------------------------------------------------- loading


def builtin_rules_dir() -> Path:
    packaged = resources.files("fabriccheck") / "rules"
    if packaged.is_dir():  # installed wheel: rules/ is carried inside the package
        return Path(str(packaged))
    return Path(__file__).resolve().parent.parent / "rules"  # source tree / editable install


def cel_module() -> Any:
    """The CEL evaluator. The `cel` package's __init__ also imports its interactive shell (prompt_toolkit and
    friends, about 170 ms, a fifth of the demo's run time) that fabriccheck never uses; unless something
    imported `cel` already, that shell module is stood in for by an empty one."""
    if "cel" not in sys.modules:
        sys.modules.setdefault("cel.cli", ModuleType("cel.cli"))
    import cel

    return cel


Meta = TypeVar("Meta", bound=RuleMeta)


def _validated(kind: type[Meta], doc: dict[str, Any], path: Path) -> Meta:
    try:
        rule = kind.model_validate(doc)
    except ValidationError as exc:
        raise FabricCheckError(f"{path}: {_problems(kind, exc)}") from None
    rule._path = str(path)
    return rule


def _problems(kind: type[BaseModel], exc: ValidationError) -> str:
    """Every problem of a rule file at once, in one line and in our words: a key that is no field names the field
    it is closest to, and that field is then not also said to be missing."""
    errors = exc.errors()
    meant: set[tuple[Any, ...]] = set()
    guesses: dict[int, str] = {}
    for number, error in enumerate(errors):
        if error["type"] == "extra_forbidden":
            *parent, key = error["loc"]
            close = difflib.get_close_matches(str(key), _fields_at(kind, parent), n=1, cutoff=0.7)
            if close:
                guesses[number] = close[0]
                meant.add((*parent, close[0]))
    said = []
    for number, error in enumerate(errors):
        where = ".".join(str(p) for p in error["loc"]) or "(top level)"
        if error["type"] == "missing" and tuple(error["loc"]) in meant:
            continue  # the misspelt key says it
        if error["type"] == "extra_forbidden":
            guess = f" (did you mean {guesses[number]}?)" if number in guesses else ""
            said.append(f"field {where}: not a field of a rule{guess}")
        else:
            words = "missing (every rule has it)" if error["type"] == "missing" else in_our_words(error)
            said.append(f"field {where}: {words}")
    return said[0] if len(said) == 1 else f"{len(said)} problems: " + "; ".join(said)


def _fields_at(kind: type[BaseModel], loc: Sequence[Any]) -> list[str]:
    """The field names of the model at `loc` inside `kind` (list indexes and mapping keys passed over)."""
    model: type[BaseModel] | None = kind
    for part in loc:
        field = model.model_fields.get(str(part)) if model is not None else None
        if field is not None:
            model = _model_in(field.annotation)
    return sorted(model.model_fields) if model is not None else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for m in map(_model_in, get_args(annotation)) if m is not None), None)


def _load_file(path: Path) -> Rule:
    """An inventory rule's file."""
    rule = _load_entry(path)
    if not isinstance(rule, Rule):
        raise FabricCheckError(f"{path}: an evidence rule, not an inventory rule")
    return rule


MAX_ENTRIES = 100_000  # what a rules folder may hold, sub-folders included: `/` or `/proc` is no rules folder


def rule_files(directory: Path) -> list[Path]:
    """The rule files (*.yaml, then *.yml, each sorted) anywhere under `directory`, without following symlinked
    folders. A folder that cannot be read as it is walked (`/proc`, whose entries vanish as processes end), that
    holds more than MAX_ENTRIES entries, or that holds no rule file at all is one line naming it: a gate that
    silently added no rule is not the gate that was asked for."""

    def unreadable(exc: OSError) -> None:
        raise FabricCheckError(
            f"--rules-dir {directory}: cannot read {exc.filename or directory} ({exc.strerror or exc})"
        ) from None

    found: dict[str, list[Path]] = {".yaml": [], ".yml": []}
    entries = 0
    for folder, folders, files in os.walk(directory, onerror=unreadable):
        entries += len(folders) + len(files)
        if entries > MAX_ENTRIES:
            raise FabricCheckError(
                f"--rules-dir {directory}: more than {MAX_ENTRIES:,} files and folders under it: name the folder "
                "that holds your rules"
            )
        for name in files:
            suffix = os.path.splitext(name)[1]
            if suffix in found:
                found[suffix].append(Path(folder, name))
    if not found[".yaml"] and not found[".yml"]:
        raise FabricCheckError(f"--rules-dir {directory}: holds no rule file (*.yaml or *.yml)")
    return sorted(found[".yaml"]) + sorted(found[".yml"])


def _load_entry(path: Path) -> Rule | EvidenceRule:
    """A rule file: an evidence rule when it says which `evidence` it judges, else an inventory rule."""
    try:
        doc = shipped.load_yaml(textfiles.read_text(path))  # UTF-8 only: one line naming the file otherwise
    except yaml.YAMLError as exc:
        raise textfiles.yaml_error(path, exc) from None
    if not isinstance(doc, dict):
        raise FabricCheckError(f"{path}: a rule file must be a mapping of fields")
    if "evidence" in doc:
        return _validated(EvidenceRule, doc, path)
    return _load_cel(path, _validated(Rule, doc, path))


def _load_cel(path: Path, rule: Rule) -> Rule:
    """An inventory rule's condition compiled and checked against the facts of its provider and scope."""
    cel = cel_module()
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
    for fact in fact_paths(rule.condition):
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
    rule._templates = {"": _template(rule.message)} | {
        origin: _template(v.message) for origin, v in rule.by_origin.items() if v.message
    }
    return rule


STRING_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_FACT_PATH = re.compile(r"\b(node|cluster)((?:\.[a-z_][a-z0-9_]*)+)(\s*\()?")


def fact_paths(condition: str) -> set[str]:
    """The dotted fact paths a condition reads (`node.fabric.kind`), method calls (`.exists(`) left out."""
    found = set()
    for match in _FACT_PATH.finditer(STRING_LITERAL.sub('""', condition)):
        parts = (match.group(1) + match.group(2)).split(".")
        if match.group(3):  # the last part is a method: node.types.exists(...)
            parts = parts[:-1]
        found.add(".".join(parts))
    return found


@dataclass(frozen=True)
class Book:
    """The rule book: inventory rules (CEL) and evidence rules, ids unique across both."""

    rules: list[Rule]
    evidence: list[EvidenceRule]

    @property
    def every(self) -> list[RuleMeta]:
        return sorted([*self.rules, *self.evidence], key=lambda r: r.id)


def load_book(
    extra_dirs: Iterable[Path] = (),
    providers: Collection[str] | None = None,
    check: Callable[[Rule | EvidenceRule], None] | None = None,
) -> Book:
    """The built-in rules (of `providers` only, when given: rules/<provider>/; every folder, rules/evidence/ too,
    when not) and the user's, each checked, and `check` run on each of the user's (examples.load_rules runs their
    examples). The built-in rules' examples are run by the test suite (tests/test_rules.py) for the rules as
    shipped; running them again on every audit cost more than judging a thousand nodes."""
    rules: dict[str, Rule | EvidenceRule] = {}
    owners: dict[str, RuleMeta] = {}  # every id a finding can carry, and the rule that defines it
    builtin = builtin_rules_dir()
    # Only providers the model knows (a saved inventory's `collected` names them), and only those with rules.
    chosen = [builtin / p for p in sorted(providers or ()) if p in PROVIDERS and (builtin / p).is_dir()]
    builtins = [builtin] if providers is None else chosen
    for index, directory in enumerate((*builtins, *extra_dirs)):
        users = index >= len(builtins)
        if not directory.is_dir():
            raise FabricCheckError(f"--rules-dir {directory}: not a folder")
        for path in rule_files(directory):
            rule = _load_entry(path)
            for finding_id in rule.finding_ids():
                if finding_id in owners:
                    field = "id" if finding_id == rule.id else "by_origin"
                    raise FabricCheckError(
                        f"{path}: field {field}: {finding_id} is already defined in {owners[finding_id].path}"
                    )
            for finding_id in rule.finding_ids():
                owners[finding_id] = rule
            if users and check is not None:
                check(rule)
            rules[rule.id] = rule
    ordered = sorted(rules.values(), key=lambda r: r.id)
    return Book([r for r in ordered if isinstance(r, Rule)], [r for r in ordered if isinstance(r, EvidenceRule)])


def load_rules(
    extra_dirs: Iterable[Path] = (),
    providers: Collection[str] | None = None,
    check: Callable[[Rule | EvidenceRule], None] | None = None,
) -> list[Rule]:
    """The inventory rules of the rule book (`load_book`)."""
    return load_book(extra_dirs, providers, check).rules


@functools.cache
def builtin_evidence_rules() -> tuple[EvidenceRule, ...]:
    """The built-in evidence rules (rules/evidence/)."""
    folder = builtin_rules_dir() / "evidence"
    return tuple(load_book([folder], providers=()).evidence) if folder.is_dir() else ()


@functools.cache
def builtin_rules(providers: frozenset[str] | None = None) -> tuple[Rule, ...]:
    return tuple(load_rules(providers=providers))


def select_rules(rules: Sequence[Meta], select: list[str], ignore: list[str]) -> list[Meta]:
    """--select / --ignore take finding ids (a rule's own id, or the id it reports on templates, e.g.
    AWS140), id prefixes (AWS1) or categories, in any case. Ignoring AWS140 silences AWS101 on templates only.
    A token that matches nothing, an empty token, and a selection that leaves no rule are errors: a gate
    that runs no rule must not pass."""

    def hits(option: str, token: str) -> list[tuple[Meta, set[str]]]:
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
            copy = rule.model_copy()  # private attributes (the compiled condition, the path) come along
            copy._origins = frozenset(origins)
            chosen.append(copy)
    if not chosen:
        raise FabricCheckError("--select / --ignore leave no rule to run (see: fabriccheck rules)")
    return chosen


def active_ids(rules: Sequence[RuleMeta]) -> list[str]:
    """The finding ids the chosen rules can report, for the report's `rules` list."""
    return sorted({i for r in rules for i, origins in r.finding_ids().items() if origins & r._origins})


def _tokens(option: str, values: list[str]) -> list[str]:
    tokens = [t.strip() for v in values for t in v.split(",")]
    if any(not t for t in tokens):
        raise FabricCheckError(f"{option}: an empty rule id or category (take ids, prefixes or categories)")
    return tokens


# ---------------------------------------------------------------------------------------------- evaluate
