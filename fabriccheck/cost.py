"""The cost stage: a cluster's findings -> each node's fabric state -> what the penalty core says it costs.

A finding's effect (tcp-fallback, partial-fabric, unreachable, loose-placement, weaker-fabric) acts on the node it
names, or on every node for a cluster finding; the penalty core (penalty.py) turns the nodes' fabrics and states
into a slowdown range, and that into what the cluster loses out of the GPU-hours it is paid for.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from fabriccheck import penalty
from fabriccheck.clusters import Cluster
from fabriccheck.facts import FactBuilder, fact_key_of
from fabriccheck.findings import Finding
from fabriccheck.judge import named_as
from fabriccheck.model import Capability, Node, NodeShape
from fabriccheck.penalty.members import TCP_EFFECTS, node_fabric, node_state
from fabriccheck.values import JobPart

Member = tuple[penalty.FabricDescription, penalty.FabricState]  # one node's fabric and what is wrong with it
# Words that name a test job in a job's name or its containers' names and images: nccl-tests
# (NVIDIA/nccl-tests images, GKE's and AKS's nccl-test samples) and node health checks. A test runs minutes; what
# its findings say holds for the training jobs of its nodes, but it is not a day of training to price.
TEST_JOB_WORDS = ("nccl-test", "nccl_test", "health-check", "healthcheck", "node-health")


def test_job(cluster: Cluster) -> str | None:
    """The word that makes the job on a cluster's nodes a test job (nccl-tests, a health check), or None."""
    for node in cluster.nodes:
        texts = [text for part in _jobs(node.shape) for text in part.job_words()]
        for word in TEST_JOB_WORDS:
            if any(word in text for text in texts):
                return word
    return None


def _jobs(shape: NodeShape) -> list[JobPart]:
    """The parts of a node's shape that stand for a job on it (a pod, a Slurm job script)."""
    return [part for part in shape.extensions if isinstance(part, JobPart)]


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
    word = test_job(cluster)
    return _unpriced(found, certain) if word is None else _as_test_job(found, word)


def _unpriced(found: penalty.Penalty, certain: list[Finding]) -> penalty.Penalty:
    """A cluster whose certain findings change no state the model prices (effect none: a placement spread, a host
    NIC's setting) says which findings went unpriced: "no slowdown (the fabric is fully used)" would contradict a
    finding whose own text says its cost is not estimated."""
    rules = sorted({f.rule for f in certain if f.effect == "none"})
    flat = found.slowdown is not None and found.slowdown.high < 1.005
    if not rules or not found.estimated or found.cannot_run or not flat or found.reason:
        return found
    verb = "changes" if len(rules) == 1 else "change"
    said = (
        f"no slowdown priced: {', '.join(rules)} {verb} no fabric state the cost model prices (the finding says what "
        "it may cost)"
    )
    return found.model_copy(update={"reason": said})


def _as_test_job(found: penalty.Penalty, word: str) -> penalty.Penalty:
    """A test job keeps its slowdown (what its own run will show) but loses no day of training: 0 GPU-hours and
    dollars a day, so no total counts it as one (its nodes are still paid for). One that cannot run says so first:
    the training jobs of its nodes cannot run either, and the clusters they run in count that loss."""
    if not found.estimated:
        return found
    said = (
        f"a test job ({word}): it runs minutes, not a day of {found.workload} training, so no GPU-hours a day are "
        "counted lost; its findings hold for the training jobs on these nodes"
    )
    if found.cannot_run:  # its own run fails; the training on its nodes fails too, and its clusters count that
        said = (
            f"{penalty.CANNOT_CONNECT}; a test job ({word}): it runs minutes, not a day of {found.workload} training, "
            "so no GPU-hours a day are counted lost here; the training jobs on these nodes cannot run either"
        )
    none = penalty.Range(low=0.0, high=0.0)
    cleared = {"lost_gpu_hours_per_day": none, "lost_dollars_per_day": none if found.price_per_gpu_hour else None}
    possible = found.possible.model_copy(update=cleared) if found.possible is not None else None
    return found.model_copy(update={**cleared, "reason": said, "possible": possible})


