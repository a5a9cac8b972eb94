"""A rule's examples: each passing and failing example judged as a small inventory of its own.

The test suite runs every example of every built-in rule; a user's rules (--rules-dir) have theirs run when
they are loaded, so a rule whose examples do not give what they declare never judges anything.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from fabriccheck import rulebook
from fabriccheck.cloud import resolve, support
from fabriccheck.clusters import build_clusters
from fabriccheck.errors import FabricCheckError, in_our_words
from fabriccheck.inventory import Inventory
from fabriccheck.judge import evaluate
from fabriccheck.model import PROVIDERS, fact_key, field_path
from fabriccheck.rulebook import EvidenceExample, EvidenceRule, Example, Rule

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
        inventory = Inventory.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = field_path(first["loc"])
        raise FabricCheckError(f"{rule.path}: example {example.name!r}: field {where}: {in_our_words(first)}") from None
    resolve(inventory)
    return inventory


def _mappings(rule: Rule, example: Example, field: str, items: Any) -> list[dict[str, Any]]:
    """An example's nodes (or resources): a list of mappings, or one line naming the file, example and field."""
    bad = next((i for i, x in enumerate(items) if not isinstance(x, dict)), None) if isinstance(items, list) else -1
    if bad is not None:
        where = f"{field}[{bad}]: expected a mapping of fields" if bad >= 0 else f"{field}: expected a list"
        raise FabricCheckError(f"{rule.path}: example {example.name!r}: field inventory.{where}")
    return cast(list[dict[str, Any]], items)


def check_examples(rule: Rule | EvidenceRule) -> None:
    """A rule whose examples do not give what they declare is broken: an error naming the file and example."""
    pairs: list[tuple[str, list[Example] | list[EvidenceExample]]] = [
        ("passing", rule.examples.passing),
        ("failing", rule.examples.failing),
    ]
    for kind, examples in pairs:
        for example in examples:
            flagged = run_any_example(rule, example)
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


def run_any_example(rule: Rule | EvidenceRule, example: Example | EvidenceExample) -> list[str]:
    """The resources an inventory rule or an evidence rule flags in one of its examples, sorted."""
    if isinstance(rule, EvidenceRule):
        from fabriccheck.evidence import rule_examples

        assert isinstance(example, EvidenceExample)
        return rule_examples.run_example(rule, example)
    assert isinstance(example, Example)
    return run_example(rule, example)


def run_example(rule: Rule, example: Example) -> list[str]:
    """The resources `rule` flags in `example`, sorted."""
    inventory = example_inventory(rule, example)
    findings = evaluate([rule], inventory, build_clusters(inventory))
    return sorted({r for f in findings for r in f.resources})


def load_rules(extra_dirs: Iterable[Path] = (), providers: Collection[str] | None = None) -> list[Rule]:
    """The rule book's inventory rules (rulebook.load_rules), the user's checked against their own examples."""
    return rulebook.load_rules(extra_dirs, providers, check=check_examples)


def load_book(extra_dirs: Iterable[Path] = ()) -> rulebook.Book:
    """The whole rule book, inventory and evidence rules (rulebook.load_book), the user's checked against their own
    examples."""
    return rulebook.load_book(extra_dirs, check=check_examples)
