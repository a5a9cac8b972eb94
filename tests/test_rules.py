"""Every example of every rule, plus the rule loader's checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabriccheck import engine
from fabriccheck.errors import FabricCheckError

RULES = engine.load_rules()
CASES = [(r, "passing", e) for r in RULES for e in r.examples.passing] + [
    (r, "failing", e) for r in RULES for e in r.examples.failing
]


@pytest.mark.parametrize(("rule", "kind", "example"), CASES, ids=[f"{r.id}-{k}-{e.name}" for r, k, e in CASES])
def test_rule_example(rule: engine.Rule, kind: str, example: engine.Example) -> None:
    flagged = engine.run_example(rule, example)
    if kind == "passing":
        assert flagged == [], f"{rule.id} flagged {flagged} in a passing example"
    else:
        assert example.flags, f"{rule.id}: a failing example must list the resources it flags"
        assert flagged == sorted(example.flags)


def test_every_aws_category_has_a_rule() -> None:
    categories = {r.category for r in RULES if r.provider == "aws"}
    assert {
        "fabric-missing",
        "fabric-partial",
        "fabric-isolated",
        "placement",
        "instance-choice",
        "network-config",
    } <= categories


def test_rule_ids_are_unique_and_files_named_by_id() -> None:
    for rule in RULES:
        assert Path(rule.path).name.startswith(rule.id)
    assert len({r.id for r in RULES}) == len(RULES)


def _write(tmp_path: Path, text: str, name: str = "X900-test.yaml") -> Path:
    folder = tmp_path / "rules"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)
    return folder


GOOD = (Path(__file__).parent.parent / "rules" / "aws" / "AWS121-spread-placement-group.yaml").read_text()


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda t: t.replace("id: AWS121", "id: X901"), None),
        (lambda t: t.replace("severity: warning", "severity: fatal"), "field severity"),
        (lambda t: t.replace("category: placement", "category: speed"), "field category"),
        (lambda t: t.replace("id: X901", "id: lower1"), "field id"),
        (lambda t: t.replace("effect: loose-placement\n", ""), "field effect: Field required"),
        (
            lambda t: t.replace('cluster.placement.strategy in ["spread", "partition"]', "cluster.fabric_cluster &&"),
            "field condition: does not compile",
        ),
        (
            lambda t: t.replace('cluster.placement.strategy in ["spread", "partition"]', 'node.id == "x"'),
            "unknown variable 'node'",
        ),
        (lambda t: t.replace("{cluster.size} nodes", "{template.name} nodes"), "field message: unknown fact"),
        (lambda t: t.replace("  - https://docs.aws", "  - docs.aws"), "field references"),
        (lambda t: t.replace("title: Training", "title: [Training"), "not valid YAML"),
        (lambda t: t + "\nsurprise: true\n", "field surprise"),
    ],
)
def test_broken_rule_files_are_named(tmp_path: Path, change, expected: str | None) -> None:  # type: ignore[no-untyped-def]
    text = change(GOOD.replace("id: AWS121", "id: X901")) if expected else change(GOOD)
    folder = _write(tmp_path, text)
    if expected is None:
        loaded = engine.load_rules([folder])
        assert "X901" in {r.id for r in loaded}
        return
    with pytest.raises(FabricCheckError) as caught:
        engine.load_rules([folder])
    message = str(caught.value)
    assert "X900-test.yaml" in message and expected in message
    assert "\n" not in message


def test_duplicate_rule_id_is_an_error(tmp_path: Path) -> None:
    folder = _write(tmp_path, GOOD)
    with pytest.raises(FabricCheckError, match="AWS121 is already defined"):
        engine.load_rules([folder])


def test_user_rule_runs_against_the_model(tmp_path: Path) -> None:
    text = GOOD.replace("id: AWS121", "id: X902").replace(
        'cluster.placement.strategy in ["spread", "partition"]', "cluster.size >= 2 && cluster.gpus >= 16"
    )
    rule = next(r for r in engine.load_rules([_write(tmp_path, text)]) if r.id == "X902")
    flagged = engine.run_example(rule, rule.examples.failing[0])
    assert flagged == ["i-1", "i-2"]


def test_select_and_ignore() -> None:
    assert {r.id for r in engine.select_rules(RULES, ["placement"], [])} == {"AWS120", "AWS121", "AWS150"}
    assert {r.id for r in engine.select_rules(RULES, ["AWS14"], ["AWS141"])} == {"AWS140", "AWS142"}
    assert "AWS110" not in {r.id for r in engine.select_rules(RULES, [], ["fabric-isolated"])}
    with pytest.raises(FabricCheckError, match="no rule or category matches 'AWS999'"):
        engine.select_rules(RULES, ["AWS999"], [])
