"""Hierarchical and regional network firewall policies on GPU networks (issue 28 item 6, the part left).

Shapes: regionNetworkFirewallPolicies.getEffectiveFirewalls answers, as the Compute API v1 defines them
(RegionNetworkFirewallPoliciesGetEffectiveFirewallsResponse: `firewalls`, the network's VPC firewall rules, and
`firewallPolicys`, each with `name`, `type` HIERARCHY | NETWORK | NETWORK_REGIONAL | SYSTEM_GLOBAL | SYSTEM_REGIONAL,
`shortName` / `displayName`, `priority` and `rules`, every rule a FirewallPolicyRule as networkFirewallPolicies.get
gives it; google-cloud-compute 1.57 compute_v1.types) and as `gcloud compute network-firewall-policies
get-effective-firewalls --network N --region R --format=json` prints them (googlecloudsdk
surface/compute/network_firewall_policies/get_effective_firewalls.py: name, type and rules of each policy). Every
firewall policy ends with the predefined lowest-priority goto_next ingress rules ("Predefined rules for firewall
policies", https://cloud.google.com/firewall/docs/pre-defined-rules). The evaluation order: hierarchical policies
(organization, then folders), regional system policies, then VPC rules and the global and regional network policies
in the network's enforcement order, then the implied deny ("Evaluation order for firewall policies and rules",
https://cloud.google.com/firewall/docs/firewall-policies-rule-eval-order).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_run import run
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

from fabriccheck.builders.demo_gcp import PROJECT, REGION, Project
from fabriccheck.builders.plan_builder import ref

GPU_NET = "a3-gpu-2"
A3_HIGH = "a3-high"
GPU_CIDR = "10.102.0.0/16"  # a3-gpu-2's subnet (tools/build_demo_gcp.py: 10.{100 + i}.0.0/16)


def hierarchy(short_name: str, number: str, *rules: dict[str, Any]) -> dict[str, Any]:
    """A hierarchical policy as the API answers it: `name` its number, `shortName` what its owner called it."""
    return {"name": number, "type": "HIERARCHY", "shortName": short_name, "displayName": short_name,
            "rules": [*rules, *predefined_rules()]}  # fmt: skip


def regional(name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "type": "NETWORK_REGIONAL", "priority": 1000, "rules": [*rules, *predefined_rules()]}


def _project(vpc_rules: bool = True) -> Project:
    """The demo project, a3-gpu-2's VPC firewall rules removed (`vpc_rules` False) or kept."""
    return demo_project(None if vpc_rules else GPU_NET)


