"""Short names for clusters in the reports people read (text, markdown); JSON and SARIF keep the full id.

A cluster id carries everything that keeps it unique (`azure:<subscription>:eastus:scale-set//subscriptions/
.../resourcegroups/img-rg/providers/microsoft.compute/virtualmachinescalesets/nd-a100-custom`); a person needs
the cloud, where it lives and what it is: `azure/img-rg/vmss nd-a100-custom`,
`aws/111122223333/us-east-1/asg vision-train`, `gcp/<project>/<region>/gke train/a3-high`. Where on AWS and GCP
is the account (when known: a plan may not say) and region of the id; on Azure the resource group (a subscription
id is long and rarely what tells two clusters apart). Two clusters of one report that would share a short name
both keep their full id.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fabriccheck.model import UNKNOWN_ACCOUNT
from fabriccheck.provider import declared

# Cluster-id kinds (clusters.py: the grouping signal's label, slugged) and the word a person knows them by.
KINDS = {
    # AWS
    "parallelcluster-compute-resource": "pcluster",
    "parallelcluster-queue": "pcluster",
    "aws-pcs-node-group": "pcs",
    "eks-node-group": "eks",
    "karpenter-node-pool": "karpenter",
    "auto-scaling-group": "asg",
    "placement-group": "pg",
    "capacity-block": "block",
    "capacity-reservation": "reservation",
    # Azure
    "cyclecloud-node-array": "cyclecloud",
    "aks-node-pool": "aks",
    "scale-set": "vmss",
    "availability-set": "avset",
    "proximity-placement-group": "ppg",
    # GCP
    "gke-node-pool": "gke",
    "slurm-nodeset": "slurm",
    "cluster-toolkit-deployment": "ctk",
    "managed-instance-group": "mig",
    "compact-placement-policy": "policy",
    # Kubernetes: "kubernetes-workload" is named by its controller's kind (`_what`)
    # any cloud
    "terraform": "terraform",
}


@dataclass(frozen=True)
class DisplayName:
    cloud: str
    scope: str  # where: "111122223333/us-east-1", "img-rg"; "" when not known
    label: str  # what: "asg vision-train"

    def __str__(self) -> str:
        return "/".join(part for part in (self.cloud, self.scope, self.label) if part)

    def in_cloud(self, shared_scope: bool = False) -> str:
        """The name without its cloud (a table's cloud column says it), and without its scope when every cluster
        of the cloud shares it (the table names it once)."""
        return self.label if shared_scope or not self.scope else f"{self.scope}/{self.label}"


def _resource_group(arm_id: str) -> str:
    """The resource group of an ARM resource id ("/subscriptions/s/resourceGroups/RG/providers/..."), or ""."""
    parts = arm_id.strip("/").split("/")
    lowered = [p.lower() for p in parts]
    if "resourcegroups" in lowered:
        at = lowered.index("resourcegroups") + 1
        return parts[at] if at < len(parts) else ""
    return ""


def _last(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1] or path


def _what(kind: str, name: str) -> str:
    """The label of a grouping `kind` and the name in the id after it."""
    if name.startswith(("/subscriptions/", "projects/", "https://")):
        name = _last(name)  # an ARM id or a Compute selfLink: its last segment names it
    elif kind == "kubernetes-workload":
        # NAMESPACE/KIND/NAME (providers/k8s): the controller's kind is the word people know it by
        namespace, _, rest = name.partition("/")
        controller, _, workload = rest.partition("/")
        if workload:
            return f"{controller} {namespace}/{workload}"
    elif kind == "cyclecloud-node-array":
        # /sites/SITE/clusters/CLUSTER/nodearrays/ARRAY, and :scale-set/ARM-ID when the array's sets are judged apart
        array, _, scale_set = name.partition(":scale-set/")
        parts = array.strip("/").split("/")
        name = "/".join(parts[3::2]) if len(parts) >= 6 else array.strip("/")
        if scale_set:
            name += f" vmss {_last(scale_set)}"
    return f"{KINDS.get(kind, kind)} {name}"


def display_name(cluster_id: str, nodes: Sequence[str] = ()) -> DisplayName:
    """The short name of a cluster id (clusters.py's forms); `nodes`, the cluster's node ids, give an Azure
    cluster grouped by a tag its resource group."""
    head = cluster_id.split(":", 3)
    cloud = head[0]
    if len(head) >= 3 and head[2].startswith("tag/"):  # provider:account:tag/KEY=VALUE, across regions
        label = "tag " + cluster_id.split(":tag/", 1)[1]
        where = _shared_group(nodes) if _by_resource_group(cloud) or head[1] == UNKNOWN_ACCOUNT else head[1]
        return DisplayName(cloud, where, label)
    if len(head) < 4:
        return DisplayName(cloud, "", cluster_id.split(":", 1)[-1])
    account, region, rest = head[1], head[2], head[3]
    kind, _, name = rest.partition("/")
    if not name or rest.startswith(("/", "projects/", "https://")):  # a node alone: the id is the node's
        found = declared(cloud)
        label = f"{found.node_word if found is not None else 'node'} {_last(rest)}"
    else:
        label = _what(kind, name)
    if not _by_resource_group(cloud):
        return DisplayName(cloud, region if account == UNKNOWN_ACCOUNT else f"{account}/{region}", label)
    return DisplayName(cloud, _resource_group(name) or _resource_group(rest) or _shared_group(nodes), label)


def _by_resource_group(cloud: str) -> bool:
    found = declared(cloud)
    return found is not None and found.named_by_resource_group


def _shared_group(nodes: Sequence[str]) -> str:
    """The resource group every one of these Azure VMs is in, or ""."""
    groups = {_resource_group(n).lower() for n in nodes}  # ARM answers vary the case of a name
    return groups.pop() if len(groups) == 1 else ""


class _Full(DisplayName):
    """A cluster whose short name another cluster of the report shares: it keeps its id."""

    def __str__(self) -> str:
        return self.label

    def in_cloud(self, shared_scope: bool = False) -> str:
        return self.label


def display_names(clusters: Iterable[tuple[str, Sequence[str]]]) -> dict[str, DisplayName]:
    """Short names of (cluster id, node ids), unique within the report: clusters whose short names collide
    keep their full ids."""
    named = {cid: display_name(cid, nodes) for cid, nodes in clusters}
    counts = Counter(str(n) for n in named.values())
    return {cid: name if counts[str(name)] == 1 else _Full(name.cloud, "", cid) for cid, name in named.items()}


def shared_scopes(names: Iterable[DisplayName]) -> dict[str, str]:
    """Per cloud, the scope every one of its clusters shares ("" when they differ or have none)."""
    seen: dict[str, set[str]] = {}
    for name in names:
        seen.setdefault(name.cloud, set()).add(name.scope if not isinstance(name, _Full) else "\0")
    return {cloud: next(iter(scopes)) for cloud, scopes in seen.items() if len(scopes) == 1 and "\0" not in scopes}
