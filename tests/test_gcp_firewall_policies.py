"""GCP firewall policies and the targets of VPC firewall rules (issue 28, item 6).

Shapes: the demo project's answers (tools/build_demo_gcp.py, as `gcloud compute networks list --format=json` and
`gcloud compute firewall-rules list --format=json` print them), with the fields the Compute API v1 defines:
networks[].firewallPolicy (the global network firewall policy associated with the network, output only) and
networks[].networkFirewallPolicyEnforcementOrder (AFTER_CLASSIC_FIREWALL, the default, or BEFORE_CLASSIC_FIREWALL;
https://cloud.google.com/ruby/docs/reference/google-cloud-compute-v1/latest/Google-Cloud-Compute-V1-Network-NetworkFirewallPolicyEnforcementOrder);
firewalls[].targetTags / targetServiceAccounts / sourceTags and instances[].tags.items / serviceAccounts[].email
(https://cloud.google.com/firewall/docs/firewalls#rule_assignment). The evaluation order (VPC firewall rules
before or after the network firewall policies, a rule's allow or deny final) is Google's "Evaluation order for
firewall policies and rules" (https://cloud.google.com/firewall/docs/firewall-policies-rule-eval-order).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gce_replay import (
    ComputeReplay,
    a3_plan,
    cluster_of,
    demo_project,
    gcp110_report,
    judge_a3_plan,
    plan_policy_rule,
    policy_rule,
    predefined_rules,
    serve,
    use_fake_google_key,
)

from fabriccheck.builders.demo_gcp import PROJECT, Project, build
from fabriccheck.builders.plan_builder import ref
from fabriccheck.providers.gcp.firewall import tcp_reach
from fabriccheck.resources.gcp import FirewallRule

GPU_NET = "a3-gpu-2"
# A global network firewall policy is associated with networks of its own project.
POLICY = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/global/firewallPolicies/gpu-fabric-policy"
A3_HIGH = "a3-high"


def _project(order: str | None = None, vpc_rules: bool = False) -> Project:
    """The demo project whose GPU network a3-gpu-2 is governed by a global network firewall policy, with its VPC
    firewall rules removed (`vpc_rules` False) or kept."""
    project = demo_project(None if vpc_rules else GPU_NET)
    network = next(n for n in project.networks if n["name"] == GPU_NET)
    network["firewallPolicy"] = POLICY
    if order:
        network["networkFirewallPolicyEnforcementOrder"] = order
    return project


def _report(
    project: Project, tmp_path: Path, policies: list[dict[str, Any]] | None = None
) -> tuple[int, dict[str, Any]]:
    """The GCP110 report of the project's dump; `policies`: the network-firewall-policies-list.json it also holds."""
    files = {} if policies is None else {"network-firewall-policies-list.json": policies}
    return gcp110_report(project, tmp_path / "dump", files)


def test_a_gpu_network_governed_by_a_policy_not_read_is_not_judged_never_refused(tmp_path: Path) -> None:
    """The issue's estate: a GPU VPC with `firewallPolicy` and no VPC rules was GCP110 "cannot run"; the policy
    may allow the traffic, so the reach is not judged, the policy named, and the run cannot pass (exit 2)."""
    code, report = _report(_project(), tmp_path)
    assert [f for f in report["findings"] if f["rule"] == "GCP110"] == []
    cluster = cluster_of(report, A3_HIGH)
    assert cluster["status"] == "incomplete" and cluster["complete"] is False
    [gap] = [n for n in cluster["not_judged"] if n["rule"] == "GCP110"]
    assert "network firewall policy gpu-fabric-policy" in gap["reason"] and "not judged" in gap["reason"]
    assert code == 2 and report["complete"] is False
    assert report["summary"]["clusters_cannot_run"] == 0


def test_vpc_rules_that_allow_every_port_before_the_policy_decide(tmp_path: Path) -> None:
    """AFTER_CLASSIC_FIREWALL (the default): the VPC rules' allow is final, the policy never sees those ports, when
    they decide both ways. The demo's rule allows ingress only: the policy, not read, may deny the sender's egress
    (evaluated in the same order; the implied allow egress comes last), so that is not judged until an egress allow
    to the GPU subnet decides it too."""
    project = _project(vpc_rules=True)
    code, report = _report(project, tmp_path)
    assert cluster_of(report, A3_HIGH)["status"] == "incomplete" and code == 2
    inbound = next(f for f in project.firewalls if f["name"] == f"{GPU_NET}-allow-internal-traffic")
    outbound = {**inbound, "name": f"{GPU_NET}-allow-internal-egress", "direction": "EGRESS"}
    outbound["destinationRanges"] = outbound.pop("sourceRanges")
    project.firewalls.append(outbound)
    code, report = _report(project, tmp_path)
    assert cluster_of(report, A3_HIGH)["status"] == "clean"
    assert code == 0 and report["complete"] is True


