"""Build the demo's Terraform plans (fixtures/demo/plans/), written as `terraform show -json` writes them
(fabriccheck/builders/plan_builder.py).

Run: python tools/build_demo_plans.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fabriccheck.builders import checkout
from fabriccheck.builders.plan_builder import PlanBuilder, const, ref

ROOT = checkout()


# ---------------------------------------------------------------------------------------------- AWS


def _aws_base(plan: PlanBuilder) -> None:
    plan.region_settings["aws"] = {"region": ref("var.region")}
    plan.variables["region"] = "us-east-1"
    plan.resource("aws_vpc", "train", {"cidr_block": "10.0.0.0/16"})
    plan.resource(
        "aws_subnet",
        "a",
        {"availability_zone": "us-east-1a", "cidr_block": "10.0.1.0/24", "map_public_ip_on_launch": False},
        unknown={"vpc_id": True},
        expressions={"vpc_id": ref("aws_vpc.train.id"), "availability_zone": const("us-east-1a")},
    )


def _efa_template(plan: PlanBuilder, name: str, instance_type: str, cards: int, sg: str, group: str | None) -> None:
    nics = [
        {
            "device_index": 0 if i == 0 else 1,
            "network_card_index": i,
            "interface_type": "efa" if i == 0 else "efa-only",
            "associate_public_ip_address": "",
            "delete_on_termination": "true",
        }
        for i in range(cards)
    ]
    values: dict[str, Any] = {
        "name": name,
        "instance_type": instance_type,
        "image_id": "ami-0dlami0000000000",
        "network_interfaces": nics,
        "placement": [{"group_name": group}] if group else [],
    }
    expressions: dict[str, Any] = {
        "instance_type": const(instance_type),
        "network_interfaces": [{"security_groups": ref(f"{sg}.id")} for _ in range(cards)],
    }
    if group:
        expressions["placement"] = [{"group_name": ref(f"aws_placement_group.{group}.name")}]
    plan.resource(
        "aws_launch_template",
        name,
        values,
        unknown={"network_interfaces": [{"security_groups": True} for _ in range(cards)], "latest_version": True},
        expressions=expressions,
    )


def _self_sg(plan: PlanBuilder, name: str) -> str:
    """A security group that lets all traffic flow with itself both ways, as separate rule resources."""
    address = plan.resource(
        "aws_security_group",
        name,
        {"name": name, "description": "EFA"},
        unknown={"vpc_id": True, "ingress": True, "egress": True, "arn": True},
        expressions={"vpc_id": ref("aws_vpc.train.id")},
    )
    for kind in ("ingress", "egress"):
        plan.resource(
            f"aws_vpc_security_group_{kind}_rule",
            f"{name}_self_{kind}",
            {"ip_protocol": "-1"},
            unknown={"security_group_id": True, "referenced_security_group_id": True},
            expressions={
                "security_group_id": ref(f"aws_security_group.{name}.id"),
                "referenced_security_group_id": ref(f"aws_security_group.{name}.id"),
                "ip_protocol": const("-1"),
            },
        )
    return address


def aws_correct() -> dict[str, Any]:
    """Two p4d.24xlarge in an Auto Scaling group: four EFA interfaces each, a cluster placement group, and a
    security group that allows all traffic with itself."""
    plan = PlanBuilder()
    _aws_base(plan)
    plan.resource("aws_placement_group", "train", {"name": "train", "strategy": "cluster"})
    _self_sg(plan, "efa")
    _efa_template(plan, "llm-train", "p4d.24xlarge", 4, "aws_security_group.efa", "train")
    plan.resource(
        "aws_autoscaling_group",
        "llm_train",
        {
            "name": "llm-train",
            "desired_capacity": 2,
            "min_size": 2,
            "max_size": 2,
            "placement_group": "train",
            "launch_template": [{"name": "llm-train", "version": "$Latest"}],
            "tag": [],
        },
        unknown={"vpc_zone_identifier": True, "launch_template": [{"id": True}]},
        expressions={
            "vpc_zone_identifier": ref("aws_subnet.a.id"),
            "launch_template": [{"id": ref("aws_launch_template.llm-train.id")}],
            "placement_group": ref("aws_placement_group.train.name"),
        },
    )
    return plan.build()


def aws_wrong() -> dict[str, Any]:
    """The demo account's vision-train group as a plan (p4d.24xlarge with no EFA and no placement group), and a
    module whose p5.48xlarge workers get all their EFA interfaces but a security group that does not let EFA
    traffic flow and a spread placement group; an old instance is being destroyed."""
    plan = PlanBuilder()
    _aws_base(plan)
    _vision_train_group(plan)
    _gpu_module(plan)
    plan.destroy("aws_instance", "old_trainer", {"id": "i-0aaaaaaaaaaaaaaa1", "instance_type": "p4d.24xlarge"})
    return plan.build()


def _cidr_ingress(protocol: str, from_port: int, to_port: int, cidr: str) -> dict[str, Any]:
    """One inline ingress block of an aws_security_group as the plan's values give it: from one address range."""
    return {
        "protocol": protocol,
        "from_port": from_port,
        "to_port": to_port,
        "cidr_blocks": [cidr],
        "security_groups": [],
        "self": False,
        "ipv6_cidr_blocks": [],
        "prefix_list_ids": [],
        "description": "",
    }


