"""Kubernetes objects (as `kubectl get KIND -A -o json` and the API give them) normalized into the inventory: each
pod that requests accelerators becomes a node of provider k8s, shaped by what it asks for and by the node it runs on
(or, pending or not applied yet, the nodes its selector allows); its workload is the top owner of its
`ownerReferences`, or what a controller's well-known label names. One cluster's objects at a time.

Shapes: k8s-object-shapes.md in /work/shared/samples/k8s (Node labels and spec.providerID on EKS, GKE and AKS,
JobSet, Kubeflow and KubeRay pod labels, a StatefulSet pod's labels).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from fabriccheck import catalog
from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.model import MAX_COUNT, CollectionError, Node, NodeShape, Origin, Placement, fact_key
from fabriccheck.providers.k8s import bare_pods, rankenv, role
from fabriccheck.providers.k8s.claims import GPU, Claims, PodClaims
from fabriccheck.providers.k8s.support import (
    EFA_RESOURCE,
    GPU_RESOURCES,
    NODE_POOL,
    ROLE_TAG,
    SERVING_KINDS,
    WORKLOAD_TAG,
    is_rdma_resource,
)
from fabriccheck.providers.k8s.topology import compute_domain_cliques, node_topology
from fabriccheck.resources.k8s import DaemonSet, GkeNetwork, GkeNetworkParamSet, PodPart
from fabriccheck.sources.pools import node as pooled_node
from fabriccheck.sources.shape import unexpected_shape

# The plural each kind is dumped and listed as, and its kind (role.KINDS: every kind read).
KINDS = {k.plural: k.kind for k in role.KINDS}
REQUIRED = tuple(k.plural for k in role.KINDS if k.required)
OWNER_KINDS = tuple(k.plural for k in role.KINDS if k.owner)

# Labels that name a pod's workload where its owner chain may be cut short (the Job between a JobSet and its pods
# not dumped): JobSet (jobset.sigs.k8s.io), LeaderWorkerSet, KubeRay, Volcano.
_LABEL_OWNERS = (
    ("jobset.sigs.k8s.io/jobset-name", "JobSet"),
    ("leaderworkerset.sigs.k8s.io/name", "LeaderWorkerSet"),
    ("ray.io/cluster", "RayCluster"),
    ("volcano.sh/job-name", "Job"),
)
_INSTANCE_TYPE = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
_ZONE = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
_REGION = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")
# EKS managed node group, eksctl, Karpenter, GKE, AKS.
_POOL = (
    "eks.amazonaws.com/nodegroup",
    "alpha.eksctl.io/nodegroup-name",
    "karpenter.sh/nodepool",
    "cloud.google.com/gke-nodepool",
    "kubernetes.azure.com/agentpool",
    "agentpool",
)
_PROVIDER_ID = re.compile(r"^(?P<scheme>aws|gce|azure)://(?P<rest>.*)$")
_SCHEME_CLOUD = {"aws": "aws", "gce": "gcp", "azure": "azure"}
_QUANTITY = re.compile(r"^([0-9.]+)([a-zA-Z]*)$")
_SUFFIX = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
UNKNOWN_REGION = "unknown"


@dataclass
class ClusterObjects:
    """One cluster's objects by plural (only the kinds that were read), and what could not be read."""

    name: str
    items: dict[str, list[dict[str, Any]]]
    origin: Origin = "running"
    errors: list[CollectionError] = field(default_factory=list)


@dataclass(frozen=True)
class NodeInfo:
    name: str
    labels: dict[str, str]
    instance_type: str | None
    zone: str | None
    region: str | None
    pool: str | None
    cloud: str | None
    instance: str | None
    cloud_account: str | None
    allocatable: tuple[tuple[str, int], ...]
    gpus: int


