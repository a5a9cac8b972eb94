"""The engine judges a rule once per distinct value of the facts it reads, for the whole run: these tests hold
that sharing to what the condition actually reads (cluster facts, naming facts, facts reached by index)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fabriccheck import examples, judge, rulebook
from fabriccheck.clusters import build_clusters


def _rule(tmp_path: Path, condition: str) -> rulebook.Rule:
    text = f"""
id: X950
title: test
severity: warning
category: placement
provider: aws
scope: node
condition: '{condition}'
effect: none
message: flagged {{node.id}}
remediation: {{summary: none}}
references: [https://example.com/x950]
examples:
  passing: [{{name: p, inventory: {{}}}}]
  failing: [{{name: f, inventory: {{}}, flags: [i-0]}}]
"""
    path = tmp_path / "X950-test.yaml"
    path.write_text(text)
    return rulebook._load_file(path)


def _node(name: str, group: str, zone: str = "us-east-1a", efa: int = 0) -> dict[str, Any]:
    nics = [{"id": f"{name}-eni0", "interface_type": "interface"}] + [
        {"id": f"{name}-efa{i}", "interface_type": "efa", "network_card_index": i + 1} for i in range(efa)
    ]
    return {
        "id": name,
        "instance_type": "p5.48xlarge",
        "zone": zone,
        "tags": {"aws:autoscaling:groupName": group},
        "interfaces": nics,
    }


def _flagged(rule: rulebook.Rule, nodes: list[dict[str, Any]]) -> list[str]:
    inventory = examples.example_inventory(rule, rulebook.Example(name="x", inventory={"nodes": nodes}))
    findings = judge.evaluate([rule], inventory, build_clusters(inventory))
    return sorted(r for f in findings for r in f.resources)


def test_alike_nodes_in_clusters_that_differ_in_a_cluster_fact_are_judged_apart(tmp_path: Path) -> None:
    rule = _rule(tmp_path, "cluster.zones > 1 && node.fabric.attached == 0")
    split = [_node("i-1", "a"), _node("i-2", "a", zone="us-east-1b")]
    together = [_node("i-3", "b"), _node("i-4", "b")]
    assert _flagged(rule, together + split) == ["i-1", "i-2"]
    assert _flagged(rule, split + together) == ["i-1", "i-2"]


def test_a_rule_that_reads_a_name_judges_each_node(tmp_path: Path) -> None:
    rule = _rule(tmp_path, 'cluster.size > 1 && node.id == "i-2"')
    assert _flagged(rule, [_node("i-1", "a"), _node("i-2", "a"), _node("i-3", "a")]) == ["i-2"]


def test_facts_reached_by_index_are_judged_node_by_node(tmp_path: Path) -> None:
    # node["fabric"] names no fact path the engine can see, so nothing may be shared on the facts it reads.
    rule = _rule(tmp_path, 'cluster.size > 1 && node["fabric"]["attached"] == 0')
    nodes = [_node("i-1", "a", efa=2), _node("i-2", "a"), _node("i-3", "a", efa=2), _node("i-4", "a")]
    assert _flagged(rule, nodes) == ["i-2", "i-4"]
    assert _flagged(rule, [_node("i-1", "a"), _node("i-2", "a", efa=2)]) == ["i-1"]