def _vision_train_group(plan: PlanBuilder) -> None:
    """The demo account's vision-train group: p4d.24xlarge with a web security group, no EFA, no placement group."""
    plan.resource(
        "aws_security_group",
        "web",
        {
            "name": "web",
            "description": "web",
            "ingress": [_cidr_ingress("tcp", 443, 443, "0.0.0.0/0")],
        },
        unknown={"vpc_id": True, "egress": True, "arn": True},
        expressions={"vpc_id": ref("aws_vpc.train.id")},
    )
    plan.resource(
        "aws_launch_template",
        "vision-train",
        {
            "name": "vision-train",
            "instance_type": "p4d.24xlarge",
            "image_id": "ami-0dlami0000000000",
            "network_interfaces": [],
            "placement": [],
        },
        unknown={"vpc_security_group_ids": True, "latest_version": True},
        expressions={"vpc_security_group_ids": ref("aws_security_group.web.id")},
    )
    plan.resource(
        "aws_autoscaling_group",
        "vision_train",
        {
            "name": "vision-train",
            "desired_capacity": 2,
            "min_size": 2,
            "max_size": 4,
            "tag": [{"key": "Name", "value": "vision-train", "propagate_at_launch": True}],
        },
        unknown={"vpc_zone_identifier": True, "launch_template": [{"id": True}]},
        expressions={
            "vpc_zone_identifier": ref("aws_subnet.a.id"),
            "launch_template": [{"id": ref("aws_launch_template.vision-train.id")}],
        },
    )


def _gpu_module(plan: PlanBuilder) -> None:
    """module.gpu: p5.48xlarge workers with all 32 EFA interfaces, but a security group that lets EFA traffic in
    only from an address range (not from itself) and a spread placement group."""
    plan.module("module.gpu", "./modules/gpu", {"subnet_id": ref("aws_subnet.a.id")})
    plan.resource("aws_placement_group", "workers", {"name": "gpu-workers", "strategy": "spread"}, module="module.gpu")
    plan.resource(
        "aws_security_group",
        "efa",
        {
            "name": "gpu-efa",
            "description": "EFA",
            "ingress": [_cidr_ingress("-1", 0, 0, "10.0.0.0/16")],
        },
        module="module.gpu",
        unknown={"vpc_id": True, "egress": True, "arn": True},
    )
    nics = [
        {
            "device_index": 0 if i == 0 else 1,
            "network_card_index": i,
            "interface_type": "efa" if i == 0 else "efa-only",
            "associate_public_ip_address": "",
        }
        for i in range(32)
    ]
    plan.resource(
        "aws_launch_template",
        "worker",
        {
            "name": "gpu-worker",
            "instance_type": "p5.48xlarge",
            "image_id": "ami-0dlami0000000000",
            "network_interfaces": nics,
            "placement": [{"group_name": "gpu-workers"}],
        },
        module="module.gpu",
        unknown={"network_interfaces": [{"security_groups": True, "subnet_id": True} for _ in nics]},
        expressions={
            "network_interfaces": [
                {"security_groups": ref("aws_security_group.efa.id"), "subnet_id": ref("var.subnet_id")} for _ in nics
            ]
        },
    )
    for i in range(2):
        plan.resource(
            "aws_instance",
            "worker",
            {"tags": {"Name": f"gpu-worker-{i}"}, "launch_template": [{"version": "$Latest"}]},
            module="module.gpu",
            index=i,
            count=2,
            unknown={"instance_type": False, "launch_template": [{"id": True, "name": True}], "arn": True},
            expressions={"launch_template": [{"id": ref("aws_launch_template.worker.id")}]},
        )


