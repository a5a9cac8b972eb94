"""The shortcuts that keep judging a large fleet cheap give what the plain computation gives: a cluster's penalty
mapped per distinct node key (and cached per run) equals the one made node by node; fact tokens equal exactly
when the values do; a split message renders as the substitution did; alike nodes of different clusters share a
verdict only where what they read is alike."""

from __future__ import annotations

import random
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from fabriccheck import engine, flow, penalty
from fabriccheck.cli import demo_inventory
from fabriccheck.clusters import Cluster, build_clusters
from fabriccheck.engine import Finding
from fabriccheck.errors import FabricCheckError
from fabriccheck.facts import FactBuilder
from fabriccheck.inventory import Inventory

EFFECTS = [
    "tcp-fallback",
    "partial-fabric",
    "unreachable",
    "loose-placement",
    "weaker-fabric",
    "split-nvlink-domain",
    "none",
]


def plain_penalty(
    cluster: Cluster, findings: list[Finding], workload: penalty.Workload, price: float | None, facts: FactBuilder
) -> penalty.Penalty:
    """A cluster's penalty node by node, nothing cached: the model flow.cluster_penalty must agree with."""
    caps = [facts.capability(n) for n in cluster.nodes]
    known = [c for c in caps if c is not None]
    if len(known) < len(caps):
        return penalty.Penalty(
            workload=workload.name, estimated=False, reason="an instance type's capability is unknown"
        )
    effects: dict[str, set[str]] = {n.id: set() for n in cluster.nodes}
    for finding in findings:
        one = len(finding.resources) == 1 and finding.resources[0] in effects
        for node_id in finding.resources if one else effects:
            effects[node_id].add(finding.effect)
    members = []
    for node, cap in zip(cluster.nodes, known, strict=True):
        fabric = penalty.FabricDescription.from_capability(cap)
        mine = effects[node.id]
        if "weaker-fabric" in mine and not fabric.fabric_gbps:
            pick = next(
                (
                    s.capability
                    for s in facts.siblings(cluster.provider, cap.instance_type)
                    if s.capability.accelerators >= cap.accelerators
                ),
                None,
            )
            if pick is not None and pick.accelerators:
                fabric = penalty.FabricDescription.borrowed(cap, pick)
        loose = "loose-placement" in mine
        if "unreachable" in mine:
            state = penalty.FabricState("unreachable", loose_placement=loose)
        elif mine & {"tcp-fallback", "weaker-fabric"}:
            state = penalty.FabricState("tcp-fallback", loose_placement=loose)
        elif "partial-fabric" in mine:
            attached = int(facts.node(node)["fabric"]["attached"])
            state = penalty.FabricState("partial", nics_used=attached, loose_placement=loose)
        else:
            state = penalty.FabricState("healthy", loose_placement=loose)
        # a Kubernetes node group's sockets take the pod network; a split finding, the domains the cluster spans
        domains = int(facts.cluster(cluster)["nvlink"]["domains"]) if "split-nvlink-domain" in mine else None
        state = replace(state, socket_path=penalty.socket_path_of(cluster.signal), nvlink_domains=domains)
        members.append((fabric, state))
    slowdown = penalty.estimate_members(members, workload)
    gpus = min((c.accelerators for c in known), default=0) * cluster.size
    return penalty.penalty_of(slowdown, workload, gpus, price)


def _finding(cluster: Cluster, resources: list[str], effect: str) -> Finding:
    return Finding(
        rule="X900",
        title="t",
        severity="warning",
        category="placement",
        provider=cluster.provider,
        account=cluster.account,
        cluster=cluster.id,
        resources=resources,
        message="m",
        remediation="r",
        effect=effect,
        references=[],
    )


def _invented(cluster: Cluster, chance: random.Random) -> list[Finding]:
    """Findings of random effects on random nodes of `cluster`, and now and then one on the whole cluster."""
    findings = []
    for node in cluster.nodes:
        for _ in range(chance.choice([0, 0, 1, 2])):
            findings.append(_finding(cluster, [node.id], chance.choice(EFFECTS)))
    if chance.random() < 0.3:
        findings.append(_finding(cluster, [n.id for n in cluster.nodes], chance.choice(EFFECTS)))
    return findings


@pytest.fixture(scope="module")
def demo() -> Inventory:
    return demo_inventory()


