"""A degraded cluster's expected all_reduce busbw against message size, healthy and degraded, for the HTML report.

The curves come from the penalty model's own collective estimate (penalty.collective_estimate, which `fabriccheck
estimate` sweeps the same sizes with). The report does not carry a cluster's fabric state, so it is rebuilt as
cost.py builds it: the cluster's instance type from the catalog (a type without a fabric judged against the
fabric of its generation's sibling, for a weaker-fabric finding), and the effects of the findings the rules are
certain of (TCP fallback, some fabric NICs, looser placement), by the mapping the cost stage uses
(penalty.members). A curve is drawn only when the rebuilt links are the links the cluster's penalty recorded
(`inter_node_gbytes_per_s`, within 1%: how many fabric NICs a partial node has is read back from them): otherwise
the chart would show another cluster than the one priced, and the report says why it draws none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fabriccheck import catalog, penalty
from fabriccheck.cloud import support
from fabriccheck.estimate import SIZES
from fabriccheck.findings import Finding
from fabriccheck.model import NetworkPath
from fabriccheck.penalty.members import node_fabric, node_state
from fabriccheck.report import ClusterReport

OP = "all_reduce"
TOLERANCE = 0.01


@dataclass(frozen=True)
class Curves:
    """Busbw (GB/s) at each message size (bytes): healthy, and the degraded state at the best and worst end."""

    instance_type: str
    nodes: int
    state: str  # the degraded state in words
    command: str | None  # the `fabriccheck estimate` that prints the same figures, when one can say the state
    sizes: tuple[int, ...]
    healthy: tuple[float, ...]
    best: tuple[float, ...]
    worst: tuple[float, ...]


def degraded(cluster: ClusterReport) -> bool:
    """The cluster runs, slower than healthy (what a busbw chart is for); not a cluster that cannot run."""
    p = cluster.penalty
    return p.estimated and not p.cannot_run and p.slowdown is not None and p.slowdown.high >= 1.005


def curves(cluster: ClusterReport, findings: Sequence[Finding]) -> Curves | str:
    """The curves of a degraded cluster, or why none are drawn."""
    recorded = cluster.penalty.inter_node_gbytes_per_s or {}
    if len(set(cluster.instance_types)) != 1:
        return "its nodes are of several types"
    if not {"healthy", "degraded_best", "degraded_worst"} <= set(recorded):
        return "its penalty records no inter-node bandwidth"
    instance_type = cluster.instance_types[0]
    effects = {f.effect for f in findings if f.confidence == "certain"}
    if "split-nvlink-domain" in effects:
        return "the NVLink domains it spans are not in the report"
    if "nvlink-down" in effects:
        return "its multi-node NVLink is down: the chart draws the NICs of one node, not of its domain"
    fabric = _fabric(cluster.provider, instance_type, effects)
    if fabric is None:
        return f"{instance_type} is not in the catalog"
    state = _state(cluster, fabric, effects, recorded)
    if state is None:
        return "the model's links for its type and findings are not those its penalty recorded"
    nodes = len(cluster.nodes)
    ends = ((penalty.FabricState("healthy", socket_path=state.socket_path), False), (state, False), (state, True))
    rows: list[tuple[int, list[float]]] = []
    for size in SIZES:
        found = [penalty.collective_estimate(fabric, nodes, OP, size, s, worst=w) for s, w in ends]
        busbw = [e.busbw for e in found if e is not None]
        if len(busbw) == len(ends):
            rows.append((size, busbw))
    if not rows:
        return "the model has no collective figures for its accelerator"
    return Curves(
        instance_type=instance_type,
        nodes=nodes,
        state=_words(state, fabric),
        command=None if "weaker-fabric" in effects else _command(instance_type, nodes, state),
        sizes=tuple(size for size, _ in rows),
        healthy=tuple(b[0] for _, b in rows),
        best=tuple(b[1] for _, b in rows),
        worst=tuple(b[2] for _, b in rows),
    )


def _close(value: float, want: float) -> bool:
    return abs(value - want) <= TOLERANCE * max(abs(want), 1e-9)


def _fabric(provider: str, instance_type: str, effects: set[str]) -> penalty.FabricDescription | None:
    """The type's fabric, as the cost stage takes it (a weaker-fabric type's: its sibling's)."""
    cap = catalog.resolve(instance_type, {})
    if cap is None:
        return None
    return node_fabric(cap, effects, lambda: catalog.fabric_siblings(support(provider), instance_type, {}))


def _state(
    cluster: ClusterReport, fabric: penalty.FabricDescription, effects: set[str], recorded: dict[str, float]
) -> penalty.FabricState | None:
    """The worst node's state (the ring runs at its pace), as the cost stage makes it, when its links are the ones
    the penalty recorded (else None). Some fabric NICs: how many is not in the report, but the link scales with
    them, so the recorded bandwidths say it. The sockets' path is the cluster's network_path; a report written
    before it was recorded: the path whose links are the recorded ones."""
    share = recorded["degraded_best"] / recorded["healthy"] if recorded["healthy"] else 0.0
    expected = (recorded["healthy"], recorded["degraded_best"], recorded["degraded_worst"])
    for path in [cluster.network_path] if cluster.network_path is not None else list(NetworkPath):
        state = node_state(effects, round(fabric.nics * share), path, 0)
        links = (
            penalty.healthy_link(fabric),
            penalty.degraded_link(fabric, state),
            penalty.degraded_link(fabric, state, True),
        )
        if all(link and _close(link.bandwidth / penalty.GB, want) for link, want in zip(links, expected, strict=True)):
            return state
    return None


def _words(state: penalty.FabricState, fabric: penalty.FabricDescription) -> str:
    # A degraded cluster's worst node runs (degraded): on the fabric, on sockets, or on some of its NICs.
    words = {
        "healthy": "the fabric",
        "tcp-fallback": "TCP sockets instead of the fabric",
        "partial": f"{state.nics_used} of {fabric.nics} fabric NICs",
    }
    said = words[state.fabric]
    return said + (", looser placement" if state.loose_placement else "")


def _command(instance_type: str, nodes: int, state: penalty.FabricState) -> str:
    """`fabriccheck estimate` for the same fabric, nodes and state (its --state words: estimate.STATE_HELP)."""
    base = {"tcp-fallback": "tcp", "partial": f"nics={state.nics_used}"}
    words = [base.get(state.fabric, "healthy")]
    if state.fabric == "tcp-fallback" and state.socket_path != "host":
        words.append(state.socket_path)
    if state.loose_placement:
        words.append("no-placement")
    if words[0] == "healthy" and len(words) > 1:
        words = words[1:]
    return f"fabriccheck estimate --instance-type {instance_type} --nodes {nodes} --state {','.join(words)}"
