"""The cost stage: a cluster's findings -> each node's fabric state -> what the penalty core says it costs.

A finding's effect (tcp-fallback, partial-fabric, unreachable, loose-placement, weaker-fabric) acts on the node it
names, or on every node for a cluster finding; the penalty core (penalty.py) turns the nodes' fabrics and states
into a slowdown range, and that into what the cluster loses out of the GPU-hours it is paid for.
"""

from __future__ import annotations

import operator
from itertools import compress

from fabriccheck import penalty
from fabriccheck.clusters import Cluster
from fabriccheck.facts import FactBuilder
from fabriccheck.findings import Finding
from fabriccheck.model import Capability, Node

_ID = operator.attrgetter("id")
_TYPE = operator.attrgetter("instance_type")


def cluster_cost(
    cluster: Cluster,
    findings: list[Finding],
    workload: penalty.Workload,
    price_per_gpu_hour: float | None,
    facts: FactBuilder,
) -> penalty.Penalty:
    """The cluster's penalty from the findings their rules are certain of; when some that may be wrong (confidence
    possible) act on the fabric, also what it would be if they hold (`possible`), counted apart."""
    certain = [f for f in findings if f.confidence == "certain"]
    found = cluster_penalty(cluster, certain, workload, price_per_gpu_hour, facts)
    if any(f.confidence != "certain" and f.effect != "none" for f in findings):
        found.possible = cluster_penalty(cluster, findings, workload, price_per_gpu_hour, facts)
    return found


# What a finding's effect does to the fabric of the node it names (or of every node, for a cluster finding).
_TCP_EFFECTS = {"tcp-fallback", "weaker-fabric"}


def cluster_penalty(
    cluster: Cluster,
    findings: list[Finding],
    workload: penalty.Workload,
    price_per_gpu_hour: float | None,
    facts: FactBuilder,
) -> penalty.Penalty:
    """Map a cluster's findings to a fabric state per node, and ask the penalty core what that costs.

    The nodes of a pool share their type and mostly their findings' effects: a node's fabric and state follow
    from (type, effects, NICs attached if partial), so each distinct such key is mapped once per cluster, each
    type's description and each state once per run, and each distinct cluster's slowdown once per run."""
    capabilities = {t or "": facts.type_capability(t) for t in dict.fromkeys(map(_TYPE, cluster.nodes))}
    known = [c for c in capabilities.values() if c is not None]
    if len(known) < len(capabilities):
        return penalty.Penalty(
            workload=workload.name, estimated=False, reason="an instance type's capability is unknown"
        )
    # A finding naming one node of the cluster acts on that node; any other (a cluster finding) on every node.
    everyone: set[str] = set()
    own: dict[str, set[str]] = {}
    if findings:
        ids = {n.id for n in cluster.nodes}
        for finding in findings:
            if len(finding.resources) == 1 and finding.resources[0] in ids:
                own.setdefault(finding.resources[0], set()).add(finding.effect)
            else:
                everyone.add(finding.effect)
    base = frozenset(everyone)

    def key_of(node: Node) -> _MemberKey:
        effects = base | own[node.id] if node.id in own else base
        partial = "partial-fabric" in effects and not effects & _DOWN_EFFECTS
        return (node.instance_type or "", effects, int(facts.node(node)["fabric"]["attached"]) if partial else None)

    distinct: dict[_MemberKey, None] = {}
    if "partial-fabric" in base and not base & _DOWN_EFFECTS:  # every node's NICs count
        distinct = dict.fromkeys(key_of(n) for n in cluster.nodes)
    elif own and len(capabilities) == 1:  # one type: the nodes no finding names all have the type's key
        named = list(map(own.__contains__, map(_ID, cluster.nodes)))  # in C; the named nodes are few
        keys = {index: key_of(node) for index, node in compress(enumerate(cluster.nodes), named)}
        if False in named:  # placed at the first node no finding names
            keys[named.index(False)] = (next(iter(capabilities)), base, None)
        distinct = dict.fromkeys(keys[index] for index in sorted(keys))
    elif own:  # a node no finding names takes the cluster's effects: its type is its key
        for node in cluster.nodes:
            distinct[key_of(node) if node.id in own else (node.instance_type or "", base, None)] = None
    else:  # a clean pool, or findings on the whole cluster only
        distinct = dict.fromkeys((t, base, None) for t in capabilities)
    # The slowdown depends on the node count and the distinct members in order (the first names the accelerator),
    # so on the distinct keys in order: clusters alike in them share it. Keys hash cheaply; the members (frozen
    # dataclasses) and the workload would be hashed field by field, so a run's slowdowns are kept per workload.
    by_workload: dict[int, tuple[penalty.Workload, dict[tuple[object, ...], penalty.Slowdown]]] = facts.cached(
        "penalty:slowdowns", dict
    )
    kept = by_workload.get(id(workload))
    if kept is None or kept[0] is not workload:  # the workload is kept with its slowdowns: its id stays its own
        kept = by_workload[id(workload)] = (workload, {})
    shape = (cluster.provider, cluster.size, *distinct)
    slowdown = kept[1].get(shape)
    if slowdown is None:
        members = {key: _member(key, cluster.provider, capabilities, facts) for key in distinct}
        every = [members[key_of(n)] for n in cluster.nodes]
        slowdown = kept[1][shape] = penalty.estimate_members(every, workload)
    gpus = min(c.accelerators for c in known) * cluster.size
    # Pools alike cost alike: the Penalty is made once per slowdown, GPU count and price (the slowdown kept with
    # it, so that its id stays its own), and each cluster gets its own copy of it.
    made: dict[tuple[int, int, float | None], tuple[penalty.Slowdown, penalty.Penalty]] = facts.cached(
        "penalty:penalties", dict
    )
    key = (id(slowdown), gpus, price_per_gpu_hour)
    found = made.get(key)
    if found is None or found[0] is not slowdown:
        found = made[key] = (slowdown, penalty.penalty_of(slowdown, workload, gpus, price_per_gpu_hour))
    return found[1].model_copy()  # its ranges are shared with its likes: nothing changes a made Penalty