def test_a_clusters_penalty_is_the_node_by_node_one(demo: Inventory) -> None:
    clusters = [c for c in build_clusters(demo) if c.judged]
    real = engine.judge(list(engine.builtin_rules(None)), demo, clusters).findings
    chance = random.Random(7)
    shared = FactBuilder(demo)  # one builder, as in a run: its penalty caches serve every cluster
    compared = estimated = 0
    for workload in penalty.WORKLOADS.values():
        for price in (None, 2.5):
            for cluster in clusters:
                found = [f for f in real if f.cluster == cluster.id]
                for findings in (found, [], *(_invented(cluster, chance) for _ in range(4))):
                    expected = plain_penalty(cluster, findings, workload, price, FactBuilder(demo))
                    assert flow.cluster_penalty(cluster, findings, workload, price, shared) == expected, cluster.id
                    compared += 1
                    lost = expected.lost_gpu_hours_per_day
                    estimated += expected.estimated and lost is not None and lost.high > 0
    assert estimated > compared // 4  # most comparisons are of real, non-zero estimates


def test_a_pool_of_many_alike_nodes_costs_as_node_by_node(demo: Inventory) -> None:
    # Big clusters: the demo's multi-node clusters with each node repeated, so that keys repeat within a cluster.
    chance = random.Random(11)
    shared = FactBuilder(demo)
    workload = penalty.WORKLOADS[penalty.DEFAULT_WORKLOAD]
    bigs = []  # all alive at once, as an inventory's nodes are: the builder knows a node's facts by its identity
    for cluster in build_clusters(demo):
        if cluster.size < 2:
            continue
        big = Cluster(id=cluster.id, provider=cluster.provider, account=cluster.account, signal=cluster.signal)
        big.nodes = [n.model_copy(update={"id": f"{n.id}-{i}"}) for i in range(8) for n in cluster.nodes]
        bigs.append(big)
    assert len(bigs) > 3
    for big in bigs:
        for findings in ([], _invented(big, chance), _invented(big, chance)):
            expected = plain_penalty(big, findings, workload, 3.0, FactBuilder(demo))
            assert flow.cluster_penalty(big, findings, workload, 3.0, shared) == expected


# ---------------------------------------------------------------------------------------------- tokens


def _token(freezer: engine._Freezer, facts: dict[str, Any], names: tuple[str, ...]) -> int:
    return freezer.reader(names)(facts)


def test_equal_values_in_other_objects_have_one_token() -> None:
    freezer = engine._Freezer()
    names = ("fabric", "zone")
    one = {"fabric": {"attached": 2, "kind": "efa"}, "zone": "a", "unknown": {}}
    other = {"fabric": {"attached": 2, "kind": "efa"}, "zone": "a", "unknown": {}, "id": "else"}
    assert _token(freezer, one, names) == _token(freezer, other, names)
    assert _token(freezer, one, names) == _token(freezer, dict(one), names)  # the same objects again


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ({"x": True}, {"x": 1}),  # equal in Python, not in CEL
        ({"x": None}, {}),  # absent is not null
        ({"x": {"a": True}}, {"x": {"a": 1}}),
        ({"x": [1, 2]}, {"x": [2, 1]}),
        ({"x": 1, "unknown": {"x": "not collected"}}, {"x": 1, "unknown": {"x": "no permission"}}),
        ({"x": 1, "unknown": {"x": "not collected"}}, {"x": 1, "unknown": {}}),
    ],
)
def test_values_that_differ_have_other_tokens(left: dict[str, Any], right: dict[str, Any]) -> None:
    freezer = engine._Freezer()
    assert _token(freezer, left, ("x",)) != _token(freezer, right, ("x",))
    assert _token(freezer, left, ("x", "y")) != _token(freezer, right, ("x", "y"))  # through itemgetter too


def test_a_token_outlives_the_facts_that_made_it() -> None:
    # A looked-up object is kept by the reader: a new object cannot take its id and its token.
    freezer = engine._Freezer()
    reader = freezer.reader(("fabric", "zone"))
    tokens = {reader({"fabric": {"attached": i}, "zone": "a"}) for i in range(200)}
    assert len(tokens) == 200


# ---------------------------------------------------------------------------------------------- messages


def _substituted(template: str, facts: dict[str, Any]) -> str:
    """The message as the engine made it before messages were split once: a regex substitution."""

    def one(match: re.Match[str]) -> str:
        value: Any = facts
        for part in match.group(1).split("."):
            value = value[part]
        if isinstance(value, float):
            return f"{value:g}"
        if isinstance(value, list):
            return ", ".join(str(v) for v in value)
        return str(value)

    return engine._PLACEHOLDER.sub(one, template.strip())