# ---------------------------------------------------------------------------------------------- Azure

SUBSCRIPTION = "11111111-2222-3333-4444-555555555555"


def _azure_base(plan: PlanBuilder) -> None:
    plan.region_settings["azurerm"] = {"subscription_id": const(SUBSCRIPTION), "features": const([{}])}
    plan.resource("azurerm_resource_group", "img", {"name": "img-rg", "location": "eastus"})
    plan.resource(
        "azurerm_virtual_network",
        "hpc",
        {"name": "hpc-vnet", "location": "eastus", "address_space": ["10.10.0.0/16"]},
        unknown={"subnet": True},
        expressions={"resource_group_name": ref("azurerm_resource_group.img.name")},
    )
    plan.resource(
        "azurerm_subnet",
        "compute",
        {"name": "compute", "address_prefixes": ["10.10.1.0/24"], "virtual_network_name": "hpc-vnet"},
        expressions={"virtual_network_name": ref("azurerm_virtual_network.hpc.name")},
    )


def _azure_scale_set(
    plan: PlanBuilder, name: str, sku: str, image: dict[str, Any], extensions: list[dict[str, Any]]
) -> None:
    plan.resource(
        "azurerm_linux_virtual_machine_scale_set",
        name.replace("-", "_"),
        {
            "name": name,
            "location": "eastus",
            "sku": sku,
            "instances": 2,
            "single_placement_group": True,
            "platform_fault_domain_count": 1,
            **image,
            "extension": extensions,
            "network_interface": [
                {
                    "name": f"{name}-nic",
                    "primary": True,
                    "enable_accelerated_networking": True,
                    "ip_configuration": [{"name": "ipconfig1", "primary": True}],
                }
            ],
            "tags": {},
        },
        unknown={"network_interface": [{"ip_configuration": [{"subnet_id": True}]}], "unique_id": True},
        expressions={"network_interface": [{"ip_configuration": [{"subnet_id": ref("azurerm_subnet.compute.id")}]}]},
    )


def azure_correct() -> dict[str, Any]:
    """Two ND96asr A100 v4 VMs in one Uniform scale set limited to one placement group, on the Ubuntu-HPC image."""
    plan = PlanBuilder()
    _azure_base(plan)
    image = {
        "source_image_reference": [
            {"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204", "version": "latest"}
        ]
    }
    _azure_scale_set(plan, "nd-a100-train", "Standard_ND96amsr_A100_v4", image, [])
    return plan.build()


def azure_wrong() -> dict[str, Any]:
    """The demo subscription's nd-a100-custom scale set as a plan: a custom image and no InfiniBand driver
    extension; and two standalone ND H100 v5 VMs (count) in no scale set or availability set."""
    plan = PlanBuilder()
    _azure_base(plan)
    image_id = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/img-rg/providers/Microsoft.Compute/images/llm-base-2026"
    _azure_scale_set(plan, "nd-a100-custom", "Standard_ND96amsr_A100_v4", {"source_image_id": image_id}, [])
    plan.resource("azurerm_proximity_placement_group", "solo", {"name": "solo-ppg", "location": "eastus"})
    for i in range(2):
        plan.resource(
            "azurerm_network_interface",
            "solo",
            {
                "name": f"nd-solo-{i}-nic",
                "location": "eastus",
                "accelerated_networking_enabled": True,
                "ip_configuration": [{"name": "ipconfig1"}],
            },
            index=i,
            count=2,
            unknown={"ip_configuration": [{"subnet_id": True}]},
            expressions={"ip_configuration": [{"subnet_id": ref("azurerm_subnet.compute.id")}]},
        )
        plan.resource(
            "azurerm_linux_virtual_machine",
            "solo",
            {
                "name": f"nd-solo-{i}",
                "location": "eastus",
                "size": "Standard_ND96isr_H100_v5",
                "source_image_reference": [
                    {"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204", "version": "latest"}
                ],
            },
            index=i,
            count=2,
            unknown={"network_interface_ids": True, "proximity_placement_group_id": True},
            expressions={
                "network_interface_ids": ref("azurerm_network_interface.solo.id"),
                "proximity_placement_group_id": ref("azurerm_proximity_placement_group.solo.id"),
            },
        )
    return plan.build()