def cluster_penalty(
    cluster: Cluster,
    findings: list[Finding],
    workload: penalty.Workload,
    price_per_gpu_hour: float | None,
    facts: FactBuilder,
) -> penalty.Penalty:
    """Map a cluster's findings to a fabric state per node, and ask the penalty core what that costs."""
    shapes = list(dict.fromkeys(n.shape for n in cluster.nodes))  # the pools' shapes: a pool's nodes share a type
    capabilities = {_type_of(shape): facts.capability(shape) for shape in shapes}
    known = [c for c in capabilities.values() if c is not None]
    if len(known) < len(capabilities):
        return penalty.Penalty(
            workload=workload.name, estimated=False, reason="an instance type's capability is unknown"
        )
    # A finding naming one node of the cluster acts on that node (one planned group's Terraform address: on each of
    # its nodes); any other (a cluster finding) on every node.
    everyone: set[str] = set()
    own: dict[str, set[str]] = {}
    ids: dict[str, list[str]] = {}
    for node in cluster.nodes:
        ids.setdefault(named_as(node), []).append(node.id)
    for finding in findings:
        if len(finding.resources) == 1 and finding.resources[0] in ids:
            for node_id in ids[finding.resources[0]]:
                own.setdefault(node_id, set()).add(finding.effect)
        else:
            everyone.add(finding.effect)
    # What the findings cannot say but the cluster does: how its sockets reach the network (a Kubernetes node group's
    # pods may not use host networking) and the NVLink domains it spans, when a finding says it is spread.
    split = "split-nvlink-domain" in everyone or any("split-nvlink-domain" in e for e in own.values())
    where = (cluster.network_path, int(facts.cluster(cluster)["nvlink"]["domains"]) if split else 0)
    shared = frozenset(everyone)
    # Each distinct (type, effects, NICs attached) once, in the order of the first node that has it: the core
    # prices the distinct members of a cluster, the first node's accelerator first.
    keys = dict.fromkeys(_key(n, shared | own[n.id] if n.id in own else shared, facts) for n in cluster.nodes)
    members = dict.fromkeys(_member(key, cluster.provider, capabilities, facts, where) for key in keys)
    slowdown = _slowdown(tuple(members), len(cluster.nodes), workload)
    gpus = min(c.accelerators for c in known) * cluster.size
    found = penalty.penalty_of(slowdown, workload, gpus, price_per_gpu_hour)
    return _with_extrapolated(found, [fabric for fabric, _ in members], len(cluster.nodes))


def _with_extrapolated(found: penalty.Penalty, fabrics: list[penalty.FabricDescription], nodes: int) -> penalty.Penalty:
    """The penalty, saying beside its price the extrapolated figure it rests on: a slowdown between nodes whose
    fabric the per-GPU NIC cap holds below its NICs' rate (the cap was measured on GB300 RoCE only)."""
    slower = found.slowdown is not None and found.slowdown.high >= 1.005
    if not found.estimated or found.cannot_run or not slower or nodes < 2:
        return found
    lines = list(dict.fromkeys(line for f in fabrics if (line := penalty.links.nic_cap_extrapolated(f)) is not None))
    return found.model_copy(update={"extrapolated": "; ".join(lines)}) if lines else found


@functools.lru_cache(maxsize=4096)
def _slowdown(distinct: tuple[Member, ...], nodes: int, workload: penalty.Workload) -> penalty.Slowdown:
    """The penalty core's slowdown, once per distinct cluster (its distinct members, first node's first, and its
    size) and workload: the clusters of an estate repeat a few of them."""
    return penalty.estimate_distinct(distinct, nodes, workload)


# A node's type (with the GPUs attached to it, GCP N1), its findings' effects, fabric NICs attached if partial.
_MemberKey = tuple[tuple[str, int | None, str | None], frozenset[str], int | None, tuple[int | None, int | None]]
# Effects that decide a node's state ahead of partial-fabric (see _member): its attached NICs do not matter then.
_DOWN_EFFECTS = frozenset({"unreachable", *TCP_EFFECTS})


def _key(node: Node, effects: frozenset[str], facts: FactBuilder) -> _MemberKey:
    """What decides a node's member: its type, its findings' effects, and its fabric NICs when they are partial."""
    partial = "partial-fabric" in effects and not effects & _DOWN_EFFECTS
    attached = int(facts.of(fact_key_of(node))["fabric"]["attached"]) if partial else None
    return (_type_of(node.shape), effects, attached, _job_sockets(node))


def _job_sockets(node: Node) -> tuple[int | None, int | None]:
    """NCCL_SOCKET_NTHREADS and NCCL_NSOCKS_PERTHREAD as they reach the job's ranks on the node (a pod's env, an
    MPIJob launcher's mpirun -x, a Slurm job script; None: unset, or not a whole number NCCL would read): NCCL's
    socket count follows them (penalty.links.nccl_sockets). The last setting that reaches the ranks wins."""
    env = {name: value for part in _jobs(node.shape) for name, value, _ in part.rank_env()}
    found = []
    for name in ("NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD"):
        value = env.get(name, "").strip()
        found.append(int(value) if value.isdigit() else None)
    return found[0], found[1]


def _type_of(shape: NodeShape) -> tuple[str, int | None, str | None]:
    """What decides a node's capability: its type, and the GPUs attached to it when it says (facts.capability)."""
    return (shape.instance_type or "", shape.accelerators, shape.accelerator)


def _member(
    key: _MemberKey,
    provider: str,
    capabilities: dict[tuple[str, int | None, str | None], Capability | None],
    facts: FactBuilder,
    where: tuple[penalty.SocketPath, int],
) -> Member:
    """A node's fabric and its state, from its (type, findings' effects, fabric NICs attached if partial)."""
    type_key, effects, attached, (threads, each) = key
    cap = capabilities[type_key]
    assert cap is not None  # cluster_penalty estimates only clusters whose types are all known
    fabric = node_fabric(cap, effects, lambda: facts.siblings(provider, cap.instance_type))
    state = node_state(effects, attached, where[0], where[1])
    if threads is not None or each is not None:
        state = replace(state, sockets=penalty.links.nccl_sockets(threads, each, fabric.provider, state.socket_path))
    return fabric, state
