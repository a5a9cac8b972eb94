"""Google Cloud resources of a Terraform plan -> the model: the instances it would launch (origin plan) and the
`gcp` namespace, in the shapes a live run or a gcloud dump gives, so the same rules judge them.

Arguments as the google provider names them (registry.terraform.io/providers/hashicorp/google:
google_compute_instance, google_compute_instance_template, google_compute_region_instance_template,
google_compute_instance_group_manager, google_compute_region_instance_group_manager,
google_compute_resource_policy, google_compute_network, google_compute_subnetwork, google_compute_firewall,
google_container_node_pool). A managed instance group of target size N becomes N instances carrying the
`created-by` item Compute Engine gives MIG instances; a GKE node pool of N nodes carries the GKE labels; so they
group as a live scan groups them.
"""

from __future__ import annotations

from typing import Any

from fabriccheck import catalog
from fabriccheck.inventory import Inventory
from fabriccheck.model import (
    UNKNOWN_ACCOUNT,
    FabricKind,
    FlatInterface,
    Node,
    NodeSpec,
    Placement,
    SourceLocation,
    fact_key,
)
from fabriccheck.providers.gcp import plan_policies as policies
from fabriccheck.providers.gcp.normalize import last, region_of_zone, short
from fabriccheck.providers.gcp.plan_policies import POLICY, REGION_POLICY, plan_policies
from fabriccheck.providers.gcp.support import (
    FLEX_START,
    GKE_CLUSTER_LABEL,
    GKE_NODE_POOL_LABEL,
    MIG_METADATA_KEY,
    RDMA_NIC_TYPES,
    RESERVATION,
    RESOURCE_POLICY,
)
from fabriccheck.resources.gcp import GLOBAL, FirewallRule, Network, ResourcePolicy, Subnetwork, firewall_entries
from fabriccheck.sources.terraform import Plan
from fabriccheck.sources.terraform_resource import PlanResource, Resolved, is_unknown, unknown_value

TEMPLATE_TYPES = ("google_compute_instance_template", "google_compute_region_instance_template")
POLICY_ASSOCIATION = "google_compute_network_firewall_policy_association"
PLAN_FACTS = (
    "instances",
    "resource_policies",
    "networks",
    "subnetworks",
    "firewalls",
    "network_firewall_policies",
    "max_distance",
)
TYPES = (
    "google_compute_instance",
    "google_compute_instance_template",
    "google_compute_region_instance_template",
    "google_compute_instance_group_manager",
    "google_compute_region_instance_group_manager",
    "google_compute_resource_policy",
    "google_compute_network",
    "google_compute_subnetwork",
    "google_compute_firewall",
    "google_container_node_pool",
    POLICY_ASSOCIATION,
    *policies.TYPES,
)