def test_a_policy_evaluated_before_the_vpc_rules_leaves_them_undecided(tmp_path: Path) -> None:
    """BEFORE_CLASSIC_FIREWALL: the policy's rules come first and may deny what the VPC rules allow."""
    code, report = _report(_project(order="BEFORE_CLASSIC_FIREWALL", vpc_rules=True), tmp_path)
    cluster = cluster_of(report, A3_HIGH)
    assert cluster["status"] == "incomplete"
    assert any("BEFORE_CLASSIC_FIREWALL" in n["reason"] for n in cluster["not_judged"])
    assert code == 2


def _tagged_project(instance_tags: list[str], target_tags: list[str]) -> Project:
    """The demo project whose a3-gpu-2 internal rule targets `target_tags`, the a3-high nodes carrying
    `instance_tags` (instances[].tags.items, as gcloud prints it beside the fingerprint)."""
    project = Project()
    build(project)
    rule = next(f for f in project.firewalls if f["name"] == f"{GPU_NET}-allow-internal-traffic")
    rule["targetTags"] = target_tags
    for inst in project.instances:
        if inst["name"].startswith("a3h-train-"):
            inst["tags"] = {"items": instance_tags, "fingerprint": "42WmSpB8rSM="}
    return project


def test_a_rule_targeting_tags_the_nodes_lack_allows_nothing_to_them(tmp_path: Path) -> None:
    code, report = _report(_tagged_project(["web"], ["gpu-nodes"]), tmp_path)
    flagged = {f["cluster"].rsplit("/", 1)[-1] for f in report["findings"] if f["rule"] == "GCP110"}
    assert A3_HIGH in flagged and "a3-gpu-2" in next(f["message"] for f in report["findings"] if f["rule"] == "GCP110")
    assert code == 1 and report["complete"] is True  # judged: an error


def test_a_rule_targeting_the_nodes_own_tag_reaches_them(tmp_path: Path) -> None:
    _, report = _report(_tagged_project(["gpu-nodes"], ["gpu-nodes"]), tmp_path)
    assert cluster_of(report, A3_HIGH)["status"] == "clean"


def _rule(**fields: object) -> FirewallRule:
    base = {"account": "p", "region": "global", "name": "r", "entries": ["tcp:0-65535"]}
    return FirewallRule.model_validate({**base, **fields})


def test_source_tags_and_service_accounts_name_the_peers() -> None:
    """A rule by source tags or source service accounts matches the peers that carry them (the pool's nodes carry
    the node's own), and a deny rule so narrowed now blocks them when they do."""
    by_tag = _rule(source_tags=["gpu"])
    by_account = _rule(source_service_accounts=["train@p.iam.gserviceaccount.com"])
    assert tcp_reach([by_tag], None, frozenset({"tag:gpu"})).verdict == "ok"
    assert tcp_reach([by_tag], None, frozenset({"tag:web"})).verdict == "missing"
    assert tcp_reach([by_account], None, frozenset({"sa:train@p.iam.gserviceaccount.com"})).verdict == "ok"
    deny = _rule(name="d", action="deny", priority=900, source_tags=["gpu"], entries=["tcp:1024-65535"])
    assert tcp_reach([_rule(source_ranges=["10.0.0.0/8"]), deny], "10.1.0.0/16", frozenset({"tag:gpu"})).verdict == (
        "partial"
    )
    # Targets not read (an inventory saved before them): as before, the allow counts and the deny does not.
    assert tcp_reach([by_tag], None, None).verdict == "ok"
    assert tcp_reach([_rule(source_ranges=["10.0.0.0/8"]), deny], "10.1.0.0/16", None).verdict == "ok"