_MemberKey = tuple[str, frozenset[str], int | None]  # a node's type, its findings' effects, NICs attached if partial
# Effects that decide a node's state ahead of partial-fabric (see _member): its attached NICs do not matter then.
_DOWN_EFFECTS = frozenset({"unreachable", *_TCP_EFFECTS})


def _member(
    key: _MemberKey,
    provider: str,
    capabilities: dict[str, Capability | None],
    facts: FactBuilder,
) -> tuple[penalty.FabricDescription, penalty.FabricState]:
    """A node's fabric and its state, from its (type, findings' effects, fabric NICs attached if partial)."""
    instance_type, effects, attached = key
    cap = capabilities[instance_type]
    assert cap is not None  # cluster_penalty estimates only clusters whose types are all known
    descriptions: dict[str, penalty.FabricDescription] = facts.cached("penalty:descriptions", dict)
    states: dict[tuple[penalty.FabricHealth, int | None, bool], penalty.FabricState] = facts.cached(
        "penalty:states", dict
    )
    fabric = descriptions.get(cap.instance_type)
    if fabric is None:
        fabric = descriptions[cap.instance_type] = penalty.FabricDescription.from_capability(cap)
    if "weaker-fabric" in effects and not fabric.fabric_gbps:
        # Healthy would be the fabric of the same-generation type the instance-choice rule suggests,
        # scaled to this type's accelerators; the node keeps its own ordinary NIC.
        pick = next(
            (
                s.capability
                for s in facts.siblings(provider, cap.instance_type)
                if s.capability.accelerators >= cap.accelerators
            ),
            None,
        )
        if pick is not None and pick.accelerators:
            borrowed = f"{cap.instance_type} as {pick.instance_type}"
            fabric = descriptions.get(borrowed)
            if fabric is None:
                fabric = descriptions[borrowed] = penalty.FabricDescription.borrowed(cap, pick)
    loose = "loose-placement" in effects
    state_key: tuple[penalty.FabricHealth, int | None, bool]
    if "unreachable" in effects:
        state_key = ("unreachable", None, loose)
    elif effects & _TCP_EFFECTS:
        state_key = ("tcp-fallback", None, loose)
    elif "partial-fabric" in effects:
        state_key = ("partial", attached, loose)
    else:
        state_key = ("healthy", None, loose)
    state = states.get(state_key)
    if state is None:
        state = states[state_key] = penalty.FabricState(
            state_key[0], nics_used=state_key[1], loose_placement=state_key[2]
        )
    return fabric, state