def quantity(value: Any) -> int:
    """A Kubernetes quantity ("8", "5120Mi", "500m") as a whole number of its unit; 0 when unreadable."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int | float):
        return int(value)
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        return 0
    number, suffix = match.groups()
    if suffix == "m":
        return int(float(number) / 1000)
    try:
        return int(float(number) * _SUFFIX[suffix])
    except (KeyError, ValueError):
        return 0


def ec2_type(label: str | None) -> str | None:
    """A node's type as the catalog names it: SageMaker HyperPod nodes are labelled with the SageMaker name
    (node.kubernetes.io/instance-type: ml.p5en.48xlarge), which is the EC2 type with `ml.` before it (SageMaker
    HyperPod EKS docs, "instance types"; aws-samples/awsome-distributed-training hyperpod-eks manifests select
    nodes by it)."""
    if label and label.startswith("ml.") and catalog.catalog_entry(label[3:]) is not None:
        return label[3:]
    return label


def _first(labels: dict[str, str], keys: tuple[str, ...]) -> str | None:
    return next((labels[k] for k in keys if labels.get(k)), None)


def _relevant(name: str) -> bool:
    return name == EFA_RESOURCE or is_rdma_resource(name) or name.startswith("hugepages-") or name in GPU_RESOURCES


def node_info(item: dict[str, Any]) -> NodeInfo:
    meta = item.get("metadata") or {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    instance_type = ec2_type(_first(labels, _INSTANCE_TYPE))
    cloud, instance, account = None, None, None
    match = _PROVIDER_ID.match(str((item.get("spec") or {}).get("providerID") or ""))
    if match:
        cloud = _SCHEME_CLOUD[match["scheme"]]
        rest = match["rest"]
        # As the cloud reports name their nodes: the EC2 instance id (aws:///zone/i-...), the GCE instance's name in
        # its project (gce://project/zone/name), the Azure VM's resource id (azure:///subscriptions/SUB/...).
        instance = rest.rsplit("/", 1)[-1] if cloud in ("aws", "gcp") else rest
        parts = rest.strip("/").split("/")
        if cloud == "gcp" and len(parts) == 3:
            account = parts[0]
        elif cloud == "azure" and len(parts) > 1 and parts[0].lower() == "subscriptions":
            account = parts[1]
    elif instance_type:
        cap = catalog.catalog_entry(instance_type)
        cloud = cap.provider if cap else None
    allocatable = (item.get("status") or {}).get("allocatable") or {}
    counts = tuple(sorted((str(k), quantity(v)) for k, v in allocatable.items() if _relevant(str(k))))
    return NodeInfo(
        name=str(meta.get("name") or ""),
        labels=labels,
        instance_type=instance_type,
        zone=_first(labels, _ZONE),
        region=_first(labels, _REGION),
        pool=_first(labels, _POOL),
        cloud=cloud,
        instance=instance,
        cloud_account=account,
        allocatable=tuple((k, n) for k, n in counts if not k.startswith("hugepages-")),
        gpus=sum(n for k, n in counts if k in GPU_RESOURCES),
    )


def _controller(meta: dict[str, Any]) -> tuple[str, str] | None:
    refs = [r for r in meta.get("ownerReferences") or () if isinstance(r, dict)]
    ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
    return (str(ref.get("kind")), str(ref.get("name"))) if ref else None


def workload_of(meta: dict[str, Any], namespace: str, owners: dict[tuple[str, str, str], dict[str, Any]]) -> str:
    """namespace/Kind/name of the pod's workload: its own fabriccheck.io/workload label, else the top of its owner
    chain, started from a controller's label where there is one."""
    labels = meta.get("labels") or {}
    if labels.get(WORKLOAD_TAG):
        return f"{namespace}/Workload/{labels[WORKLOAD_TAG]}"
    start = next(((kind, str(labels[label])) for label, kind in _LABEL_OWNERS if labels.get(label)), None)
    start = start or _controller(meta)
    if start is None:
        return f"{namespace}/Pod/{meta.get('name', '')}"
    kind, name = start
    for _ in range(8):  # owner chains are short; a cycle in a hand-made dump ends here
        owner = owners.get((namespace, kind, name))
        up = _controller(owner.get("metadata") or {}) if owner else None
        if up is None:
            break
        kind, name = up
    return f"{namespace}/{kind}/{name}"


@dataclass
class _PodSpec:
    gpus: int
    requests: tuple[tuple[str, int], ...]
    ipc_lock: bool
    containers: tuple[tuple[str, str], ...]
    env: tuple[tuple[str, str], ...]
    privileged: bool = False
    host_paths: tuple[str, ...] = ()
    accelerator_resources: tuple[str, ...] = ()  # the accelerator resources it asks for (nvidia.com/gpu, neuron ...)


