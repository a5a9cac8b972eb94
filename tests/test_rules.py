"""Every example of every rule, plus the rule loader's checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabriccheck import examples, judge, rulebook
from fabriccheck.errors import FabricCheckError

RULES = examples.load_rules()
CASES = [(r, "passing", e) for r in RULES for e in r.examples.passing] + [
    (r, "failing", e) for r in RULES for e in r.examples.failing
]


@pytest.mark.parametrize(("rule", "kind", "example"), CASES, ids=[f"{r.id}-{k}-{e.name}" for r, k, e in CASES])
def test_rule_example(rule: rulebook.Rule, kind: str, example: rulebook.Example) -> None:
    flagged = examples.run_example(rule, example)
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


def test_rule_files_are_named_by_id() -> None:
    for rule in RULES:
        assert Path(rule.path).name.startswith(rule.id)


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
        (lambda t: t.replace("effect: loose-placement\n", ""), "field effect: missing"),
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
        loaded = examples.load_rules([folder])
        assert "X901" in {r.id for r in loaded}
        return
    with pytest.raises(FabricCheckError) as caught:
        examples.load_rules([folder])
    message = str(caught.value)
    assert "X900-test.yaml" in message and expected in message
    assert "\n" not in message


def test_duplicate_rule_id_is_an_error(tmp_path: Path) -> None:
    folder = _write(tmp_path, GOOD)
    with pytest.raises(FabricCheckError, match="AWS121 is already defined"):
        examples.load_rules([folder])


def test_an_id_a_rule_reports_on_templates_cannot_be_taken_by_another_rule(tmp_path: Path) -> None:
    """AWS140 is what AWS101 reports on launch templates; a user rule with that id would make findings
    ambiguous."""
    folder = _write(tmp_path, GOOD.replace("id: AWS121", "id: AWS140"))
    with pytest.raises(FabricCheckError, match=r"field id: AWS140 is already defined in .*AWS101"):
        examples.load_rules([folder])


def test_a_misspelt_fact_is_an_error_naming_the_file(tmp_path: Path) -> None:
    text = GOOD.replace("id: AWS121", "id: X903")
    text = text.replace("cluster.placement.strategy in", "cluster.placment.strategy in")
    with pytest.raises(FabricCheckError, match=r"X900-test.yaml: field condition: cluster.placment.strategy is not"):
        examples.load_rules([_write(tmp_path, text)])
    # A fact of another provider is no fact of this one: placement is AWS's cluster fact.
    text = (
        GOOD.replace("id: AWS121", "id: X904")
        .replace("provider: aws", "provider: gcp")
        .replace('cluster.placement.strategy in ["spread", "partition"]', "cluster.size > 1")
    )
    with pytest.raises(FabricCheckError, match=r"field message: unknown fact \{cluster.placement"):
        examples.load_rules([_write(tmp_path, text)])


def test_fact_paths_ignore_strings_and_methods() -> None:
    paths = rulebook.fact_paths('node.fabric.kind == "node.nonsense" && cluster.types.exists(t, t == "x")')
    assert paths == {"node.fabric.kind", "cluster.types"}


def test_one_rule_judges_a_running_node_and_a_template() -> None:
    """AWS101 flags a running node and a launch template with the same condition; the template's finding keeps
    the id, severity and wording it had as AWS140."""
    rule = next(r for r in RULES if r.id == "AWS101")
    node = {
        "id": "i-1",
        "instance_type": "p5.48xlarge",
        "tags": {"aws:autoscaling:groupName": "g"},
        "interfaces": [{"id": "eni-1", "interface_type": "interface"}],
    }
    spec = {
        "id": "lt-1:2",
        "spec": {"kind": "launch-template", "name": "gpu", "version": "2", "role": "default"},
        "instance_type": "p5.48xlarge",
        "interfaces": [{"id": "nic-1", "interface_type": "interface"}],
    }
    example = rulebook.Example(name="both", inventory={"nodes": [node, {**node, "id": "i-2"}], "specs": [spec]})
    inventory = examples.example_inventory(rule, example)
    from fabriccheck.clusters import build_clusters

    findings = judge.evaluate([rule], inventory, build_clusters(inventory))
    by_resource = {f.resources[0]: f for f in findings}
    assert set(by_resource) == {"i-1", "i-2", "lt-1:2"}
    assert (by_resource["i-1"].rule, by_resource["i-1"].severity) == ("AWS101", "error")
    assert (by_resource["lt-1:2"].rule, by_resource["lt-1:2"].severity) == ("AWS140", "warning")
    assert by_resource["lt-1:2"].cluster is None and "Launch template gpu" in by_resource["lt-1:2"].message
    assert by_resource["i-1"].account == examples.EXAMPLE_ACCOUNT


def test_user_rule_runs_against_the_model(tmp_path: Path) -> None:
    """A user's rule over neutral facts: its examples are run when it loads, and it judges like a built-in."""
    condition = 'cluster.size >= 2 && cluster.zone_names == "us-east-1b"'
    text = GOOD.replace("id: AWS121", "id: X902")
    text = text.replace('cluster.placement.strategy in ["spread", "partition"]', condition)
    text = text.replace("    - name: spread strategy\n", "    - name: in us-east-1b\n").replace(
        "          - *node\n          - {<<: *node, id: i-2}\n      flags",
        "          - {<<: *node, zone: us-east-1b}\n          - {<<: *node, id: i-2, zone: us-east-1b}\n      flags",
    )
    rule = next(r for r in examples.load_rules([_write(tmp_path, text)]) if r.id == "X902")
    assert examples.run_example(rule, rule.examples.failing[0]) == ["i-1", "i-2"]
    assert examples.run_example(rule, rule.examples.passing[0]) == []