def test_every_builtin_message_renders_as_the_substitution(demo: Inventory) -> None:
    builder = FactBuilder(demo)
    rendered = 0
    for cluster in build_clusters(demo):
        cluster_facts = builder.cluster(cluster)
        for rule in engine.builtin_rules(frozenset({cluster.provider})):
            for origin in engine.ORIGINS:
                template = rule.variant(origin).message or rule.message
                for node in cluster.nodes:
                    facts = {"node": builder.node(node), "cluster": cluster_facts}
                    assert rule.render(facts, origin) == _substituted(template, facts)
                    rendered += 1
    assert rendered > 100


def test_a_message_naming_an_unknown_fact_is_one_clear_error(tmp_path: Path) -> None:
    rule = _rule(tmp_path, "cluster.size > 1")
    with pytest.raises(FabricCheckError, match=r"X950.yaml: rule X950: message names unknown fact \{node.id\}"):
        rule.render({"node": {}}, "running")


# ---------------------------------------------------------------------------------------------- sharing


def _rule(tmp_path: Path, condition: str) -> engine.Rule:
    text = f"""
id: X950
title: test
severity: warning
category: placement
provider: aws
scope: node
condition: '{condition}'
effect: none
message: flagged {{node.id}} with {{node.fabric.attached}} of {{node.fabric.max}}
remediation: {{summary: none}}
references: [https://example.com/x950]
examples:
  passing: [{{name: p, inventory: {{}}}}]
  failing: [{{name: f, inventory: {{}}, flags: [i-0]}}]
"""
    path = tmp_path / "X950.yaml"
    path.write_text(text)
    return engine._load_file(path)


def _node(name: str, group: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": name,
        "instance_type": "p5.48xlarge",
        "zone": "us-east-1a",
        "tags": {"aws:autoscaling:groupName": group},
        "interfaces": [{"id": f"{name}-eni0", "interface_type": "interface"}],
        **extra,
    }


def _judged(rule: engine.Rule, nodes: list[dict[str, Any]]) -> engine.Evaluation:
    inventory = engine.example_inventory(rule, engine.Example(name="x", inventory={"nodes": nodes}))
    return engine.judge([rule], inventory, build_clusters(inventory))


def test_alike_nodes_of_many_clusters_each_get_their_own_finding(tmp_path: Path) -> None:
    rule = _rule(tmp_path, "cluster.size > 1 && node.fabric.attached == 0")
    nodes = [_node(f"i-{g}{i}", g) for g in "abc" for i in range(3)]
    findings = _judged(rule, nodes).findings
    assert sorted(r for f in findings for r in f.resources) == sorted(n["id"] for n in nodes)
    assert {f.message for f in findings if f.resources == ["i-b1"]} == {"flagged i-b1 with 0 of 32"}
    assert {f.cluster for f in findings} == {f"aws:example-account:us-east-1:auto-scaling-group/{g}" for g in "abc"}


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


def _cluster_rule(tmp_path: Path, condition: str) -> engine.Rule:
    path = _rule(tmp_path, condition).path
    text = (
        Path(path)
        .read_text()
        .replace("scope: node", "scope: cluster")
        .replace(
            "flagged {node.id} with {node.fabric.attached} of {node.fabric.max}", "flagged {cluster.topology.top_nodes}"
        )
    )
    Path(path).write_text(text)
    return engine._load_file(Path(path))


def _under(name: str, group: str, top: str) -> dict[str, Any]:
    return _node(name, group, network_nodes=[top, f"{top}-spine", f"{name}-leaf"])


def test_clusters_alike_in_the_dotted_facts_read_share_one_evaluation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each cluster has its own top-node names, but the rule reads only whether the topology is known.
    rule = _cluster_rule(tmp_path, "cluster.size > 1 && cluster.topology.known")
    evaluated: list[engine.Rule] = []
    matches = engine.Rule.matches

    def counted(self: engine.Rule, variables: Any) -> bool:
        evaluated.append(self)
        return matches(self, variables)

    monkeypatch.setattr(engine.Rule, "matches", counted)
    nodes = [_under(f"i-{g}{i}", g, f"top-{g}") for g in "abc" for i in range(2)]
    findings = _judged(rule, nodes).findings
    assert sorted(f.cluster or "" for f in findings) == [
        f"aws:example-account:us-east-1:auto-scaling-group/{g}" for g in "abc"
    ]
    assert len(evaluated) == 1


def test_clusters_that_differ_in_a_dotted_fact_read_are_judged_apart(tmp_path: Path) -> None:
    rule = _cluster_rule(tmp_path, "cluster.size > 1 && cluster.topology.top_nodes > 1")
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
        rule = _cluster_rule(tmp_path, condition)
        nodes = [_under(f"i-{g}{i}", g, f"top-{g}") for g in "ab" for i in range(2)]
        findings = _judged(rule, nodes).findings
        assert [f.cluster for f in findings] == ["aws:example-account:us-east-1:auto-scaling-group/a"], condition


