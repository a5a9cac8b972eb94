"""The memos that keep judging a large fleet cheap give what the plain definitions give: the judge with its
verdicts kept by value (rule, cluster values read, node fact key) against the judge evaluating every verdict afresh,
on every fixture and on generated pools; a cluster's penalty with its slowdown cached against the uncached one;
facts of equal shapes built apart are one memo entry; and alike nodes share a verdict only where what they read is
alike."""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabriccheck import cost, examples, judge, penalty, rulebook
from fabriccheck.builders import demo_azure, demo_gcp
from fabriccheck.cli import demo_inventory, demo_plan_inventory
from fabriccheck.cloud import resolve
from fabriccheck.clusters import Cluster, build_clusters, spec_clusters
from fabriccheck.facts import FactBuilder, fact_key_of
from fabriccheck.findings import Finding
from fabriccheck.inventory import Inventory
from fabriccheck.model import Node

EFFECTS = ["tcp-fallback", "partial-fabric", "unreachable", "loose-placement", "weaker-fabric", "none"]


def _evaluations(inventory: Inventory) -> tuple[judge.Evaluation, judge.Evaluation]:
    clouds = frozenset({n.provider for n in [*inventory.nodes, *inventory.specs]})
    rules = list(rulebook.builtin_rules(clouds))
    clusters = build_clusters(inventory)
    specs = spec_clusters(inventory)
    kept = judge.judge(rules, inventory, clusters, FactBuilder(inventory), specs)
    plain = judge.judge(rules, inventory, clusters, FactBuilder(inventory), specs, memo=False)
    return kept, plain


def _same(kept: judge.Evaluation, plain: judge.Evaluation) -> None:
    assert [f.model_dump() for f in kept.findings] == [f.model_dump() for f in plain.findings]
    assert kept.unjudged == plain.unjudged


def _fleets() -> list[tuple[str, Inventory]]:
    """Every bundled inventory: the demo's dumps and plans, and generated fleets of many alike pools."""
    from fabriccheck.providers.azure import dump as azure_dump
    from fabriccheck.providers.gcp import dump as gcp_dump

    folder = Path(tempfile.mkdtemp(prefix="fabriccheck-memo-"))
    demo_gcp.fleet(300).write(folder / "gcp")
    subscription = folder / "azure" / demo_azure.SUBSCRIPTION
    subscription.mkdir(parents=True)
    for name, items in demo_azure.fleet(300).files.items():
        (subscription / name).write_text(json.dumps(items), encoding="utf-8")
    return [
        ("demo", demo_inventory()),
        ("demo --plan", demo_plan_inventory()),
        ("gcp fleet", gcp_dump.load_dump(folder / "gcp")),
        ("azure fleet", azure_dump.load_dump(folder / "azure")),
    ]


@pytest.mark.parametrize(("name", "inventory"), _fleets(), ids=lambda x: x if isinstance(x, str) else "")
def test_the_memo_judges_every_fixture_as_the_plain_judge(name: str, inventory: Inventory) -> None:
    kept, plain = _evaluations(inventory)
    assert kept.findings, name
    _same(kept, plain)


# ---------------------------------------------------------------------------------------------- generated pools

_TYPES = ["p5.48xlarge", "p4d.24xlarge", "g5.4xlarge", "g5.12xlarge", "m5.large", "trn1.32xlarge"]
_GROUPS = ["trainers", "eval", "big"]


@st.composite
def _pools(draw: st.DrawFn) -> Inventory:
    """Pools of alike nodes (one shape each) with a few nodes that differ in one value, some left unknown."""
    nodes: list[dict[str, Any]] = []
    for pool in range(draw(st.integers(1, 4))):
        base = {
            "instance_type": draw(st.sampled_from(_TYPES)),
            "zone": draw(st.sampled_from(["us-east-1a", "us-east-1b"])),
            "tags": {"aws:autoscaling:groupName": draw(st.sampled_from(_GROUPS))},
            "placement": draw(st.sampled_from([[], [{"kind": "placement-group", "id": "pg-1"}]])),
        }
        efa = draw(st.integers(0, 4))
        groups = draw(st.sampled_from([["sg-self"], ["sg-open"], []]))
        for i in range(draw(st.integers(1, 6))):
            node = {**base, "id": f"i-{pool}-{i}"}
            attached = efa if draw(st.booleans()) else draw(st.integers(0, 4))
            node["interfaces"] = [
                {"id": f"eni-{pool}-{i}-{n}", "interface_type": "efa", "network_card_index": n,
                 "security_groups": groups}
                for n in range(attached)
            ] or [{"id": f"eni-{pool}-{i}", "security_groups": groups}]  # fmt: skip
            if draw(st.integers(0, 9)) == 0:
                node["unknown"] = {"fabric": "known after apply"}
            nodes.append(node)
    security = [
        {"id": "sg-self", "ingress": [{"protocol": "-1", "group_ids": ["sg-self"]}],
         "egress": [{"protocol": "-1", "group_ids": ["sg-self"]}]},
        {"id": "sg-open", "ingress": [{"protocol": "-1", "cidrs": ["0.0.0.0/0"]}]},
    ]  # fmt: skip
    rule = rulebook.builtin_rules(frozenset({"aws"}))[0]
    example = rulebook.Example(
        name="pools",
        inventory={"nodes": nodes, "aws": {"security_groups": security, "placement_groups": [
            {"name": "pg-1", "strategy": "cluster"}]}},
    )  # fmt: skip
    return examples.example_inventory(rule, example)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_pools())
