"""Build the demo's Terraform plans (fixtures/demo/plans/) and the plan fixtures of the tests (tests/data/plans/).

Each file is written in the JSON format of `terraform show -json` (format_version 1.2, as Terraform 1.9 writes
it): planned_values with child modules, resource_changes with after / after_unknown, configuration with each
module's resource blocks (expressions, references, count and for_each) and module calls, prior_state, and the
Terraform 1.5+ fields (resource_drift, relevant_attributes, checks, timestamp, applyable, complete, errored).
Values a real plan knows only after apply (ids of resources being created) are left out of `after` and marked
in `after_unknown`, so references between resources resolve only through the configuration, as in a real plan.

Run: python tools/build_demo_plans.py
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROVIDERS = {
    "aws": "registry.terraform.io/hashicorp/aws",
    "azurerm": "registry.terraform.io/hashicorp/azurerm",
    "google": "registry.terraform.io/hashicorp/google",
}


def _words(text: str) -> list[str]:
    return text.split()


# Attributes a provider computes where the configuration does not set them. A real plan leaves each out of `after`,
# marks it `true` in `after_unknown` and has no expression for it in the configuration (so fabriccheck must not
# read "unknown" as "set to something unknown"). As Terraform writes them:
# - aws_instance: open-policy-agent/opa@111a67dd docs/content/terraform.md (aws_instance.web, Terraform 0.12) and
#   a Terraform 1.2.7 plan of the AWS provider 4.x (placement_partition_number, private_dns_name_options ...);
# - google_compute_instance and its network_interface blocks: GoogleCloudPlatform/terraform-validator@7d8412ef
#   testdata/templates/example_compute_instance.tfplan.json (network = "default" set, subnetwork computed);
# - the rest from the providers' schemas (Optional + Computed arguments, and the ids and links every resource
#   gets), registry.terraform.io/providers/hashicorp/{aws,google,azurerm}.
COMPUTED: dict[str, list[str]] = {
    "aws_instance": _words(
        "arn associate_public_ip_address availability_zone cpu_core_count cpu_threads_per_core "
        "ebs_block_device ephemeral_block_device host_id id instance_state ipv6_address_count "
        "ipv6_addresses key_name network_interface outpost_arn password_data placement_group "
        "placement_partition_number primary_network_interface_id private_dns private_ip public_dns "
        "public_ip root_block_device secondary_private_ips security_groups subnet_id tenancy "
        "vpc_security_group_ids"
    ),
    "aws_launch_template": _words("arn default_version id latest_version"),
    "aws_autoscaling_group": _words(
        "arn availability_zones default_cooldown id load_balancers service_linked_role_arn "
        "target_group_arns vpc_zone_identifier"
    ),
    "aws_eks_node_group": _words("arn capacity_type disk_size id instance_types resources status"),
    "aws_placement_group": _words("arn id partition_count placement_group_id spread_level"),
    "aws_security_group": _words("arn egress id ingress owner_id"),
    "aws_subnet": _words("arn availability_zone_id id ipv6_cidr_block_association_id owner_id"),
    "aws_network_interface": _words("arn id mac_address owner_id private_ip private_ips security_groups"),
    "google_compute_instance": _words(
        "cpu_platform current_status guest_accelerator id instance_id label_fingerprint "
        "metadata_fingerprint min_cpu_platform project scheduling self_link tags_fingerprint"
    ),
    "google_compute_instance_template": _words(
        "id metadata_fingerprint project self_link self_link_unique tags_fingerprint"
    ),
    "google_compute_network": _words("gateway_ipv4 id numeric_id project self_link"),
    "google_compute_subnetwork": _words("creation_timestamp gateway_address id project self_link"),
    "google_compute_firewall": _words("creation_timestamp id project self_link"),
    "google_compute_resource_policy": _words("id project self_link"),
    "google_container_node_pool": _words("id instance_group_urls managed_instance_group_urls operation"),
}
# Computed arguments of each network_interface block (the network too, where only the subnetwork is set).
NIC_COMPUTED: dict[str, list[str]] = {
    "google_compute_instance": _words("name network network_ip subnetwork subnetwork_project"),
    "google_compute_instance_template": _words("name network subnetwork subnetwork_project"),
}


def ref(*refs: str) -> dict[str, Any]:
    """An expression that reads other objects, listed as Terraform lists them (`x.y.id` then `x.y`)."""
    listed: list[str] = []
    for r in refs:
        listed.append(r)
        parts = r.split(".")
        if not r.startswith(("var.", "local.")) and len(parts) == 3 and not r.startswith("data."):
            listed.append(".".join(parts[:2]))
    return {"references": listed}


def const(value: Any) -> dict[str, Any]:
    return {"constant_value": value}


@dataclass
class Change:
    address: str
    module: str
    type: str
    name: str
    index: int | str | None
    values: dict[str, Any]
    unknown: dict[str, Any]
    actions: list[str]
    before: dict[str, Any] | None


@dataclass
class PlanBuilder:
    """Collects resources and module calls; `build()` lays them out as Terraform does."""

    region_settings: dict[str, dict[str, Any]] = field(default_factory=dict)  # provider -> expressions
    variables: dict[str, Any] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    blocks: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # module path -> local -> block
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)  # module path -> call
    drift: list[dict[str, Any]] = field(default_factory=list)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)  # module path -> output blocks

    def module(
        self,
        path: str,
        source: str,
        expressions: dict[str, Any] | None = None,
        outputs: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        """A module call: path 'module.gpu' or 'module.a.module.b' (no instance keys); `outputs` are the called
        module's output blocks (name -> expression)."""
        self.calls[path] = {"source": source, "expressions": expressions or {}}
        if outputs:
            self.outputs[path] = {name: {"expression": expr} for name, expr in outputs.items()}

    def resource(
        self,
        type_: str,
        name: str,
        values: dict[str, Any],
        *,
        module: str = "",
        index: int | str | None = None,
        unknown: dict[str, Any] | None = None,
        expressions: dict[str, Any] | None = None,
        actions: tuple[str, ...] = ("create",),
        count: int | None = None,
        for_each: list[str] | None = None,
    ) -> str:
        key = "" if index is None else (f"[{index}]" if isinstance(index, int) else f'["{index}"]')
        local = f"{type_}.{name}"
        address = f"{module}.{local}{key}" if module else f"{local}{key}"
        provider = type_.split("_", 1)[0]
        unknown = dict(unknown or {})
        if "create" in actions and "id" not in values:
            unknown.setdefault("id", True)
        if "create" in actions:
            _computed(type_, values, unknown, expressions or {})
        self.changes.append(Change(address, module, type_, name, index, values, unknown, list(actions), None))
        config_module = _strip_keys(module)
        block = self.blocks.setdefault(config_module, {}).setdefault(
            local,
            {
                "address": local,
                "mode": "managed",
                "type": type_,
                "name": name,
                "provider_config_key": provider
                if not config_module
                else f"{config_module.rsplit('.', 1)[-1]}:{provider}",
                "expressions": expressions or {},
                "schema_version": 0,
            },
        )
        if count is not None:
            block["count_expression"] = const(count)
        if for_each is not None:
            block["for_each_expression"] = const(dict.fromkeys(for_each, True))
        return address

    def destroy(self, type_: str, name: str, before: dict[str, Any], module: str = "") -> str:
        local = f"{type_}.{name}"
        address = f"{module}.{local}" if module else local
        self.changes.append(Change(address, module, type_, name, None, {}, {}, ["delete"], before))
        return address

    def build(self, terraform_version: str = "1.9.8") -> dict[str, Any]:
        root: dict[str, Any] = {"resources": [], "child_modules": []}
        modules: dict[str, dict[str, Any]] = {"": root}
        prior: list[dict[str, Any]] = []
        resource_changes = []
        for change in self.changes:
            provider = PROVIDERS[change.type.split("_", 1)[0]]
            item: dict[str, Any] = {
                "address": change.address,
                "mode": "managed",
                "type": change.type,
                "name": change.name,
                "provider_name": provider,
                "schema_version": 0,
            }
            if change.index is not None:
                item["index"] = change.index
            if change.actions != ["delete"]:
                planned = {**item, "values": change.values, "sensitive_values": {}}
                _module_of(modules, change.module)["resources"].append(planned)
            else:
                prior.append({**item, "values": change.before, "sensitive_values": {}})
            rc = {**item}
            rc.pop("schema_version")
            if change.module:
                rc["module_address"] = change.module
            rc["change"] = {
                "actions": change.actions,
                "before": change.before,
                "after": change.values if change.actions != ["delete"] else None,
                "after_unknown": change.unknown if change.actions != ["delete"] else {},
                "before_sensitive": {} if change.before is not None else False,
                "after_sensitive": {} if change.actions != ["delete"] else False,
            }
            resource_changes.append(rc)
        _drop_empty(root)
        provider_config = {
            key: {"name": key, "full_name": PROVIDERS[key], "expressions": expressions}
            for key, expressions in self.region_settings.items()
        }
        return {
            "format_version": "1.2",
            "terraform_version": terraform_version,
            "variables": {k: {"value": v} for k, v in self.variables.items()},
            "planned_values": {"root_module": root},
            "resource_drift": self.drift,
            "resource_changes": resource_changes,
            "prior_state": {
                "format_version": "1.0",
                "terraform_version": terraform_version,
                "values": {"root_module": {"resources": prior}},
            },
            "configuration": {"provider_config": provider_config, "root_module": self._config("")},
            "relevant_attributes": [
                {"resource": c.address.split("[")[0], "attribute": ["id"]} for c in self.changes[:1]
            ],
            "checks": [],
            "timestamp": "2026-11-30T10:00:00Z",
            "applyable": True,
            "complete": True,
            "errored": False,
        }

    def _config(self, path: str) -> dict[str, Any]:
        config: dict[str, Any] = {"resources": list(self.blocks.get(path, {}).values())}
        if path in self.outputs:
            config["outputs"] = self.outputs[path]
        calls = {}
        for call_path, call in self.calls.items():
            parent, _, name = call_path.rpartition(".module.") if ".module." in call_path else ("", "", call_path)
            name = name.removeprefix("module.")
            if parent == path:
                calls[name] = {**call, "module": self._config(call_path)}
        if calls:
            config["module_calls"] = calls
        return config


