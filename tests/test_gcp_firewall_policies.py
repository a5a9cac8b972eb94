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

import json
import sys
from pathlib import Path
from typing import Any

from cli_run import run

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from build_demo_gcp import Project, build

from fabriccheck.providers.gcp.firewall import tcp_reach
from fabriccheck.resources.gcp import FirewallRule

GPU_NET = "a3-gpu-2"
POLICY = "https://www.googleapis.com/compute/v1/projects/demo-ml-project/global/firewallPolicies/gpu-fabric-policy"
A3_HIGH = "a3-high"


def _project(order: str | None = None, vpc_rules: bool = False) -> Project:
    """The demo project whose GPU network a3-gpu-2 is governed by a global network firewall policy, with its VPC
    firewall rules removed (`vpc_rules` False) or kept."""
    project = Project()
    build(project)
    network = next(n for n in project.networks if n["name"] == GPU_NET)
    network["firewallPolicy"] = POLICY
    if order:
        network["networkFirewallPolicyEnforcementOrder"] = order
    if not vpc_rules:
        project.firewalls = [f for f in project.firewalls if not f["network"].endswith(f"/networks/{GPU_NET}")]
    return project


def _report(project: Project, tmp_path: Path) -> tuple[int, dict[str, Any]]:
    folder = tmp_path / "dump"
    project.write(folder)
    result = run("gcp", "--from-dump", str(folder), "--select", "GCP110", "-f", "json")
    report: dict[str, Any] = json.loads(result.stdout)
    return result.returncode, report


def _cluster(report: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in report["clusters"] if c["id"].endswith(f"/{name}"))
    return found


def test_a_gpu_network_governed_by_a_policy_not_read_is_not_judged_never_refused(tmp_path: Path) -> None:
    """The issue's estate: a GPU VPC with `firewallPolicy` and no VPC rules was GCP110 "cannot run"; the policy
    may allow the traffic, so the reach is not judged, the policy named, and the run cannot pass (exit 2)."""
    code, report = _report(_project(), tmp_path)
    assert [f for f in report["findings"] if f["rule"] == "GCP110"] == []
    cluster = _cluster(report, A3_HIGH)
    assert cluster["status"] == "incomplete" and cluster["complete"] is False
    [gap] = [n for n in cluster["not_judged"] if n["rule"] == "GCP110"]
    assert "network firewall policy gpu-fabric-policy" in gap["reason"] and "not judged" in gap["reason"]
    assert code == 2 and report["complete"] is False
    assert report["summary"]["clusters_cannot_run"] == 0


def test_vpc_rules_that_allow_every_port_before_the_policy_decide(tmp_path: Path) -> None:
    """AFTER_CLASSIC_FIREWALL (the default): the VPC rules' allow is final, the policy never sees those ports."""
    code, report = _report(_project(vpc_rules=True), tmp_path)
    assert _cluster(report, A3_HIGH)["status"] == "clean"
    assert code == 0 and report["complete"] is True


def test_a_policy_evaluated_before_the_vpc_rules_leaves_them_undecided(tmp_path: Path) -> None:
    """BEFORE_CLASSIC_FIREWALL: the policy's rules come first and may deny what the VPC rules allow."""
    code, report = _report(_project(order="BEFORE_CLASSIC_FIREWALL", vpc_rules=True), tmp_path)
    cluster = _cluster(report, A3_HIGH)
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
    assert _cluster(report, A3_HIGH)["status"] == "clean"


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


def test_a_plan_that_associates_a_policy_with_a_gpu_network_leaves_its_reach_unjudged(tmp_path: Path) -> None:
    """Terraform google_compute_network_firewall_policy_association (attachment_target: the network; firewall_policy:
    the policy; registry.terraform.io/providers/hashicorp/google/latest/docs/resources/
    compute_network_firewall_policy_association) on one GPU network of an A3 High plan without VPC rules there."""
    from plan_builder import PlanBuilder, const, ref

    from fabriccheck import flow
    from fabriccheck.sources.terraform import load_plan

    plan = PlanBuilder()
    plan.region_settings["google"] = {"project": const("proj")}
    nets = ["host", *(f"gpu-{i}" for i in range(4))]
    for net in nets:
        plan.resource("google_compute_network", net.replace("-", "_"), {"name": net, "mtu": 8244})
        if net != "gpu-3":  # gpu-3 is left to its policy
            plan.resource(
                "google_compute_firewall",
                net.replace("-", "_"),
                {"name": f"{net}-fw", "allow": [{"protocol": "all"}], "source_ranges": ["10.0.0.0/8"]},
                unknown={"network": True},
                expressions={"network": ref(f"google_compute_network.{net.replace('-', '_')}.name")},
            )
    plan.resource("google_compute_network_firewall_policy", "gpu", {"name": "gpu-policy"})
    plan.resource(
        "google_compute_network_firewall_policy_association",
        "gpu_3",
        {"name": "gpu-3-assoc"},
        unknown={"attachment_target": True, "firewall_policy": True},
        expressions={
            "attachment_target": ref("google_compute_network.gpu_3.id"),
            "firewall_policy": ref("google_compute_network_firewall_policy.gpu.id"),
        },
    )
    plan.resource(
        "google_compute_instance_template",
        "a3",
        {
            "name": "a3-high",
            "machine_type": "a3-highgpu-8g",
            "network_interface": [{"nic_type": "GVNIC"} for _ in nets],
        },
        unknown={"self_link": True, "network_interface": [{"network": True} for _ in nets]},
        expressions={
            "network_interface": [{"network": ref(f"google_compute_network.{n.replace('-', '_')}.name")} for n in nets]
        },
    )
    plan.resource(
        "google_compute_instance_group_manager",
        "a3",
        {"name": "a3", "zone": "us-central1-a", "target_size": 2, "version": [{"name": "v1"}]},
        unknown={"version": [{"instance_template": True}]},
        expressions={"version": [{"instance_template": ref("google_compute_instance_template.a3.self_link")}]},
    )
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan.build()))
    report = flow.run(load_plan(str(path)), flow.Options())
    assert [f.rule for f in report.findings if f.rule == "GCP110"] == []
    [cluster] = report.clusters
    [gap] = [n for n in cluster.not_judged if n.rule == "GCP110"]
    assert "gpu-3 is governed by network firewall policy" in gap.reason
    assert report.complete is False