def test_the_memo_judges_generated_pools_as_the_plain_judge(inventory: Inventory) -> None:
    kept, plain = _evaluations(inventory)
    _same(kept, plain)


# ---------------------------------------------------------------------------------------------- facts by value


def test_equal_shapes_made_apart_share_one_entry_of_facts() -> None:
    inventory = demo_inventory()
    twins = [Node.model_validate(n.model_dump()) for n in inventory.nodes[:5]]
    builder = FactBuilder(inventory)
    for node, twin in zip(inventory.nodes, twins, strict=False):
        assert node.shape is not twin.shape and node.shape == twin.shape
        assert builder.of(fact_key_of(twin)) is builder.of(fact_key_of(node))
        assert builder.node(twin) == builder.node(node)


def test_a_shapes_tags_cannot_be_changed() -> None:
    node = demo_inventory().nodes[0]
    with pytest.raises(TypeError):
        node.tags["team"] = "x"
    with pytest.raises(Exception, match="frozen"):
        node.shape.zone = "elsewhere"  # type: ignore[misc]


# ---------------------------------------------------------------------------------------------- penalty


def _finding(cluster: Cluster, resources: list[str], effect: str) -> Finding:
    return Finding(
        rule="X999", title="t", severity="error", category="fabric-missing", provider=cluster.provider,
        account=cluster.account, cluster=cluster.id, resources=resources, message="m", remediation="r",
        effect=effect, references=[],
    )  # fmt: skip


def _invented(cluster: Cluster, chance: random.Random) -> list[Finding]:
    found = []
    for node in cluster.nodes:
        if chance.random() < 0.3:
            found.append(_finding(cluster, [node.id], chance.choice(EFFECTS)))
    if chance.random() < 0.3:
        found.append(_finding(cluster, [n.id for n in cluster.nodes], chance.choice(EFFECTS)))
    return found


def test_a_clusters_cached_penalty_is_the_uncached_one(monkeypatch: pytest.MonkeyPatch) -> None:
    inventory = demo_inventory()
    chance = random.Random(7)
    invented = [(c, _invented(c, chance)) for c in build_clusters(inventory) for _ in range(3)]
    workload = penalty.WORKLOADS[penalty.DEFAULT_WORKLOAD]
    kept = [cost.cluster_penalty(c, f, workload, 2.5, FactBuilder(inventory)) for c, f in invented]
    monkeypatch.setattr(cost, "_slowdown", cost._slowdown.__wrapped__)
    plain = [cost.cluster_penalty(c, f, workload, 2.5, FactBuilder(inventory)) for c, f in invented]
    assert [p.model_dump() for p in kept] == [p.model_dump() for p in plain]
    assert any(p.estimated and not p.cannot_run and p.slowdown and p.slowdown.high > 1 for p in kept)


# ---------------------------------------------------------------------------------------------- sharing verdicts


def _rule(tmp_path: Path, condition: str, scope: str = "node") -> rulebook.Rule:
    message = "flagged {node.id} with {node.fabric.attached} of {node.fabric.max}"
    if scope == "cluster":
        message = "flagged {cluster.topology.top_nodes}"
    text = f"""
id: X950
title: test
severity: warning
category: placement
provider: aws
scope: {scope}
condition: '{condition}'
effect: none
message: {message}
remediation: {{summary: none}}
references: [https://example.com/x950]
examples:
  passing: [{{name: p, inventory: {{}}}}]
  failing: [{{name: f, inventory: {{}}, flags: [i-0]}}]
"""
    path = tmp_path / "X950.yaml"
    path.write_text(text)
    return rulebook._load_file(path)


def _node(name: str, group: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": name,
        "instance_type": "p5.48xlarge",
        "zone": "us-east-1a",
        "tags": {"aws:autoscaling:groupName": group},
        "interfaces": [{"id": f"{name}-eni0", "interface_type": "interface"}],
        **extra,
    }


def _judged(rule: rulebook.Rule, nodes: list[dict[str, Any]], memo: bool = True) -> judge.Evaluation:
    inventory = examples.example_inventory(rule, rulebook.Example(name="x", inventory={"nodes": nodes}))
    resolve(inventory)
    return judge.judge([rule], inventory, build_clusters(inventory), memo=memo)


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[rulebook.Rule]:
    evaluated: list[rulebook.Rule] = []
    matches = rulebook.Rule.matches

    def counted(self: rulebook.Rule, variables: Any) -> bool:
        evaluated.append(self)
        return matches(self, variables)

    monkeypatch.setattr(rulebook.Rule, "matches", counted)
    return evaluated


