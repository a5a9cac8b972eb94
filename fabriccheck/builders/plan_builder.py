"""A Terraform plan written as `terraform show -json` writes it, for the demo's plans, the plan tests and
benchmarks/bench_plan.py.

The layout is format_version 1.2, as Terraform 1.9 writes it: planned_values with child modules, resource_changes
with after / after_unknown, configuration with each module's resource blocks (expressions, references, count and
for_each) and module calls, prior_state, and the Terraform 1.5+ fields (resource_drift, relevant_attributes, checks,
timestamp, applyable, complete, errored). Values a real plan knows only after apply (ids of resources being created,
arguments set from other objects, arguments the provider computes) are left out of `after` and marked in
`after_unknown`, so references between resources resolve only through the configuration, as in a real plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

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