def test_an_example_that_does_not_give_what_it_declares_is_an_error(tmp_path: Path) -> None:
    # The passing example has a cluster placement group; a condition that flags every pair breaks it.
    text = GOOD.replace("id: AWS121", "id: X905").replace(
        'cluster.placement.strategy in ["spread", "partition"]', "cluster.size >= 2"
    )
    with pytest.raises(FabricCheckError) as caught:
        examples.load_rules([_write(tmp_path, text)])
    message = str(caught.value)
    assert "X900-test.yaml: passing example 'cluster strategy' flags i-1, i-2, but declares nothing" in message


def test_rule_explanations_show_examples_without_yaml_anchors() -> None:
    from fabriccheck.reports.rules import explain

    text = explain(next(r for r in RULES if r.id == "AWS101"), "text")
    assert "&id" not in text and "*id" not in text and "<<:" not in text
    assert text.count("p4d.24xlarge") >= 3  # the shared node is written out wherever it is used


def test_select_and_ignore() -> None:
    placement = {r.id for r in rulebook.select_rules(RULES, ["placement"], [])}
    assert {i for i in placement if i.startswith("AWS")} == {"AWS120", "AWS121", "AWS150", "AWS160"}
    assert "GCP130" in placement and "GCP160" in placement
    assert rulebook.active_ids(rulebook.select_rules(RULES, ["AWS14"], ["AWS141"])) == ["AWS140", "AWS142"]
    assert "AWS110" not in {r.id for r in rulebook.select_rules(RULES, [], ["fabric-isolated"])}
    # Ignoring the template id silences AWS101 on templates only; running nodes are still judged.
    chosen = {r.id: r for r in rulebook.select_rules(RULES, [], ["AWS140"])}
    assert chosen["AWS101"].judges("running") and not chosen["AWS101"].judges("template")
    assert "AWS140" not in rulebook.active_ids(list(chosen.values()))
    assert "AWS101" not in {r.id for r in rulebook.select_rules(RULES, [], ["AWS101", "AWS140"])}
    with pytest.raises(FabricCheckError, match="no rule or category matches 'AWS999'"):
        rulebook.select_rules(RULES, ["AWS999"], [])


def test_a_custom_rules_every_problem_is_told_at_once_with_its_misspelt_keys_named(tmp_path: Path) -> None:
    """Issue 30, item 8: one run names them all (it named one, then the next on the next run), each key that is no
    field with the field it is closest to (which is then not also said to be missing), in fabriccheck's words."""
    text = (
        GOOD.replace("id: AWS121", "id: X902")
        .replace("title: Training", "titel: Training")
        .replace("severity: warning", "severty: warning")
        .replace("category: placement", "category: speed")
        .replace("  summary: Move", "  sumary: Move")
    )
    with pytest.raises(FabricCheckError) as caught:
        examples.load_rules([_write(tmp_path, text)])
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'rules' / 'X900-test.yaml'}: 4 problems: ") and "\n" not in message
    for said in (
        "field titel: not a field of a rule (did you mean title?)",
        "field severty: not a field of a rule (did you mean severity?)",
        "field remediation.sumary: not a field of a rule (did you mean summary?)",
        "field category: 'speed' is not one of ",
    ):
        assert said in message, message
    for meant in ("title", "severity", "remediation.summary"):  # the misspelt keys say these are missing
        assert f"field {meant}:" not in message, message
    assert not any(word in message for word in ("Field required", "Input should", "Value error", "Extra inputs"))
