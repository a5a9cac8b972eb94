"""Kubernetes-only resources: the `k8s` namespace of the inventory. Each carries the cluster (`account`) and its
region, and is looked up by that scope: two clusters that both run a `kube-system/aws-efa-k8s-device-plugin` lend
each other nothing.

What is kept is what the pods' facts need (providers/k8s/support.py): the DaemonSets that install a fabric's device
plugin or NCCL plugin (their names and images), and the GKE multi-network objects a pod's
`networking.gke.io/interfaces` annotation names (`Network` and `GKENetworkParamSet`, networking.gke.io/v1).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fabriccheck.values import Count, JobPart, ProviderResources, Scoped, Setting

Counts = tuple[tuple[str, int], ...]  # (resource name, quantity) pairs, sorted


class PodPart(JobPart):
    """What a Kubernetes pod asks of the node it runs on, and what that node offers: the fabric is
    opt-in a second time in Kubernetes, so the node's type alone does not say what the pod gets. The pod's node
    (type, zone, pool) is the rest of its shape."""

    provider: Literal["k8s"] = "k8s"
    workload: str  # namespace/Kind/name of the pod's top owner, or namespace/Pod/name for a bare pod
    kind: str  # that owner's kind (PyTorchJob, JobSet, StatefulSet ...)
    node: str | None = None  # the Kubernetes node it runs on; None: pending, or a manifest's pod
    node_pool: str | None = None  # EKS node group, GKE node pool, AKS agent pool, Karpenter node pool
    cloud: str | None = None  # aws | gcp | azure: the node's cloud (spec.providerID, else its type)
    instance: str | None = None  # the node's cloud instance id (from spec.providerID), to join a cloud report
    cloud_account: str | None = None  # that instance's GCP project or Azure subscription (an AWS providerID names none)
    gpus: Count = 0  # accelerators the pod requests
    requests: Counts = ()  # fabric resources it requests (vpc.amazonaws.com/efa, rdma/*, hugepages-*)
    allocatable: Counts | None = None  # fabric resources its node advertises; None: not known (no node)
    ipc_lock: bool = False  # some container adds IPC_LOCK (or runs privileged)
    default_interface: str | None = None  # networking.gke.io/default-interface
    networks: tuple[str, ...] = ()  # networks mapped in networking.gke.io/interfaces, default one excepted
    interfaces: tuple[str, ...] = ()  # the interface names that annotation gives those networks (eth1, eth2 ...)
    host_network: bool = False  # spec.hostNetwork: the pod sees every NIC of its node (not its devices)
    containers: tuple[tuple[str, str], ...] = ()  # (name, image) of its containers and native sidecars
    env: tuple[tuple[str, str], ...] = ()  # NCCL_* and FI_* settings in its containers' env
    # NCCL_* and FI_* settings an MPIJob's launcher passes its ranks (mpirun -x NAME=VALUE, or -x NAME with the
    # launcher's own value): what the ranks on this worker see, where its own env does not reach them.
    launcher_env: tuple[tuple[str, str], ...] = ()
    privileged: bool = False  # some container runs privileged: it sees every device of its node (fabric included)
    host_paths: tuple[str, ...] = ()  # hostPath volumes under /dev it mounts (/dev/infiniband ...)
    claimed: Counts = ()  # devices its DRA ResourceClaims give it, by kind (gpu, fabric-nic, imex-channel)
    claims_unknown: tuple[str, ...] = ()  # claims whose devices could not be told (unknown class, claim not read)
    # rdma/* resources it requests that none of its node candidates (its node, or those its selector allows) advertise
    unadvertised: tuple[str, ...] = ()

    def job_words(self) -> tuple[str, ...]:
        """Its workload's name and its containers' names and images, lower-cased."""
        return (self.workload.rsplit("/", 1)[-1].lower(), *(f"{c} {i}".lower() for c, i in self.containers))

    def env_reaches_ranks(self) -> bool:
        """Whether the pod's own env is what its NCCL ranks see. An MPIJob's ranks are started by the launcher's
        mpirun over ssh: they get the variables mpirun passes (-x NAME=VALUE, Azure/aks-rdma-infiniband's MPIJob
        template), not the worker container's env, which an ssh session does not inherit."""
        return self.kind != "MPIJob"

    def rank_env(self) -> tuple[Setting, ...]:
        """The settings that reach its ranks: the launcher's mpirun -x first, then its own env where ranks see it."""
        passed = tuple((name, value, " (passed by the launcher's mpirun -x)") for name, value in self.launcher_env)
        own = tuple((name, value, "") for name, value in self.env) if self.env_reaches_ranks() else ()
        return passed + own


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


class K8sResources(ProviderResources):
    daemonsets: list[DaemonSet] = Field(default_factory=list)
    networks: list[GkeNetwork] = Field(default_factory=list)
    network_param_sets: list[GkeNetworkParamSet] = Field(default_factory=list)