def _plan_report(
    tmp_path: Path, rules: list[dict[str, Any]], policy: str | None = None, unknown_match: bool = False
) -> Any:
    """An A3 High plan whose GPU network gpu-3 has no VPC rules and is associated with a network firewall policy:
    the plan's google_compute_network_firewall_policy `gpu-policy` with `rules` as its
    google_compute_network_firewall_policy_rule resources (priority, action, direction, match { src_ip_ranges,
    layer4_configs { ip_protocol, ports } }; registry.terraform.io/providers/hashicorp/google/latest/docs/resources/
    compute_network_firewall_policy_rule), or, `policy` given, a policy the plan does not hold, named by its id.
    The association: attachment_target, the network; firewall_policy, the policy (registry.terraform.io/providers/
    hashicorp/google/latest/docs/resources/compute_network_firewall_policy_association)."""
    plan = a3_plan()
    plan.resource("google_compute_network_firewall_policy", "gpu", {"name": "gpu-policy"})
    for i, rule in enumerate(rules):
        plan.resource(
            "google_compute_network_firewall_policy_rule",
            f"r{i}",
            rule,
            unknown={"firewall_policy": True, **({"match": True} if unknown_match else {})},
            expressions={"firewall_policy": ref("google_compute_network_firewall_policy.gpu.name")},
        )
    association: dict[str, Any] = {"name": "gpu-3-assoc"}
    unknown: dict[str, Any] = {"attachment_target": True, "firewall_policy": True}
    expressions = {
        "attachment_target": ref("google_compute_network.gpu_3.id"),
        "firewall_policy": ref("google_compute_network_firewall_policy.gpu.id"),
    }
    if policy:
        association["firewall_policy"] = policy
        del unknown["firewall_policy"], expressions["firewall_policy"]
    plan.resource(
        "google_compute_network_firewall_policy_association",
        "gpu_3",
        association,
        unknown=unknown,
        expressions=expressions,
    )
    return judge_a3_plan(plan, tmp_path)


def test_a_plan_whose_policy_allows_the_gpu_network_is_clean(tmp_path: Path) -> None:
    report = _plan_report(tmp_path, [plan_policy_rule(1000, "allow", ["10.0.0.0/8"])])
    assert [f.rule for f in report.findings if f.rule == "GCP110"] == []
    [cluster] = report.clusters
    assert not [n for n in cluster.not_judged if n.rule == "GCP110"] and report.complete is True


def test_a_plan_whose_new_policy_has_no_allow_rule_is_gcp110(tmp_path: Path) -> None:
    """A policy the plan creates holds the rules the plan gives it (and the predefined goto_next ones): a deny, or
    none at all, leaves gpu-3 to the implied deny. Judged (it was not judged before the rules were read)."""
    for rules in ([], [plan_policy_rule(1000, "deny", ["10.0.0.0/8"])]):
        report = _plan_report(tmp_path, rules)
        messages = [f.message for f in report.findings if f.rule == "GCP110"]
        assert messages and all(
            "gpu-3 (VPC firewall rules and network firewall policy gpu-policy" in m for m in messages
        )


def test_a_plan_association_with_a_policy_the_plan_does_not_hold_leaves_the_reach_unjudged(tmp_path: Path) -> None:
    report = _plan_report(tmp_path, [], policy="projects/proj/global/firewallPolicies/shared-policy")
    assert [f.rule for f in report.findings if f.rule == "GCP110"] == []
    [cluster] = report.clusters
    [gap] = [n for n in cluster.not_judged if n.rule == "GCP110"]
    assert "gpu-3 is governed by network firewall policy shared-policy" in gap.reason
    assert "not among the collected policies of project proj" in gap.reason
    assert report.complete is False


def test_a_plan_rule_known_only_after_apply_is_not_judged(tmp_path: Path) -> None:
    report = _plan_report(tmp_path, [plan_policy_rule(1000, "allow", ["10.0.0.0/8"])], unknown_match=True)
    [cluster] = report.clusters
    [gap] = [n for n in cluster.not_judged if n.rule == "GCP110"]
    assert "google_compute_network_firewall_policy_rule.r0's match is known only after apply" in gap.reason
    assert report.complete is False


# ------------------------------------------------------------------------- the rules inside the policy (item 1)


def _policy(*rules: dict[str, Any]) -> dict[str, Any]:
    """gpu-fabric-policy as `gcloud compute network-firewall-policies describe gpu-fabric-policy --global
    --format=json` prints it: the FirewallPolicy resource of networkFirewallPolicies.get, `rules` included, each a
    FirewallPolicyRule (priority, direction, action, match.srcIpRanges, match.layer4Configs[].ipProtocol / ports,
    targetSecureTags[].name; https://cloud.google.com/compute/docs/reference/rest/v1/networkFirewallPolicies/get).
    Every policy carries the lowest possible priority goto_next ingress rules, ::/0 at 2147483645 and 0.0.0.0/0 at
    2147483647 ("Predefined rules for firewall policies", https://cloud.google.com/firewall/docs/pre-defined-rules)."""
    default = predefined_rules(ruleTupleCount=2)
    return {
        "kind": "compute#firewallPolicy",
        "id": "4136870237186423810",
        "name": "gpu-fabric-policy",
        "selfLink": POLICY,
        "rules": [*rules, *default],
        "associations": [
            {
                "name": "gpu-fabric-assoc",
                "attachmentTarget": f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/global/networks/"
                + GPU_NET,
            }
        ],
        "ruleTupleCount": 6,
    }