def _computed(type_: str, values: dict[str, Any], unknown: dict[str, Any], expressions: dict[str, Any]) -> None:
    """Mark unknown, as Terraform does, the computed arguments that neither the values nor the configuration set,
    and the arguments set from other objects that the values leave out (a flag the caller set is left as it is)."""
    for name in COMPUTED.get(type_, []):
        if name not in values and name not in expressions:
            unknown.setdefault(name, True)
    _referenced(values, expressions, unknown)
    nics = values.get("network_interface")
    if type_ not in NIC_COMPUTED or not isinstance(nics, list):
        return
    configured = expressions.get("network_interface")
    flags = unknown.get("network_interface")
    if flags is True:
        return
    flags = list(flags) if isinstance(flags, list) else []
    flags += [{} for _ in range(len(nics) - len(flags))]
    for i, nic in enumerate(nics):
        block = configured[i] if isinstance(configured, list) and i < len(configured) else {}
        flag = dict(flags[i]) if isinstance(flags[i], dict) else flags[i]
        if not isinstance(flag, dict):
            continue
        for name in NIC_COMPUTED[type_]:
            if name == "network" and ("network" in nic or "network" in block or "subnetwork" not in block):
                continue  # computed only from a subnetwork that is set
            if name not in nic and name not in block:
                flag.setdefault(name, True)
        flags[i] = flag
    unknown["network_interface"] = flags