_GPU_NAMES = frozenset(GPU_RESOURCES)


def asks_accelerators(spec: dict[str, Any]) -> bool:
    """Whether any container limits or requests an accelerator: most pods of a cluster do not, and are passed over
    without being read further."""
    for container in spec.get("containers") or ():
        resources = container.get("resources") if isinstance(container, dict) else None
        if resources:
            for part in (resources.get("limits"), resources.get("requests")):
                if isinstance(part, dict) and not _GPU_NAMES.isdisjoint(part):
                    return True
    return False


def read_spec(
    spec: dict[str, Any], config_maps: rankenv.ConfigMaps | None = None, namespace: str = "default"
) -> _PodSpec:
    """What a pod spec (or a workload's pod template) asks for: accelerators and fabric resources (a limit stands
    for its request: extended resources must have equal ones), IPC_LOCK, its containers and their NCCL settings."""
    containers = [c for c in spec.get("containers") or () if isinstance(c, dict)]
    # Native sidecars: init containers that keep running (restartPolicy Always), as the TCPXO daemon may be.
    containers += [
        c for c in spec.get("initContainers") or () if isinstance(c, dict) and c.get("restartPolicy") == "Always"
    ]
    totals: Counter[str] = Counter()
    ipc_lock, privileged, env = False, False, []
    for container in containers:
        resources = container.get("resources") or {}
        asked: dict[str, int] = {}
        for part in ("limits", "requests"):
            for name, value in (resources.get(part) or {}).items():
                if _relevant(str(name)):
                    asked[str(name)] = max(asked.get(str(name), 0), quantity(value))
        totals.update(asked)
        security = container.get("securityContext") or {}
        added = ((security.get("capabilities") or {}).get("add")) or ()
        privileged = privileged or security.get("privileged") is True
        ipc_lock = ipc_lock or privileged or "IPC_LOCK" in added
        env += rankenv.container_env(container, config_maps, namespace)
    wanted = tuple(name for name in GPU_RESOURCES if totals.get(name, 0) > 0)
    gpus = sum(totals.pop(name, 0) for name in GPU_RESOURCES)
    return _PodSpec(
        gpus=min(gpus, MAX_COUNT),
        requests=tuple(sorted((k, v) for k, v in totals.items() if v > 0)),
        ipc_lock=ipc_lock,
        containers=tuple((str(c.get("name", "")), str(c.get("image", ""))) for c in containers),
        env=tuple(env),
        privileged=privileged,
        host_paths=_device_host_paths(spec),
        accelerator_resources=wanted,
    )


def _device_host_paths(spec: dict[str, Any]) -> tuple[str, ...]:
    """The hostPath volumes under /dev the pod mounts (/dev/infiniband ...): what of its node's devices it sees
    beside those a device plugin or claim gives it."""
    found = []
    for volume in spec.get("volumes") or ():
        path = str(((volume or {}).get("hostPath") or {}).get("path") or "") if isinstance(volume, dict) else ""
        if path.rstrip("/") == "/dev" or path.startswith("/dev/"):
            found.append(path.rstrip("/") or path)
    return tuple(sorted(set(found)))


def gke_networks(annotations: dict[str, Any]) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    """(networking.gke.io/default-interface, the networks networking.gke.io/interfaces maps beside the default
    interface's, their interface names). An annotation that is not a JSON list maps nothing."""
    default = annotations.get("networking.gke.io/default-interface")
    default = str(default).strip() if default else None
    try:
        listed = json.loads(str(annotations.get("networking.gke.io/interfaces") or "[]"))
    except ValueError:
        listed = []
    networks, interfaces = [], []
    for entry in listed if isinstance(listed, list) else ():
        if isinstance(entry, dict) and entry.get("network") and entry.get("interfaceName") != (default or "eth0"):
            networks.append(str(entry["network"]))
            if entry.get("interfaceName"):
                interfaces.append(str(entry["interfaceName"]))
    return default, tuple(networks), tuple(interfaces)


