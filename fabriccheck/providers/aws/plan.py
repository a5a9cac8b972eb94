"""AWS resources of a Terraform plan -> the model: the nodes it would launch (origin plan) and the `aws` namespace,
the same shapes a live run or a dump gives, so the same rules judge them.

Arguments as the AWS provider names them (registry.terraform.io/providers/hashicorp/aws: aws_instance,
aws_launch_template, aws_autoscaling_group, aws_eks_node_group, aws_security_group and its rule resources,
aws_placement_group, aws_subnet, aws_network_interface, aws_ec2_capacity_reservation,
aws_ec2_capacity_block_reservation). An Auto Scaling group or EKS node group of desired size N becomes N nodes of
one spec, tagged as EC2 tags the instances of such groups (aws:autoscaling:groupName; eks:cluster-name and
eks:nodegroup-name), so they group as a live scan groups them.
"""

from __future__ import annotations

import re
from typing import Any

from fabriccheck.inventory import Inventory
from fabriccheck.model import UNKNOWN_ACCOUNT, FlatInterface, Node, NodeSpec, Placement, SourceLocation, fact_key
from fabriccheck.providers.aws.instances import region_of_zone
from fabriccheck.providers.aws.support import CAPACITY_BLOCK, CAPACITY_RESERVATION, PLACEMENT_GROUP
from fabriccheck.resources.aws import CapacityReservation, PlacementGroup, SecurityGroup, SecurityRule, Subnet
from fabriccheck.sources.terraform import Plan
from fabriccheck.sources.terraform_resource import PlanResource, is_unknown, unknown_value, waiting_for

# What a plan tells for each region it names: every kind of fact it can hold (not instance types, not topology).
PLAN_FACTS = (
    "instances",
    "placement_groups",
    "security_groups",
    "subnets",
    "launch_templates",
    "capacity_reservations",
)
# What an instance that names no security group gets (aws_instance.vpc_security_group_ids is computed): its rules
# are not in the plan.
DEFAULT_SECURITY_GROUP = unknown_value("the VPC's default security group")
_ARN_ACCOUNT = re.compile(r"^arn:[^:]+:[^:]*:[^:]*:(\d{12}):")
TYPES = (
    "aws_instance",
    "aws_launch_template",
    "aws_autoscaling_group",
    "aws_eks_node_group",
    "aws_placement_group",
    "aws_security_group",
    "aws_security_group_rule",
    "aws_vpc_security_group_ingress_rule",
    "aws_vpc_security_group_egress_rule",
    "aws_subnet",
    "aws_network_interface",
    "aws_ec2_capacity_reservation",
    "aws_ec2_capacity_block_reservation",
)


def _protocol(value: Any) -> str:
    text = str(value if value is not None else "-1").lower()
    return "-1" if text in ("all", "-1") else text