class GcpPlan:
    def __init__(self, plan: Plan, inventory: Inventory) -> None:
        self.plan = plan
        self.inventory = inventory
        self.scopes: set[tuple[str, str]] = set()
        self.networks: dict[str, Network] = {}
        # The model's ids of this plan's networks and subnetworks (and each subnetwork's network), by address.
        self.network_ids: dict[str, str] = {}
        self.subnet_ids: dict[str, str] = {}
        self.subnet_networks: dict[str, str | None] = {}

    def project(self, res: PlanResource) -> str:
        value = res.known("project") or self.plan.provider_setting(res, "project")
        return str(value) if value else UNKNOWN_ACCOUNT

    def network_of(self, res: PlanResource) -> str:
        """A google_compute_network of this plan as the model names it (projects/P/global/networks/NAME)."""
        return f"projects/{self.project(res)}/global/networks/{res.known('name') or res.address}"

    def subnet_of(self, res: PlanResource) -> str:
        region = res.known("region") or self.plan.provider_setting(res, "region") or "unknown"
        return f"projects/{self.project(res)}/regions/{region}/subnetworks/{res.known('name') or res.address}"

    def _network_id(self, res: PlanResource, *path: str | int, unset: list[Resolved] | None = None) -> str | None:
        """A network as the model names it, from a name, a URL or a resource of this plan (a reference through a
        subnetwork's `network` is followed to the network); None when there is none (or it is left `unset`)."""
        for item in self.plan.resolve(res, *path, unset=unset):
            if isinstance(item, PlanResource) and item.address in self.subnet_networks:
                # Terraform before 1.0 lists `google_compute_subnetwork.x` alone for `...x.network`.
                return self.subnet_networks[item.address]
            if isinstance(item, PlanResource):
                return self.network_ids.get(item.address) or item.address
            if is_unknown(item) or "projects/" in item:
                return item if is_unknown(item) else short(item)
            return f"projects/{self.project(res)}/global/networks/{item}"
        return None

    def _subnet_id(self, res: PlanResource, found: list[Resolved], region: str) -> str | None:
        """A subnetwork as the model names it; None when the configuration leaves it to Compute Engine (the
        network's subnetwork in the region: which one, and its range, are not in the plan)."""
        for item in found:
            if isinstance(item, PlanResource):
                return self.subnet_ids.get(item.address) or item.address
            if is_unknown(item) or "projects/" in item:
                return item if is_unknown(item) else short(item)
            return f"projects/{self.project(res)}/regions/{region}/subnetworks/{item}"
        return None

    def _nic(self, res: PlanResource, *path: str | int, region: str) -> tuple[str | None, str | None]:
        """A NIC's network and subnetwork. A network left to Compute Engine is its subnetwork's (a NIC set by
        subnetwork alone, as Cluster Toolkit writes them)."""
        subnets = self.plan.resolve(res, *path, "subnetwork", unset=[])
        subnet = self._subnet_id(res, subnets, region)
        network = self._network_id(res, *path, "network", unset=[])
        if network is not None or not self.plan.unset(res, *path, "network"):
            return network, subnet
        target = next((item for item in subnets if isinstance(item, PlanResource)), None)
        if target is not None and target.address in self.subnet_networks:
            return self.subnet_networks[target.address], subnet
        return unknown_value(f"the network of {res.base}.{'.'.join(map(str, path))}.subnetwork"), subnet

    def _networks(self) -> None:
        """This plan's networks, subnetworks and firewall rules, with the ids instances reach them by."""
        plan = self.plan
        gcp = self.inventory.gcp
        for res in plan.of_type("google_compute_network"):
            project = self.project(res)
            name = str(res.known("name") or res.address)
            profile = res.known("network_profile")
            network = Network(
                account=project,
                region=GLOBAL,
                id=self.network_of(res),
                name=name,
                mtu=res.known("mtu") or None,
                network_profile=short(profile) if isinstance(profile, str) and profile else None,
                policy_order=_text(res.known("network_firewall_policy_enforcement_order")),
            )
            self.network_ids[res.address] = network.id
            gcp.networks.append(network)
            self.networks[network.id] = network
            self.scopes.add((project, GLOBAL))
        for res in plan.of_type("google_compute_subnetwork"):
            project = self.project(res)
            region = str(res.known("region") or plan.provider_setting(res, "region") or "unknown")
            name = str(res.known("name") or res.address)
            gcp.subnetworks.append(
                Subnetwork(
                    account=project,
                    region=region,
                    id=self.subnet_of(res),
                    name=name,
                    network=self._network_id(res, "network"),
                    cidr=res.known("ip_cidr_range"),
                )
            )
            self.subnet_ids[res.address] = gcp.subnetworks[-1].id
            self.subnet_networks[res.address] = gcp.subnetworks[-1].network
        for res in plan.of_type("google_compute_firewall"):
            allowed = res.known("allow") or []
            denied = res.known("deny") or []
            entries = [e for e in (allowed or denied) if isinstance(e, dict)]
            gcp.firewalls.append(
                FirewallRule(
                    account=self.project(res),
                    region=GLOBAL,
                    name=str(res.known("name") or res.address),
                    network=self._network_id(res, "network"),
                    direction=str(res.known("direction") or "INGRESS"),
                    disabled=bool(res.known("disabled")),
                    priority=int(res.known("priority") or 1000),
                    action="deny" if denied else "allow",
                    entries=firewall_entries(entries, "protocol"),
                    source_ranges=[str(r) for r in res.known("source_ranges") or ()],
                    destination_ranges=_destinations(res),
                    source_tags=[str(t) for t in res.known("source_tags") or ()],
                    source_service_accounts=[str(s) for s in res.known("source_service_accounts") or ()],
                    target_tags=[str(t) for t in res.known("target_tags") or ()],
                    target_service_accounts=[str(s) for s in res.known("target_service_accounts") or ()],
                )
            )
        self._policy_associations()

    def _region(self, res: PlanResource) -> str:
        return str(res.known("region") or self.plan.provider_setting(res, "region") or "unknown")

    def _policy_associations(self) -> None:
        """A network firewall policy associated with a network of the plan governs it (Terraform
        google_compute_network_firewall_policy_association: attachment_target, the network; firewall_policy, the
        policy; registry.terraform.io/providers/hashicorp/google/latest/docs/resources/
        compute_network_firewall_policy_association); a regional one governs it in its region, and a hierarchical
        one may (plan_policies). A policy of the plan is read with its rules; one the plan does not hold is not
        judged (lookup.GcpIndex._governed)."""
        gcp = self.inventory.gcp
        planned = plan_policies(self.plan, {res.address: self.project(res) for res in self.plan.of_type(POLICY)})
        gcp.network_firewall_policies.extend(planned.values())
        regional = plan_policies(
            self.plan,
            {res.address: self.project(res) for res in self.plan.of_type(REGION_POLICY)},
            "NETWORK_REGIONAL",
            self._region,
        )

        def network_of(res: PlanResource) -> str | None:
            target = self._network_id(res, "attachment_target")
            return target if target in self.networks else None

        gcp.effective_firewalls.extend(policies.regional_associations(self.plan, regional, network_of, self._region))
        hierarchical = plan_policies(self.plan, {}, "HIERARCHY")
        gcp.network_firewall_policies.extend(policies.hierarchical_associations(self.plan, hierarchical))
        for res in self.plan.of_type(POLICY_ASSOCIATION):
            target = self._network_id(res, "attachment_target")
            network = self.networks.get(target or "")
            if network is None:
                continue
            policy = res.known("firewall_policy")
            name = short(policy) if isinstance(policy, str) and policy else res.address
            if isinstance(policy, str) and policy and "projects/" not in policy:  # a global policy's name
                name = f"projects/{self.project(res)}/global/firewallPolicies/{policy}"
            for item in self.plan.resolve(res, "firewall_policy", unset=[]):
                if isinstance(item, PlanResource) and item.address in planned:
                    name = planned[item.address].id
            self.networks[network.id] = updated = network.model_copy(update={"firewall_policy": name})
            gcp.networks = [updated if n is network else n for n in gcp.networks]

    def run(self) -> None:
        plan = self.plan
        gcp = self.inventory.gcp
        self._networks()
        for res in plan.of_type("google_compute_resource_policy"):
            group = res.known("group_placement_policy", 0)
            workload = res.known("workload_policy", 0)
            group = group if isinstance(group, dict) else None
            region = str(res.known("region") or plan.provider_setting(res, "region") or "unknown")
            gcp.resource_policies.append(
                ResourcePolicy(
                    account=self.project(res),
                    region=region,
                    name=str(res.known("name") or res.address),
                    collocation=group.get("collocation") if group else None,
                    vm_count=group.get("vm_count") if group else None,
                    availability_domain_count=group.get("availability_domain_count") if group else None,
                    gpu_topology=group.get("gpu_topology") if group else None,
                    max_distance=group.get("max_distance") if group else None,
                    max_distance_known=group is not None,
                    workload_type=workload.get("type") if isinstance(workload, dict) else None,
                    other_kind=bool(res.known("snapshot_schedule_policy") or res.known("instance_schedule_policy")),
                )
            )
        for res in plan.of_type("google_compute_instance"):
            zone = str(res.known("zone") or plan.provider_setting(res, "zone") or "")
            self._add(self._node(res, res, res.address, zone, {}, res.known("machine_type")))
        for res in plan.of_type(
            "google_compute_instance_group_manager", "google_compute_region_instance_group_manager"
        ):
            self._mig(res)
        for res in plan.of_type("google_container_node_pool"):
            self._node_pool(res)
        self.inventory.collected += sorted(
            {fact_key("gcp", a, r, fact) for a, r in self.scopes for fact in PLAN_FACTS} - set(self.inventory.collected)
        )

    def _add(self, node: Node) -> None:
        self.inventory.nodes.append(node)
        self.scopes.add((node.account, node.region))

    def _node(
        self,
        res: PlanResource,
        owner: PlanResource,
        node_id: str,
        zone: str,
        tags: dict[str, str],
        machine_type: Any,
        role: str | None = None,
    ) -> Node:
        """An instance from `res` (an instance or an instance template), launched by `owner`."""
        plan = self.plan
        region = region_of_zone(zone) or str(res.known("region") or plan.provider_setting(res, "region") or "unknown")
        interfaces = []
        nics = res.known("network_interface") or []
        for i, nic in enumerate(nics if isinstance(nics, list) else ()):
            if not isinstance(nic, dict):
                continue
            network, subnet = self._nic(res, "network_interface", i, region=region)
            interfaces.append(
                FlatInterface(
                    id=f"nic{i}",  # a GCP NIC is known by its name within its instance
                    interface_type=str(nic.get("nic_type") or "UNSPECIFIED_NIC_TYPE"),
                    network=network,
                    subnet=subnet,
                    public_ip=bool(nic.get("access_config") or nic.get("ipv6_access_config")),
                    device_index=i,
                )
            )
        placement = [
            Placement(kind=RESOURCE_POLICY, id=last(p) if not is_unknown(p) else p)
            for p in plan.strings(res, "resource_policies", attr="name")
        ]
        scheduling = res.known("scheduling", 0) or {}
        if isinstance(scheduling, dict) and scheduling.get("provisioning_model") == "FLEX_START":
            placement.append(Placement(kind=FLEX_START, id=node_id))
        affinity = res.known("reservation_affinity", 0) or {}
        if isinstance(affinity, dict) and affinity.get("type") == "SPECIFIC_RESERVATION":
            values = (affinity.get("specific_reservation") or [{}])[0].get("values") or [node_id]
            placement.append(Placement(kind=RESERVATION, id=last(values[0])))
        labels = res.known("labels") or {}
        unknown = self._unknown_networks(owner, interfaces, machine_type)
        if not machine_type:
            why = f"{owner.address}: the machine type is known only after apply"
            unknown |= dict.fromkeys(("fabric", "fabric_expected", "accelerators", "accelerator"), why)
        return Node.flat(
            id=node_id,
            provider="gcp",
            account=self.project(res),
            region=region,
            origin="plan",
            spec=NodeSpec(kind="terraform", name=owner.base, role=role),
            zone=zone or None,
            instance_type=last(machine_type) if machine_type else None,
            state="planned",
            tags={**{str(k): str(v) for k, v in labels.items()}, **tags} if isinstance(labels, dict) else tags,
            interfaces=interfaces,
            placement=placement,
            source=SourceLocation(address=owner.address, cloud_id=owner.cloud_id()),
            unknown=unknown,
        )

    def _unknown_networks(self, res: PlanResource, nics: list[FlatInterface], machine_type: Any) -> dict[str, str]:
        """The facts left unknown by NICs whose network the plan cannot name (a data source, a dynamic block, a
        module output of a counted module) or does not create (its firewall rules are then not in the plan), each
        only where it depends on them: one NIC is no GPU NIC whatever its network, and MRDMA NICs are counted by
        their type alone."""
        cap = catalog.catalog_entry(last(machine_type)) if machine_type else None
        rdma = [n for n in nics if n.interface_type.upper() in RDMA_NIC_TYPES]
        others = [n for n in nics if n not in rdma]
        gpu = nics[1:] if len(nics) > 1 else []  # the NICs besides nic0 (which of them are GPU NICs needs nic0's)
        unread = [n for n in nics if n.network is None or is_unknown(n.network)]
        # RDMA networks are asked about only of a node with RDMA NICs or of an RDMA type (issue 28, item 10): an
        # A3 High on the `default` network has no RoCE VPC to misplace a NIC on.
        rdma_node = bool(rdma) or (cap is not None and cap.fabric is FabricKind.RDMA)
        outside = [n.network for n in gpu if n not in unread and n.network not in self.networks]
        unknown: dict[str, str] = {}
        if unread:
            waiting = ", ".join(sorted({n.network or f"no network on {n.id}" for n in unread}))
            why = f"{res.address}: NIC networks are known only after apply ({waiting})"
            if gpu and cap is not None and cap.fabric in (FabricKind.TCPX, FabricKind.TCPXO):
                unknown["fabric"] = why
            if gpu:
                unknown |= dict.fromkeys(("gpu_firewall", "gpu_mtu"), why)
            if any(n in unread for n in rdma):
                unknown["rdma_profile"] = why
            if rdma_node and any(n in unread for n in others):
                unknown["non_rdma_on_rdma_vpc"] = why
        if outside and "gpu_firewall" not in unknown:
            unknown["gpu_firewall"] = _not_created(res, outside, "firewall rules")
        placed = [n.network for n in others if n not in unread and n.network not in self.networks]
        if rdma_node and placed and "non_rdma_on_rdma_vpc" not in unknown:
            unknown["non_rdma_on_rdma_vpc"] = _not_created(res, placed, "network profile")
        return unknown

    def _template(self, res: PlanResource) -> PlanResource | None:
        """The instance template a group's first version names: a template of this plan (by reference, or by
        the self link, id or name it already has)."""
        templates = self.plan.of_type(*TEMPLATE_TYPES)
        versions = res.known("version") or []
        for i in range(max(1, len(versions) if isinstance(versions, list) else 0)):
            target = self.plan.target(res, "version", i, "instance_template")
            if target is not None and target.type in TEMPLATE_TYPES:
                return target
            wanted = self.plan.string(res, "version", i, "instance_template")
            for template in templates:
                links = (template.known("self_link"), template.known("id"), template.known("name"))
                if wanted in links or (wanted and last(wanted) == template.known("name")):
                    return template
        return None

    def _mig(self, res: PlanResource) -> None:
        template = self._template(res)
        size = int(res.known("target_size") or 0)
        project = self.project(res)
        name = str(res.known("name") or res.address)
        zones = [str(z) for z in res.known("distribution_policy_zones") or ()]
        zone = str(res.known("zone") or "")
        location = f"zones/{zone}" if zone else f"regions/{res.known('region') or 'unknown'}"
        mig = f"projects/{project}/{location}/instanceGroupManagers/{name}"
        if template is None:
            return
        # The group's instances are one spec: one node per zone, copied under each instance's id.
        models: dict[str, Node] = {}
        for i in range(size):
            node_zone = zone or (zones[i % len(zones)] if zones else "")
            model = models.get(node_zone)
            if model is None:
                model = models[node_zone] = self._node(
                    template,
                    res,
                    f"{res.address}/{node_zone}" if len(zones) > 1 else res.address,
                    node_zone,
                    {MIG_METADATA_KEY: mig},
                    template.known("machine_type"),
                    f"target_size {size}",
                )
            self._add(model.model_copy(update={"id": f"{res.address}#{i}"}))

    def _node_pool(self, res: PlanResource) -> None:
        plan = self.plan
        size = int(res.known("node_count") or res.known("initial_node_count") or 0)
        cluster = plan.target(res, "cluster")
        cluster_ref = plan.string(res, "cluster", attr="name") or res.address
        cluster_name = (
            str(cluster.known("name")) if cluster is not None and cluster.known("name") else last(cluster_ref)
        )
        pool = str(res.known("name") or res.address)
        config = res.known("node_config", 0) or {}
        machine_type = config.get("machine_type") if isinstance(config, dict) else None
        labels = {GKE_CLUSTER_LABEL: cluster_name, GKE_NODE_POOL_LABEL: pool}
        location = str(res.known("location") or (cluster.known("location") if cluster else "") or "")
        zones = [str(z) for z in res.known("node_locations") or ()] or ([location] if location.count("-") == 2 else [])
        region = region_of_zone(zones[0]) if zones else (location or "unknown")
        project = self.project(res)
        # GKE's default is the project's "default" network (google_container_cluster.network).
        default = [f"projects/{project}/global/networks/default"]
        host_network = self._network_id(cluster, "network", unset=[*default]) if cluster is not None else None
        host_subnet = (
            self._subnet_id(cluster, plan.resolve(cluster, "subnetwork", unset=[]), region or "unknown")
            if cluster is not None
            else None
        )
        extra = res.known("network_config", 0, "additional_node_network_configs") or []
        placement: list[Placement] = []
        policy = res.known("placement_policy", 0)
        if isinstance(policy, dict) and policy.get("type") == "COMPACT":
            # The policy it names (policy_name: "a custom resource policy supplied by the user"), else the one GKE
            # makes itself (GKE docs, "Define compact placement for GKE nodes").
            named = plan.string(res, "placement_policy", 0, "policy_name", attr="name", unset=[])
            name = last(named) if named and not is_unknown(named) else named or f"gke-{cluster_name}-{pool}-compact"
            if not named:
                self.inventory.gcp.resource_policies.append(
                    ResourcePolicy(account=project, region=region or "unknown", name=name, collocation="COLLOCATED")
                )
            placement.append(Placement(kind=RESOURCE_POLICY, id=name))
        unknown: dict[str, str] = {}
        if not machine_type:
            why = f"{res.address}: node_config.machine_type is known only after apply"
            unknown = dict.fromkeys(("fabric", "fabric_expected", "accelerators", "accelerator"), why)
        interfaces = [FlatInterface(id="nic0", interface_type="GVNIC", network=host_network, subnet=host_subnet)]
        for j, _ in enumerate(extra if isinstance(extra, list) else ()):
            at = ("network_config", 0, "additional_node_network_configs", j)
            network, subnet = self._nic(res, *at, region=region or "unknown")
            known = self.networks.get(network or "")
            rdma = known is not None and "vpc-roce" in (known.network_profile or "")
            interfaces.append(
                FlatInterface(
                    id=f"nic{j + 1}",
                    interface_type="MRDMA" if rdma else "GVNIC",
                    network=network,
                    subnet=subnet,
                    device_index=j + 1,
                )
            )
        unknown |= self._unknown_networks(res, interfaces, machine_type)
        # The pool's nodes are one spec: one node per zone (node_count is per zone), copied under each node's id.
        models: dict[str | None, Node] = {}
        for i in range(size * max(1, len(zones))):
            node_zone = zones[i % len(zones)] if zones else None
            model = models.get(node_zone)
            if model is None:
                model = models[node_zone] = Node.flat(
                    id=res.address,
                    provider="gcp",
                    account=project,
                    region=region or "unknown",
                    origin="plan",
                    spec=NodeSpec(kind="terraform", name=res.base, role=f"node_count {size}"),
                    zone=node_zone,
                    instance_type=machine_type,
                    state="planned",
                    tags=labels,
                    interfaces=interfaces,
                    placement=placement,
                    source=SourceLocation(address=res.address, cloud_id=res.cloud_id()),
                    unknown=unknown,
                )
            self._add(model.model_copy(update={"id": f"{res.address}#{i}"}))


def _not_created(res: PlanResource, networks: list[str | None], what: str) -> str:
    names = ", ".join(sorted({last(n) for n in networks if n}))
    return f"{res.address}: network {names} is not created by this plan, so its {what} is not in it"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def map_plan(plan: Plan, inventory: Inventory) -> None:
    GcpPlan(plan, inventory).run()


def _destinations(res: PlanResource) -> list[str] | None:
    """A google_compute_firewall's destination_ranges, None when set from what is known only after apply. The
    argument is optional and computed (terraform-provider-google resource_compute_firewall.go schema), so a rule
    that leaves it out shows it unknown in the plan, and the API applies such an egress rule to every destination."""
    if not res.unknown_at("destination_ranges"):
        return [str(r) for r in res.known("destination_ranges") or ()]
    return None if "destination_ranges" in (res.config.get("expressions") or {}) else []
