"""Kubernetes-only resources: the `k8s` namespace of the inventory. Each carries the cluster (`account`) and its
region, and is looked up by that scope: two clusters that both run a `kube-system/aws-efa-k8s-device-plugin` lend
each other nothing.

What is kept is what the pods' facts need (providers/k8s/support.py): the DaemonSets that install a fabric's device
plugin or NCCL plugin (their names and images), and the GKE multi-network objects a pod's
`networking.gke.io/interfaces` annotation names (`Network` and `GKENetworkParamSet`, networking.gke.io/v1).
"""

from __future__ import annotations

from pydantic import Field

from fabriccheck.values import Model, Scoped


class DaemonSet(Scoped):
    namespace: str
    name: str
    images: list[str] = Field(default_factory=list)  # of its containers and init containers


class GkeNetwork(Scoped):
    """A `Network` (networking.gke.io/v1): a pod network a pod maps by name; `params` names its
    GKENetworkParamSet (spec.parametersRef.name), which holds the VPC and subnet."""

    name: str
    params: str | None = None


class GkeNetworkParamSet(Scoped):
    name: str
    vpc: str | None = None
    subnet: str | None = None
    device_mode: str | None = None  # NetDevice (TCPX/TCPXO GPU NICs) or RDMA


class K8sResources(Model):
    daemonsets: list[DaemonSet] = Field(default_factory=list)
    networks: list[GkeNetwork] = Field(default_factory=list)
    network_param_sets: list[GkeNetworkParamSet] = Field(default_factory=list)

    def merge(self, other: K8sResources) -> None:
        self.daemonsets.extend(other.daemonsets)
        self.networks.extend(other.networks)
        self.network_param_sets.extend(other.network_param_sets)