def _answers(project: Project, policies: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """network-firewall-policies-get-effective-firewalls.json: one gcloud answer per network of the project in its
    region, `network` and `region` added as the documented jq line adds them; `policies` by network name."""
    return [
        {
            "network": n["name"],
            "region": REGION,
            "firewalls": [f for f in project.firewalls if f["network"].endswith(f"/networks/{n['name']}")],
            "firewallPolicys": policies.get(n["name"], []),
        }
        for n in project.networks
    ]


def _report(project: Project, tmp_path: Path, answers: list[dict[str, Any]] | None) -> tuple[int, dict[str, Any]]:
    folder = tmp_path / f"dump-{len(list(tmp_path.iterdir()))}"
    files = {} if answers is None else {"network-firewall-policies-get-effective-firewalls.json": answers}
    return gcp110_report(project, folder, files)


def _gcp110(report: dict[str, Any], name: str = A3_HIGH) -> list[str]:
    return [f["message"] for f in report["findings"] if f["rule"] == "GCP110" and f["cluster"].endswith(name)]


def test_a_hierarchical_deny_blocks_what_the_vpc_rules_allow(tmp_path: Path) -> None:
    """The organization's policy denies the GPU subnet every TCP port before the VPC rules are evaluated: GCP110,
    the policy and its rule named; judged (exit 1, complete). Without the answer the cluster was clean."""
    project = _project()
    code, before = _report(project, tmp_path, None)
    assert cluster_of(before, A3_HIGH)["status"] == "clean" and code == 0
    guard = hierarchy("org-gpu-guard", "283749283749", policy_rule(1000, "deny", ["10.0.0.0/8"]))
    code, report = _report(project, tmp_path, _answers(project, {GPU_NET: [guard]}))
    messages = _gcp110(report)
    assert len(messages) == 4  # one per a3h-train node
    assert "denied by rule 1000 of hierarchical firewall policy org-gpu-guard" in messages[0]
    assert f"{GPU_NET} (hierarchical firewall policy org-gpu-guard, then VPC firewall rules" in messages[0]
    assert code == 1 and report["complete"] is True


def test_goto_next_in_the_organization_hands_over_to_the_folder_then_the_vpc(tmp_path: Path) -> None:
    """The organization's policy sends the GPU subnet on (goto_next); the folder's policy below it decides: its
    allow is final (clean), its deny blocks (GCP110 naming the folder's policy, not the organization's)."""
    project = _project(vpc_rules=False)
    org = hierarchy(
        "org-base", "111", policy_rule(1000, "goto_next", ["10.0.0.0/8"]), policy_rule(1100, "deny", ["0.0.0.0/0"])
    )
    allow = hierarchy("ml-folder", "222", policy_rule(500, "allow", [GPU_CIDR]))
    code, report = _report(project, tmp_path, _answers(project, {GPU_NET: [org, allow]}))
    assert cluster_of(report, A3_HIGH)["status"] == "clean" and code == 0
    deny = hierarchy("ml-folder", "222", policy_rule(500, "deny", [GPU_CIDR], ["1-1023"]))
    project = _project()  # the VPC rules allow the rest
    code, report = _report(project, tmp_path, _answers(project, {GPU_NET: [org, deny]}))
    [message, *_] = _gcp110(report)
    assert "TCP ports 1024-65535 only" in message and "rule 500 of hierarchical firewall policy ml-folder" in message
    assert "org-base" not in message.split("denied by")[1]
    assert code == 1


def test_a_regional_allow_opens_a_network_without_vpc_rules(tmp_path: Path) -> None:
    """a3-gpu-2 has no VPC rule: the implied deny (GCP110) until its regional network firewall policy allows
    the GPU subnet, evaluated after the VPC rules (AFTER_CLASSIC_FIREWALL): clean, complete."""
    project = _project(vpc_rules=False)
    code, report = _report(project, tmp_path, _answers(project, {}))
    assert _gcp110(report) and code == 1
    opened = regional("gpu-regional", policy_rule(1000, "allow", [GPU_CIDR]))
    code, report = _report(project, tmp_path, _answers(project, {GPU_NET: [opened]}))
    assert cluster_of(report, A3_HIGH)["status"] == "clean"
    assert code == 0 and report["complete"] is True


def test_a_regional_policy_comes_after_the_global_one(tmp_path: Path) -> None:
    """The global network firewall policy denies the GPU subnet: its deny ends the evaluation, so the regional
    allow after it never decides (GCP110 naming both, the deny's policy as the denier)."""
    project = _project(vpc_rules=False)
    network = next(n for n in project.networks if n["name"] == GPU_NET)
    network["firewallPolicy"] = project.url("global/firewallPolicies/gpu-global")
    global_policy = {
        "kind": "compute#firewallPolicy",
        "name": "gpu-global",
        "selfLink": project.url("global/firewallPolicies/gpu-global"),
        "rules": [policy_rule(1000, "deny", [GPU_CIDR]), *predefined_rules()],
    }
    project.firewall_policies.append(global_policy)
    opened = regional("gpu-regional", policy_rule(1000, "allow", [GPU_CIDR]))
    code, report = _report(project, tmp_path, _answers(project, {GPU_NET: [opened]}))
    [message, *_] = _gcp110(report)
    assert "network firewall policy gpu-global and regional network firewall policy gpu-regional" in message
    assert "denied by rule 1000 of network firewall policy gpu-global" in message and code == 1


def test_a_gpu_network_the_answers_leave_out_is_not_judged_and_named(tmp_path: Path) -> None:
    project = _project()
    answers = [a for a in _answers(project, {}) if a["network"] != GPU_NET]
    code, report = _report(project, tmp_path, answers)
    [gap] = [n for n in cluster_of(report, A3_HIGH)["not_judged"] if n["rule"] == "GCP110"]
    assert f"network {GPU_NET} in {REGION}" in gap["reason"] and "not read" in gap["reason"]
    assert code == 2 and report["complete"] is False


def test_a_hierarchical_rule_for_other_networks_does_not_apply(tmp_path: Path) -> None:
    """targetResources: the rule applies to the instances of those networks only."""
    project = _project()
    rule = {**policy_rule(1000, "deny", ["10.0.0.0/8"]), "targetResources": [project.url("global/networks/other-vpc")]}
    code, report = _report(project, tmp_path, _answers(project, {GPU_NET: [hierarchy("org", "1", rule)]}))
    assert cluster_of(report, A3_HIGH)["status"] == "clean" and code == 0
    rule["targetResources"] = [project.url(f"global/networks/{GPU_NET}")]
    code, report = _report(project, tmp_path, _answers(project, {GPU_NET: [hierarchy("org", "1", rule)]}))
    assert _gcp110(report) and code == 1


def test_a_deny_for_other_destinations_does_not_close_the_gpu_subnet(tmp_path: Path) -> None:
    """match.destIpRanges on an ingress rule: it applies to packets to those addresses only (FirewallPolicyRuleMatcher
    .destIpRanges, Compute API v1). An organization deny of 10.0.0.0/8 towards another subnet leaves a3-gpu-2 clean;
    the same deny towards the GPU subnet's range is GCP110. (It was GCP110 both times: the destination was not read.)"""
    project = _project()
    deny = policy_rule(1000, "deny", ["10.0.0.0/8"])
    deny["match"]["destIpRanges"] = ["10.200.0.0/16"]
    code, report = _report(project, tmp_path, _answers(project, {GPU_NET: [hierarchy("org", "1", deny)]}))
    assert not _gcp110(report) and cluster_of(report, A3_HIGH)["status"] == "clean" and code == 0
    deny["match"]["destIpRanges"] = ["10.96.0.0/12"]  # holds 10.102.0.0/16
    code, report = _report(project, tmp_path, _answers(project, {GPU_NET: [hierarchy("org", "1", deny)]}))
    assert _gcp110(report) and code == 1


def test_a_source_network_context_is_matched_against_the_gpu_peers(tmp_path: Path) -> None:
    """match.srcNetworkContext (FirewallPolicyRuleMatcher, Compute API v1: INTERNET, INTRA_VPC, NON_INTERNET,
    VPC_NETWORKS): a deny of 10.0.0.0/8 from the INTERNET context does not reach peers in the same VPC (clean, where
    it was GCP110), and an INTRA_VPC allow with no other source opens a network without VPC rules (where it was
    GCP110: a rule without srcIpRanges was taken to match nothing)."""
    project = _project()
    deny = policy_rule(1000, "deny", ["10.0.0.0/8"])
    deny["match"]["srcNetworkContext"] = "INTERNET"
    code, report = _report(project, tmp_path, _answers(project, {GPU_NET: [hierarchy("org", "1", deny)]}))
    assert not _gcp110(report) and code == 0
    project = _project(vpc_rules=False)
    allow = policy_rule(1000, "allow", [])
    allow["match"] = {"srcNetworkContext": "INTRA_VPC", "layer4Configs": [{"ipProtocol": "tcp"}]}
    code, report = _report(project, tmp_path, _answers(project, {GPU_NET: [regional("gpu-regional", allow)]}))
    assert cluster_of(report, A3_HIGH)["status"] == "clean" and code == 0
    allow["match"]["srcNetworkContext"] = "INTERNET"
    code, report = _report(project, tmp_path, _answers(project, {GPU_NET: [regional("gpu-regional", allow)]}))
    assert _gcp110(report) and code == 1


def test_a_file_that_is_not_the_answers_is_one_line_exit_2(tmp_path: Path) -> None:
    project = _project()
    folder = tmp_path / "bad"
    project.write(folder)
    (folder / "network-firewall-policies-get-effective-firewalls.json").write_text(json.dumps([{"firewalls": []}]))
    result = run("gcp", "--from-dump", str(folder))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "network-firewall-policies-get-effective-firewalls.json: [0]: says no `network` and `region`" in (
        result.stderr
    )


# ------------------------------------------------------------------------------------------- live


@pytest.fixture
def google_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A service-account key google-auth signs its own token with (no token endpoint: reference/testing.md)."""
    return use_fake_google_key(tmp_path, monkeypatch, PROJECT)


def test_a_live_scan_reads_the_policies_in_effect_through_the_real_client(google_key: Path) -> None:
    """RegionNetworkFirewallPoliciesClient.get_effective_firewalls (google-cloud-compute) against the replayed
    Compute API on 127.0.0.1, once per GPU network of the TCPX/TCPXO nodes in their region, never for a host
    network: the organization's deny is a judged GCP110. A 403 is the run's recorded error naming
    compute.networks.getRegionEffectiveFirewalls; the reach is then not judged (named), exit 2, never refused."""
    from fabriccheck import flow
    from fabriccheck.providers.gcp import collect

    project = _project()
    replay = ComputeReplay.from_files({PROJECT: project.files()})
    guard = hierarchy("org-gpu-guard", "283749283749", policy_rule(1000, "deny", ["10.0.0.0/8"]))
    replay.effective[(PROJECT, REGION, GPU_NET)] = {"firewalls": [], "firewallPolicys": [guard]}
    with serve(replay) as url:
        inventory = collect.collect_live([PROJECT], endpoint_url=url)
        assert inventory.complete, inventory.errors
        report = flow.run(inventory, flow.Options())
        replay.failures[(PROJECT, "effectiveFirewalls")] = 403
        refused = collect.collect_live([PROJECT], endpoint_url=url)
        cli = run("gcp", "--endpoint-url", url, "--project", PROJECT, "--select", "GCP110", "-f", "json")
    assert cli.returncode == 2 and json.loads(cli.stdout)["complete"] is False
    asked = [r for r in replay.requests if r.path.endswith("/getEffectiveFirewalls")]
    path = f"/compute/v1/projects/{PROJECT}/regions/{REGION}/firewallPolicies/getEffectiveFirewalls"
    assert asked and {r.path for r in asked} == {path}
    networks = {r.query["network"].rsplit("/", 1)[-1] for r in asked}
    assert GPU_NET in networks and not {"a3-host", "a3m-host"} & networks
    assert len(asked) == 3 * len(networks)  # one call per GPU network, per run (two here, one by the CLI)
    messages = [f.message for f in report.findings if f.rule == "GCP110" and (f.cluster or "").endswith(A3_HIGH)]
    assert messages and "hierarchical firewall policy org-gpu-guard" in messages[0]
    denied = [e for e in refused.errors if e.call == "regionNetworkFirewallPolicies.getEffectiveFirewalls"]
    assert denied and {e.permission for e in denied} == {"compute.networks.getRegionEffectiveFirewalls"}
    assert not refused.complete
    judged = flow.run(refused, flow.Options())
    assert not [f for f in judged.findings if f.rule == "GCP110"]
    [gap] = [n for c in judged.clusters if c.id.endswith(A3_HIGH) for n in c.not_judged if n.rule == "GCP110"]
    assert "compute.networks.getRegionEffectiveFirewalls" in gap.reason and "not judged" in gap.reason
    assert judged.complete is False


def test_the_role_names_real_firewall_policy_permissions() -> None:
    """Global network firewall policies are listed under compute.firewallPolicies.list; no IAM permission is named
    compute.networkFirewallPolicies.* (roles/compute.viewer and compute.securityAdmin grant compute.firewallPolicies.*
    and compute.networks.getRegionEffectiveFirewalls: iann0036/iam-dataset@0197cfea gcp/roles/compute.viewer.json),
    so `gcloud iam roles create` takes the printed role."""
    from fabriccheck.providers.gcp import collect

    permissions = collect.custom_role()["includedPermissions"]
    assert "compute.firewallPolicies.list" in permissions
    assert not [p for p in permissions if p.startswith("compute.networkFirewallPolicies.")]


def test_the_role_grants_the_effective_firewalls_permission() -> None:
    from fabriccheck.providers.gcp import collect

    assert "compute.networks.getRegionEffectiveFirewalls" in collect.custom_role()["includedPermissions"]
    result = run("gcp", "--print-role")
    assert result.returncode == 0 and "compute.networks.getRegionEffectiveFirewalls" in result.stdout


# ------------------------------------------------------------------------------------------- plans


def _plan_report(
    tmp_path: Path, regional_rules: list[dict[str, Any]] | None = None, org_rules: list[dict[str, Any]] | None = None
) -> Any:
    """An A3 High plan in us-central1 whose GPU network gpu-3 has no VPC rules; `regional_rules`: the rules of a
    google_compute_region_network_firewall_policy associated with gpu-3 in us-central1
    (google_compute_region_network_firewall_policy_association: attachment_target, firewall_policy, region);
    `org_rules`: those of a hierarchical google_compute_firewall_policy (parent, short_name) associated with
    organizations/123 (google_compute_firewall_policy_association: attachment_target, firewall_policy)."""
    plan = a3_plan(REGION)
    if regional_rules is not None:
        plan.resource("google_compute_region_network_firewall_policy", "gpu", {"name": "gpu-regional",
                      "region": REGION})  # fmt: skip
        for i, rule in enumerate(regional_rules):
            plan.resource(
                "google_compute_region_network_firewall_policy_rule",
                f"r{i}",
                {**rule, "region": REGION},
                unknown={"firewall_policy": True},
                expressions={"firewall_policy": ref("google_compute_region_network_firewall_policy.gpu.name")},
            )
        plan.resource(
            "google_compute_region_network_firewall_policy_association",
            "gpu_3",
            {"name": "gpu-3-regional", "region": REGION},
            unknown={"attachment_target": True, "firewall_policy": True},
            expressions={
                "attachment_target": ref("google_compute_network.gpu_3.id"),
                "firewall_policy": ref("google_compute_region_network_firewall_policy.gpu.id"),
            },
        )
    if org_rules is not None:
        plan.resource("google_compute_firewall_policy", "org", {"parent": "organizations/123",
                      "short_name": "org-gpu-guard"})  # fmt: skip
        for i, rule in enumerate(org_rules):
            plan.resource(
                "google_compute_firewall_policy_rule",
                f"o{i}",
                rule,
                unknown={"firewall_policy": True},
                expressions={"firewall_policy": ref("google_compute_firewall_policy.org.id")},
            )
        plan.resource(
            "google_compute_firewall_policy_association",
            "org",
            {"name": "org-assoc", "attachment_target": "organizations/123"},
            unknown={"firewall_policy": True},
            expressions={"firewall_policy": ref("google_compute_firewall_policy.org.id")},
        )
    return judge_a3_plan(plan, tmp_path)


def _plan_gcp110(report: Any) -> list[str]:
    return [f.message for f in report.findings if f.rule == "GCP110"]


def test_a_plan_whose_regional_policy_allows_the_gpu_network_is_clean(tmp_path: Path) -> None:
    """gpu-3 has no VPC rule: GCP110 without a policy; the plan's regional policy for us-central1 allows it."""
    assert any("gpu-3" in m for m in _plan_gcp110(_plan_report(tmp_path)))
    report = _plan_report(tmp_path, [plan_policy_rule(1000, "allow", ["10.0.0.0/8"])])
    assert _plan_gcp110(report) == [] and report.complete is True
    denied = _plan_report(tmp_path, [plan_policy_rule(1000, "deny", ["10.0.0.0/8"])])
    assert any("regional network firewall policy gpu-regional" in m for m in _plan_gcp110(denied))


def test_a_plan_hierarchical_policy_is_judged_only_where_it_changes_nothing(tmp_path: Path) -> None:
    """The plan associates a hierarchical policy with organizations/123 but does not say the project lies under
    it. A policy that only hands traffic on (goto_next) changes no verdict: judged. One that denies the GPU
    subnet would make gpu-0..2 unreachable: not judged, the policy and its association named."""
    allow = [plan_policy_rule(1000, "allow", ["10.0.0.0/8"])]
    report = _plan_report(tmp_path, allow, [plan_policy_rule(1000, "goto_next", ["10.0.0.0/8"])])
    assert _plan_gcp110(report) == [] and report.complete is True
    report = _plan_report(tmp_path, allow, [plan_policy_rule(1000, "deny", ["10.0.0.0/8"])])
    assert _plan_gcp110(report) == []
    [cluster] = report.clusters
    [gap] = [n for n in cluster.not_judged if n.rule == "GCP110"]
    assert "hierarchical firewall policy org-gpu-guard (associated with organizations/123) may govern" in gap.reason
    assert report.complete is False


def test_a_failing_effective_read_is_recorded_and_the_rest_is_judged(google_key: Path) -> None:
    """A 500 past the retry budget on getEffectiveFirewalls: a recorded error for the project naming the call, the
    GPU networks not judged, the VPC-only clusters (no GPU NICs: nothing asked) still judged."""
    from fabriccheck import flow
    from fabriccheck.providers.gcp import collect

    replay = ComputeReplay.from_files({PROJECT: _project().files()})
    replay.failures[(PROJECT, "effectiveFirewalls")] = 500
    with serve(replay) as url:
        inventory = collect.collect_live([PROJECT], endpoint_url=url, retry_budget=0.2)
    failed = [e for e in inventory.errors if e.call == "regionNetworkFirewallPolicies.getEffectiveFirewalls"]
    assert failed and all(e.account == PROJECT and e.region == REGION for e in failed)
    assert len(inventory.nodes) == 24  # the lists were read
    report = flow.run(inventory, flow.Options())
    [gap] = [n for c in report.clusters if c.id.endswith(A3_HIGH) for n in c.not_judged if n.rule == "GCP110"]
    assert "reading them failed" in gap.reason and report.complete is False