def test_alike_nodes_of_many_clusters_each_get_their_own_finding_from_one_evaluation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rule = _rule(tmp_path, "cluster.size > 1 && node.fabric.attached == 0")
    evaluated = _counting(monkeypatch)
    nodes = [_node(f"i-{g}{i}", g) for g in "abc" for i in range(3)]
    findings = _judged(rule, nodes).findings
    assert sorted(r for f in findings for r in f.resources) == sorted(n["id"] for n in nodes)
    assert {f.message for f in findings if f.resources == ["i-b1"]} == {"flagged i-b1 with 0 of 32"}
    assert {f.cluster for f in findings} == {f"aws:example-account:us-east-1:auto-scaling-group/{g}" for g in "abc"}
    assert len(evaluated) == 1  # the three clusters' nodes differ in their tags, which the rule does not read


def test_a_fact_the_source_left_unknown_is_not_shared_from_an_alike_node(tmp_path: Path) -> None:
    # The same facts but one pool's nodes come from a plan that leaves their interfaces unknown until apply.
    rule = _rule(tmp_path, "cluster.size > 1 && node.fabric.attached == 0")
    why = "known after apply"
    known = [_node(f"i-a{i}", "a") for i in range(2)]
    unknown = [_node(f"i-b{i}", "b", unknown={"fabric": why}) for i in range(2)]
    for nodes in (known + unknown, unknown + known):
        evaluation = _judged(rule, nodes)
        assert sorted(r for f in evaluation.findings for r in f.resources) == ["i-a0", "i-a1"]
        assert [
            (u.rule, u.reason) for u in evaluation.unjudged["aws:example-account:us-east-1:auto-scaling-group/b"]
        ] == [("X950", why)]


def _under(name: str, group: str, top: str) -> dict[str, Any]:
    return _node(name, group, topology={"source": "test", "levels": [top, f"{top}-spine", f"{name}-leaf"]})


def test_clusters_alike_in_the_dotted_facts_read_share_one_evaluation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each cluster has its own top-node names, but the rule reads only whether the topology is known.
    rule = _rule(tmp_path, "cluster.size > 1 && cluster.topology.known", scope="cluster")
    evaluated = _counting(monkeypatch)
    nodes = [_under(f"i-{g}{i}", g, f"top-{g}") for g in "abc" for i in range(2)]
    findings = _judged(rule, nodes).findings
    assert sorted(f.cluster or "" for f in findings) == [
        f"aws:example-account:us-east-1:auto-scaling-group/{g}" for g in "abc"
    ]
    assert len(evaluated) == 1


def test_clusters_that_differ_in_a_dotted_fact_read_are_judged_apart(tmp_path: Path) -> None:
    rule = _rule(tmp_path, "cluster.size > 1 && cluster.topology.top_nodes > 1", scope="cluster")
    split = [_under("i-a0", "a", "top-1"), _under("i-a1", "a", "top-2")]
    together = [_under("i-b0", "b", "top-1"), _under("i-b1", "b", "top-1")]
    for nodes in (split + together, together + split):
        findings = _judged(rule, nodes).findings
        assert [(f.cluster, f.message) for f in findings] == [
            ("aws:example-account:us-east-1:auto-scaling-group/a", "flagged 2")
        ]


def test_a_rule_reading_a_whole_nested_fact_shares_nothing_beside_it(tmp_path: Path) -> None:
    # size(cluster.topology) and cluster.topology["top_node_names"] read the whole dict: names count.
    for condition in (
        'cluster.size > 1 && cluster.topology["top_node_names"] == "top-a"',
        'cluster.size > 1 && cluster.topology.top_node_names == "top-a"',
    ):
        rule = _rule(tmp_path, condition, scope="cluster")
        nodes = [_under(f"i-{g}{i}", g, f"top-{g}") for g in "ab" for i in range(2)]
        for memo in (True, False):
            findings = _judged(rule, nodes, memo).findings
            assert [f.cluster for f in findings] == ["aws:example-account:us-east-1:auto-scaling-group/a"], condition


def test_a_rule_reading_a_nodes_name_is_judged_node_by_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rule = _rule(tmp_path, 'cluster.size > 1 && node.id == "i-a1"')
    evaluated = _counting(monkeypatch)
    findings = _judged(rule, [_node(f"i-a{i}", "a") for i in range(3)]).findings
    assert [f.resources for f in findings] == [["i-a1"]]
    assert len(evaluated) == 3


def test_a_finding_made_without_validation_is_the_validated_one() -> None:
    inventory = demo_inventory()
    kept, _ = _evaluations(inventory)
    for finding in kept.findings:
        assert Finding.model_validate(finding.model_dump()).model_dump() == finding.model_dump()
