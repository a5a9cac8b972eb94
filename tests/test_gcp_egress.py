"""GCP110 judges the sender's egress too: a GPU peer's connection must leave the sender before it enters the receiver.

Shapes and facts:
- VPC firewall rules as `gcloud compute firewall-rules list --format=json` prints them and firewalls.list answers
  (Compute API v1 Firewall: direction EGRESS, destinationRanges, "If destination ranges are specified, the firewall
  rule applies only to traffic that has destination IP address in these ranges"; allowed[] / denied[]); the demo
  project's (tools/build_demo_gcp.py: a3-gpu-2's subnet is 10.102.0.0/16, its rule allows ingress from it).
- Firewall policy rules (Compute API v1 FirewallPolicyRule and FirewallPolicyRuleMatcher: direction, action,
  match.destIpRanges, destAddressGroups, destNetworkContext, layer4Configs; google-cloud-compute 1.x
  compute_v1.types.FirewallPolicyRuleMatcher). Every policy ends with the predefined goto_next rules, ingress and
  egress, for ::/0 and 0.0.0.0/0 ("Predefined rules for firewall policies",
  https://cloud.google.com/firewall/docs/pre-defined-rules).
- The evaluation order is the same both ways (hierarchical policies, regional system policies, then the VPC rules
  and network policies in the network's enforcement order), and what no rule decides meets the implied rules: deny
  ingress, allow egress ("Evaluation order for firewall policies and rules",
  https://cloud.google.com/firewall/docs/firewall-policies-rule-eval-order; VPC firewall rules overview, "Implied
  rules", https://cloud.google.com/firewall/docs/firewalls#default_firewall_rules).
- Terraform: google_compute_firewall (direction, destination_ranges, deny { protocol }; destination_ranges is optional
  and computed, terraform-provider-google resource_compute_firewall.go) and google_compute_firewall_policy_rule /
  google_compute_region_network_firewall_policy_rule (match { dest_ip_ranges, layer4_configs }).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_run import run
from gce_replay import A3_PLAN_NETWORKS, ComputeReplay, fake_service_account_key, judge_a3_plan, serve

from fabriccheck.builders.demo_gcp import API, PROJECT, REGION, Project, build
from fabriccheck.providers.gcp.firewall import tcp_reach
from fabriccheck.resources.gcp import FirewallRule

GPU_NET = "a3-gpu-2"
GPU_CIDR = "10.102.0.0/16"
A3_HIGH = "a3-high"
POLICY = f"{API}/projects/{PROJECT}/global/firewallPolicies/gpu-fabric-policy"


def _project() -> Project:
    project = Project()
    build(project)
    return project


def _vpc_egress(name: str, action: str, destinations: list[str], priority: int = 1000) -> dict[str, Any]:
    """An egress VPC firewall rule on a3-gpu-2 as gcloud lists it, for every TCP port."""
    return {
        "kind": "compute#firewall",
        "id": "7000000000000009001",
        "creationTimestamp": "2026-10-01T08:02:00.000-07:00",
        "name": name,
        "description": "",
        "network": f"{API}/projects/{PROJECT}/global/networks/{GPU_NET}",
        "priority": priority,
        "destinationRanges": destinations,
        "allowed" if action == "allow" else "denied": [{"IPProtocol": "tcp"}],
        "direction": "EGRESS",
        "logConfig": {"enable": False},
        "disabled": False,
        "selfLink": f"{API}/projects/{PROJECT}/global/firewalls/{name}",
    }


def _egress(priority: int, action: str, destinations: list[str], **match: Any) -> dict[str, Any]:
    """An egress firewall policy rule for every TCP port (match.destIpRanges, and any other match fields)."""
    found: dict[str, Any] = {"layer4Configs": [{"ipProtocol": "tcp"}], **match}
    if destinations:
        found["destIpRanges"] = destinations
    return {
        "kind": "compute#firewallPolicyRule",
        "priority": priority,
        "direction": "EGRESS",
        "action": action,
        "match": found,
    }


def _predefined() -> list[dict[str, Any]]:
    """The four predefined goto_next rules every firewall policy ends with, egress and ingress."""
    rules = []
    for priority, direction, where in (
        (2147483644, "EGRESS", "::/0"),
        (2147483645, "INGRESS", "::/0"),
        (2147483646, "EGRESS", "0.0.0.0/0"),
        (2147483647, "INGRESS", "0.0.0.0/0"),
    ):
        ranges = {"destIpRanges" if direction == "EGRESS" else "srcIpRanges": [where]}
        rules.append(
            {
                "kind": "compute#firewallPolicyRule",
                "priority": priority,
                "direction": direction,
                "action": "goto_next",
                "match": {**ranges, "layer4Configs": [{"ipProtocol": "all"}]},
            }
        )
    return rules


def _hierarchy(short_name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    """A hierarchical policy as getEffectiveFirewalls answers it: `name` its number, `shortName` its owner's name."""
    return {
        "name": "283749283749",
        "type": "HIERARCHY",
        "shortName": short_name,
        "displayName": short_name,
        "rules": [*rules, *_predefined()],
    }