def test_a_finding_made_without_validation_is_the_validated_one(demo: Inventory) -> None:
    clusters = [c for c in build_clusters(demo) if c.judged]
    findings = engine.judge(list(engine.builtin_rules(None)), demo, clusters).findings
    assert len({f.rule for f in findings}) > 5
    for finding in findings:
        validated = Finding.model_validate(finding.model_dump())
        assert finding == validated
        assert list(finding.__dict__) == list(Finding.model_fields)  # pydantic dumps in __dict__ order
        assert finding.model_dump_json() == validated.model_dump_json()
    # Findings of one rule share no list a later step might change on one of them.
    assert len({id(f.references) for f in findings}) == len(findings)
    assert len({id(f.resources) for f in findings}) == len(findings)


def test_many_tokens_at_once_are_the_tokens_one_by_one() -> None:
    shared = {"attached": 2, "kind": "efa"}
    every: list[dict[str, Any]] = [
        {"fabric": shared, "zone": "a", "unknown": {}},
        {"fabric": shared, "zone": "a", "unknown": {}, "id": "other"},
        {"fabric": {"attached": 2, "kind": "efa"}, "zone": "a", "unknown": {}},
        {"fabric": {"attached": True, "kind": "efa"}, "zone": "a", "unknown": {}},
        {"fabric": shared, "zone": "b", "unknown": {}},
        {"fabric": shared, "zone": "a", "unknown": {"zone": "not collected"}},
        {"fabric": shared, "unknown": {}},  # a fact missing
        {"fabric": shared, "zone": "a"},  # no unknown at all
    ]
    names = ("fabric", "zone")
    for start in range(len(every)):  # every way of meeting a value first: in a batch, or one by one
        batch, single = engine._Freezer().reader(names), engine._Freezer().reader(names)
        part = every[start:] + every[:start]
        tokens = batch.many(part[:3]) + batch.many(part[3:])
        assert [tokens.index(t) for t in tokens] == [list(map(single, part)).index(single(f)) for f in part]
    alike = engine._Freezer().reader(names).many(every[:3])
    assert alike[0] == alike[1] == alike[2]


def test_a_fact_not_read_being_unknown_changes_no_token() -> None:
    reader = engine._Freezer().reader(("x",))
    assert reader({"x": 1, "unknown": {"y": "not collected"}}) == reader({"x": 1, "unknown": {}})
    assert reader({"x": 1, "unknown": {"x": "not collected"}}) != reader({"x": 1, "unknown": {}})


@pytest.mark.parametrize("placement_first", [False, True])
def test_nodes_sharing_one_tags_dict_are_grouped_as_each_alone(
    monkeypatch: pytest.MonkeyPatch, placement_first: bool
) -> None:
    """build_clusters joins a node to the cluster of an earlier node with the same tags dict, provider, account
    and region without making its key; grouped that way, every node lands where its own key puts it, whatever
    its placement, region, project, or a tag that keeps it alone (even when a placement signal comes first)."""
    from fabriccheck import clusters
    from fabriccheck.model import Node

    if placement_first:  # a cloud whose placement outranks its tags: the shortcut must not apply past it
        signals = clusters._signals("gcp")
        monkeypatch.setattr(clusters, "_grouping", lambda provider: (frozenset(), (signals[-1], *signals[:-1])))
    chance = random.Random(7)
    pools = [
        {"goog-k8s-cluster-name": "train", "goog-k8s-node-pool-name": "a3"},
        {"goog-k8s-cluster-name": "train", "goog-k8s-node-pool-name": "a3", "slurm_instance_role": "login"},
        {"slurm_cluster_name": "s", "slurm_nodeset": "gpu"},
        {"other": "x"},
    ]
    nodes = [
        Node(
            id=f"vm-{index}",
            provider="gcp",
            account=chance.choice(["proj-a", "proj-b"]),
            region=chance.choice(["us-central1", "europe-west4"]),
            instance_type="a3-highgpu-8g",
            placement=[{"kind": "resource-policy", "id": chance.choice(["p1", "p2"])}] if chance.random() < 0.5 else [],
        )
        for index in range(400)
    ]
    for node in nodes:  # the same dict object on many nodes, as a stamped pool's are (validation would copy it)
        node.__dict__["tags"] = chance.choice(pools)
    grouped = {n.id: c.id for c in build_clusters(Inventory(nodes=nodes)) for n in c.nodes}
    alone = {n.id: clusters.cluster_key(n, None)[0] for n in nodes}
    assert grouped == alone
    assert len(set(alone.values())) > 8  # tags, regions, projects and placements all split the fleet
