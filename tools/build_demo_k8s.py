"""Rebuild the Kubernetes demo clusters under fixtures/demo/k8s: what `kubectl get KIND -A -o json` prints for an
EKS, a GKE and an AKS cluster, each with a correctly configured and a misconfigured multi-node training workload.
The shapes and their sources are in fixtures/k8s/SOURCES.md; tests/test_k8s.py and tests/test_k8s_live.py read
these clusters (the live tests serve them from a local API server).

Run: python tools/build_demo_k8s.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

OUT = str(Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "k8s")
Item = dict[str, Any]
EKS_ECR = "602401143452.dkr.ecr.us-east-1.amazonaws.com"  # where EKS add-on images live in us-east-1


def lst(items: list[Item]) -> Item:
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": "", "selfLink": ""}}


def node(
    name: str, itype: str, region: str, zone: str, pool_labels: dict[str, str], provider_id: str, alloc: dict[str, str]
) -> Item:
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": itype,
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": itype,
        "topology.kubernetes.io/region": region,
        "topology.kubernetes.io/zone": zone,
        "failure-domain.beta.kubernetes.io/region": region,
        "failure-domain.beta.kubernetes.io/zone": zone,
        **pool_labels,
    }
    base = {
        "cpu": "191450m",
        "ephemeral-storage": "95551679124",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "21Gi",
        "memory": "2045679484Ki",
        "pods": "100",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "creationTimestamp": "2026-11-20T08:14:03Z",
            "labels": labels,
            "name": name,
            "resourceVersion": "4410721",
            "uid": f"uid-{name}",
        },
        "spec": {"providerID": provider_id},
        "status": {
            "allocatable": {**base, **alloc},
            "capacity": {**base, **alloc},
            "conditions": [
                {
                    "lastHeartbeatTime": "2026-12-01T10:00:00Z",
                    "lastTransitionTime": "2026-11-20T08:14:40Z",
                    "message": "kubelet is posting ready status",
                    "reason": "KubeletReady",
                    "status": "True",
                    "type": "Ready",
                }
            ],
        },
    }


def pod(
    ns: str,
    name: str,
    owner: tuple[str, str, str] | None,
    labels: dict[str, str],
    spec: Item,
    node_name: str | None,
    annotations: dict[str, str] | None = None,
    phase: str = "Running",
) -> Item:
    meta: Item = {
        "creationTimestamp": "2026-12-01T09:00:00Z",
        "labels": labels,
        "name": name,
        "namespace": ns,
        "uid": f"uid-{name}",
        "resourceVersion": "4410900",
    }
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": owner[0],
                "blockOwnerDeletion": True,
                "controller": True,
                "kind": owner[1],
                "name": owner[2],
                "uid": f"uid-{owner[2]}",
            }
        ]
    if annotations:
        meta["annotations"] = annotations
    spec = {**spec, "restartPolicy": spec.get("restartPolicy", "OnFailure"), "schedulerName": "default-scheduler"}
    if node_name:
        spec["nodeName"] = node_name
    status = {"phase": phase, "conditions": [{"type": "PodScheduled", "status": "True" if node_name else "False"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def write(cluster: str, files: dict[str, list[Item]]) -> None:
    d = os.path.join(OUT, cluster)
    os.makedirs(d, exist_ok=True)
    for plural, items in files.items():
        with open(os.path.join(d, f"{plural}.json"), "w") as f:
            json.dump(lst(items), f, indent=1)
            f.write("\n")


# The nodes of the three clusters (fixtures/k8s/SOURCES.md names their shapes).
# The EKS nodes are the AWS demo's llm-prod instances (fixtures/demo/aws: their ids, private DNS names and zone),
# so that `fabriccheck merge` of the AWS and the Kubernetes demo reports joins their pods to that cloud cluster.
EKS_INSTANCES = ("i-00000000000000001", "i-00000000000000046", "i-0000000000000008b", "i-000000000000000d0")
eks_nodes: list[Item] = [
    node(
        f"ip-10-0-0-{4 + i}.ec2.internal",
        "p5.48xlarge",
        "us-east-1",
        "us-east-1a",
        {"alpha.eksctl.io/nodegroup-name": "llm-prod", "topology.k8s.aws/zone-id": "use1-az1"},
        f"aws:///us-east-1a/{instance}",
        {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"},
    )
    for i, instance in enumerate(EKS_INSTANCES)
]
eks_nodes.append(
    node(
        "ip-10-0-9-9.ec2.internal",
        "m5.large",
        "us-east-1",
        "us-east-1b",
        {"alpha.eksctl.io/nodegroup-name": "system"},
        "aws:///us-east-1b/i-0sys00000000000001",
        {},
    )
)
gke_nodes = [
    node(
        f"gke-a3mega-a3-mega-pool-7c1e2f3a-{s}",
        "a3-megagpu-8g",
        "us-central1",
        "us-central1-c",
        {
            "cloud.google.com/gke-nodepool": "a3-mega-pool",
            "cloud.google.com/gke-accelerator": "nvidia-h100-mega-80gb",
            "cloud.google.com/gke-gpu": "true",
        },
        f"gce://ml-prod-4417/us-central1-c/gke-a3mega-a3-mega-pool-7c1e2f3a-{s}",
        {"nvidia.com/gpu": "8"},
    )
    for s in ("8x2k", "9qzt", "b6fn", "d0lm")
]
ann_ifaces = (
    '[\n  {"interfaceName":"eth0","network":"default"},\n'
    + ",\n".join(f'  {{"interfaceName":"eth{i}","network":"vpc{i}"}}' for i in range(1, 9))
    + "\n]\n"
)
AKS_MC = "MC_ml_aks-ndv5_eastus"  # the node resource group, as the agentpool label's cluster names it
aks_nodes = [
    node(
        f"aks-gpunp-31415926-vmss00000{i}",
        "Standard_ND96isr_H100_v5",
        "eastus",
        "eastus-1",
        {"agentpool": "gpunp", "kubernetes.azure.com/agentpool": "gpunp", "kubernetes.azure.com/cluster": AKS_MC},
        f"azure:///subscriptions/8f1b2c3d-0000-4a5b-9c8d-1234567890ab/resourceGroups/mc_ml_aks-ndv5_eastus/providers/Microsoft.Compute/virtualMachineScaleSets/aks-gpunp-31415926-vmss/virtualMachines/{i}",
        {"nvidia.com/gpu": "8", "rdma/shared_ib": "63"},
    )
    for i in range(4)
]


def pytorch_worker(i: int, efa: bool) -> Item:
    res: dict[str, str] = {"nvidia.com/gpu": "8", "hugepages-2Mi": "5120Mi", "memory": "32000Mi"}
    if efa:
        res["vpc.amazonaws.com/efa"] = "32"
    return pod(
        "default",
        f"llama3-1-8b-fsdp-worker-{i}",
        ("kubeflow.org/v1", "PyTorchJob", "llama3-1-8b-fsdp"),
        {
            "app": "llama3-1-8b-fsdp",
            "training.kubeflow.org/job-name": "llama3-1-8b-fsdp",
            "training.kubeflow.org/operator-name": "pytorchjob-controller",
            "training.kubeflow.org/replica-index": str(i),
            "training.kubeflow.org/replica-type": "worker",
        },
        {
            "containers": [
                {
                    "name": "pytorch",
                    "image": "111122223333.dkr.ecr.us-east-1.amazonaws.com/fsdp:pytorch2.5.1",
                    "resources": {"requests": res, "limits": res},
                    "env": [
                        {"name": "LOGLEVEL", "value": "DEBUG"},
                        {"name": "FI_PROVIDER", "value": "efa"},
                        {"name": "FI_EFA_USE_DEVICE_RDMA", "value": "1"},
                        {"name": "FI_EFA_FORK_SAFE", "value": "1"},
                        {"name": "NCCL_DEBUG", "value": "INFO"},
                    ],
                    "volumeMounts": [{"name": "shmem", "mountPath": "/dev/shm"}],
                }
            ],
            "volumes": [{"name": "shmem", "hostPath": {"path": "/dev/shm"}}],
        },
        eks_nodes[i]["metadata"]["name"],
    )


def mpi_worker(i: int) -> Item:
    res = {"nvidia.com/gpu": "8", "memory": "32000Mi"}
    return pod(
        "default",
        f"nccl-tests-worker-{i}",
        ("kubeflow.org/v2beta1", "MPIJob", "nccl-tests"),
        {
            "training.kubeflow.org/job-name": "nccl-tests",
            "training.kubeflow.org/job-role": "worker",
            "training.kubeflow.org/operator-name": "mpijob-controller",
            "training.kubeflow.org/replica-index": str(i),
            "training.kubeflow.org/replica-type": "worker",
        },
        {
            "nodeSelector": {"node.kubernetes.io/instance-type": "p5.48xlarge"},
            "containers": [
                {
                    "name": "nccl-tests-worker",
                    "image": "111122223333.dkr.ecr.us-east-1.amazonaws.com/nccl-tests:efa1.38.0",
                    "resources": {"requests": res, "limits": res},
                    "volumeMounts": [{"name": "shmem", "mountPath": "/dev/shm"}],
                }
            ],
            "volumes": [{"name": "shmem", "hostPath": {"path": "/dev/shm"}}],
        },
        eks_nodes[2 + i]["metadata"]["name"],
    )


def tcpxo_pod(job: str, i: int, right: bool) -> Item:
    labels = {
        "batch.kubernetes.io/controller-uid": f"uid-{job}",
        "batch.kubernetes.io/job-completion-index": str(i),
        "batch.kubernetes.io/job-name": job,
        "controller-uid": f"uid-{job}",
        "job-name": job,
    }
    main: Item = {
        "name": "nccl-test",
        "image": "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.14"
        if not right
        else "us-docker.pkg.dev/my-project/train/megatron:24.09",
        "env": [
            {"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"},
            {"name": "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", "value": "/dev/aperture_devices"},
            {"name": "NCCL_SOCKET_IFNAME", "value": "eth0"},
            {"name": "NCCL_FASTRAK_CTRL_DEV", "value": "eth0"},
            {"name": "NCCL_FASTRAK_IFNAME", "value": "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8"},
        ],
        "resources": {"limits": {"nvidia.com/gpu": "8"}},
        "volumeMounts": [
            {"name": "nvidia", "mountPath": "/usr/local/nvidia/lib64"},
            {"name": "shared-memory", "mountPath": "/dev/shm"},
        ],
    }
    spec: Item = {
        "containers": [main],
        "volumes": [
            {"name": "nvidia", "hostPath": {"path": "/home/kubernetes/bin/nvidia/lib64"}},
            {"name": "shared-memory", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
        ],
        "restartPolicy": "Never",
    }
    annotations: dict[str, str] | None = None
    if right:
        spec["initContainers"] = [
            {
                "name": "tcpxo-daemon",
                "image": "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21",
                "restartPolicy": "Always",
                "command": ["/bin/sh", "-c"],
                "args": [
                    "set -ex\nchmod 755 /fts/entrypoint_rxdm_container.sh\n"
                    "/fts/entrypoint_rxdm_container.sh --num_hops=2 --num_nics=8 --uid= --alsologtostderr\n"
                ],
                "securityContext": {"capabilities": {"add": ["NET_ADMIN", "NET_BIND_SERVICE"]}},
            }
        ]
        annotations = {
            "devices.gke.io/container.tcpxo-daemon": "".join(
                f"- path: /dev/{device}\n"
                for device in [*(f"nvidia{g}" for g in range(8)), "nvidiactl", "nvidia-uvm", "dmabuf_import_helper"]
            ),
            "networking.gke.io/default-interface": "eth0",
            "networking.gke.io/interfaces": ann_ifaces,
        }
    node_name = gke_nodes[i + (0 if right else 2)]["metadata"]["name"]
    return pod(
        "default",
        f"{job}-{i}-{'q7wz4' if i else 'm2xkd'}",
        ("batch/v1", "Job", job),
        labels,
        spec,
        node_name,
        annotations,
    )


def job(name: str) -> Item:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"parallelism": 2, "completions": 2, "completionMode": "Indexed"},
    }


def installer(name: str, image: str) -> Item:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "kube-system", "labels": {"k8s-app": name}},
        "spec": {
            "selector": {"matchLabels": {"k8s-app": name}},
            "template": {
                "metadata": {"labels": {"k8s-app": name}},
                "spec": {
                    "hostNetwork": True,
                    "initContainers": [{"name": "pre-installation", "image": "ubuntu"}, {"name": name, "image": image}],
                    "containers": [{"name": "pause", "image": "gke.gcr.io/pause:3.8"}],
                },
            },
        },
    }


# The aks-rdma-infiniband MPIJob's workers: one per node.
TEST_PODS = {"matchExpressions": [{"key": "task", "operator": "In", "values": ["test"]}]}
ONE_TEST_PER_NODE = {"labelSelector": TEST_PODS, "topologyKey": "kubernetes.io/hostname"}


def aks_worker(job: str, i: int, right: bool) -> Item:
    res: dict[str, str] = {"nvidia.com/gpu": "8"}
    if right:
        res["rdma/shared_ib"] = "1"
    container: Item = {
        "name": "nccl",
        "image": "ghcr.io/azure/aks-rdma-infiniband/nccl-tests:12.4.1-devel-ubuntu22.04",
        "resources": {"limits": res, "requests": res},
        "volumeMounts": [
            {"name": "shm", "mountPath": "/dev/shm"},
            {"name": "nvidia-topology", "mountPath": "/opt/nvidia-topology"},
        ],
    }
    if right:
        container["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    else:
        container["env"] = [{"name": "NCCL_IB_DISABLE", "value": "1"}, {"name": "NCCL_SOCKET_IFNAME", "value": "eth0"}]
    return pod(
        "default",
        f"{job}-worker-{i}",
        ("kubeflow.org/v2beta1", "MPIJob", job),
        {
            "task": "test",
            "training.kubeflow.org/job-name": job,
            "training.kubeflow.org/job-role": "worker",
            "training.kubeflow.org/replica-index": str(i),
            "training.kubeflow.org/replica-type": "worker",
        },
        {
            "containers": [container],
            "enableServiceLinks": False,
            "automountServiceAccountToken": False,
            "volumes": [
                {"name": "shm", "emptyDir": {"medium": "Memory"}},
                {"name": "nvidia-topology", "configMap": {"name": "nvidia-topology"}},
            ],
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [ONE_TEST_PER_NODE]}},
        },
        aks_nodes[i + (0 if right else 2)]["metadata"]["name"],
    )


def mpi(name: str) -> Item:
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "nccl-tests"}},
        "spec": {"slotsPerWorker": 8, "mpiReplicaSpecs": {"Launcher": {"replicas": 1}, "Worker": {"replicas": 2}}},
    }


MPIRUN = ["/opt/amazon/openmpi/bin/mpirun", "--allow-run-as-root", "-np", "16", "-N", "8", "-x", "FI_PROVIDER=efa"]


def main() -> None:
    # ---------------- EKS: p5.48xlarge node group with the EFA device plugin
    efa_plugin = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": "aws-efa-k8s-device-plugin",
            "namespace": "kube-system",
            "labels": {"app.kubernetes.io/name": "aws-efa-k8s-device-plugin"},
        },
        "spec": {
            "selector": {"matchLabels": {"name": "aws-efa-k8s-device-plugin"}},
            "template": {
                "metadata": {"labels": {"name": "aws-efa-k8s-device-plugin"}},
                "spec": {
                    "hostNetwork": True,
                    "nodeSelector": {},
                    "containers": [
                        {
                            "name": "aws-efa-k8s-device-plugin",
                            "image": f"{EKS_ECR}/eks/aws-efa-k8s-device-plugin:v0.5.6",
                            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                        }
                    ],
                },
            },
        },
    }
    launcher = pod(
        "default",
        "nccl-tests-launcher-x7k2p",
        ("batch/v1", "Job", "nccl-tests-launcher"),
        {
            "training.kubeflow.org/job-name": "nccl-tests",
            "training.kubeflow.org/job-role": "launcher",
            "batch.kubernetes.io/job-name": "nccl-tests-launcher",
            "job-name": "nccl-tests-launcher",
        },
        {
            "containers": [
                {
                    "name": "test-nccl-launcher",
                    "image": "111122223333.dkr.ecr.us-east-1.amazonaws.com/nccl-tests:efa1.38.0",
                    "command": [*MPIRUN, "/opt/nccl-tests/build/all_reduce_perf"],
                }
            ]
        },
        eks_nodes[4]["metadata"]["name"],
    )
    pytorchjob = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "llama3-1-8b-fsdp", "namespace": "default"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Worker": {
                    "replicas": 2,
                    "restartPolicy": "OnFailure",
                    "template": {
                        "metadata": {"labels": {"app": "llama3-1-8b-fsdp"}},
                        "spec": {"containers": [{"name": "pytorch", "image": "fsdp"}]},
                    },
                }
            }
        },
    }
    mpijob = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "nccl-tests", "namespace": "default"},
        "spec": {"slotsPerWorker": 8, "mpiReplicaSpecs": {"Launcher": {"replicas": 1}, "Worker": {"replicas": 2}}},
    }
    launcher_job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "nccl-tests-launcher",
            "namespace": "default",
            "ownerReferences": [
                {
                    "apiVersion": "kubeflow.org/v2beta1",
                    "kind": "MPIJob",
                    "name": "nccl-tests",
                    "controller": True,
                    "uid": "uid-nccl-tests",
                }
            ],
        },
        "spec": {"parallelism": 1},
    }
    write(
        "eks-train",
        {
            "nodes": eks_nodes,
            "pods": [pytorch_worker(0, True), pytorch_worker(1, True), launcher, mpi_worker(0), mpi_worker(1)],
            "daemonsets": [efa_plugin],
            "pytorchjobs": [pytorchjob],
            "mpijobs": [mpijob],
            "jobs": [launcher_job],
        },
    )

    # ---------------- GKE: A3 Mega node pool, TCPXO
    networks = [
        {
            "apiVersion": "networking.gke.io/v1",
            "kind": "Network",
            "metadata": {"name": f"vpc{i}"},
            "spec": {
                "parametersRef": {"group": "networking.gke.io", "kind": "GKENetworkParamSet", "name": f"vpc{i}"},
                "type": "Device",
            },
        }
        for i in range(1, 9)
    ]
    params = [
        {
            "apiVersion": "networking.gke.io/v1",
            "kind": "GKENetworkParamSet",
            "metadata": {"name": f"vpc{i}"},
            "spec": {"vpc": f"a3mega-gpunet-{i}", "vpcSubnet": f"a3mega-gpunet-{i}-subnet", "deviceMode": "NetDevice"},
        }
        for i in range(1, 9)
    ]
    write(
        "gke-a3mega",
        {
            "nodes": gke_nodes,
            "pods": [
                tcpxo_pod("nccl-tcpxo-test", 0, True),
                tcpxo_pod("nccl-tcpxo-test", 1, True),
                tcpxo_pod("my-sample-job", 0, False),
                tcpxo_pod("my-sample-job", 1, False),
            ],
            "daemonsets": [
                installer(
                    "nccl-tcpxo-installer",
                    "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15",
                ),
                installer("device-injector", "ghcr.io/containerd/nri/plugins/device-injector:v0.0.3"),
            ],
            "jobs": [job("nccl-tcpxo-test"), job("my-sample-job")],
            "networks": networks,
            "gkenetworkparamsets": params,
        },
    )

    # ---------------- AKS: ND H100 v5 agent pool, NVIDIA Network Operator (RDMA shared device plugin)
    rdma_dp = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "rdma-shared-dp-ds", "namespace": "network-operator"},
        "spec": {
            "selector": {"matchLabels": {"app": "rdma-shared-dp"}},
            "template": {
                "metadata": {"labels": {"app": "rdma-shared-dp"}},
                "spec": {
                    "hostNetwork": True,
                    "containers": [
                        {
                            "name": "rdma-shared-dp",
                            "image": "nvcr.io/nvidia/mellanox/k8s-rdma-shared-dev-plugin:network-operator-v25.10.0",
                            "securityContext": {"privileged": True},
                        }
                    ],
                },
            },
        },
    }
    write(
        "aks-ndv5",
        {
            "nodes": aks_nodes,
            "pods": [
                aks_worker("nccl-tests", 0, True),
                aks_worker("nccl-tests", 1, True),
                aks_worker("nccl-tests-ipoib", 0, False),
                aks_worker("nccl-tests-ipoib", 1, False),
            ],
            "daemonsets": [rdma_dp],
            "mpijobs": [mpi("nccl-tests"), mpi("nccl-tests-ipoib")],
        },
    )


if __name__ == "__main__":
    main()
