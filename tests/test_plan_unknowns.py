"""Plans judge what they know: a value is unknown per fact, not per NIC block (issue 17, item 15), and a resource the
plan itself creates is looked up among the plan's resources, however the instances reference it (item 16).

Every plan here is written as `terraform show -json` writes it (fabriccheck/builders/plan_builder.PlanBuilder):
- values known only after apply are left out of `after` (null in a list) and `true` in `after_unknown`
  (hashicorp/terraform internal/command/jsonplan/plan.go, omitUnknowns: "element order is how we correlate
  unknownness, so we must replace unknowns with nulls");
- arguments the provider computes where the configuration does not set them are unknown with no expression in
  `configuration`: aws_instance.placement_group, subnet_id, vpc_security_group_ids (open-policy-agent/opa@111a67dd
  docs/content/terraform.md, aws_instance.web), a google_compute_instance NIC's subnetwork when its network is set
  (GoogleCloudPlatform/terraform-validator@7d8412ef testdata/templates/example_compute_instance.tfplan.json);
- `configuration.root_module.resources[].expressions` give each reference as Terraform lists it (`x.y.id` then
  `x.y`; `module.m.out` then `module.m`), nested blocks as lists of expression maps, `dynamic` blocks not at all
  (hashicorp/terraform internal/command/jsonconfig/expression.go, marshalExpression and marshalExpressions).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from cli_run import run

from fabriccheck import flow, report
from fabriccheck.builders.plan_builder import PlanBuilder, const, ref
from fabriccheck.inventory import Inventory
from fabriccheck.sources.terraform import load_plan

PROJECT = "train-proj"


def _load(tmp_path: Path, plan: PlanBuilder) -> Inventory:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan.build()))
    return load_plan(str(path))


def _judge(tmp_path: Path, plan: PlanBuilder) -> report.Report:
    return flow.run(_load(tmp_path, plan), flow.Options())


def _rules(report: report.Report) -> Counter[str]:
    return Counter(f.rule for f in report.findings)


def _not_judged(report: report.Report) -> dict[str, str]:
    return {n.rule: n.reason for c in report.clusters for n in c.not_judged}


# ---------------------------------------------------------------------------------------------- GCP


def _gcp(plan: PlanBuilder) -> None:
    plan.region_settings["google"] = {"project": const(PROJECT), "region": const("us-central1")}


def _a3_instances(
    plan: PlanBuilder, nics: list[dict[str, Any]], nic_expressions: list[dict[str, Any]], **extra: Any
) -> None:
    """Two a3-highgpu-8g (count = 2) with these network_interface blocks (values, expressions)."""
    unknown = extra.pop("unknown", {})
    for i in range(2):
        plan.resource(
            "google_compute_instance",
            "a3",
            {"name": f"a3-{i}", "zone": "us-central1-a", "machine_type": "a3-highgpu-8g", "network_interface": nics}
            | extra.get("values", {}),
            index=i,
            count=2,
            unknown={"network_interface": [dict(u) for u in unknown.get("network_interface", [{}] * len(nics))]}
            | {k: v for k, v in unknown.items() if k != "network_interface"},
            expressions={"network_interface": nic_expressions, "machine_type": const("a3-highgpu-8g")}
            | extra.get("expressions", {}),
        )


def _default_nic() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """network = "default" and nothing else, as in terraform-validator's example_compute_instance plan: the
    subnetwork (and the NIC's name, IP, subnetwork project) are computed."""
    return [{"access_config": [], "alias_ip_range": [], "network": "default", "nic_type": None}], [
        {"network": const("default")}
    ]


def test_gcp_one_nic_on_a_known_network_is_fabric_missing(tmp_path: Path) -> None:
    """Item 15: network = "default" is known; only the subnetwork waits for apply. One NIC on a3-highgpu-8g is no
    GPU NIC whatever its subnetwork: GCP101 fires (it was "not judged" while the whole NIC block counted as
    unknown)."""
    plan = PlanBuilder()
    _gcp(plan)
    nics, expressions = _default_nic()
    _a3_instances(plan, nics, expressions)
    doc = plan.build()
    flags = doc["resource_changes"][0]["change"]["after_unknown"]["network_interface"][0]
    assert flags["subnetwork"] is True and "network" not in flags  # the real shape, as the builder writes it
    report = _judge(tmp_path, plan)
    assert _rules(report) == Counter({"GCP101": 2, "GCP130": 1})
    assert not {"GCP101", "GCP102", "GCP103", "GCP120", "GCP121"} & set(_not_judged(report))
    # A3 High has no RDMA NIC: no RDMA network is asked about, so the default network's profile (not in the plan)
    # leaves nothing unjudged (issue 28, item 10: judged, exit 1, not exit 2).
    assert "GCP123" not in _not_judged(report)
    result = run("plan", str(tmp_path / "plan.json"))
    assert result.returncode == 1, result.stderr
    assert "GCP101" in result.stdout and "not fully judged" not in result.stdout.lower()


def _a3_networks(plan: PlanBuilder, count: int, firewall: bool = True) -> list[str]:
    names = [f"net-{i}" for i in range(count)]
    for name in names:
        key = name.replace("-", "_")
        plan.resource("google_compute_network", key, {"name": name, "mtu": 8244, "auto_create_subnetworks": False})
        plan.resource(
            "google_compute_subnetwork",
            key,
            {"name": f"{name}-sub", "region": "us-central1", "ip_cidr_range": f"10.{10 + len(plan.changes)}.0.0/24"},
            expressions={"network": ref(f"google_compute_network.{key}.id")},
        )
        if firewall:
            plan.resource(
                "google_compute_firewall",
                key,
                {
                    "name": f"{name}-internal",
                    "direction": "INGRESS",
                    "priority": 1000,
                    "allow": [{"protocol": "tcp", "ports": []}, {"protocol": "udp", "ports": []}],
                    "deny": [],
                    "source_ranges": ["10.0.0.0/8"],
                    "disabled": False,
                },
                expressions={"network": ref(f"google_compute_network.{key}.self_link")},
            )
    return names


def _compact(plan: PlanBuilder) -> None:
    plan.resource(
        "google_compute_resource_policy",
        "compact",
        {"name": "a3-compact", "region": "us-central1", "group_placement_policy": [{"collocation": "COLLOCATED"}]},
    )


def test_gcp_nics_set_by_subnetwork_alone_take_its_network(tmp_path: Path) -> None:
    """Cluster Toolkit writes `network_interface { subnetwork = ...self_link }`: the network is computed from the
    subnetwork, and the subnetwork is one this plan creates, so its network is known. The policy is referenced by
    `.self_link` (unknown until apply) and is found among the plan's own policies (item 16)."""
    plan = PlanBuilder()
    _gcp(plan)
    names = _a3_networks(plan, 5)
    _compact(plan)
    keys = [n.replace("-", "_") for n in names]
    nics = [{"nic_type": "GVNIC", "access_config": []} for _ in names]
    expressions = [{"subnetwork": ref(f"google_compute_subnetwork.{k}.self_link")} for k in keys]
    _a3_instances(
        plan,
        nics,
        expressions,
        unknown={"resource_policies": True},
        expressions={"resource_policies": ref("google_compute_resource_policy.compact.self_link")},
    )
    doc = plan.build()
    flags = doc["resource_changes"][-1]["change"]["after_unknown"]["network_interface"][1]
    assert flags["network"] is True and flags["subnetwork"] is True
    report = _judge(tmp_path, plan)
    assert report.findings == [] and report.complete
    assert [c.status for c in report.clusters] == ["clean"]
    inventory = _load(tmp_path, plan)
    assert [i.network for i in inventory.nodes[0].interfaces] == [
        f"projects/{PROJECT}/global/networks/{n}" for n in names
    ]


def test_gcp_gpu_subnetworks_from_a_data_source_leave_the_fabric_judged(tmp_path: Path) -> None:
    """The GPU NICs' networks are this plan's; their subnetworks are read from a data source of another state and
    so known only after apply. Which NICs carry the fabric, and which firewall rules guard them, are known: four
    of four GPU NICs, firewall open. Only the subnetwork is waited for, and no rule reads it."""
    plan = PlanBuilder()
    _gcp(plan)
    names = _a3_networks(plan, 5)
    _compact(plan)
    keys = [n.replace("-", "_") for n in names]
    nics = [{"nic_type": "GVNIC"} for _ in names]
    expressions = [
        {
            "network": ref(f"google_compute_network.{k}.name"),
            "subnetwork": ref(f"data.google_compute_subnetwork.{k}.self_link"),
        }
        for k in keys
    ]
    _a3_instances(
        plan,
        nics,
        expressions,
        unknown={"network_interface": [{"network": True, "subnetwork": True} for _ in names]},
        values={"resource_policies": ["a3-compact"]},
    )
    report = _judge(tmp_path, plan)
    assert report.findings == []
    assert _not_judged(report) == {}
    assert [c.status for c in report.clusters] == ["clean"]


def test_gcp_gpu_networks_the_plan_does_not_create_are_not_judged_for_firewalls(tmp_path: Path) -> None:
    """GPU networks of another state, named by their self links: their firewall rules are not in this plan, so
    GCP110 is not judged (it used to fire: "no enabled ingress rule", on rules it could not see)."""
    plan = PlanBuilder()
    _gcp(plan)
    _compact(plan)
    base = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/global/networks"
    nics = [{"nic_type": "GVNIC", "network": f"{base}/shared-{i}"} for i in range(5)]
    _a3_instances(
        plan, nics, [{"network": const(n["network"])} for n in nics], values={"resource_policies": ["a3-compact"]}
    )
    report = _judge(tmp_path, plan)
    assert report.findings == []
    reasons = _not_judged(report)
    assert "GCP110" in reasons and "shared-1" in reasons["GCP110"] and "not created by this plan" in reasons["GCP110"]
    assert "GCP101" not in reasons and "GCP102" not in reasons  # four GPU NICs on four networks: judged, attached


def test_gcp_gpu_networks_in_a_dynamic_block_are_unknown(tmp_path: Path) -> None:
    """`dynamic "network_interface"` leaves the configuration without the blocks' expressions, so networks the
    plan creates (unknown until apply) cannot be followed: the GPU NIC facts are not judged, naming why; the NIC
    count and compact placement are still judged."""
    plan = PlanBuilder()
    _gcp(plan)
    _a3_networks(plan, 5)
    nics = [{"nic_type": "GVNIC"} for _ in range(5)]
    _a3_instances(plan, nics, [], unknown={"network_interface": [{"network": True} for _ in nics]})
    report = _judge(tmp_path, plan)
    assert _rules(report) == Counter({"GCP130": 1})
    reasons = _not_judged(report)
    assert {"GCP101", "GCP102", "GCP110", "GCP140"} <= set(reasons)
    assert "google_compute_instance.a3.network_interface[1].network" in reasons["GCP101"]


def test_gcp_policy_made_by_a_module_reaches_the_instances_through_variables(tmp_path: Path) -> None:
    """Item 16 across modules: module.placement creates the policy and outputs its self link; the root hands it to
    module.nodes as a variable. The instances' resource_policies (unknown until apply) follow var -> module call
    -> output -> the policy, which the plan creates: compact placement is judged, not "not among the collected
    policies"."""
    plan = PlanBuilder()
    _gcp(plan)
    plan.module(
        "module.placement",
        "./placement",
        outputs={"self_link": ref("google_compute_resource_policy.compact.self_link")},
    )
    plan.module("module.nodes", "./nodes", {"policy": ref("module.placement.self_link")})
    plan.resource(
        "google_compute_resource_policy",
        "compact",
        {"name": "nodes-compact", "region": "us-central1", "group_placement_policy": [{"collocation": "COLLOCATED"}]},
        module="module.placement",
    )
    nics, expressions = _default_nic()
    for i in range(2):
        plan.resource(
            "google_compute_instance",
            "node",
            {"name": f"n-{i}", "zone": "us-central1-a", "machine_type": "a3-highgpu-8g", "network_interface": nics},
            module="module.nodes",
            index=i,
            count=2,
            expressions={"network_interface": expressions, "resource_policies": {"references": ["var.policy"]}},
        )
    report = _judge(tmp_path, plan)
    [cluster] = report.clusters
    assert cluster.id.endswith("compact-placement-policy/nodes-compact")
    assert "GCP130" not in _rules(report) and "GCP130" not in _not_judged(report)
    assert _rules(report) == Counter({"GCP101": 2})


# ---------------------------------------------------------------------------------------------- AWS


def _aws(plan: PlanBuilder) -> None:
    plan.region_settings["aws"] = {"region": const("us-east-1")}
    plan.resource("aws_vpc", "train", {"cidr_block": "10.0.0.0/16"})
    plan.resource(
        "aws_subnet",
        "a",
        {"availability_zone": "us-east-1a", "cidr_block": "10.0.1.0/24"},
        expressions={"vpc_id": ref("aws_vpc.train.id")},
    )
    plan.resource("aws_security_group", "efa", {"name": "efa"}, expressions={"vpc_id": ref("aws_vpc.train.id")})
    for kind in ("ingress", "egress"):
        plan.resource(
            f"aws_vpc_security_group_{kind}_rule",
            f"self_{kind}",
            {"ip_protocol": "-1"},
            expressions={
                "security_group_id": ref("aws_security_group.efa.id"),
                "referenced_security_group_id": ref("aws_security_group.efa.id"),
            },
        )


def _efa_nics(plan: PlanBuilder) -> None:
    """aws_network_interface.efa (count = 8): the four EFA interfaces of each of _p4d's two nodes."""
    for i in range(8):
        plan.resource(
            "aws_network_interface",
            "efa",
            {"interface_type": "efa"},
            index=i,
            count=8,
            expressions={"subnet_id": ref("aws_subnet.a.id"), "security_groups": ref("aws_security_group.efa.id")},
        )


def _p4d(plan: PlanBuilder, **expressions: Any) -> None:
    """Two p4d.24xlarge (count = 2), each with its four EFA interfaces of this plan."""
    for i in range(2):
        blocks = [{"device_index": 0 if c == 0 else 1, "network_card_index": c} for c in range(4)]
        plan.resource(
            "aws_instance",
            "node",
            {"instance_type": "p4d.24xlarge", "ami": "ami-0123456789abcdef0", "network_interface": blocks},
            index=i,
            count=2,
            unknown={"network_interface": [{"network_interface_id": True} for _ in blocks]},
            expressions={
                "instance_type": const("p4d.24xlarge"),
                "network_interface": [
                    {"network_interface_id": ref(f"aws_network_interface.efa[{4 * i + c}].id")} for c in range(4)
                ],
                **expressions,
            },
        )


def test_aws_placement_group_the_configuration_leaves_unset_is_none(tmp_path: Path) -> None:
    """aws_instance.placement_group is computed: every plan that does not set it marks it unknown, with no
    expression. That is no placement group (AWS120 fires), not a group "known after apply" that hides it."""
    plan = PlanBuilder()
    _aws(plan)
    _efa_nics(plan)
    _p4d(plan)
    doc = plan.build()
    change = next(c for c in doc["resource_changes"] if c["address"] == "aws_instance.node[0]")["change"]
    assert change["after_unknown"]["placement_group"] is True and "placement_group" not in change["after"]
    report = _judge(tmp_path, plan)
    assert _rules(report) == Counter({"AWS120": 1})
    assert _not_judged(report) == {} and report.complete


def test_aws_placement_group_referenced_by_id_is_the_plans_own(tmp_path: Path) -> None:
    """Item 16: `placement_group = aws_placement_group.train.id` (unknown until apply; the provider's id is the
    name) names the cluster group this plan creates: no AWS120, and not "not among the collected groups"."""
    plan = PlanBuilder()
    _aws(plan)
    plan.resource("aws_placement_group", "train", {"name": "train", "strategy": "cluster"})
    _efa_nics(plan)
    _p4d(plan, placement_group=ref("aws_placement_group.train.id"))
    report = _judge(tmp_path, plan)
    assert report.findings == [] and _not_judged(report) == {}
    [cluster] = report.clusters
    assert cluster.status == "clean" and cluster.id.endswith("placement-group/train")


def test_aws_an_existing_network_interface_is_not_an_invented_failure(tmp_path: Path) -> None:
    """An instance attaching an ENI of another state by its id: the interface's type is not in the plan, so EFA is
    not judged on that node (it used to be dropped, and the node judged as having no EFA at all: AWS101)."""
    plan = PlanBuilder()
    _aws(plan)
    plan.resource("aws_placement_group", "train", {"name": "train", "strategy": "cluster"})
    for i in range(2):
        plan.resource(
            "aws_instance",
            "node",
            {
                "instance_type": "p5.48xlarge",
                "placement_group": "train",
                "network_interface": [
                    {"device_index": 0, "network_card_index": 0, "network_interface_id": f"eni-0aaaaaaaaaaaaaa{i}0"}
                ],
            },
            index=i,
            count=2,
            expressions={"placement_group": const("train")},
        )
    report = _judge(tmp_path, plan)
    assert "AWS101" not in _rules(report) and "AWS102" not in _rules(report)
    reasons = _not_judged(report)
    assert "network interface eni-0aaaaaaaaaaaaaa" in reasons["AWS101"]
    assert "is not created by this plan (its type is not in it)" in reasons["AWS101"]


def test_aws_subnets_the_plan_does_not_create_leave_zones_unknown(tmp_path: Path) -> None:
    """An Auto Scaling group over a subnet of this plan (us-east-1a) and an existing one named by its id: the
    second subnet's zone and VPC are not in the plan, so a zone or VPC split is not judged rather than asserted
    (AWS111 used to fire on two "zones", us-east-1a and an empty one)."""
    plan = PlanBuilder()
    _aws(plan)
    plan.resource("aws_placement_group", "train", {"name": "train", "strategy": "cluster"})
    nics = [
        {"device_index": 0 if c == 0 else 1, "network_card_index": c, "interface_type": "efa" if c == 0 else "efa-only"}
        for c in range(4)
    ]
    plan.resource(
        "aws_launch_template",
        "gpu",
        {"name": "gpu", "instance_type": "p4d.24xlarge", "network_interfaces": nics},
        unknown={"network_interfaces": [{"security_groups": True} for _ in nics]},
        expressions={"network_interfaces": [{"security_groups": ref("aws_security_group.efa.id")} for _ in nics]},
    )
    plan.resource(
        "aws_autoscaling_group",
        "gpu",
        {"name": "gpu", "desired_capacity": 2, "placement_group": "train", "launch_template": [{"version": "$Latest"}]},
        unknown={"launch_template": [{"id": True}]},
        expressions={
            "vpc_zone_identifier": {"references": ["aws_subnet.a.id", "aws_subnet.a"]},
            "launch_template": [{"id": ref("aws_launch_template.gpu.id")}],
        },
    )
    doc = plan.build()
    # One subnet of the set is this plan's, one is a literal id: the set as a whole is unknown until apply, and
    # the literal is not in the configuration's references, so add it as a known value beside them.
    change = next(c for c in doc["resource_changes"] if c["address"] == "aws_autoscaling_group.gpu")["change"]
    change["after"]["vpc_zone_identifier"] = [None, "subnet-0bbbbbbbbbbbbbbb1"]
    change["after_unknown"]["vpc_zone_identifier"] = [True, False]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    inventory = load_plan(str(path))
    assert sorted({n.interfaces[0].subnet or "" for n in inventory.nodes}) == [
        "aws_subnet.a",
        "subnet-0bbbbbbbbbbbbbbb1",
    ]
    report = flow.run(inventory, flow.Options())
    assert "AWS111" not in _rules(report)
    assert "subnet-0bbbbbbbbbbbbbbb1 is not created by this plan" in _not_judged(report)["AWS111"]


# ---------------------------------------------------------------------------------------------- Azure


SUBSCRIPTION = "22222222-3333-4444-5555-666666666666"


def test_azure_a_subnet_from_a_data_source_leaves_only_its_address_ranges_unknown(tmp_path: Path) -> None:
    """ND H100 v5 VMs in one availability set (a PPG of this plan, referenced by `.id`), NICs on a subnet read
    from a data source. The InfiniBand partition, driver and accelerated networking are judged; only the RDMA
    address overlap (AZ130, which reads the virtual network's ranges) is not, naming the subnet (it used to
    pass silently)."""
    plan = PlanBuilder()
    plan.region_settings["azurerm"] = {"subscription_id": const(SUBSCRIPTION)}
    plan.resource("azurerm_proximity_placement_group", "ppg", {"name": "ppg", "location": "eastus"})
    plan.resource(
        "azurerm_availability_set",
        "nd",
        {"name": "nd-as", "location": "eastus", "platform_fault_domain_count": 1},
        expressions={"proximity_placement_group_id": ref("azurerm_proximity_placement_group.ppg.id")},
    )
    image = [{"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204", "version": "latest"}]
    for i in range(2):
        plan.resource(
            "azurerm_network_interface",
            "nd",
            {"name": f"nd-{i}", "location": "eastus", "accelerated_networking_enabled": True, "ip_configuration": [{}]},
            index=i,
            count=2,
            unknown={"ip_configuration": [{"subnet_id": True}]},
            expressions={"ip_configuration": [{"subnet_id": ref("data.azurerm_subnet.compute.id")}]},
        )
        plan.resource(
            "azurerm_linux_virtual_machine",
            "nd",
            {
                "name": f"nd-{i}",
                "location": "eastus",
                "size": "Standard_ND96isr_H100_v5",
                "source_image_reference": image,
            },
            index=i,
            count=2,
            expressions={
                "network_interface_ids": ref("azurerm_network_interface.nd.id"),
                "availability_set_id": ref("azurerm_availability_set.nd.id"),
                "proximity_placement_group_id": ref("azurerm_proximity_placement_group.ppg.id"),
            },
        )
    report = _judge(tmp_path, plan)
    assert report.findings == []
    reasons = _not_judged(report)
    assert set(reasons) == {"AZ130"} and "data.azurerm_subnet.compute.id" in reasons["AZ130"]


def test_azure_a_list_known_in_part_keeps_its_known_elements(tmp_path: Path) -> None:
    """network_interface_ids = [azurerm_network_interface.a.id, "<existing NIC id>"]: after lists the known id
    and null for the other, after_unknown [true, false]. Both NICs are the VM's."""
    plan = PlanBuilder()
    plan.region_settings["azurerm"] = {"subscription_id": const(SUBSCRIPTION)}
    existing = (
        f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg/providers/Microsoft.Network/networkInterfaces/storage-nic"
    )
    plan.resource("azurerm_network_interface", "a", {"name": "a", "location": "eastus", "ip_configuration": [{}]})
    plan.resource(
        "azurerm_linux_virtual_machine",
        "vm",
        {
            "name": "vm",
            "location": "eastus",
            "size": "Standard_ND96isr_H100_v5",
            "network_interface_ids": [None, existing],
        },
        unknown={"network_interface_ids": [True, False]},
        expressions={
            "network_interface_ids": {"references": ["azurerm_network_interface.a.id", "azurerm_network_interface.a"]}
        },
    )
    [node] = _load(tmp_path, plan).nodes
    assert sorted(node.interface_ids) == [existing.lower(), "azurerm_network_interface.a"]


def test_gke_compact_placement_names_the_plans_policy(tmp_path: Path) -> None:
    """placement_policy { type = "COMPACT", policy_name = google_compute_resource_policy.spread.name }: the pool is
    placed by that policy of the plan (here spread over availability domains, so not compact: GCP130), not by the
    compact policy GKE makes when no name is given."""
    plan = PlanBuilder()
    _gcp(plan)
    plan.resource(
        "google_container_cluster",
        "train",
        {"name": "train", "location": "us-central1-a", "network": "default"},
        expressions={"network": const("default")},
    )
    plan.resource(
        "google_compute_resource_policy",
        "spread",
        {"name": "pool-spread", "region": "us-central1", "group_placement_policy": [{"availability_domain_count": 2}]},
    )
    plan.resource(
        "google_container_node_pool",
        "gpu",
        {
            "name": "gpu",
            "location": "us-central1-a",
            "node_count": 2,
            "node_locations": ["us-central1-a"],
            "node_config": [{"machine_type": "a3-ultragpu-8g"}],
            "placement_policy": [{"type": "COMPACT"}],
        },
        unknown={"placement_policy": [{"policy_name": True}]},
        expressions={
            "cluster": ref("google_container_cluster.train.id"),
            "placement_policy": [
                {"type": const("COMPACT"), "policy_name": ref("google_compute_resource_policy.spread.name")}
            ],
        },
    )
    inventory = _load(tmp_path, plan)
    assert {p.id for n in inventory.nodes for p in n.placement} == {"pool-spread"}
    assert [p.name for p in inventory.gcp.resource_policies] == ["pool-spread"]  # GKE makes none of its own
    report = flow.run(inventory, flow.Options())
    assert _rules(report)["GCP130"] == 1


def test_references_as_terraform_before_1_0_lists_them(tmp_path: Path) -> None:
    """Terraform 0.12 to 0.15 list only the resource a reference reads (`google_service_account.default` for
    `...default.email`: terraform-validator's example_compute_instance plan, Terraform 0.14.2, format 0.1). A NIC's
    `network = google_compute_subnetwork.gpu.network` is then listed as `google_compute_subnetwork.gpu`: the
    network meant is that subnetwork's."""
    plan = PlanBuilder()
    _gcp(plan)
    names = _a3_networks(plan, 5)
    _compact(plan)
    keys = [n.replace("-", "_") for n in names]
    nics = [{"nic_type": "GVNIC"} for _ in names]
    old_style = [
        {
            "network": {"references": [f"google_compute_subnetwork.{k}"]},
            "subnetwork": {"references": [f"google_compute_subnetwork.{k}"]},
        }
        for k in keys
    ]
    _a3_instances(plan, nics, old_style, values={"resource_policies": ["a3-compact"]})
    doc = plan.build(terraform_version="0.14.2")
    doc["format_version"] = "0.1"
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    inventory = load_plan(str(path))
    assert [i.network for i in inventory.nodes[0].interfaces] == [
        f"projects/{PROJECT}/global/networks/{n}" for n in names
    ]
    report = flow.run(inventory, flow.Options())
    assert report.findings == [] and _not_judged(report) == {}
