"""`fabriccheck rules`: the rule list and one rule's documentation, from the rule files themselves."""

from __future__ import annotations

from typing import Any

import orjson
import yaml

from fabriccheck.examples import run_example
from fabriccheck.rulebook import Rule


class _PlainDumper(yaml.SafeDumper):
    """Writes shared parts in full: a reader of one example should not chase &id001 anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _row(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.id,
        "aliases": {o: v.id for o, v in rule.by_origin.items() if v.id},
        "title": rule.title,
        "severity": rule.severity,
        "category": rule.category,
        "provider": rule.provider,
        "scope": rule.scope,
        "effect": rule.effect,
        "confidence": rule.confidence,
        "file": rule.path,
    }


def listing(rules: list[Rule], fmt: str) -> str:
    if fmt == "json":
        return orjson.dumps([_row(r) for r in rules], option=orjson.OPT_INDENT_2).decode() + "\n"
    width = max((len(r.category) for r in rules), default=8)
    lines = [f"{'id':<7} {'severity':<8} {'category':<{width}} title"]
    for r in rules:
        lines.append(f"{r.id:<7} {r.severity:<8} {r.category:<{width}} {r.title}")
        for origin, variant in r.by_origin.items():
            if variant.id:
                severity = variant.severity or r.severity
                title = f"{r.id} on {origin}s: {variant.title or r.title}"
                lines.append(f"{variant.id:<7} {severity:<8} {r.category:<{width}} {title}")
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


def explain(rule: Rule, fmt: str) -> str:
    examples = {
        kind: [{"name": e.name, "flags": run_example(rule, e), "inventory": e.inventory} for e in items]
        for kind, items in (("passing", rule.examples.passing), ("failing", rule.examples.failing))
    }
    if fmt == "json":
        doc = _row(rule) | {
            "condition": rule.condition,
            "message": rule.message,
            "remediation": rule.remediation.model_dump(exclude_none=True),
            "references": rule.references,
            "examples": examples,
        }
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
    r = rule.remediation
    out = [
        f"{rule.id}: {rule.title}",
        f"severity {rule.severity} · category {rule.category} · scope {rule.scope} · effect {rule.effect}",
        f"file: {rule.path}",
    ]
    if rule.confidence == "possible":
        out.append("confidence possible: the rule may be wrong here; its cost is counted apart from the headline")
    for origin, variant in rule.by_origin.items():
        if variant.id or variant.severity:
            out.append(
                f"on {origin}s: reported as {variant.id or rule.id}, severity {variant.severity or rule.severity}"
            )
    out += [
        "",
        "Flags when:",
        f"  {rule.condition}",
        "",
        "Message:",
        f"  {' '.join(rule.message.split())}",
        "",
        "Fix:",
        f"  {' '.join(r.summary.split())}",
    ]
    for label, text in (("Console", r.console), ("CLI", r.cli), ("Terraform", r.terraform)):
        if text:
            out.append(f"  {label}: {' '.join(text.split())}")
    out += ["", "References:"] + [f"  {ref}" for ref in rule.references]
    for kind in ("passing", "failing"):
        out += ["", f"{kind.capitalize()} examples (run now):"]
        for example in examples[kind]:
            flagged = ", ".join(example["flags"]) or "nothing"
            out.append(f"  - {example['name']}: flags {flagged}")
            body = yaml.dump(
                example["inventory"], Dumper=_PlainDumper, sort_keys=False, default_flow_style=None, width=100
            )
            out += ["      " + line for line in body.rstrip().splitlines()]
    return "\n".join(out) + "\n"
