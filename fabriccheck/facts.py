"""Derived facts: the small dicts rule conditions read (`node`, `cluster`, `template`).

Rules stay one line because the arithmetic lives here: what fabric a type offers, how much of it is attached,
whether a node's security groups let EFA reach its peers, how many zones a cluster spans. A fact that could
not be collected is "unknown" (or a `*_known` flag is false), never a silent default that would fire or
hide a rule.
"""

from __future__ import annotations

from typing import Any

from fabriccheck import catalog
from fabriccheck.clusters import Cluster
from fabriccheck.model import Capability, FabricKind, Inventory, LaunchTemplate, Node

Facts = dict[str, Any]


class FactBuilder:
    def __init__(self, inventory: Inventory) -> None:
        self.inventory = inventory
        self.collected = set(inventory.collected)
        self.security_groups = {(g.region, g.id): g for g in inventory.security_groups}
        self.placement_groups = {(g.region, g.name): g for g in inventory.placement_groups}
        self.subnets = {s.id: s for s in inventory.subnets}
        self.reservations = {r.id: r for r in inventory.capacity_reservations}
        self._capabilities: dict[str, Capability | None] = {}
        self._node_facts: dict[str, Facts] = {}
        self._siblings: dict[str, list[catalog.Sibling]] = {}
        self._group_ok: dict[tuple[str, str], bool] = {}
        self._cluster_facts: dict[str, Facts] = {}

    def capability(self, instance_type: str) -> Capability | None:
        if instance_type not in self._capabilities:
            self._capabilities[instance_type] = catalog.resolve(instance_type, self.inventory.capabilities)
        return self._capabilities[instance_type]

    def siblings(self, instance_type: str) -> list[catalog.Sibling]:
        if instance_type not in self._siblings:
            self._siblings[instance_type] = catalog.fabric_siblings(instance_type, self.inventory.capabilities)
        return self._siblings[instance_type]

    def has(self, region: str, fact: str) -> bool:
        return f"{region}:{fact}" in self.collected

    # -------------------------------------------------------------------------------------------- node

    def node(self, node: Node) -> Facts:
        cached = self._node_facts.get(node.id)
        if cached is None:
            cached = self._node_facts[node.id] = self._build_node(node)
        return cached

    def _build_node(self, node: Node) -> Facts:
        cap = self.capability(node.instance_type)
        fabric_nics = [i for i in node.interfaces if i.is_fabric]
        kind = cap.fabric.value if cap else "unknown"
        accelerators = cap.accelerators if cap else 0
        fam = catalog.family(node.instance_type)
        return {
            "id": node.id,
            "instance_type": node.instance_type,
            "family": fam,
            "region": node.region,
            "zone": node.zone or "",
            "vpc": node.vpc_id or "",
            "accelerators": accelerators,
            "accelerator": (cap.accelerator_name if cap else None) or "",
            # Worth a fabric: a type with one that trains (accelerators) or runs HPC jobs. Plain instances
            # that merely support EFA (c5n web fleets) are not flagged.
            "fabric_expected": bool(
                cap and cap.fabric is not FabricKind.NONE and (accelerators > 0 or fam.startswith("hpc"))
            ),
            "fabric": {
                "kind": kind,
                "known": cap is not None,
                "max": cap.fabric_interfaces if cap else 0,
                "attached": len(fabric_nics),
                "cards": len({i.network_card_index for i in fabric_nics}),
                "gbps": (cap.fabric_gbps or 0.0) if cap else 0.0,
            },
            "interfaces": len(node.interfaces),
            "public_ip_interfaces": sum(1 for i in node.interfaces if i.public_ip),
            "efa_security": self._efa_security(node),
            "efa_security_groups": ", ".join(sorted({g for i in fabric_nics for g in i.security_group_ids})),
            "placement_group": node.placement_group or "",
            "capacity_block": self._capacity_block(node),
        }

    def _efa_security(self, node: Node) -> str:
        """'ok', 'missing' (no attached group allows all traffic with itself both ways), 'n/a' or 'unknown'."""
        fabric_nics = [i for i in node.interfaces if i.is_fabric]
        if not fabric_nics:
            return "n/a"
        if not self.has(node.region, "security_groups"):
            return "unknown"
        for nic in fabric_nics:
            if not any(self._group_allows_self(node.region, g) for g in nic.security_group_ids):
                return "missing"
        return "ok"

    def _group_allows_self(self, region: str, group_id: str) -> bool:
        key = (region, group_id)
        verdict = self._group_ok.get(key)
        if verdict is None:
            group = self.security_groups.get(key)
            verdict = self._group_ok[key] = group is not None and group.allows_all_with_itself()
        return verdict

    def _capacity_block(self, node: Node) -> bool | None:
        if node.capacity_block_id:
            return True
        if not node.capacity_reservation_id:
            return False
        reservation = self.reservations.get(node.capacity_reservation_id)
        if reservation is None:
            return None if not self.has(node.region, "capacity_reservations") else False
        return reservation.reservation_type == "capacity-block"

    # -------------------------------------------------------------------------------------------- cluster

    def cluster(self, cluster: Cluster) -> Facts:
        cached = self._cluster_facts.get(cluster.id)
        if cached is None:
            cached = self._cluster_facts[cluster.id] = self._build_cluster(cluster)
        return cached

    def _build_cluster(self, cluster: Cluster) -> Facts:
        nodes = [self.node(n) for n in cluster.nodes]
        fabric_nodes = [f for f in nodes if f["fabric_expected"]]
        types = sorted({n.instance_type for n in cluster.nodes})
        fabric_subnets = {i.subnet_id for n in cluster.nodes for i in n.interfaces if i.is_fabric and i.subnet_id}
        return {
            "id": cluster.id,
            "signal": cluster.signal,
            "size": cluster.size,
            "multi_node": cluster.size > 1,
            "gpus": sum(f["accelerators"] for f in nodes),
            # A cluster whose fabric matters: two or more nodes that have (or should have) a fabric.
            "fabric_cluster": cluster.size > 1 and len(fabric_nodes) > 1,
            "fabric_nodes": len(fabric_nodes),
            "efa_nodes": sum(1 for f in nodes if f["fabric"]["attached"] > 0),
            "zones": len({f["zone"] for f in nodes}),
            "zone_names": ", ".join(sorted({f["zone"] or "?" for f in nodes})),
            "vpcs": len({f["vpc"] for f in nodes}),
            "vpc_names": ", ".join(sorted({f["vpc"] or "?" for f in nodes})),
            "regions": len({f["region"] for f in nodes}),
            "efa_subnets": len(fabric_subnets),
            "efa_subnet_names": ", ".join(sorted(fabric_subnets)),
            "types": types,
            "type_names": ", ".join(types),
            "efa_isolated_mix": len(types) > 1
            and any(catalog.family(t) in catalog.EFA_ISOLATED_FAMILIES for t in types),
            "placement": self._placement(cluster, nodes),
            "topology": self._topology(cluster),
            "choice": self._choice(cluster, nodes),
            "unknown_types": ", ".join(sorted({f["instance_type"] for f in nodes if not f["fabric"]["known"]})),
        }

    def _placement(self, cluster: Cluster, nodes: list[Facts]) -> Facts:
        regions = {n.region for n in cluster.nodes}
        known = all(self.has(r, "placement_groups") for r in regions)
        in_block = [f["capacity_block"] for f in nodes]
        groups = sorted({n.placement_group or "" for n in cluster.nodes})
        strategies = set()
        for node in cluster.nodes:
            if not node.placement_group:
                strategies.add("none")
                continue
            group = self.placement_groups.get((node.region, node.placement_group))
            strategies.add(group.strategy if group else "unknown")
        if not known or "unknown" in strategies:
            strategy = "unknown"
        elif len(strategies) == 1 and len(groups) == 1:
            strategy = strategies.pop()
        elif strategies == {"cluster"}:
            strategy = "several"  # several cluster placement groups: nodes of one job placed apart
        elif strategies & {"spread", "partition"}:
            strategy = sorted(strategies & {"spread", "partition"})[0]
        else:
            strategy = "none"  # some nodes have no placement group at all
        return {
            "strategy": strategy,
            "groups": ", ".join(g or "(none)" for g in groups),
            "capacity_block": all(b is True for b in in_block),
            "capacity_block_known": all(b is not None for b in in_block),
        }

    def _topology(self, cluster: Cluster) -> Facts:
        paths = [n.network_nodes for n in cluster.nodes]
        known = bool(paths) and all(p for p in paths)
        top = {p[0] for p in paths if p} if known else set()
        return {"known": known, "top_nodes": len(top), "top_node_names": ", ".join(sorted(top))}

    def _choice(self, cluster: Cluster, nodes: list[Facts]) -> Facts:
        """A multi-node accelerated cluster on a type without fabric, where its generation has one."""
        weaker = cluster.size > 1 and all(
            f["fabric"]["known"] and f["fabric"]["kind"] == "none" and f["accelerators"] > 0 for f in nodes
        )
        suggestion = ""
        if weaker:
            want = max(f["accelerators"] for f in nodes)
            options = [s for t in {f["instance_type"] for f in nodes} for s in self.siblings(t)]
            same = [s for s in options if s.capability.accelerators >= want]
            pick = (same or options)[:1]
            suggestion = pick[0].instance_type if pick else ""
        return {"weaker": weaker and bool(suggestion), "suggestion": suggestion}

    # -------------------------------------------------------------------------------------------- template

    def template(self, template: LaunchTemplate) -> Facts:
        cap = self.capability(template.instance_type) if template.instance_type else None
        accelerators = cap.accelerators if cap else 0
        fabric = [i for i in template.interfaces if i.interface_type in ("efa", "efa-only")]
        return {
            "id": template.id,
            "name": template.name,
            "version": template.version,
            "label": f"{template.id}:{template.version}",
            "role": "default and latest"
            if template.is_default and template.is_latest
            else "default"
            if template.is_default
            else "latest",
            "instance_type": template.instance_type or "",
            "type_known": cap is not None,
            "fabric_expected": bool(
                cap
                and cap.fabric is not FabricKind.NONE
                and (accelerators > 0 or catalog.family(cap.instance_type).startswith("hpc"))
            ),
            "fabric": {
                "kind": cap.fabric.value if cap else "unknown",
                "max": cap.fabric_interfaces if cap else 0,
                "attached": len(fabric),
            },
            "interfaces": len(template.interfaces),
            "public_ip_interfaces": sum(1 for i in template.interfaces if i.associate_public_ip),
            "placement_group": template.placement_group or "",
        }
