"""`fabriccheck rules`: the rule list and one rule's documentation, from the rule files themselves."""

from __future__ import annotations

from typing import Any, cast

import orjson
import yaml

from fabriccheck.examples import run_any_example
from fabriccheck.reports.columns import MIN_WIDTH, fit_all, terminal_width, wrap
from fabriccheck.rulebook import EvidenceRule, Rule, RuleMeta

TITLE_ROOM = 30  # the narrowest title column worth keeping beside the id, severity, category and source


class PlainDumper(yaml.SafeDumper):
    """Writes shared parts in full: a reader of one example should not chase &id001 anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _text_block(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    """Evidence text (a log, an nccl-tests table) as a literal block, line for line as the file has it."""
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


PlainDumper.add_representer(str, _text_block)


def _judges(rule: RuleMeta) -> str:
    """What a rule judges: a cloud's inventory (aws, azure, gcp) or evidence from a run (nccl-log, nccl-tests)."""
    return rule.evidence if isinstance(rule, EvidenceRule) else cast(Rule, rule).provider


def _row(rule: RuleMeta) -> dict[str, Any]:
    evidence = isinstance(rule, EvidenceRule)
    inventory = cast(Rule, rule)
    return {
        "id": rule.id,
        "kind": "evidence" if evidence else "inventory",
        "source": _judges(rule),  # the cloud, or the evidence command, whose input the rule judges
        "aliases": {} if evidence else {o: v.id for o, v in inventory.by_origin.items() if v.id},
        "title": rule.title,
        "severity": rule.severity,
        "category": rule.category,
        "provider": None if evidence else inventory.provider,
        "scope": "evidence" if evidence else inventory.scope,
        "effect": rule.effect,
        "confidence": rule.confidence,
        "file": rule.path,
    }


def listing(rules: list[RuleMeta], fmt: str, width: int | None = None) -> str:
    """The rules, one a row; a title too long for the line continues under the title column (or, on a narrow
    terminal, each title on its own indented line)."""
    if fmt == "json":
        return orjson.dumps([_row(r) for r in rules], option=orjson.OPT_INDENT_2).decode() + "\n"
    room = terminal_width() if width is None else max(MIN_WIDTH, width)
    cat = max((len(r.category) for r in rules), default=8)
    rows = [("id", "severity", "category", "judges", "title")]
    for r in rules:
        rows.append((r.id, r.severity, r.category, _judges(r), r.title))
        if not isinstance(r, Rule):
            continue
        for origin, variant in r.by_origin.items():
            if variant.id:
                title = f"{r.id} on {origin}s: {variant.title or r.title}"
                rows.append((variant.id, variant.severity or r.severity, r.category, r.provider, title))
    lead = len(f"{'':<7} {'':<8} {'':<{cat}} {'':<10} ")
    own_line = room - lead < TITLE_ROOM  # too narrow for a title column: the title goes under its row
    lines: list[str] = []
    for rid, severity, category, judges, title in rows:
        head = f"{rid:<7} {severity:<8} {category:<{cat}} {judges:<10} "
        if own_line:
            lines += [head.rstrip(), *wrap(title, room, "    ", "    ")]
        else:
            lines += wrap(title, room, head, " " * lead)
    return "\n".join(lines) + f"\n\n{len(rules)} rules. Explain one: fabriccheck rules ID\n"


def facts(provider: str, node: dict[str, str], cluster: dict[str, str], fmt: str, width: int | None = None) -> str:
    """The facts a rule of `provider` may read, with what each means (continued under the meanings' column, or
    on a narrow terminal under the fact's name)."""
    if fmt == "json":
        doc = {"provider": provider, "node": node, "cluster": cluster}
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
    room = terminal_width() if width is None else max(MIN_WIDTH, width)
    out = [f"Facts that {provider} rule conditions and messages may read:"]
    for root, table in (("node", node), ("cluster", cluster)):
        out.append("")
        for name, meaning in sorted(table.items()):
            head = f"  {root}.{name:<28} "
            rest = " " * len(head) if room - len(head) >= TITLE_ROOM else " " * 6
            out += wrap(meaning, room, head, rest)
    return fit_all(out, room)