class _Nodes:
    """The cluster's nodes, and the ones a pod's selector allows."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.by_name = {info.name: info for info in map(node_info, items)}
        regions = Counter(info.region for info in self.by_name.values() if info.region)
        self.region = regions.most_common(1)[0][0] if regions else UNKNOWN_REGION

    def allowed(
        self, spec: dict[str, Any], gpus: int, claimed: bool = False, wanted: tuple[str, ...] = ()
    ) -> list[NodeInfo]:
        """Nodes whose labels satisfy the pod's nodeSelector and the In terms of its required node affinity; with
        accelerators asked for, only nodes that have them (when any do). Accelerators claimed through DRA are no
        extended resource of the node: then a node whose type has accelerators has them. Where the nodes say what
        they advertise, a pod asking for an accelerator resource (aws.amazon.com/neuron) is scheduled only on nodes
        that advertise it: none may (the pod stays Pending)."""
        selector = {str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()}
        terms = (
            ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
                "requiredDuringSchedulingIgnoredDuringExecution"
            )
            or {}
        ).get("nodeSelectorTerms") or []
        expressions = [
            (str(e.get("key")), {str(v) for v in e.get("values") or ()})
            for term in terms[:1]  # one term is the common case; the others widen it
            for e in term.get("matchExpressions") or ()
            if e.get("operator") == "In"
        ]
        found = [
            info
            for info in self.by_name.values()
            if all(info.labels.get(k) == v for k, v in selector.items())
            and all(info.labels.get(k) in values for k, values in expressions)
        ]
        if wanted and any(info.allocatable for info in found):
            return [info for info in found if any(name in wanted for name, n in info.allocatable if n > 0)]
        if gpus or claimed:
            with_gpus = [info for info in found if info.gpus > 0 or (claimed and _type_has_accelerators(info))]
            found = with_gpus or found
        return found


def _type_has_accelerators(info: NodeInfo) -> bool:
    cap = catalog.catalog_entry(info.instance_type) if info.instance_type else None
    return bool(cap and cap.accelerators)


def _finished(owner: dict[str, Any]) -> bool:
    """A Job or training job that completed or failed (its pods may be gone): nothing to judge."""
    status = owner.get("status") or {}
    if status.get("completionTime"):
        return True
    return any(
        isinstance(c, dict) and c.get("type") in ("Complete", "Failed", "Succeeded") and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )


def _gpus(plugin: int, claims: PodClaims, per_node: int | None) -> int:
    """The pod's accelerators: its device-plugin ones and its claims' (allocationMode All before allocation takes
    every one of the node's, when its type is known)."""
    claimed = claims.count(GPU)
    if per_node is not None:
        claimed = min(claimed, per_node)
    return min(plugin + claimed, MAX_COUNT)


def _unadvertised(requests: tuple[tuple[str, int], ...], candidates: list[NodeInfo]) -> tuple[str, ...]:
    """The rdma/* resources asked for that no candidate node advertises, where they advertise another (rdma/shared_ib
    of nodes that have rdma/ib): the scheduler finds no node for the pod. Nothing when no node is a candidate (not
    known), or none advertises any RDMA resource (no device plugin: K8S103's)."""
    offered = {name for info in candidates for name, n in info.allocatable if n > 0}
    if not any(is_rdma_resource(name) for name in offered):
        return ()
    return tuple(name for name, n in requests if n > 0 and is_rdma_resource(name) and name not in offered)


def _one(values: Iterable[str | None]) -> str | None:
    distinct = set(values)
    return distinct.pop() if len(distinct) == 1 else None


@contextmanager
def read_shape(where: str) -> Iterator[None]:
    """sources.shape.unexpected_shape, and a value nested past Python's recursion limit (a label that is a list
    1,000 deep has no str()) as one line too."""
    try:
        with unexpected_shape(where):
            yield
    except RecursionError:
        raise FabricCheckError(f"{where}: unexpected shape: a value nested too deeply") from None


class Normalizer:
    """One cluster's objects into an inventory."""

    def __init__(self, objects: ClusterObjects) -> None:
        self.objects = objects
        # An object the API would never answer (labels as a list, a spec that is a string) is one line naming the
        # cluster, never an internal error (sources.shape.unexpected_shape, as every cloud's normalizer does).
        with read_shape(f"cluster {objects.name}"):
            self.nodes = _Nodes(objects.items.get("nodes", []))
            self.owners = {
                (str(meta.get("namespace") or ""), KINDS[plural], str(meta.get("name") or "")): item
                for plural in OWNER_KINDS
                for item in objects.items.get(plural, [])
                if isinstance(meta := item.get("metadata"), dict)
            }
        self.region = self.nodes.region
        self._shapes: dict[NodeShape, NodeShape] = {}
        self.claims = Claims(objects.items)
        self.config_maps = rankenv.ConfigMaps(objects.items.get("configmaps"))
        self.launchers = rankenv.Launchers(self.config_maps)
        for (namespace, kind, name), owner in self.owners.items():
            if kind == "MPIJob":
                self.launchers.add(namespace, name, owner)
        self.notes: list[str] = []
        self.cliques = compute_domain_cliques(objects.items.get("computedomains", []))

    def inventory(self, source: str) -> Inventory:
        with read_shape(source):
            return self._inventory(source)

    def _inventory(self, source: str) -> Inventory:
        inventory = Inventory(source=source)
        name, region = self.objects.name, self.region
        for item in self.objects.items.get("pods", []):
            made = self.pod(item)
            if made is not None:
                inventory.nodes.append(made)
        inventory.nodes, grouped = bare_pods.grouped(inventory.nodes)
        inventory.notes += [f"{note} (cluster {name})" for note in grouped]
        unstarted = self._unstarted({p.workload for n in inventory.nodes if (p := n.shape.part(PodPart)) is not None})
        for workload, nodes in unstarted.items():
            inventory.nodes += nodes
            inventory.notes.append(
                f"{workload} (cluster {name}) has no pods (rejected at admission, or not created yet): judged as the "
                f"{len(nodes)} pod(s) its template would create"
            )
        inventory.k8s.daemonsets = [self._daemonset(i) for i in self.objects.items.get("daemonsets", [])]
        inventory.k8s.networks = [self._network(i) for i in self.objects.items.get("networks", [])]
        inventory.k8s.network_param_sets = [
            self._param_set(i) for i in self.objects.items.get("gkenetworkparamsets", [])
        ]
        inventory.collected = sorted(fact_key("k8s", name, region, plural) for plural in self.objects.items)
        inventory.notes += self.notes + self.config_maps.notes(name)
        inventory.errors = list(self.objects.errors)
        return inventory

    def pod(self, item: dict[str, Any], pod_id: str | None = None, state: str | None = None) -> Node | None:
        """A pod as a node, or None when it asks for no accelerator (CPU-only pods are never judged)."""
        spec = item.get("spec") or {}
        if not asks_accelerators(spec) and not spec.get("resourceClaims"):
            return None
        meta = item.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        claims = self.claims.of_pod(item, namespace)
        read = read_spec(spec, self.config_maps, namespace)
        if read.gpus + claims.count(GPU) == 0:
            if claims.unknown:
                self.notes.append(
                    f"pod {namespace}/{meta.get('name', '')} (cluster {self.objects.name}) is not judged: its "
                    f"claims could not be told ({'; '.join(claims.unknown)})"
                )
            return None
        annotations = meta.get("annotations") or {}
        labels = meta.get("labels") or {}
        node_name = spec.get("nodeName")
        info = self.nodes.by_name.get(str(node_name)) if node_name else None
        candidates = (
            [info] if info else self.nodes.allowed(spec, read.gpus, claims.count(GPU) > 0, read.accelerator_resources)
        )
        instance_type = _one(c.instance_type for c in candidates)
        default, networks, interfaces = gke_networks(annotations)
        pool = _one(c.pool for c in candidates)
        cap = catalog.catalog_entry(instance_type) if instance_type else None
        workload = workload_of(meta, namespace, self.owners)
        gpus = _gpus(read.gpus, claims, cap.accelerators if cap else None)
        part = PodPart.model_construct(
            workload=workload,
            kind=workload.split("/")[1],
            node=info.name if info else None,
            node_pool=pool,
            cloud=_one(c.cloud for c in candidates),
            instance=info.instance if info else None,
            cloud_account=info.cloud_account if info else None,
            gpus=gpus,
            requests=read.requests,
            allocatable=info.allocatable if info else None,
            ipc_lock=read.ipc_lock,
            default_interface=default,
            networks=networks,
            interfaces=interfaces,
            host_network=spec.get("hostNetwork") is True,
            containers=read.containers,
            env=read.env,
            launcher_env=self.launchers.env_of(workload),
            privileged=read.privileged,
            host_paths=read.host_paths,
            claimed=tuple((k, n) for k, n in claims.devices if k != GPU),
            claims_unknown=claims.unknown,
            unadvertised=_unadvertised(read.requests, candidates),
        )
        tags = {WORKLOAD_TAG: part.workload}
        role = labels.get(ROLE_TAG) or annotations.get(ROLE_TAG)
        if role:
            tags[ROLE_TAG] = str(role)
        shape = NodeShape(
            provider="k8s",
            account=self.objects.name,
            region=self.region,
            origin=self.objects.origin,
            zone=_one(c.zone for c in candidates),
            instance_type=instance_type,
            tags=tags,
            placement=(Placement(kind=NODE_POOL, id=pool),) if pool else (),
            accelerators=gpus,
            accelerator=cap.accelerator_name if cap else None,
            extensions=(part,),
        )
        shape = self._shapes.setdefault(shape, shape)
        phase = str((item.get("status") or {}).get("phase") or "Pending").lower()
        # Where it runs in the network its node's labels publish: the pod's own value, not its shape's.
        topology = node_topology(info.labels, info.instance_type, self.cliques.get(info.name)) if info else None
        return pooled_node(pod_id or f"{namespace}/{meta.get('name', '')}", shape, state or phase, topology=topology)

    def _unstarted(self, seen: set[str]) -> dict[str, list[Node]]:
        """The would-be accelerator pods of each top-level workload that has none, unless it has finished: a pod
        the API refused (an annotation naming a network that does not exist) leaves only its workload to judge."""
        from fabriccheck.providers.k8s.templates import BadField, pods_of

        found: dict[str, list[Node]] = {}
        for (namespace, kind, name), owner in self.owners.items():
            key = f"{namespace}/{kind}/{name}"
            meta = owner.get("metadata") or {}
            if key in seen or kind in SERVING_KINDS or _controller(meta) is not None or _finished(owner):
                continue
            doc = {**owner, "kind": kind, "metadata": {**meta, "namespace": namespace}}
            try:
                pods = list(pods_of(doc, checked=False))
            except BadField as exc:  # a field the API would have refused: the dump was damaged or hand-made
                raise FabricCheckError(f"cluster {self.objects.name}: {kind} {namespace}/{name}: {exc}") from None
            nodes = []
            for pod_id, pod in pods:
                made = self.pod(pod, pod_id, state="pending")  # None for a CPU-only pod
                if made is not None:
                    nodes.append(made)
            if nodes:
                found[key] = nodes
        return found

    def _daemonset(self, item: dict[str, Any]) -> DaemonSet:
        meta = item.get("metadata") or {}
        spec = ((item.get("spec") or {}).get("template") or {}).get("spec") or {}
        containers = [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]
        return DaemonSet(
            account=self.objects.name,
            region=self.region,
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            images=[str(c.get("image", "")) for c in containers if isinstance(c, dict)],
        )

    def _network(self, item: dict[str, Any]) -> GkeNetwork:
        ref = (item.get("spec") or {}).get("parametersRef") or {}
        return GkeNetwork(
            account=self.objects.name,
            region=self.region,
            name=str((item.get("metadata") or {}).get("name") or ""),
            params=str(ref["name"]) if ref.get("name") else None,
        )

    def _param_set(self, item: dict[str, Any]) -> GkeNetworkParamSet:
        spec = item.get("spec") or {}
        return GkeNetworkParamSet(
            account=self.objects.name,
            region=self.region,
            name=str((item.get("metadata") or {}).get("name") or ""),
            vpc=spec.get("vpc"),
            subnet=spec.get("vpcSubnet"),
            device_mode=spec.get("deviceMode"),
        )