def _gpu_cidr(project: Project) -> str:
    cidr: str = next(s["ipCidrRange"] for s in project.subnetworks if s["network"].endswith(f"/networks/{GPU_NET}"))
    return cidr


def test_a_policy_that_allows_the_gpu_subnet_every_port_is_judged_clean(tmp_path: Path) -> None:
    """The issue's estate with the policy read: its allow rule for the GPU subnet on tcp (every port) decides, and
    the run passes (exit 0, complete)."""
    project = _project()
    code, report = _report(project, tmp_path, [_policy(policy_rule(1000, "allow", [_gpu_cidr(project)]))])
    assert cluster_of(report, A3_HIGH)["status"] == "clean"
    assert code == 0 and report["complete"] is True


def test_a_policy_that_allows_nothing_to_the_gpu_subnet_is_gcp110(tmp_path: Path) -> None:
    """Only the default goto_next rule: no VPC rule either, so the implied deny-ingress rule ends it. A judged
    error now (exit 1), the policy and network named."""
    project = _project()
    code, report = _report(project, tmp_path, [_policy(policy_rule(1000, "allow", ["35.235.240.0/20"], ["22"]))])
    findings = [f for f in report["findings"] if f["rule"] == "GCP110" and f["cluster"].endswith(A3_HIGH)]
    assert len(findings) == 4  # one per a3h-train node
    assert f"{GPU_NET} (VPC firewall rules and network firewall policy gpu-fabric-policy" in findings[0]["message"]
    assert code == 1 and report["complete"] is True


def test_a_policy_deny_of_higher_precedence_takes_ports_back(tmp_path: Path) -> None:
    """deny tcp:1-1023 at 900, allow every TCP port at 1000: a partial reach, the ports named."""
    project = _project()
    cidr = _gpu_cidr(project)
    policy = _policy(policy_rule(900, "deny", [cidr], ["1-1023"]), policy_rule(1000, "allow", [cidr]))
    code, report = _report(project, tmp_path, [policy])
    findings = [f for f in report["findings"] if f["rule"] == "GCP110" and f["cluster"].endswith(A3_HIGH)]
    assert findings and all("TCP ports 1024-65535 only" in f["message"] for f in findings)
    assert code == 1


def test_goto_next_hands_the_ports_to_the_vpc_rules_before_classic(tmp_path: Path) -> None:
    """BEFORE_CLASSIC_FIREWALL: the policy's goto_next for the GPU subnet passes every port on to the VPC rules,
    whose allow-internal rule then decides (clean); a policy deny there would have won first."""
    project = _project(order="BEFORE_CLASSIC_FIREWALL", vpc_rules=True)
    cidr = _gpu_cidr(project)
    code, report = _report(project, tmp_path, [_policy(policy_rule(1000, "goto_next", [cidr]))])
    assert cluster_of(report, A3_HIGH)["status"] == "clean" and code == 0
    denied = _policy(policy_rule(1000, "deny", [cidr]))
    code, report = _report(project, tmp_path / "deny", [denied])
    assert any(f["rule"] == "GCP110" and f["cluster"].endswith(A3_HIGH) for f in report["findings"])
    assert code == 1


def test_a_rule_by_secure_tags_is_not_judged_and_named(tmp_path: Path) -> None:
    """targetSecureTags ([{name: tagValues/N, state}]) bind to instances through Resource Manager tag bindings the
    collector does not read: the rule that could decide is named, the reach not judged (exit 2)."""
    project = _project()
    tagged = policy_rule(
        1000,
        "allow",
        [_gpu_cidr(project)],
        targetSecureTags=[{"name": "tagValues/281484836404786", "state": "EFFECTIVE"}],
    )
    code, report = _report(project, tmp_path, [_policy(tagged)])
    [gap] = [n for n in cluster_of(report, A3_HIGH)["not_judged"] if n["rule"] == "GCP110"]
    assert "rule 1000 of network firewall policy gpu-fabric-policy" in gap["reason"]
    assert "tagValues/281484836404786" in gap["reason"]
    assert code == 2 and report["complete"] is False