def _examples(rule: RuleMeta) -> dict[str, list[dict[str, Any]]]:
    """Each example run now, with what it flags and its input: an inventory, or evidence text and options."""
    out: dict[str, list[dict[str, Any]]] = {}
    book = cast(Rule | EvidenceRule, rule)
    for kind in ("passing", "failing"):
        out[kind] = []
        for e in getattr(book.examples, kind):
            shown = {"inventory": e.inventory} if isinstance(book, Rule) else {"evidence": e.text, "options": e.options}
            out[kind].append({"name": e.name, "flags": run_any_example(book, e), **shown})
    return out


def _logic(rule: RuleMeta) -> dict[str, Any]:
    """What decides a finding: an inventory rule's CEL condition and message, or an evidence rule's registered
    check."""
    if isinstance(rule, EvidenceRule):
        from fabriccheck.evidence import registry

        return {"check": registry.source_of(registry.registered()[rule.id]), "evidence": rule.evidence}
    inventory = cast(Rule, rule)
    return {"condition": inventory.condition, "message": inventory.message}


def explain(rule: RuleMeta, fmt: str, with_examples: bool = True, width: int | None = None) -> str:
    """One rule: what it flags, its fix and references; its passing and failing examples, run now, when
    `with_examples` (the JSON document always holds them)."""
    if fmt == "json":
        doc = _row(rule) | _logic(rule)
        doc |= {
            "remediation": rule.remediation.model_dump(exclude_none=True),
            "references": rule.references,
            "examples": _examples(rule),
        }
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
    room = terminal_width() if width is None else max(MIN_WIDTH, width)
    out = _explained(rule)
    if with_examples:
        out += _example_lines(_examples(rule), room)
    else:
        book = cast(Rule | EvidenceRule, rule)
        passing, failing = len(book.examples.passing), len(book.examples.failing)
        shown = f"show them: fabriccheck rules {rule.id} --examples"
        out += ["", f"Examples: {passing} passing, {failing} failing ({shown})"]
    return fit_all(out, room)


def _explained(rule: RuleMeta) -> list[str]:
    logic = _logic(rule)
    row = _row(rule)
    out = [
        f"{rule.id}: {rule.title}",
        f"severity {rule.severity} · category {rule.category} · scope {row['scope']} · effect {rule.effect}",
        f"file: {rule.path}",
    ]
    if rule.confidence == "possible":
        out.append("confidence possible: the rule may be wrong here; its cost is counted apart from the headline")
    for origin, variant in rule.by_origin.items() if isinstance(rule, Rule) else ():
        if variant.id or variant.severity:
            out.append(
                f"on {origin}s: reported as {variant.id or rule.id}, severity {variant.severity or rule.severity}"
            )
    if "check" in logic:
        out += ["", f"Flags when (judged on `fabriccheck {logic['evidence']}` input):", f"  {logic['check']}"]
    else:
        out += ["", "Flags when:", f"  {logic['condition']}", "", "Message:", f"  {' '.join(logic['message'].split())}"]
    r = rule.remediation
    out += ["", "Fix:", f"  {' '.join(r.summary.split())}"]
    for label, text in (("Console", r.console), ("CLI", r.cli), ("Terraform", r.terraform)):
        if text:
            out.append(f"  {label}: {' '.join(text.split())}")
    return out + ["", "References:"] + [f"  {ref}" for ref in rule.references]


def _example_lines(examples: dict[str, list[dict[str, Any]]], room: int) -> list[str]:
    """Each example with what it flags now, and its input as YAML folded to the width (a literal block's long
    line is folded by fit_all)."""
    out: list[str] = []
    for kind in ("passing", "failing"):
        out += ["", f"{kind.capitalize()} examples (run now):"]
        for example in examples[kind]:
            flagged = ", ".join(example["flags"]) or "nothing"
            out.append(f"  - {example['name']}: flags {flagged}")
            shown = example.get("inventory", {"options": example.get("options"), "evidence": example.get("evidence")})
            body = yaml.dump(shown, Dumper=PlainDumper, sort_keys=False, default_flow_style=None, width=room - 8)
            out += ["      " + line for line in body.rstrip().splitlines()]
    return out
