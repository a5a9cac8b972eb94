"""A node's fabric and its state from what its findings do to it (their effects): the one mapping the cost stage
prices (cost.py) and the HTML report's busbw chart redraws (reports/busbw.py)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from fabriccheck import catalog
from fabriccheck.model import Capability
from fabriccheck.penalty.links import (
    PCIE_ACS,
    SPLIT_ONE_MORE,
    FabricDescription,
    FabricHealth,
    FabricState,
    SocketPath,
)

# Effects that leave a node on TCP sockets: no fabric used, or a type without one (judged against its sibling's).
TCP_EFFECTS = frozenset({"tcp-fallback", "weaker-fabric"})


def node_fabric(
    cap: Capability, effects: Collection[str], siblings: Callable[[], Sequence[catalog.Sibling]]
) -> FabricDescription:
    """The node's fabric; for a weaker-fabric finding on a type without one, healthy is the fabric of the
    same-generation type the instance-choice rule suggests (`siblings`, asked only then), scaled to this type's
    accelerators; the node keeps its own ordinary NIC."""
    fabric = FabricDescription.from_capability(cap)
    if "weaker-fabric" in effects and not fabric.fabric_gbps:
        pick = next((s.capability for s in siblings() if s.capability.accelerators >= cap.accelerators), None)
        if pick is not None and pick.accelerators:
            fabric = FabricDescription.borrowed(cap, pick)
    return fabric


def node_state(
    effects: Collection[str], nics_attached: int | None, socket_path: SocketPath, nvlink_domains: int
) -> FabricState:
    """What the effects do to the node's fabric: peers unreachable, TCP sockets, some fabric NICs (`nics_attached`
    of them), looser placement, NVLink domains split (`nvlink_domains`; state NVLINK_SPLIT), multi-node NVLink
    down (effect nvlink-down; state NVLINK_DOWN), PCIe ACS on (effect pcie-acs; state PCIE_ACS)."""
    health: FabricHealth = "healthy"
    if "unreachable" in effects:
        health = "unreachable"
    elif TCP_EFFECTS.intersection(effects):
        health = "tcp-fallback"
    elif "partial-fabric" in effects:
        health = "partial"
    return FabricState(
        health,
        nics_used=nics_attached if health == "partial" else None,
        loose_placement="loose-placement" in effects,
        socket_path=socket_path,
        nvlink_domains=(nvlink_domains or SPLIT_ONE_MORE) if "split-nvlink-domain" in effects else None,
        multi_node_nvlink="nvlink-down" not in effects,
        pcie_acs=PCIE_ACS in effects,
    )
