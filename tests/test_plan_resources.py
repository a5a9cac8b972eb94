"""Each cloud's plan mapping, resource by resource: what the plan would launch is judged as a live scan judges it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from fabriccheck import flow, report
from fabriccheck.builders.plan_builder import PlanBuilder, const, ref
from fabriccheck.sources.terraform import load_plan


def _judge(tmp_path: Path, plan: PlanBuilder) -> report.Report:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan.build()))
    return flow.run(load_plan(str(path)), flow.Options())


def _rules(report: report.Report) -> Counter[str]:
    return Counter(f.rule for f in report.findings)


def _classic_self_sg(plan: PlanBuilder, name: str, both_ways: bool) -> None:
    """A group whose self rules are aws_security_group_rule resources (self = true; source_security_group_id)."""
    plan.resource("aws_security_group", name, {"name": name}, unknown={"ingress": True, "egress": True})
    plan.resource(
        "aws_security_group_rule",
        f"{name}_in",
        {"type": "ingress", "protocol": "-1", "from_port": 0, "to_port": 0, "self": True},
        unknown={"security_group_id": True},
        expressions={"security_group_id": ref(f"aws_security_group.{name}.id")},
    )
    if both_ways:
        plan.resource(
            "aws_security_group_rule",
            f"{name}_out",
            {"type": "egress", "protocol": "all", "from_port": 0, "to_port": 0, "self": False},
            unknown={"security_group_id": True, "source_security_group_id": True},
            expressions={
                "security_group_id": ref(f"aws_security_group.{name}.id"),
                "source_security_group_id": ref(f"aws_security_group.{name}.id"),
            },
        )


def _efa_template(plan: PlanBuilder, name: str, instance_type: str, cards: int, sg: str) -> None:
    nics = [
        {"network_card_index": i, "device_index": 0 if i == 0 else 1, "interface_type": "efa" if i == 0 else "efa-only"}
        for i in range(cards)
    ]
    plan.resource(
        "aws_launch_template",
        name,
        {"name": name, "instance_type": instance_type, "network_interfaces": nics},
        unknown={"network_interfaces": [{"security_groups": True} for _ in nics]},
        expressions={"network_interfaces": [{"security_groups": ref(f"aws_security_group.{sg}.id")} for _ in nics]},
    )


def test_aws_eks_node_group_and_classic_rules(tmp_path: Path) -> None:
    plan = PlanBuilder()
    plan.region_settings["aws"] = {"region": const("us-west-2")}
    _classic_self_sg(plan, "efa", both_ways=True)
    _efa_template(plan, "gpu", "p5.48xlarge", 32, "efa")
    plan.resource("aws_eks_cluster", "main", {"name": "research"})
    plan.resource(
        "aws_eks_node_group",
        "gpu",
        {"node_group_name": "h100", "instance_types": [], "scaling_config": [{"desired_size": 3, "min_size": 3}]},
        unknown={"cluster_name": True, "launch_template": [{"id": True}]},
        expressions={
            "cluster_name": ref("aws_eks_cluster.main.name"),
            "launch_template": [{"id": ref("aws_launch_template.gpu.id")}],
        },
    )
    report = _judge(tmp_path, plan)
    [cluster] = report.clusters
    assert cluster.grouped_by == "EKS node group" and len(cluster.nodes) == 3
    assert cluster.id.endswith(":eks-node-group/research/h100")
    # All 32 EFA interfaces and a group that allows itself both ways: only the missing placement group is left.
    assert _rules(report) == Counter({"AWS120": 1})


def test_aws_security_group_rule_one_way_is_flagged(tmp_path: Path) -> None:
    plan = PlanBuilder()
    plan.region_settings["aws"] = {"region": const("us-west-2")}
    _classic_self_sg(plan, "efa", both_ways=False)
    _efa_template(plan, "gpu", "p4d.24xlarge", 4, "efa")
    plan.resource("aws_placement_group", "pg", {"name": "pg", "strategy": "cluster"})
    plan.resource(
        "aws_autoscaling_group",
        "gpu",
        {
            "name": "gpu",
            "desired_capacity": 2,
            "placement_group": "pg",
            "mixed_instances_policy": [
                {
                    "launch_template": [
                        {"launch_template_specification": [{}], "override": [{"instance_type": "p4de.24xlarge"}]}
                    ]
                }
            ],
        },
        unknown={"mixed_instances_policy": [{"launch_template": [{"launch_template_specification": [True]}]}]},
        expressions={
            "mixed_instances_policy": [
                {
                    "launch_template": [
                        {"launch_template_specification": [{"launch_template_id": ref("aws_launch_template.gpu.id")}]}
                    ]
                }
            ]
        },
    )
    report = _judge(tmp_path, plan)
    assert {n.split("#")[0] for c in report.clusters for n in c.nodes} == {"aws_autoscaling_group.gpu"}
    # The group (its two nodes, by its Terraform address), and the launch template itself (judged as a live
    # template is).
    assert {r for f in report.findings for r in f.resources} == {"aws_autoscaling_group.gpu", "aws_launch_template.gpu"}
    assert _rules(report) == Counter({"AWS110": 2})  # the group once, the template once
    inventory = load_plan(str(tmp_path / "plan.json"))
    assert {n.instance_type for n in inventory.nodes} == {"p4de.24xlarge"}  # the override, not the template's


def test_aws_capacity_block_brings_its_own_placement(tmp_path: Path) -> None:
    plan = PlanBuilder()
    plan.region_settings["aws"] = {"region": const("us-east-1")}
    _classic_self_sg(plan, "efa", both_ways=True)
    plan.resource("aws_ec2_capacity_block_reservation", "block", {"instance_type": "p5.48xlarge", "instance_count": 2})
    for i in range(2):
        plan.resource(
            "aws_network_interface",
            "efa",
            {"interface_type": "efa"},
            index=i,
            count=2,
            unknown={"security_groups": True},
            expressions={"security_groups": ref("aws_security_group.efa.id")},
        )
        plan.resource(
            "aws_instance",
            "node",
            {
                "instance_type": "p5.48xlarge",
                "tags": {"job": "pretrain"},
                "network_interface": [{"device_index": 0, "network_card_index": 0}],
                "capacity_reservation_specification": [{"capacity_reservation_target": [{}]}],
            },
            index=i,
            count=2,
            unknown={
                "network_interface": [{"network_interface_id": True}],
                "capacity_reservation_specification": [{"capacity_reservation_target": [True]}],
            },
            expressions={
                # aws_network_interface.efa[count.index] lists the resource without its index
                "network_interface": [{"network_interface_id": ref("aws_network_interface.efa.id")}],
                "capacity_reservation_specification": [
                    {
                        "capacity_reservation_target": [
                            {"capacity_reservation_id": ref("aws_ec2_capacity_block_reservation.block.id")}
                        ]
                    }
                ],
            },
        )
    report = _judge(tmp_path, plan)
    inventory = load_plan(str(tmp_path / "plan.json"))
    assert [n.interface_ids[0] for n in inventory.nodes] == [
        "aws_network_interface.efa[0]",
        "aws_network_interface.efa[1]",
    ]
    [cluster] = report.clusters
    assert cluster.grouped_by == "Capacity Block"
    # One EFA of 32 on each node; no placement finding, since a Capacity Block places its instances itself.
    assert _rules(report) == Counter({"AWS102": 2})


def _azure(plan: PlanBuilder, prefixes: list[str]) -> None:
    plan.region_settings["azurerm"] = {"subscription_id": const("aaaaaaaa-0000-0000-0000-000000000001")}
    plan.resource("azurerm_virtual_network", "net", {"name": "net", "location": "East US", "address_space": prefixes})
    plan.resource(
        "azurerm_subnet",
        "compute",
        {"name": "compute", "address_prefixes": prefixes[:1], "virtual_network_name": "net"},
    )


def test_azure_availability_set_vms_extensions_and_nics(tmp_path: Path) -> None:
    plan = PlanBuilder()
    _azure(plan, ["172.16.0.0/16"])
    plan.resource("azurerm_availability_set", "hb", {"name": "hb-as", "location": "eastus"})
    image = "/subscriptions/aaaaaaaa-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Compute/images/x"
    for i in range(2):
        plan.resource(
            "azurerm_network_interface",
            "nic",
            {"name": f"hb-{i}", "location": "eastus", "accelerated_networking_enabled": i == 0},
            index=i,
            count=2,
            unknown={"ip_configuration": [{"subnet_id": True}]},
            expressions={"ip_configuration": [{"subnet_id": ref("azurerm_subnet.compute.id")}]},
        )
        plan.resource(
            "azurerm_linux_virtual_machine",
            "hb",
            {"name": f"hb-{i}", "location": "eastus", "size": "Standard_ND96asr_v4", "source_image_id": image},
            index=i,
            count=2,
            unknown={"network_interface_ids": True, "availability_set_id": True},
            expressions={
                "network_interface_ids": ref("azurerm_network_interface.nic.id"),
                "availability_set_id": ref("azurerm_availability_set.hb.id"),
            },
        )
    plan.resource(
        "azurerm_virtual_machine_extension",
        "ib",
        {"name": "ib", "publisher": "Microsoft.HpcCompute", "type": "InfiniBandDriverLinux"},
        unknown={"virtual_machine_id": True},
        expressions={"virtual_machine_id": ref("azurerm_linux_virtual_machine.hb[0].id")},
    )
    report = _judge(tmp_path, plan)
    [cluster] = report.clusters
    assert cluster.grouped_by == "availability set"
    by_rule = {f.rule: f for f in report.findings}
    assert _rules(report) == Counter({"AZ130": 1, "AZ140": 1, "AZ150": 1})
    assert by_rule["AZ140"].resources == ["azurerm_linux_virtual_machine.hb[1]"]  # hb[0] has the driver extension
    assert by_rule["AZ150"].resources == ["azurerm_linux_virtual_machine.hb[1]"]  # hb[1]'s NIC is not accelerated
    assert "172.16.0.0/16" in by_rule["AZ130"].message


def test_azure_flexible_scale_set_and_aks_pool(tmp_path: Path) -> None:
    plan = PlanBuilder()
    _azure(plan, ["10.1.0.0/16"])
    plan.resource(
        "azurerm_orchestrated_virtual_machine_scale_set",
        "flex",
        {
            "name": "flex",
            "location": "eastus",
            "sku_name": "Standard_ND96isr_H100_v5",
            "instances": 2,
            "platform_fault_domain_count": 1,
            "source_image_reference": [{"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204"}],
        },
    )
    plan.resource("azurerm_kubernetes_cluster", "aks", {"name": "llm", "location": "eastus"})
    plan.resource(
        "azurerm_kubernetes_cluster_node_pool",
        "gpu",
        {"name": "gpu", "vm_size": "Standard_ND96isr_H100_v5", "node_count": 3},
        unknown={"kubernetes_cluster_id": True},
        expressions={"kubernetes_cluster_id": ref("azurerm_kubernetes_cluster.aks.id")},
    )
    report = _judge(tmp_path, plan)
    assert sorted((c.grouped_by, len(c.nodes)) for c in report.clusters) == [("AKS node pool", 3), ("scale set", 2)]
    assert _rules(report) == Counter({"AZ112": 1, "AZ111": 1, "AZ140": 1})  # AZ140 once for the pool's address


def _gcp_network(plan: PlanBuilder, name: str, mtu: int, profile: str | None = None) -> None:
    values: dict[str, Any] = {"name": name, "mtu": mtu}
    if profile:
        values["network_profile"] = profile
    plan.resource("google_compute_network", name.replace("-", "_"), values)


def test_gcp_mig_from_instance_template(tmp_path: Path) -> None:
    plan = PlanBuilder()
    plan.region_settings["google"] = {"project": const("proj")}
    nets = ["host", *(f"gpu-{i}" for i in range(8))]
    for net in nets:
        _gcp_network(plan, net, 1460)
        plan.resource(
            "google_compute_firewall",
            net.replace("-", "_"),
            {"name": f"{net}-fw", "allow": [{"protocol": "all"}], "source_tags": ["gpu"]},
            unknown={"network": True},
            expressions={"network": ref(f"google_compute_network.{net.replace('-', '_')}.name")},
        )
    plan.resource(
        "google_compute_resource_policy",
        "compact",
        {"name": "mega", "region": "us-east5", "group_placement_policy": [{"collocation": "COLLOCATED"}]},
    )
    plan.resource(
        "google_compute_instance_template",
        "mega",
        {
            "name": "a3-mega",
            "machine_type": "a3-megagpu-8g",
            "network_interface": [{"nic_type": "GVNIC"} for _ in nets],
            "resource_policies": [],
        },
        unknown={"self_link": True, "resource_policies": True, "network_interface": [{"network": True} for _ in nets]},
        expressions={
            "network_interface": [{"network": ref(f"google_compute_network.{n.replace('-', '_')}.name")} for n in nets],
            "resource_policies": ref("google_compute_resource_policy.compact.name"),
        },
    )
    plan.resource(
        "google_compute_instance_group_manager",
        "mega",
        {"name": "mega", "zone": "us-east5-a", "target_size": 4, "version": [{"name": "v1"}]},
        unknown={"version": [{"instance_template": True}]},
        expressions={"version": [{"instance_template": ref("google_compute_instance_template.mega.self_link")}]},
    )
    report = _judge(tmp_path, plan)
    [cluster] = report.clusters
    assert cluster.grouped_by == "managed instance group" and len(cluster.nodes) == 4
    assert cluster.id.endswith("zones/us-east5-a/instanceGroupManagers/mega")
    # Every GPU NIC, compact placement, firewall open: only the MTU (1460, not 8244) is left to say.
    assert _rules(report) == Counter({"GCP140": 1})  # once for the group's Terraform address


def test_gcp_rdma_instances_without_network_profile(tmp_path: Path) -> None:
    plan = PlanBuilder()
    plan.region_settings["google"] = {"project": const("proj")}
    _gcp_network(plan, "host", 8896)
    _gcp_network(plan, "roce", 8896)
    nics = [{"nic_type": "GVNIC"}, *({"nic_type": "MRDMA"} for _ in range(8))]
    for i in range(2):
        plan.resource(
            "google_compute_instance",
            "ultra",
            {
                "name": f"ultra-{i}",
                "zone": "us-central1-b",
                "machine_type": "a3-ultragpu-8g",
                "network_interface": nics,
                "scheduling": [{"provisioning_model": "FLEX_START"}],
            },
            index=i,
            count=2,
            unknown={"network_interface": [{"network": True} for _ in nics]},
            expressions={
                "network_interface": [
                    {"network": ref("google_compute_network.host.name" if j == 0 else "google_compute_network.roce.id")}
                    for j in range(len(nics))
                ]
            },
        )
    report = _judge(tmp_path, plan)
    [cluster] = report.clusters
    assert cluster.grouped_by == "Terraform resource"  # two instances of one count, no other signal
    assert _rules(report) == Counter({"GCP122": 2})


def test_gcp_network_known_only_after_apply_fires_nothing(tmp_path: Path) -> None:
    """GPU NICs on a network read from a data source: whether the fabric is attached, and whether a firewall lets
    it through, cannot be told before apply. No rule fires on it; the cluster says what was not judged."""
    plan = PlanBuilder()
    plan.region_settings["google"] = {"project": const("proj")}
    _gcp_network(plan, "host", 8244)
    nics = [{"nic_type": "GVNIC"} for _ in range(5)]
    for i in range(2):
        plan.resource(
            "google_compute_instance",
            "a3",
            {"name": f"a3-{i}", "zone": "us-central1-a", "machine_type": "a3-highgpu-8g", "network_interface": nics},
            index=i,
            count=2,
            unknown={"network_interface": [{"network": True} for _ in nics]},
            expressions={
                "network_interface": [
                    {
                        "network": ref(
                            "google_compute_network.host.name" if j == 0 else f"data.google_compute_network.g{j}.id"
                        )
                    }
                    for j in range(len(nics))
                ]
            },
        )
    report = _judge(tmp_path, plan)
    assert _rules(report) == Counter({"GCP130": 1})  # no placement policy: that much is known
    [cluster] = report.clusters
    reasons = {n.rule: n.reason for n in cluster.not_judged}
    assert {"GCP101", "GCP102", "GCP110"} <= set(reasons)
    assert "data.google_compute_network.g1.id" in reasons["GCP110"]