def _referenced(values: dict[str, Any], expressions: dict[str, Any], unknown: dict[str, Any]) -> None:
    """Arguments set from other objects that the values leave out are unknown, in nested blocks too."""
    for name, expr in expressions.items():
        if isinstance(expr, dict) and "references" in expr:
            if expr["references"] and values.get(name) is None:
                unknown.setdefault(name, True)
        elif isinstance(expr, list) and isinstance(values.get(name), list):
            flags = unknown.get(name)
            if flags is True:
                continue
            flags = list(flags) if isinstance(flags, list) else []
            flags += [{} for _ in range(len(values[name]) - len(flags))]
            for i, (block, block_expr) in enumerate(zip(values[name], expr, strict=False)):
                if isinstance(block, dict) and isinstance(block_expr, dict) and isinstance(flags[i], dict):
                    flags[i] = dict(flags[i])
                    _referenced(block, block_expr, flags[i])
            unknown[name] = flags


def _strip_keys(module: str) -> str:
    import re

    return re.sub(r'\[(?:"[^"]*"|\d+)\]', "", module)


def _module_of(modules: dict[str, dict[str, Any]], module: str) -> dict[str, Any]:
    if module in modules:
        return modules[module]
    parent_address = module.rsplit(".module.", 1)[0] if ".module." in module else ""
    parent = _module_of(modules, parent_address)
    child: dict[str, Any] = {"resources": [], "address": module, "child_modules": []}
    parent["child_modules"].append(child)
    modules[module] = child
    return child


def _drop_empty(module: dict[str, Any]) -> None:
    for child in module.get("child_modules", []):
        _drop_empty(child)
    if not module.get("child_modules"):
        module.pop("child_modules", None)


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
    plan.resource(
        "aws_security_group",
        "web",
        {
            "name": "web",
            "description": "web",
            "ingress": [
                {
                    "protocol": "tcp",
                    "from_port": 443,
                    "to_port": 443,
                    "cidr_blocks": ["0.0.0.0/0"],
                    "security_groups": [],
                    "self": False,
                    "ipv6_cidr_blocks": [],
                    "prefix_list_ids": [],
                    "description": "",
                }
            ],
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
    plan.module("module.gpu", "./modules/gpu", {"subnet_id": ref("aws_subnet.a.id")})
    plan.resource("aws_placement_group", "workers", {"name": "gpu-workers", "strategy": "spread"}, module="module.gpu")
    plan.resource(
        "aws_security_group",
        "efa",
        {
            "name": "gpu-efa",
            "description": "EFA",
            "ingress": [
                {
                    "protocol": "-1",
                    "from_port": 0,
                    "to_port": 0,
                    "cidr_blocks": ["10.0.0.0/16"],
                    "security_groups": [],
                    "self": False,
                    "ipv6_cidr_blocks": [],
                    "prefix_list_ids": [],
                    "description": "",
                }
            ],
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
    plan.destroy("aws_instance", "old_trainer", {"id": "i-0aaaaaaaaaaaaaaa1", "instance_type": "p4d.24xlarge"})
    return plan.build()


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


if __name__ == "__main__":
    write(ROOT / "fixtures" / "demo" / "plans")