def test_target_service_accounts_of_a_policy_rule_match_the_nodes(tmp_path: Path) -> None:
    """targetServiceAccounts: the rule applies to the nodes running as one of them (serviceAccounts[].email)."""
    project = _project()
    email = f"train@{PROJECT}.iam.gserviceaccount.com"
    for inst in project.instances:
        if inst["name"].startswith("a3h-train-"):
            inst["serviceAccounts"] = [{"email": email, "scopes": ["https://www.googleapis.com/auth/cloud-platform"]}]
    rule = policy_rule(1000, "allow", [_gpu_cidr(project)], targetServiceAccounts=[email])
    _, report = _report(project, tmp_path, [_policy(rule)])
    assert cluster_of(report, A3_HIGH)["status"] == "clean"
    other = policy_rule(1000, "allow", [_gpu_cidr(project)], targetServiceAccounts=["web@p.iam.gserviceaccount.com"])
    code, report = _report(project, tmp_path / "other", [_policy(other)])
    assert any(f["rule"] == "GCP110" and f["cluster"].endswith(A3_HIGH) for f in report["findings"]) and code == 1


def test_a_policy_listed_without_its_rules_is_not_judged(tmp_path: Path) -> None:
    """A list answer that left `rules` out says nothing of what the policy decides: not judged, never clean."""
    project = _project()
    policy = _policy()
    del policy["rules"]
    code, report = _report(project, tmp_path, [policy])
    [gap] = [n for n in cluster_of(report, A3_HIGH)["not_judged"] if n["rule"] == "GCP110"]
    assert "rules of network firewall policy gpu-fabric-policy are not known" in gap["reason"]
    assert "saved without its rules" in gap["reason"] and code == 2


def test_policy_stages_follow_the_enforcement_order() -> None:
    """Unit: AFTER_CLASSIC_FIREWALL lets a VPC allow stand over a later policy deny; BEFORE lets the deny win."""
    from fabriccheck.providers.gcp.firewall import governed_reach
    from fabriccheck.providers.gcp.normalize import network_firewall_policy

    policy = network_firewall_policy(_policy(policy_rule(1000, "deny", ["10.0.0.0/8"])), PROJECT)
    vpc = [_rule(source_ranges=["10.0.0.0/8"])]
    assert governed_reach(vpc, [policy], False, "10.1.0.0/16").verdict == "ok"
    assert governed_reach(vpc, [policy], True, "10.1.0.0/16").verdict == "missing"
    assert governed_reach([], [policy], False, "10.1.0.0/16").verdict == "missing"


@pytest.fixture
def google_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A service-account key google-auth signs its own token with (no token endpoint: reference/testing.md)."""
    return use_fake_google_key(tmp_path, monkeypatch, PROJECT)


def test_a_live_scan_reads_the_policy_rules_through_the_real_client(google_key: Path) -> None:
    """NetworkFirewallPoliciesClient.list (google-cloud-compute) against the replayed Compute API on 127.0.0.1:
    GET /compute/v1/projects/P/global/firewallPolicies answers a compute#firewallPolicyList whose items carry their
    rules (https://cloud.google.com/compute/docs/reference/rest/v1/networkFirewallPolicies/list). The policy denies
    the GPU subnet every TCP port: a judged GCP110 on a complete run. A 403 on that list is the run's recorded
    error naming compute.firewallPolicies.list, and the governed network is not judged, never refused."""
    from fabriccheck import flow
    from fabriccheck.providers.gcp import collect

    project = _project()
    files = project.files()
    denied = _policy(policy_rule(1000, "deny", [_gpu_cidr(project)]))
    replay = ComputeReplay.from_files({PROJECT: {**files, "network-firewall-policies-list.json": [denied]}})
    with serve(replay) as url:
        inventory = collect.collect_live([PROJECT], endpoint_url=url)
        assert inventory.complete, inventory.errors
        [policy] = inventory.gcp.network_firewall_policies
        assert policy.rules is not None and [r.action for r in policy.rules] == ["deny", "goto_next", "goto_next"]
        report = flow.run(inventory, flow.Options())
        assert any(f.rule == "GCP110" and (f.cluster or "").endswith(A3_HIGH) for f in report.findings)
        replay.failures[(PROJECT, "networkFirewallPolicies")] = 403
        refused = collect.collect_live([PROJECT], endpoint_url=url)
    assert f"/compute/v1/projects/{PROJECT}/global/firewallPolicies" in replay.paths()
    [error] = refused.errors
    assert error.permission == "compute.firewallPolicies.list"
    judged = flow.run(refused, flow.Options())
    assert not [f for f in judged.findings if f.rule == "GCP110" and (f.cluster or "").endswith(A3_HIGH)]
    [gap] = [n for c in judged.clusters if c.id.endswith(A3_HIGH) for n in c.not_judged if n.rule == "GCP110"]
    assert "network firewall policies were not collected" in gap.reason