def _effective(policy: dict[str, Any]) -> list[dict[str, Any]]:
    """network-firewall-policies-get-effective-firewalls.json: one answer per network of the demo in its region
    (the jq line adds `network` and `region`), `policy` in effect on a3-gpu-2 only."""
    networks = [n["name"] for n in _project().networks]
    return [
        {"network": name, "region": REGION, "firewalls": [], "firewallPolicys": [policy] if name == GPU_NET else []}
        for name in networks
    ]


def _report(project: Project, folder: Path, extra: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    project.write(folder)
    for name, doc in (extra or {}).items():
        (folder / name).write_text(json.dumps(doc))
    result = run("gcp", "--from-dump", str(folder), "--select", "GCP110", "-f", "json")
    assert result.stdout, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return result.returncode, report


def _gcp110(report: dict[str, Any]) -> list[str]:
    """GCP110's messages on the a3-high cluster, one a node."""
    return [f["message"] for f in report["findings"] if f["rule"] == "GCP110" and f["cluster"].endswith(A3_HIGH)]


def _all_say(messages: list[str], text: str) -> bool:
    """Some messages, and every one says `text`."""
    return bool(messages) and all(text in m for m in messages)


def _status(report: dict[str, Any]) -> str:
    status: str = next(c["status"] for c in report["clusters"] if c["id"].endswith(f"/{A3_HIGH}"))
    return status


def _gap(report: dict[str, Any]) -> str:
    cluster = next(c for c in report["clusters"] if c["id"].endswith(f"/{A3_HIGH}"))
    [gap] = [n["reason"] for n in cluster["not_judged"] if n["rule"] == "GCP110"]
    reason: str = gap
    return reason


def test_a_vpc_egress_deny_to_the_gpu_subnet_is_gcp110_naming_the_rule(tmp_path: Path) -> None:
    """a3-gpu-2's ingress rule allows its subnet every port, and an egress rule denies TCP to 10.0.0.0/8: the
    peers' connections never leave the sender. It was clean (egress was not read); an egress deny to another range
    leaves it clean."""
    project = _project()
    project.firewalls.append(_vpc_egress("gpu-deny-egress", "deny", ["10.0.0.0/8"], 900))
    code, report = _report(project, tmp_path / "denied")
    messages = _gcp110(report)
    assert _all_say(messages, "denied by egress firewall rule gpu-deny-egress") and code == 1
    project.firewalls[-1] = _vpc_egress("gpu-deny-egress", "deny", ["192.168.0.0/16"], 900)
    code, report = _report(project, tmp_path / "other")
    assert _gcp110(report) == [] and _status(report) == "clean" and code == 0


def test_a_higher_priority_egress_allow_keeps_the_gpu_subnet_reachable(tmp_path: Path) -> None:
    """An egress allow to the GPU subnet at 800 decides those ports before the deny of 10.0.0.0/8 at 900 sees them:
    clean. Swapped (the deny at 800), the deny wins: GCP110."""
    project = _project()
    project.firewalls += [
        _vpc_egress("gpu-allow-egress", "allow", [GPU_CIDR], 800),
        _vpc_egress("org-deny-egress", "deny", ["10.0.0.0/8"], 900),
    ]
    code, report = _report(project, tmp_path / "allowed-first")
    assert _gcp110(report) == [] and _status(report) == "clean" and code == 0
    project.firewalls[-2:] = [
        _vpc_egress("gpu-allow-egress", "allow", [GPU_CIDR], 900),
        _vpc_egress("org-deny-egress", "deny", ["10.0.0.0/8"], 800),
    ]
    code, report = _report(project, tmp_path / "denied-first")
    assert any("denied by egress firewall rule org-deny-egress" in m for m in _gcp110(report)) and code == 1


def test_a_global_network_policy_egress_deny_is_gcp110(tmp_path: Path) -> None:
    """a3-gpu-2 names gpu-fabric-policy (networks[].firewallPolicy, AFTER_CLASSIC_FIREWALL): the VPC rules decide
    ingress, no VPC rule decides egress, so the policy's egress deny of 10.0.0.0/8 does. It was clean."""
    project = _project()
    network = next(n for n in project.networks if n["name"] == GPU_NET)
    network["firewallPolicy"] = POLICY
    policy: dict[str, Any] = {
        "kind": "compute#firewallPolicy",
        "id": "4136870237186423810",
        "name": "gpu-fabric-policy",
        "selfLink": POLICY,
        "rules": [_egress(1000, "deny", ["10.0.0.0/8"]), *_predefined()],
    }
    project.firewall_policies = [policy]
    code, report = _report(project, tmp_path / "denied")
    messages = _gcp110(report)
    assert _all_say(messages, "denied by egress rule 1000 of network firewall policy gpu-fabric-policy") and code == 1
    policy["rules"][0] = _egress(1000, "deny", ["10.0.0.0/8"], destNetworkContext="INTERNET")
    code, report = _report(project, tmp_path / "internet")
    assert _gcp110(report) == [] and _status(report) == "clean" and code == 0


def test_a_hierarchical_egress_deny_in_a_gcloud_dump_is_gcp110(tmp_path: Path) -> None:
    """The organization's policy denies egress to 10.0.0.0/8 except what a higher rule hands on: with only the
    deny, GCP110 names it; with a goto_next for the GPU subnet above it, the VPC stage and the implied allow egress
    decide, and it is clean."""
    project = _project()
    deny = _egress(900, "deny", ["10.0.0.0/8"])
    files = {"network-firewall-policies-get-effective-firewalls.json": _effective(_hierarchy("org-egress", deny))}
    code, report = _report(project, tmp_path / "denied", files)
    messages = _gcp110(report)
    assert _all_say(messages, "denied by egress rule 900 of hierarchical firewall policy org-egress") and code == 1
    excepted = _hierarchy("org-egress", _egress(800, "goto_next", [GPU_CIDR]), deny)
    files = {"network-firewall-policies-get-effective-firewalls.json": _effective(excepted)}
    code, report = _report(project, tmp_path / "excepted", files)
    assert _gcp110(report) == [] and _status(report) == "clean" and code == 0


def test_an_egress_destination_that_cannot_be_resolved_is_named_when_it_matters(tmp_path: Path) -> None:
    """An egress deny to an address group, or to part of the GPU subnet, may or may not block the peers: not
    judged, the rule named, exit 2. Under an allow to the whole subnet it cannot matter, and the verdict stands."""
    project = _project()
    group = "projects/fabriccheck-demo/locations/global/addressGroups/blocked"
    for name, rule, named in (
        ("group", _egress(900, "deny", [], destAddressGroups=[group]), f"address group {group}"),
        ("part", _egress(900, "deny", ["10.102.0.0/17"]), "part of the GPU subnet 10.102.0.0/16"),
    ):
        files = {"network-firewall-policies-get-effective-firewalls.json": _effective(_hierarchy("org", rule))}
        code, report = _report(project, tmp_path / name, files)
        assert _gcp110(report) == [] and code == 2
        assert "egress rule 900 of hierarchical firewall policy org" in _gap(report) and named in _gap(report)
        above = _hierarchy("org", _egress(800, "allow", [GPU_CIDR]), rule)
        files = {"network-firewall-policies-get-effective-firewalls.json": _effective(above)}
        code, report = _report(project, tmp_path / f"{name}-allowed", files)
        assert _status(report) == "clean" and code == 0


def test_an_inventory_saved_before_destination_ranges_still_reads() -> None:
    """An egress rule saved before destination_ranges were read: its destination is not known. A deny may block
    the peers (not judged, named); an allow cannot change what the implied allow egress gives (judged)."""
    inbound = FirewallRule.model_validate(
        {"account": "p", "region": "global", "name": "in", "entries": ["all"], "source_ranges": [GPU_CIDR]}
    )
    saved = {"account": "p", "region": "global", "name": "out", "direction": "EGRESS", "entries": ["tcp"]}
    deny = FirewallRule.model_validate({**saved, "action": "deny"})
    assert deny.destination_ranges is None
    reach = tcp_reach([inbound, deny], GPU_CIDR)
    assert reach.verdict == "unknown" and "egress firewall rule out was saved without its destination" in reach.detail
    assert tcp_reach([inbound, FirewallRule.model_validate(saved)], GPU_CIDR).verdict == "ok"


# ------------------------------------------------------------------------------------------- live


@pytest.fixture
def google_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A service-account key google-auth signs its own token with (no token endpoint: reference/testing.md)."""
    key = tmp_path / "key.json"
    key.write_text(json.dumps(fake_service_account_key(PROJECT)))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.setenv("NO_GCE_CHECK", "True")
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    return key


def _live_messages(project: Project, effective: dict[str, Any] | None) -> list[str]:
    """GCP110's messages on a3-high from a live scan of the replayed Compute API on 127.0.0.1 through
    google-cloud-compute (FirewallsClient.list, RegionNetworkFirewallPoliciesClient.get_effective_firewalls)."""
    from fabriccheck import flow
    from fabriccheck.providers.gcp import collect

    replay = ComputeReplay.from_files({PROJECT: project.files()})
    if effective is not None:
        replay.effective[(PROJECT, REGION, GPU_NET)] = effective
    with serve(replay) as url:
        inventory = collect.collect_live([PROJECT], endpoint_url=url)
    assert inventory.complete, inventory.errors
    report = flow.run(inventory, flow.Options())
    return [f.message for f in report.findings if f.rule == "GCP110" and (f.cluster or "").endswith(A3_HIGH)]


def test_a_live_scan_reads_egress_denies_through_the_real_client(google_key: Path) -> None:
    """Firewall.destination_ranges and the hierarchical policy's egress rule reach the verdict through the real
    client's own answer types: each deny is GCP110, named with its direction."""
    project = _project()
    assert _live_messages(project, None) == []
    guard = _hierarchy("org-egress", _egress(900, "deny", ["10.0.0.0/8"]))
    messages = _live_messages(project, {"firewalls": [], "firewallPolicys": [guard]})
    assert _all_say(messages, "denied by egress rule 900 of hierarchical firewall policy org-egress")
    project.firewalls.append(_vpc_egress("gpu-deny-egress", "deny", ["10.96.0.0/12"], 900))
    messages = _live_messages(project, None)
    assert _all_say(messages, "denied by egress firewall rule gpu-deny-egress")


# ------------------------------------------------------------------------------------------- plans


def _plan(tmp_path: Path, extra: list[tuple[str, str, dict[str, Any], dict[str, Any], dict[str, Any]]]) -> Any:
    """An A3 High plan in us-central1 whose networks (host, gpu-0..3; subnets 10.{i}.0.0/16, the NICs set by
    subnetwork as Cluster Toolkit writes them) each allow ingress from 10.0.0.0/8, with `extra` resources (type,
    name, values, unknown, expressions)."""
    from fabriccheck.builders.plan_builder import PlanBuilder, const, ref

    plan = PlanBuilder()
    plan.region_settings["google"] = {"project": const("proj"), "region": const(REGION)}
    for i, net in enumerate(A3_PLAN_NETWORKS):
        key = net.replace("-", "_")
        plan.resource("google_compute_network", key, {"name": net, "mtu": 8244})
        plan.resource(
            "google_compute_subnetwork",
            key,
            {"name": f"{net}-sub", "ip_cidr_range": f"10.{i}.0.0/16", "region": REGION},
            unknown={"network": True},
            expressions={"network": ref(f"google_compute_network.{key}.id")},
        )
        plan.resource(
            "google_compute_firewall",
            key,
            {"name": f"{net}-fw", "allow": [{"protocol": "all"}], "source_ranges": ["10.0.0.0/8"]},
            unknown={"network": True},
            expressions={"network": ref(f"google_compute_network.{key}.name")},
        )
    for type_, name, values, unknown, expressions in extra:
        plan.resource(type_, name, values, unknown=unknown, expressions=expressions)
    return judge_a3_plan(plan, tmp_path, by_subnetwork=True)


def test_a_plan_egress_deny_is_gcp110(tmp_path: Path) -> None:
    """A google_compute_firewall EGRESS deny of 10.0.0.0/8 on gpu-1, and a regional network firewall policy rule
    denying egress to 10.0.0.0/8 on gpu-2: each is GCP110, named. destination_ranges set from what is known only
    after apply: not judged; to another range: clean (each was clean before)."""
    from fabriccheck.builders.plan_builder import ref

    deny = {"name": "gpu-1-deny-egress", "direction": "EGRESS", "priority": 900, "deny": [{"protocol": "tcp"}]}
    net = {"network": ref("google_compute_network.gpu_1.name")}
    report = _plan(
        tmp_path,
        [("google_compute_firewall", "deny", {**deny, "destination_ranges": ["10.0.0.0/8"]}, {"network": True}, net)],
    )
    messages = [f.message for f in report.findings if f.rule == "GCP110"]
    assert any("gpu-1" in m and "denied by egress firewall rule gpu-1-deny-egress" in m for m in messages)
    report = _plan(
        tmp_path,
        [
            (
                "google_compute_firewall",
                "deny",
                {**deny, "destination_ranges": ["192.168.0.0/16"]},
                {"network": True},
                net,
            )
        ],
    )
    assert not [f for f in report.findings if f.rule == "GCP110"] and report.complete is True
    unknown = {"network": True, "destination_ranges": True}
    later = {**net, "destination_ranges": ref("google_compute_subnetwork.other.ip_cidr_range")}
    report = _plan(tmp_path, [("google_compute_firewall", "deny", deny, unknown, later)])
    assert not [f for f in report.findings if f.rule == "GCP110"] and report.complete is False
    rule = {
        "priority": 1000,
        "action": "deny",
        "direction": "EGRESS",
        "region": REGION,
        "match": [{"dest_ip_ranges": ["10.0.0.0/8"], "layer4_configs": [{"ip_protocol": "all"}]}],
    }
    policy = ref("google_compute_region_network_firewall_policy.gpu.name")
    report = _plan(
        tmp_path,
        [
            (
                "google_compute_region_network_firewall_policy",
                "gpu",
                {"name": "gpu-regional", "region": REGION},
                {},
                {},
            ),
            (
                "google_compute_region_network_firewall_policy_rule",
                "r0",
                rule,
                {"firewall_policy": True},
                {"firewall_policy": policy},
            ),
            (
                "google_compute_region_network_firewall_policy_association",
                "gpu_2",
                {"name": "a", "region": REGION},
                {"attachment_target": True, "firewall_policy": True},
                {
                    "attachment_target": ref("google_compute_network.gpu_2.id"),
                    "firewall_policy": ref("google_compute_region_network_firewall_policy.gpu.id"),
                },
            ),
        ],
    )
    messages = [f.message for f in report.findings if f.rule == "GCP110"]
    assert any(
        "gpu-2" in m and "egress rule 1000 of regional network firewall policy gpu-regional" in m for m in messages
    )


def test_an_egress_rule_applies_to_the_nodes_it_targets_only() -> None:
    """An egress deny with targetTags applies to the instances that carry one of them ("Rule assignment",
    https://cloud.google.com/firewall/docs/firewalls#rule_assignment): a node tagged otherwise still sends, one so
    tagged does not; a node whose tags were not read (an inventory saved before them) is not judged."""
    inbound = FirewallRule.model_validate(
        {"account": "p", "region": "global", "name": "in", "entries": ["all"], "source_ranges": [GPU_CIDR]}
    )
    deny = FirewallRule.model_validate(
        {"account": "p", "region": "global", "name": "no-east-west", "direction": "EGRESS", "action": "deny",
         "entries": ["all"], "destination_ranges": ["10.0.0.0/8"], "target_tags": ["locked"]}
    )  # fmt: skip
    assert tcp_reach([inbound, deny], GPU_CIDR, frozenset({"tag:gpu"})).verdict == "ok"
    denied = tcp_reach([inbound, deny], GPU_CIDR, frozenset({"tag:locked"}))
    assert denied.verdict == "missing" and "denied by egress firewall rule no-east-west" in denied.detail
    unread = tcp_reach([inbound, deny], GPU_CIDR, None)
    assert unread.verdict == "unknown" and "egress firewall rule no-east-west targets some" in unread.detail


def test_an_ingress_rule_applies_only_to_the_destinations_it_names() -> None:
    """An ingress rule with destinationRanges applies only to packets sent to those addresses (Firewall
    .destinationRanges, Compute API v1). A deny of every port from 10.0.0.0/8 to another subnet does not touch the
    GPU peers, who send to the GPU subnet: it was applied to them (a false GCP110). Aimed at the GPU subnet it
    denies them; aimed at part of it, which ports the peers reach cannot be told, and the rule is named."""
    rule = {"account": "p", "region": "global", "entries": ["all"], "source_ranges": ["10.0.0.0/8"]}
    allow = FirewallRule.model_validate({**rule, "name": "allow-internal", "priority": 1000})

    def deny_to(destinations: list[str]) -> FirewallRule:
        return FirewallRule.model_validate(
            {**rule, "name": "deny-db", "action": "deny", "priority": 900, "destination_ranges": destinations}
        )

    assert tcp_reach([allow, deny_to(["10.200.0.0/16"])], GPU_CIDR).verdict == "ok"
    assert tcp_reach([allow, deny_to([GPU_CIDR])], GPU_CIDR).verdict == "missing"
    partial = tcp_reach([allow, deny_to(["10.102.4.0/24"])], GPU_CIDR)
    assert partial.verdict == "unknown" and partial.detail.startswith("firewall rule deny-db applies to destinations")