# ---------------------------------------------------------------------------------------------- GCP

PROJECT = "fabriccheck-demo"


def _gcp_networks(plan: PlanBuilder, prefix: str, gpu_networks: int) -> None:
    plan.region_settings["google"] = {"project": const(PROJECT), "region": const("us-central1")}
    for name in [f"{prefix}-host", *(f"{prefix}-gpu-{i}" for i in range(gpu_networks))]:
        key = name.replace("-", "_")
        plan.resource(
            "google_compute_network",
            key,
            {"name": name, "mtu": 8244, "auto_create_subnetworks": False},
            unknown={"self_link": True},
        )
        plan.resource(
            "google_compute_subnetwork",
            key,
            {"name": f"{name}-sub", "region": "us-central1", "ip_cidr_range": f"10.{10 + len(plan.changes)}.0.0/24"},
            unknown={"network": True, "self_link": True},
            expressions={"network": ref(f"google_compute_network.{key}.id")},
        )
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
            unknown={"network": True},
            expressions={"network": ref(f"google_compute_network.{key}.name")},
        )


def _gke_pool(plan: PlanBuilder, prefix: str, pool: str, gpu_networks: int) -> None:
    plan.resource(
        "google_container_cluster",
        "train",
        {"name": "train", "location": "us-central1-a"},
        unknown={"network": True, "subnetwork": True, "endpoint": True},
        expressions={
            "network": ref(f"google_compute_network.{prefix}_host.name"),
            "subnetwork": ref(f"google_compute_subnetwork.{prefix}_host.name"),
        },
    )
    plan.resource(
        "google_compute_resource_policy",
        "compact",
        {"name": f"{pool}-compact", "region": "us-central1", "group_placement_policy": [{"collocation": "COLLOCATED"}]},
    )
    extra: list[dict[str, Any]] = [{} for _ in range(gpu_networks)]
    plan.resource(
        "google_container_node_pool",
        pool.replace("-", "_"),
        {
            "name": pool,
            "location": "us-central1-a",
            "node_count": 2,
            "node_locations": ["us-central1-a"],
            "node_config": [{"machine_type": "a3-highgpu-8g"}],
            "placement_policy": [{"type": "COMPACT"}],
            "network_config": [{"additional_node_network_configs": extra}] if extra else [],
        },
        unknown={
            "cluster": True,
            "placement_policy": [{"policy_name": True}],
            "network_config": [
                {"additional_node_network_configs": [{"network": True, "subnetwork": True} for _ in extra]}
            ]
            if extra
            else False,
        },
        expressions={
            "cluster": ref("google_container_cluster.train.id"),
            "placement_policy": [{"policy_name": ref("google_compute_resource_policy.compact.name")}],
            "network_config": [
                {
                    "additional_node_network_configs": [
                        {
                            "network": ref(f"google_compute_network.{prefix}_gpu_{i}.name"),
                            "subnetwork": ref(f"google_compute_subnetwork.{prefix}_gpu_{i}.name"),
                        }
                        for i in range(gpu_networks)
                    ]
                }
            ],
        },
    )


def gcp_correct() -> dict[str, Any]:
    """A GKE node pool of two a3-highgpu-8g with four GPU networks (MTU 8244, internal TCP allowed) and compact
    placement."""
    plan = PlanBuilder()
    _gcp_networks(plan, "a3", 4)
    _gke_pool(plan, "a3", "a3-high", 4)
    return plan.build()


def gcp_wrong() -> dict[str, Any]:
    """The demo project's hostonly pool as a plan: two a3-highgpu-8g with only the host NIC."""
    plan = PlanBuilder()
    _gcp_networks(plan, "a3", 0)
    _gke_pool(plan, "a3", "hostonly", 0)
    return plan.build()


PLANS = {
    "aws-correct": aws_correct,
    "aws-wrong": aws_wrong,
    "azure-correct": azure_correct,
    "azure-wrong": azure_wrong,
    "gcp-correct": gcp_correct,
    "gcp-wrong": gcp_wrong,
}


def write(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, build in PLANS.items():
        (folder / f"{name}.json").write_text(json.dumps(build(), indent=1) + "\n")


def main() -> None:
    write(ROOT / "fixtures" / "demo" / "plans")
