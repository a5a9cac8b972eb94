"""Bare pods (no owner, no workload label) that are one multi-node test: Google's NCCL tests on GKE create two Pods by
hand, one per node, with the same image and networks (GoogleCloudPlatform/container-engine-accelerators
gpudirect-rdma/nccl-test.yaml, gpudirect-tcpx/nccl-test-latest.yaml: nccl-test-host-1 and -2; copies in
/work/shared/samples/k8s). Each alone is a one-node workload that exchanges nothing over the fabric, so judged apart
they would pass whatever their fabric. Pods of one namespace with the same images, the same networks and a common
name prefix, each asking for every accelerator of its node (one rank set per node, as a multi-node test does; a
notebook asking one GPU is no such pod), are judged as one workload, named by that prefix, and the report says so
(a fabriccheck.io/workload label on them decides instead)."""

from __future__ import annotations

from collections import defaultdict

from fabriccheck import catalog
from fabriccheck.model import FrozenTags, Node
from fabriccheck.providers.k8s.support import WORKLOAD_TAG
from fabriccheck.resources.k8s import PodPart
from fabriccheck.sources.pools import node as pooled_node

MIN_PREFIX = 3  # characters of common name: "a-0" and "b-0" share nothing a user would call one test


def grouped(nodes: list[Node]) -> tuple[list[Node], list[str]]:
    """The nodes, bare pods of one test moved into one workload, and a note per group (and per bare pod left
    alone among others like it)."""
    groups: dict[tuple[str, tuple[str, ...], tuple[str, ...]], list[Node]] = defaultdict(list)
    for node in nodes:
        pod = node.shape.part(PodPart)
        if pod is not None and pod.kind == "Pod" and pod.workload.split("/")[1] == "Pod" and _whole_node(node):
            images = tuple(sorted(image for _, image in pod.containers))
            groups[(pod.workload.split("/")[0], images, tuple(sorted(pod.networks)))].append(node)
    moved: dict[str, Node] = {}
    notes: list[str] = []
    for (namespace, _, _), members in groups.items():
        if len(members) < 2:
            continue
        names = [m.id.split("/", 1)[1] for m in members]
        prefix = _common_prefix(names)
        if len(prefix) < MIN_PREFIX:
            notes.append(
                f"bare pods {', '.join(sorted(names))} in {namespace} look alike but share no name: each is judged "
                f"alone (label them {WORKLOAD_TAG}=NAME to judge them as one workload)"
            )
            continue
        workload = f"{namespace}/Pod/{prefix}*"
        for member in members:
            moved[member.id] = _renamed(member, workload)
        notes.append(
            f"bare pods {', '.join(sorted(names))} in {namespace} (same images and networks) are judged as one "
            f"workload, {workload} (label them {WORKLOAD_TAG}=NAME to decide otherwise)"
        )
    return [moved.get(n.id, n) for n in nodes], notes


def _whole_node(node: Node) -> bool:
    cap = catalog.catalog_entry(node.shape.instance_type) if node.shape.instance_type else None
    pod = node.shape.part(PodPart)
    return pod is not None and cap is not None and pod.gpus >= cap.accelerators > 0


def _renamed(node: Node, workload: str) -> Node:
    shape = node.shape
    own = shape.part(PodPart)
    assert own is not None
    pod = own.model_copy(update={"workload": workload})
    tags = FrozenTags({**shape.tags, WORKLOAD_TAG: workload})
    return pooled_node(node.id, shape.model_copy(update={"extensions": shape.with_part(pod), "tags": tags}), node.state)


def _common_prefix(names: list[str]) -> str:
    first, last = min(names), max(names)
    size = next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), min(len(first), len(last)))
    return first[:size]
