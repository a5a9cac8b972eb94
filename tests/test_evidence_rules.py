"""The NCCL2xx evidence rules: rule files like the others, one registered check per id, examples that hold."""

from __future__ import annotations

import pytest

from fabriccheck import examples, rulebook
from fabriccheck.evidence import registry, rule_examples

RULES = rulebook.builtin_evidence_rules()
CASES = [(r, "passing", e) for r in RULES for e in r.examples.passing] + [
    (r, "failing", e) for r in RULES for e in r.examples.failing
]


def test_every_evidence_rule_has_one_registered_check_and_every_check_a_rule() -> None:
    assert {r.id for r in RULES} == set(registry.registered())
    assert {r.id for r in RULES} >= {"NCCL201", "NCCL206", "NCCL210", "NCCL212"}


@pytest.mark.parametrize(("rule", "kind", "example"), CASES, ids=[f"{r.id}-{k}-{e.name}" for r, k, e in CASES])
def test_evidence_rule_example(rule: rulebook.EvidenceRule, kind: str, example: rulebook.EvidenceExample) -> None:
    flagged = rule_examples.run_example(rule, example)
    if kind == "passing":
        assert flagged == []
    else:
        assert example.flags and flagged == sorted(example.flags)


def test_evidence_rules_select_and_ignore_like_any_other() -> None:
    chosen = rulebook.select_rules(RULES, ["NCCL20"], ["NCCL204"])
    assert [r.id for r in chosen] == ["NCCL201", "NCCL202", "NCCL203", "NCCL205", "NCCL206"]
    assert {r.id for r in rulebook.select_rules(RULES, ["fabric-missing"], [])} == {"NCCL201", "NCCL202", "NCCL210"}
    examples.check_examples(RULES[0])  # the loader's own check of a user's rule passes on a built-in one
