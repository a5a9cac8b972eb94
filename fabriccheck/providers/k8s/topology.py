"""The topology a Kubernetes node's labels publish (model.Topology), read from the node a pod runs on.

- EKS: `topology.k8s.aws/network-node-layer-1` .. `-3` (`-4` on types whose topology has four layers), "the top of
  the network hierarchy" first; the values are the EC2 instance topology's network nodes (EKS user guide, "Place
  distributed AI/ML workloads with network topology labels",
  https://docs.aws.amazon.com/eks/latest/userguide/ml-workload-topology.html).
- GKE: `cloud.google.com/gce-topology-block` and `cloud.google.com/gce-topology-subblock` (and `-host`, below the
  network levels: not read), the reserved block and sub-block the VM sits in (GKE Topology Aware Scheduling,
  https://cloud.google.com/ai-hypercomputer/docs/workloads/schedule-gke-workloads-tas). A sub-block's id is made its
  path under its block, as on Compute Engine (providers/gcp/normalize.py).
- NVIDIA's GPU DRA driver labels each GB200/GB300 node with `nvidia.com/gpu.clique`, its NVLink clique
  (<ClusterUUID>.<CliqueID>): "only GPUs in the same clique can use NVLink with each other" (Topograph DRA provider,
  https://docs.nvidia.com/topograph/v0.5.0/providers/dra; NVIDIA k8s-test-infra Topograph guide). It is the node's
  multi-node NVLink domain. Where the label is absent, a ComputeDomain's status names it: `status.nodes[]` of `name`
  and `cliqueID` for each node that joined the domain (NVIDIA/k8s-dra-driver-gpu,
  api/nvidia.com/resource/v1beta1/computedomain.go, ComputeDomainNode).
"""

from __future__ import annotations

from typing import Any

from fabriccheck import catalog
from fabriccheck.model import Topology

EKS_LAYERS = tuple(f"topology.k8s.aws/network-node-layer-{n}" for n in range(1, 5))
GKE_BLOCK = "cloud.google.com/gce-topology-block"
GKE_SUBBLOCK = "cloud.google.com/gce-topology-subblock"
GPU_CLIQUE = "nvidia.com/gpu.clique"


def compute_domain_cliques(items: list[dict[str, Any]]) -> dict[str, str]:
    """Node name -> the NVLink clique its ComputeDomains' status says it joined (the first said, where several)."""
    cliques: dict[str, str] = {}
    for item in items:
        status = item.get("status") if isinstance(item, dict) else None
        for node in (status.get("nodes") if isinstance(status, dict) else None) or ():
            if isinstance(node, dict) and node.get("name") and node.get("cliqueID"):
                cliques.setdefault(str(node["name"]), str(node["cliqueID"]))
    return cliques


def node_topology(labels: dict[str, str], instance_type: str | None, joined: str | None = None) -> Topology | None:
    """The topology a node's labels publish; None when they publish none. On A4X (an NVL72 type on GKE) the
    sub-block is the NVLink domain where no clique label says it ("An NVLink domain, also known as a sub-block",
    https://cloud.google.com/ai-hypercomputer/docs/terminology)."""
    clique = labels.get(GPU_CLIQUE) or joined or None
    eks = [labels[key] for key in EKS_LAYERS if labels.get(key)]
    if eks:
        names = tuple(f"layer-{n}" for n in range(1, len(eks) + 1))
        return Topology(source="EKS node labels", levels=tuple(eks), level_names=names, nvlink_domain=clique)
    block = labels.get(GKE_BLOCK)
    if block:
        subblock = labels.get(GKE_SUBBLOCK)
        levels = (block, f"{block}/{subblock}") if subblock else (block,)
        names = ("block", "subblock")[: len(levels)]
        if clique is None and subblock and catalog.nvlink_domain_gpus(instance_type):
            clique = levels[-1]
        return Topology(source="GKE node labels", levels=levels, level_names=names, nvlink_domain=clique)
    if clique:
        source = "nvidia.com/gpu.clique label" if labels.get(GPU_CLIQUE) else "ComputeDomain status"
        return Topology(source=source, nvlink_domain=clique)
    return None