def _public(value: Any) -> bool | None:
    """associate_public_ip_address: a bool on aws_instance, a string ("true", "false", "") in a launch template."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


class AwsPlan:
    def __init__(self, plan: Plan, inventory: Inventory) -> None:
        self.plan = plan
        self.inventory = inventory
        self.account = self._account()
        self.scopes: set[tuple[str, str]] = set()
        self.subnet_zones: dict[str, str] = {}
        self.subnet_vpcs: dict[str, str] = {}
        self.template_nics: dict[str, list[tuple[dict[str, Any], str | None, list[str]]]] = {}  # by address

    def _account(self) -> str:
        for resource in self.plan.resources:
            if resource.provider != "aws":
                continue
            for key in ("arn", "owner_id"):
                value = resource.known(key)
                match = _ARN_ACCOUNT.match(value) if isinstance(value, str) else None
                if match:
                    return match.group(1)
                if key == "owner_id" and isinstance(value, str) and value.isdigit():
                    return value
        return UNKNOWN_ACCOUNT

    def region(self, resource: PlanResource) -> str:
        for value in (resource.known("region"), self.plan.provider_setting(resource, "region")):
            if isinstance(value, str) and value:
                return value
        zone = resource.known("availability_zone")
        return region_of_zone(zone if isinstance(zone, str) else None) or "unknown"

    def run(self) -> None:
        plan = self.plan
        aws = self.inventory.aws
        for res in plan.of_type("aws_placement_group"):
            region = self.region(res)
            aws.placement_groups.append(
                PlacementGroup(
                    account=self.account,
                    region=region,
                    name=plan.attribute(res, "name"),
                    strategy=str(res.known("strategy") or "unknown"),
                    id=res.cloud_id(),
                )
            )
            self.scopes.add((self.account, region))
        for res in plan.of_type("aws_subnet"):
            subnet_id = plan.attribute(res, "id")
            zone = res.known("availability_zone")
            aws.subnets.append(
                Subnet(
                    account=self.account,
                    region=self.region(res),
                    id=subnet_id,
                    vpc_id=plan.string(res, "vpc_id"),
                    zone=zone,
                    map_public_ip_on_launch=bool(res.known("map_public_ip_on_launch")),
                )
            )
            if isinstance(zone, str):
                self.subnet_zones[subnet_id] = zone
            vpc = aws.subnets[-1].vpc_id
            if vpc:
                self.subnet_vpcs[subnet_id] = vpc
        self._security_groups()
        for res in plan.of_type("aws_ec2_capacity_reservation", "aws_ec2_capacity_block_reservation"):
            aws.capacity_reservations.append(
                CapacityReservation(
                    account=self.account,
                    region=self.region(res),
                    id=plan.attribute(res, "id"),
                    reservation_type="capacity-block" if res.type.endswith("block_reservation") else "default",
                    instance_type=res.known("instance_type"),
                    placement_group_arn=res.known("placement_group_arn"),
                )
            )
        for res in plan.of_type("aws_launch_template"):
            self.template_nics[res.address] = self._template_nics(res)
            spec = self._template_node(res)
            self.inventory.specs.append(spec)
        for res in plan.of_type("aws_instance"):
            self._add(self._instance(res))
        for res in plan.of_type("aws_autoscaling_group"):
            self._group(res, "asg")
        for res in plan.of_type("aws_eks_node_group"):
            self._group(res, "eks")
        self.inventory.collected += sorted(
            {fact_key("aws", a, r, fact) for a, r in self.scopes for fact in PLAN_FACTS} - set(self.inventory.collected)
        )

    def _add(self, node: Node) -> None:
        self.inventory.nodes.append(node)
        self.scopes.add((node.account, node.region))

    # ---------------------------------------------------------------------------------------- security groups

    def _security_groups(self) -> None:
        plan = self.plan
        groups: dict[str, SecurityGroup] = {}
        for res in plan.of_type("aws_security_group"):
            group_id = plan.attribute(res, "id")
            group = SecurityGroup(
                account=self.account,
                region=self.region(res),
                id=group_id,
                name=res.known("name"),
                vpc_id=plan.string(res, "vpc_id"),
            )
            for direction in ("ingress", "egress"):
                rules = res.known(direction)
                for i, rule in enumerate(rules if isinstance(rules, list) else ()):
                    if not isinstance(rule, dict):
                        continue
                    ids = [g for g in plan.strings(res, direction, i, "security_groups") if not is_unknown(g)]
                    if rule.get("self"):
                        ids.append(group_id)
                    getattr(group, direction).append(
                        SecurityRule(
                            protocol=_protocol(rule.get("protocol")),
                            group_ids=ids,
                            cidrs=[*(rule.get("cidr_blocks") or ()), *(rule.get("ipv6_cidr_blocks") or ())],
                        )
                    )
            groups[group_id] = group
            self.inventory.aws.security_groups.append(group)
            self.scopes.add((self.account, group.region))
        # Rules declared as resources of their own join the group they name.
        for res in plan.of_type("aws_security_group_rule"):
            target = groups.get(plan.string(res, "security_group_id") or "")
            if target is None:
                continue
            peer = target.id if res.known("self") else plan.string(res, "source_security_group_id")
            rule = SecurityRule(
                protocol=_protocol(res.known("protocol")),
                group_ids=[peer] if peer and not is_unknown(peer) else [],
                cidrs=list(res.known("cidr_blocks") or ()),
            )
            (target.egress if res.known("type") == "egress" else target.ingress).append(rule)
        for kind in ("ingress", "egress"):
            for res in plan.of_type(f"aws_vpc_security_group_{kind}_rule"):
                owner = groups.get(plan.string(res, "security_group_id") or "")
                if owner is None:
                    continue
                peer = plan.string(res, "referenced_security_group_id")
                cidr = res.known("cidr_ipv4") or res.known("cidr_ipv6")
                rule = SecurityRule(
                    protocol=_protocol(res.known("ip_protocol")),
                    group_ids=[peer] if peer and not is_unknown(peer) else [],
                    cidrs=[cidr] if cidr else [],
                )
                getattr(owner, kind).append(rule)

    # ---------------------------------------------------------------------------------------- nodes

    def _template(self, res: PlanResource, block: tuple[str | int, ...], *id_keys: str) -> PlanResource | None:
        """The aws_launch_template a launch_template block (or a mixed instances policy's) names: by reference, or
        by the id or name it already has."""
        for key in id_keys:
            target = self.plan.target(res, *block, 0, key)
            if target is not None and target.type == "aws_launch_template":
                return target
            wanted = self.plan.string(res, *block, 0, key)
            for template in self.plan.of_type("aws_launch_template") if wanted else ():
                if wanted in (template.known("id"), template.known("name")):
                    return template
        return None

    def _template_nics(self, template: PlanResource) -> list[tuple[dict[str, Any], str | None, list[str]]]:
        """Each network_interfaces block of a template, with its subnet and security groups: read once per
        template, for every node launched from it."""
        plan = self.plan
        blocks = template.known("network_interfaces") or []
        shared = plan.strings(template, "vpc_security_group_ids")
        return [
            (
                nic,
                plan.string(template, "network_interfaces", i, "subnet_id"),
                plan.strings(template, "network_interfaces", i, "security_groups") or shared,
            )
            for i, nic in enumerate(blocks if isinstance(blocks, list) else ())
            if isinstance(nic, dict)
        ]

    def _template_interfaces(self, template: PlanResource, node_id: str, subnet: str | None) -> list[FlatInterface]:
        interfaces = []
        for i, (nic, nic_subnet, groups) in enumerate(self.template_nics[template.address]):
            interfaces.append(
                FlatInterface(
                    id=f"{node_id}/nic{i}",
                    interface_type=str(nic.get("interface_type") or "interface"),
                    subnet=subnet or nic_subnet,
                    network=self._vpc(subnet or nic_subnet),
                    security_groups=groups,
                    public_ip=_public(nic.get("associate_public_ip_address")),
                    network_card_index=int(nic.get("network_card_index") or 0),
                    device_index=int(nic.get("device_index") or 0),
                )
            )
        if not interfaces:
            interfaces.append(
                FlatInterface(
                    id=f"{node_id}/nic0",
                    subnet=subnet,
                    network=self._vpc(subnet),
                    security_groups=self.plan.strings(template, "vpc_security_group_ids"),
                    public_ip=None,
                )
            )
        return interfaces

    def _vpc(self, subnet: str | None) -> str | None:
        return self.subnet_vpcs.get(subnet or "")

    def _template_node(self, res: PlanResource) -> Node:
        """A launch template alone: what it would launch, judged as a live template is (origin template)."""
        name = str(res.known("name") or res.address)
        node_id = res.address
        group = self._placement_group(res, "placement", 0, "group_name")
        node = Node.flat(
            id=node_id,
            provider="aws",
            account=self.account,
            region=self.region(res),
            origin="template",
            spec=NodeSpec(kind="launch-template", name=name, version=None, role="planned"),
            instance_type=res.known("instance_type"),
            image=res.known("image_id"),
            interfaces=self._template_interfaces(res, node_id, None),
            placement=[Placement(kind=PLACEMENT_GROUP, id=group)] if group else [],
            source=SourceLocation(address=res.address, cloud_id=res.cloud_id()),
        )
        self.scopes.add((node.account, node.region))
        return node

    def _placement_group(self, res: PlanResource, *path: str | int) -> str | None:
        """The placement group's name; none where the configuration sets none (aws_instance.placement_group is
        computed: unknown in every plan that does not set it)."""
        return self.plan.string(res, *path, attr="name", unset=[])

    def _unplaced(self, res: PlanResource, zone: str | None, interfaces: list[FlatInterface]) -> dict[str, str]:
        """A node on a subnet this plan does not create (an existing one, a data source's, or, none given, EC2's
        choice of a default subnet): its zone and VPC are not in the plan, so the cluster's counts of zones and
        VPCs leave it out and say so, rather than count it as a zone or VPC of its own."""
        primary = min(interfaces, key=lambda i: (i.network_card_index, i.device_index))
        where = f"subnet {waiting_for(primary.subnet)}" if primary.subnet else "the default subnet EC2 picks"
        why = f"{res.address}: {where} is not created by this plan, so its zone and VPC are not in it"
        unknown = {"zone": why} if zone is None else {}
        return unknown | ({"network": why} if primary.network is None else {})

    def _unknown_type(self, res: PlanResource, instance_type: str | None, key: str) -> dict[str, str]:
        if instance_type:
            return {}
        why = (
            f"{res.address}: {key} is known only after apply"
            if res.unknown_at(key)
            else f"{res.address} names no {key}"
        )
        return dict.fromkeys(("fabric", "fabric_expected", "accelerators", "accelerator"), why)

    def _attached(self, res: PlanResource) -> tuple[list[FlatInterface], dict[str, str]]:
        """The network interfaces an instance's network_interface blocks attach, and the facts left unknown by one
        this plan does not create (an existing ENI, a data source's): its type, so the fabric it carries, and its
        security groups are not in the plan."""
        plan = self.plan
        interfaces: list[FlatInterface] = []
        unknown: dict[str, str] = {}
        attached = res.known("network_interface") or []
        for i, block in enumerate(attached if isinstance(attached, list) else ()):
            card, device = int(block.get("network_card_index") or 0), int(block.get("device_index") or 0)
            eni = plan.target(res, "network_interface", i, "network_interface_id")
            if eni is None or eni.type != "aws_network_interface":
                eni_id = plan.string(res, "network_interface", i, "network_interface_id") or f"network_interface[{i}]"
                interfaces.append(
                    FlatInterface(id=eni_id, interface_type="unknown", network_card_index=card, device_index=device)
                )
                why = f"{res.address}: network interface {eni_id} is not created by this plan (its type is not in it)"
                unknown = dict.fromkeys(("fabric", "efa_security"), why)
                continue
            eni_subnet = plan.string(eni, "subnet_id")
            interfaces.append(
                FlatInterface(
                    id=eni.address,
                    interface_type=str(eni.known("interface_type") or "interface"),
                    subnet=eni_subnet,
                    network=self._vpc(eni_subnet),
                    security_groups=plan.strings(eni, "security_groups"),
                    public_ip=False,
                    network_card_index=card,
                    device_index=device,
                )
            )
        return interfaces, unknown

    def _instance(self, res: PlanResource) -> Node:
        plan = self.plan
        template = self._template(res, ("launch_template",), "id", "name")
        instance_type = res.known("instance_type") or (template.known("instance_type") if template else None)
        subnet = plan.string(res, "subnet_id", unset=[])  # unset: the launch template's, or a default subnet
        interfaces, unknown = self._attached(res)
        if not interfaces and template is not None:
            interfaces = self._template_interfaces(template, res.address, subnet)
        if not interfaces:
            interfaces = [
                FlatInterface(
                    id=f"{res.address}/nic0",
                    subnet=subnet,
                    network=self._vpc(subnet),
                    security_groups=plan.strings(res, "vpc_security_group_ids", unset=[DEFAULT_SECURITY_GROUP]),
                    public_ip=_public(res.known("associate_public_ip_address")),
                )
            ]
        placement = []
        group = self._placement_group(res, "placement_group")
        if not group and template is not None:
            group = self._placement_group(template, "placement", 0, "group_name")
        if group:
            placement.append(Placement(kind=PLACEMENT_GROUP, id=group))
        reservation = plan.string(
            res, "capacity_reservation_specification", 0, "capacity_reservation_target", 0, "capacity_reservation_id"
        )
        market = res.known("instance_market_options", 0, "market_type") or (
            template.known("instance_market_options", 0, "market_type") if template else None
        )
        if market == "capacity-block" and reservation:
            # The instance says itself that it runs in a Capacity Block (as InstanceLifecycle does when it runs).
            placement.append(Placement(kind=CAPACITY_BLOCK, id=reservation))
        elif reservation:
            block = next(
                (r for r in self.inventory.aws.capacity_reservations if r.id == reservation),
                None,
            )
            if block is not None and block.reservation_type == "capacity-block":
                placement.append(Placement(kind=CAPACITY_BLOCK, id=reservation))
        if reservation:
            placement.append(Placement(kind=CAPACITY_RESERVATION, id=reservation))
        zone = res.known("availability_zone") or self.subnet_zones.get(interfaces[0].subnet or subnet or "")
        unknown |= self._unplaced(res, zone, interfaces)
        tags = res.known("tags") or {}
        return Node.flat(
            id=res.address,
            provider="aws",
            account=self.account,
            region=self.region(res),
            origin="plan",
            spec=NodeSpec(kind="terraform", name=res.base),
            zone=zone,
            instance_type=instance_type,
            state="planned",
            image=res.known("ami"),
            tags={str(k): str(v) for k, v in tags.items()} if isinstance(tags, dict) else {},
            interfaces=interfaces,
            placement=placement,
            source=SourceLocation(address=res.address, cloud_id=res.cloud_id()),
            unknown=unknown | self._unknown_type(res, instance_type, "instance_type"),
        )

    def _group(self, res: PlanResource, kind: str) -> None:
        """An Auto Scaling group or EKS node group: its desired size of nodes from its launch template."""
        plan = self.plan
        if kind == "asg":
            template = self._template(res, ("launch_template",), "id", "name") or self._template(
                res,
                ("mixed_instances_policy", 0, "launch_template", 0, "launch_template_specification"),
                "launch_template_id",
                "launch_template_name",
            )
            size = res.known("desired_capacity") or res.known("min_size") or 0
            overrides = res.known("mixed_instances_policy", 0, "launch_template", 0, "override") or []
            override_type = next((o.get("instance_type") for o in overrides if isinstance(o, dict)), None)
            instance_type = override_type or (template.known("instance_type") if template else None)
            subnets = plan.strings(res, "vpc_zone_identifier")
            name = str(res.known("name") or res.address)
            tags = {"aws:autoscaling:groupName": name}
            for tag in res.known("tag") or ():
                if isinstance(tag, dict) and tag.get("propagate_at_launch") and tag.get("key"):
                    tags[str(tag["key"])] = str(tag.get("value") or "")
            group = self._placement_group(res, "placement_group")
            size_key = "desired_capacity"
        else:
            template = self._template(res, ("launch_template",), "id", "name")
            size = res.known("scaling_config", 0, "desired_size") or 0
            types = res.known("instance_types") or []
            instance_type = (types[0] if types else None) or (template.known("instance_type") if template else None)
            subnets = plan.strings(res, "subnet_ids")
            cluster = plan.string(res, "cluster_name", attr="name") or res.address
            name = str(res.known("node_group_name") or res.address)
            tags = {"eks:cluster-name": cluster, "eks:nodegroup-name": name}
            group = None
            size_key = "scaling_config"
        if template is not None and group is None:
            group = self._placement_group(template, "placement", 0, "group_name")
        region = self.region(res)
        # The group's nodes are one spec: one node per subnet they spread over, copied under each node's id.
        models: dict[str | None, Node] = {}
        for i in range(int(size)):
            subnet = subnets[i % len(subnets)] if subnets else None
            model = models.get(subnet)
            if model is None:
                spec_id = f"{res.address}/{subnet}" if len(subnets) > 1 else res.address
                interfaces = (
                    self._template_interfaces(template, spec_id, subnet)
                    if template is not None
                    else [FlatInterface(id=f"{spec_id}/nic0", subnet=subnet, network=self._vpc(subnet))]
                )
                zone = self.subnet_zones.get(subnet or "")
                model = models[subnet] = Node.flat(
                    id=res.address,
                    provider="aws",
                    account=self.account,
                    region=region,
                    origin="plan",
                    spec=NodeSpec(kind="terraform", name=res.base, role=f"{size_key} {size}"),
                    zone=zone,
                    instance_type=instance_type,
                    state="planned",
                    image=template.known("image_id") if template else None,
                    tags=tags,
                    interfaces=interfaces,
                    placement=[Placement(kind=PLACEMENT_GROUP, id=group)] if group else [],
                    source=SourceLocation(address=res.address, cloud_id=res.cloud_id()),
                    unknown=self._unplaced(res, zone, interfaces)
                    | self._unknown_type(res, instance_type, "instance type"),
                )
            self._add(model.model_copy(update={"id": f"{res.address}#{i}"}))


def map_plan(plan: Plan, inventory: Inventory) -> None:
    AwsPlan(plan, inventory).run()
