"""`fabriccheck rules`: the rule list and one rule's documentation, from the rule files themselves."""

from __future__ import annotations

from typing import Any, cast

import orjson
import yaml

from fabriccheck.examples import run_any_example
from fabriccheck.rulebook import EvidenceRule, Rule, RuleMeta


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


def listing(rules: list[RuleMeta], fmt: str) -> str:
    if fmt == "json":
        return orjson.dumps([_row(r) for r in rules], option=orjson.OPT_INDENT_2).decode() + "\n"
    width = max((len(r.category) for r in rules), default=8)
    lines = [f"{'id':<7} {'severity':<8} {'category':<{width}} {'judges':<10} title"]
    for r in rules:
        lines.append(f"{r.id:<7} {r.severity:<8} {r.category:<{width}} {_judges(r):<10} {r.title}")
        if not isinstance(r, Rule):
            continue
        for origin, variant in r.by_origin.items():
            if variant.id:
                severity = variant.severity or r.severity
                title = f"{r.id} on {origin}s: {variant.title or r.title}"
                lines.append(f"{variant.id:<7} {severity:<8} {r.category:<{width}} {r.provider:<10} {title}")
    return "\n".join(lines) + f"\n\n{len(rules)} rules. Explain one: fabriccheck rules ID\n"


def facts(provider: str, node: dict[str, str], cluster: dict[str, str], fmt: str) -> str:
    """The facts a rule of `provider` may read, with what each means."""
    if fmt == "json":
        doc = {"provider": provider, "node": node, "cluster": cluster}
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
    out = [f"Facts that {provider} rule conditions and messages may read:"]
    for root, table in (("node", node), ("cluster", cluster)):
        out.append("")
        out += [f"  {root}.{name:<28} {meaning}" for name, meaning in sorted(table.items())]
    return "\n".join(out) + "\n"


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


def explain(rule: RuleMeta, fmt: str) -> str:
    examples = _examples(rule)
    logic = _logic(rule)
    if fmt == "json":
        doc = _row(rule) | logic
        doc |= {
            "remediation": rule.remediation.model_dump(exclude_none=True),
            "references": rule.references,
            "examples": examples,
        }
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
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
    out += ["", "References:"] + [f"  {ref}" for ref in rule.references]
    for kind in ("passing", "failing"):
        out += ["", f"{kind.capitalize()} examples (run now):"]
        for example in examples[kind]:
            flagged = ", ".join(example["flags"]) or "nothing"
            out.append(f"  - {example['name']}: flags {flagged}")
            shown = example.get("inventory", {"options": example.get("options"), "evidence": example.get("evidence")})
            body = yaml.dump(shown, Dumper=PlainDumper, sort_keys=False, default_flow_style=None, width=100)
            out += ["      " + line for line in body.rstrip().splitlines()]
    return "\n".join(out) + "\n"
