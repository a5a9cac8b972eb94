"""`fabriccheck rules`: the rule list and one rule's documentation, from the rule files themselves."""

from __future__ import annotations

from typing import Any

import orjson
import yaml

from fabriccheck.engine import Rule, run_example


def _row(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.id,
        "title": rule.title,
        "severity": rule.severity,
        "category": rule.category,
        "provider": rule.provider,
        "scope": rule.scope,
        "effect": rule.effect,
        "file": rule.path,
    }


def listing(rules: list[Rule], fmt: str) -> str:
    if fmt == "json":
        return orjson.dumps([_row(r) for r in rules], option=orjson.OPT_INDENT_2).decode() + "\n"
    width = max((len(r.category) for r in rules), default=8)
    lines = [f"{'id':<7} {'severity':<8} {'category':<{width}} title"]
    lines += [f"{r.id:<7} {r.severity:<8} {r.category:<{width}} {r.title}" for r in rules]
    return "\n".join(lines) + f"\n\n{len(rules)} rules. Explain one: fabriccheck rules ID\n"


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
            body = yaml.safe_dump(example["inventory"], sort_keys=False, default_flow_style=None, width=100)
            out += ["      " + line for line in body.rstrip().splitlines()]
    return "\n".join(out) + "\n"
