"""Kubernetes shapes from public samples that were judged wrong (issue 28, items 4 and 5): the env that reaches an
MPIJob's ranks (its launcher's mpirun -x), envFrom ConfigMaps, SageMaker HyperPod node types, privileged pods, RDMA
resources the nodes do not advertise, EFA pods without hugepages, bare pods of one test, a /dev/infiniband hostPath
on EFA nodes. The samples in /work/shared/samples are the files their README names (repository, path, commit)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_run import run

from fabriccheck.providers.k8s.objects import ClusterObjects, Normalizer
from fabriccheck.providers.k8s.rankenv import mpirun_env
from fabriccheck.resources.k8s import PodPart

SAMPLES = Path("/work/shared/samples")
EKS_NCCL_MPIJOB = SAMPLES / "k8s" / "eks-nccl-tests-mpijob.yaml"
AKS_RCCL_MPIJOB = SAMPLES / "k8s4" / "aks-rccl-mpi-job.yaml"
EKS_FSDP_70B = SAMPLES / "k8s4" / "eks-fsdp-llama3_1_70b-fsdp.yaml"
GKE_RDMA_NCCL_TEST = SAMPLES / "k8s" / "gke-rdma-nccl-test.yaml"


def _node(
    name: str, instance_type: str, allocatable: dict[str, str], provider_id: str, **labels: str
) -> dict[str, Any]:
    labels = {"node.kubernetes.io/instance-type": instance_type, "topology.kubernetes.io/zone": "z-1", **labels}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": provider_id},
        "status": {"allocatable": allocatable},
    }


def _p5_nodes(count: int = 2, instance_type: str = "p5.48xlarge") -> list[dict[str, Any]]:
    allocatable = {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32", "hugepages-2Mi": "10Gi"}
    return [
        _node(
            f"p5-{i}", instance_type, allocatable, f"aws:///us-west-2a/i-{i}", **{"eks.amazonaws.com/nodegroup": "p5"}
        )
        for i in range(count)
    ]


_EFA_PLUGIN = {
    "kind": "DaemonSet",
    "metadata": {"name": "aws-efa-k8s-device-plugin-daemonset", "namespace": "kube-system"},
}


def _dump(folder: Path, **kinds: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for plural, items in kinds.items():
        (folder / f"{plural}.json").write_text(json.dumps({"kind": "List", "items": items}))
    return folder


def _judge(manifest_text: str, nodes: Path, tmp_path: Path) -> tuple[int, dict[str, Any]]:
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(manifest_text)
    result = run("k8s", "--manifests", str(manifest), "--nodes-from", str(nodes), "-f", "json")
    assert result.returncode in (0, 1, 2), result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return result.returncode, report


def _rules(report: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f["rule"], r) for f in report["findings"] for r in f["resources"]}


# ---------------------------------------------------------------------------------------- item 4: env of the ranks


def test_mpirun_x_in_a_launcher_command_and_a_bash_script() -> None:
    """Open MPI mpirun(1): -x NAME=VALUE, and -x NAME with the launcher's value. Shapes: the command list of
    aws-samples/awsome-distributed-training's nccl-tests MPIJob, and the `bash -c` script with line continuations of
    Azure/aks-rdma-infiniband's RCCL MPIJob."""
    listed = {"command": ["mpirun", "-x", "FI_PROVIDER=efa", "-x", "NCCL_DEBUG", "-x", "PATH", "all_reduce_perf"]}
    assert mpirun_env(listed, {"NCCL_DEBUG": "INFO"}) == (("FI_PROVIDER", "efa"), ("NCCL_DEBUG", "INFO"))
    script = {
        "command": ["/bin/bash", "-c"],
        "args": ['export NCCL_NET=Socket\nmpirun -np 16 \\\n  -x NCCL_NET \\\n  -x NCCL_IB_DISABLE="1" \\\n  ./t\n'],
    }
    assert mpirun_env(script, {}) == (("NCCL_IB_DISABLE", "1"), ("NCCL_NET", "Socket"))
    # A value that is a shell variable the launcher does not set is not known: no value, no finding.
    assert mpirun_env({"args": ["mpirun -x NCCL_NET=${NET} ./t"]}, {}) == ()


def test_the_eks_nccl_tests_mpijob_passes_efa_to_its_ranks(tmp_path: Path) -> None:
    """aws-samples/awsome-distributed-training nccl-tests MPIJob (samples/k8s/eks-nccl-tests-mpijob.yaml): its
    launcher passes -x FI_PROVIDER=efa: clean. The same launcher passing FI_PROVIDER=tcp turns EFA off on every
    worker: K8S130, a software finding that costs the fabric, naming the launcher's mpirun -x."""
    nodes = _dump(tmp_path / "eks", nodes=_p5_nodes(), daemonsets=[_EFA_PLUGIN])
    text = EKS_NCCL_MPIJOB.read_text()
    code, report = _judge(text, nodes, tmp_path)
    assert code == 0 and report["findings"] == []
    code, report = _judge(text.replace("FI_PROVIDER=efa", "FI_PROVIDER=tcp"), nodes, tmp_path)
    assert code == 1
    assert _rules(report) == {("K8S130", "default/nccl-tests-worker-0"), ("K8S130", "default/nccl-tests-worker-1")}
    finding = report["findings"][0]
    assert finding["category"] == "software"
    assert "FI_PROVIDER=tcp (passed by the launcher's mpirun -x)" in finding["message"]
    [cluster] = report["clusters"]
    assert cluster["penalty"]["slowdown"]["low"] > 1


def test_an_envfrom_configmap_that_forces_sockets(tmp_path: Path) -> None:
    """A PyTorchJob whose workers take NCCL_NET=Socket from an envFrom ConfigMap (Kubernetes API: Container.envFrom
    configMapRef) that the manifests hold: K8S130. A Secret's values are never read: its name is in a note."""
    nodes = _dump(tmp_path / "eks", nodes=_p5_nodes(), daemonsets=[_EFA_PLUGIN])
    worker = {
        "replicas": 2,
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "pytorch",
                        "image": "fsdp",
                        "envFrom": [{"configMapRef": {"name": "nccl-env"}}, {"secretRef": {"name": "hf-token"}}],
                        "resources": {"limits": {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32}},
                    }
                ]
            }
        },
    }
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "fsdp"},
        "spec": {"pytorchReplicaSpecs": {"Worker": worker}},
    }
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nccl-env"}, "data": {"NCCL_NET": "Socket"}}
    code, report = _judge(json.dumps(job) + "\n---\n" + json.dumps(config), nodes, tmp_path)
    assert _rules(report) == {("K8S130", "default/fsdp-worker-0"), ("K8S130", "default/fsdp-worker-1")}
    assert any("Secrets default/hf-token" in note and "never read" in note for note in report["notes"])
    config["data"] = {"NCCL_DEBUG": "INFO"}
    code, report = _judge(json.dumps(job) + "\n---\n" + json.dumps(config), nodes, tmp_path)
    assert code == 0 and report["findings"] == []
    # Without the ConfigMap, its settings are not known: no finding, and a note names it.
    code, report = _judge(json.dumps(job), nodes, tmp_path)
    assert code == 0 and any("ConfigMaps default/nccl-env" in note for note in report["notes"])


# ---------------------------------------------------------------------------------------- item 5: real shapes


def test_hyperpod_node_types_are_the_ec2_type() -> None:
    """SageMaker HyperPod EKS nodes carry node.kubernetes.io/instance-type: ml.p5en.48xlarge (aws-samples/
    awsome-distributed-training hyperpod-eks manifests select nodes by it): judged as p5en.48xlarge."""
    nodes = _p5_nodes(1, "ml.p5en.48xlarge")
    pod = {
        "kind": "Pod",
        "metadata": {"name": "w", "namespace": "ml"},
        "spec": {"nodeName": "p5-0", "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 8}}}]},
    }
    [node] = Normalizer(ClusterObjects(name="hp", items={"nodes": nodes, "pods": [pod]})).inventory("t").nodes
    part = node.shape.part(PodPart)
    assert node.shape.instance_type == "p5en.48xlarge" and part is not None
    assert part.cloud == "aws"


def _aks_mi300x(tmp_path: Path, allocatable: dict[str, str]) -> Path:
    vmss = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/aks-mi300x-1"
    nodes = [
        _node(
            f"aks-mi300x-{i}",
            "Standard_ND96isr_MI300X_v5",
            {"amd.com/gpu": "8", **allocatable},
            f"azure://{vmss}/virtualMachines/{i}",
            **{"kubernetes.azure.com/agentpool": "mi300x"},
        )
        for i in range(2)
    ]
    # The Network Operator's SR-IOV device plugin DaemonSet (samples/k8s/aks-nicclusterpolicy-sriov.yaml).
    plugin = {"kind": "DaemonSet", "metadata": {"name": "sriov-device-plugin", "namespace": "network-operator"}}
    return _dump(tmp_path / "aks", nodes=nodes, daemonsets=[plugin])


def test_azures_own_rccl_mpijob_on_aks_is_clean(tmp_path: Path) -> None:
    """Azure/aks-rdma-infiniband's RCCL MPIJob (samples/k8s4/aks-rccl-mpi-job.yaml) runs its workers privileged and
    requests no RDMA resource: a privileged container sees every device of its node, the InfiniBand NICs included.
    Was K8S101. Its launcher passing -x NCCL_IB_DISABLE=1 turns InfiniBand off: K8S130."""
    nodes = _aks_mi300x(tmp_path, {})
    text = AKS_RCCL_MPIJOB.read_text()
    code, report = _judge(text, nodes, tmp_path)
    assert code == 0 and report["findings"] == [], report["findings"]
    code, report = _judge(text.replace("-x NCCL_DEBUG=INFO", "-x NCCL_IB_DISABLE=1"), nodes, tmp_path)
    assert {rule for rule, _ in _rules(report)} == {"K8S130"}


def test_rdma_shared_ib_asked_of_nodes_that_advertise_rdma_ib_stays_pending(tmp_path: Path) -> None:
    """The NVIDIA Network Operator advertises rdma/ib with its SR-IOV device plugin, rdma/shared_ib with the shared
    one (Azure/aks-rdma-infiniband, samples/k8s/aks-nicclusterpolicy-*.yaml): the RCCL workers asking rdma/shared_ib
    of nodes that have rdma/ib are never scheduled: K8S106. Asking rdma/ib: clean."""
    nodes = _aks_mi300x(tmp_path, {"rdma/ib": "8"})
    unprivileged = AKS_RCCL_MPIJOB.read_text().replace("privileged: true", "capabilities: {add: [IPC_LOCK]}")
    asked = unprivileged.replace("amd.com/gpu: 8\n", "amd.com/gpu: 8\n                rdma/shared_ib: 1\n")
    code, report = _judge(asked, nodes, tmp_path)
    assert _rules(report) == {("K8S106", "default/rccl-test-worker-0"), ("K8S106", "default/rccl-test-worker-1")}
    assert "rdma/shared_ib" in report["findings"][0]["message"]
    code, report = _judge(asked.replace("rdma/shared_ib: 1", "rdma/ib: 8"), nodes, tmp_path)
    assert code == 0 and report["findings"] == [], report["findings"]


def test_efa_pods_without_hugepages_as_aws_runs_them_get_no_warning(tmp_path: Path) -> None:
    """aws-samples/awsome-distributed-training's 70B FSDP PyTorchJob (samples/k8s4/eks-fsdp-llama3_1_70b-fsdp.yaml)
    requests vpc.amazonaws.com/efa without hugepages and runs: no K8S104."""
    nodes = _dump(tmp_path / "eks", nodes=_p5_nodes(), daemonsets=[_EFA_PLUGIN])
    text = EKS_FSDP_70B.read_text()
    for name, value in {"NUM_NODES": "2", "GPU_PER_NODE": "8", "EFA_PER_NODE": "32"}.items():
        text = text.replace(f"${name}", value)
    _code, report = _judge(text, nodes, tmp_path)
    assert report["summary"]["nodes"] == 2
    assert not any(rule == "K8S104" for rule, _ in _rules(report)), report["findings"]


def _gke_a3_ultra(tmp_path: Path) -> Path:
    nodes = [
        _node(
            f"gke-a3u-{i}",
            "a3-ultragpu-8g",
            {"nvidia.com/gpu": "8"},
            f"gce://proj/us-central1-b/gke-a3u-{i}",
            **{"cloud.google.com/gke-nodepool": "a3u", "topology.kubernetes.io/region": "us-central1"},
        )
        for i in range(2)
    ]
    networks = [
        {"kind": "Network", "metadata": {"name": f"rdma-{i}"}, "spec": {"parametersRef": {"name": f"rdma-{i}"}}}
        for i in range(8)
    ]
    params = [
        {"kind": "GKENetworkParamSet", "metadata": {"name": f"rdma-{i}"}, "spec": {"vpc": "v", "deviceMode": "RDMA"}}
        for i in range(8)
    ]
    installer = {"kind": "DaemonSet", "metadata": {"name": "nccl-rdma-installer", "namespace": "kube-system"}}
    return _dump(tmp_path / "gke", nodes=nodes, networks=networks, gkenetworkparamsets=params, daemonsets=[installer])


def test_googles_bare_nccl_test_pods_are_one_workload(tmp_path: Path) -> None:
    """GoogleCloudPlatform/container-engine-accelerators gpudirect-rdma/nccl-test.yaml: two bare Pods,
    nccl-test-host-1 and -2, one per node, with the same image and RDMA networks. Judged as one two-node workload,
    named in the report (was: two one-pod workloads that exchange nothing). With one RDMA network dropped from both,
    K8S102 flags both pods."""
    nodes = _gke_a3_ultra(tmp_path)
    text = GKE_RDMA_NCCL_TEST.read_text()
    _, report = _judge(text, nodes, tmp_path)
    [cluster] = report["clusters"]
    assert cluster["id"].endswith("default/Pod/nccl-test-host-*") and cluster["status"] == "clean"
    assert any("nccl-test-host-1, nccl-test-host-2" in note for note in report["notes"])
    dropped = text.replace('        {"interfaceName":"eth9","network":"rdma-7"}', "").replace(
        '{"interfaceName":"eth8","network":"rdma-6"},', '{"interfaceName":"eth8","network":"rdma-6"}'
    )
    _code, report = _judge(dropped, nodes, tmp_path)
    assert _rules(report) == {("K8S102", "default/nccl-test-host-1"), ("K8S102", "default/nccl-test-host-2")}


def test_a_dev_infiniband_hostpath_on_efa_nodes(tmp_path: Path) -> None:
    """aws-samples/aws-do-eks#63: the nemotron/ultra manifests mounted /dev/infiniband from the host beside
    vpc.amazonaws.com/efa, and libfabric's EFA provider failed (fi_info -p efa: -61): K8S105 on the nccl-tests
    MPIJob's workers given that volume; the sample as it is (only /dev/shm) is clean."""
    nodes = _dump(tmp_path / "eks", nodes=_p5_nodes(), daemonsets=[_EFA_PLUGIN])
    text = EKS_NCCL_MPIJOB.read_text()
    mounted = text.replace("              path: /dev/shm", "              path: /dev/infiniband")
    _code, report = _judge(mounted, nodes, tmp_path)
    assert _rules(report) == {("K8S105", "default/nccl-tests-worker-0"), ("K8S105", "default/nccl-tests-worker-1")}
    assert "/dev/infiniband" in report["findings"][0]["message"]


def test_bare_pods_that_ask_part_of_a_node_are_not_one_workload() -> None:
    """Two bare one-GPU pods with one image and a common name (two users' notebooks) are no multi-node test: each
    is judged alone. Two bare pods asking all 8 GPUs of their p5 nodes, as Google's nccl-test pods do, are one."""

    def bare(name: str, node: str, gpus: int) -> dict[str, Any]:
        limits = {"nvidia.com/gpu": gpus, "vpc.amazonaws.com/efa": 32}
        container = {"name": "c", "image": "jupyter", "resources": {"limits": limits}}
        return {
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"nodeName": node, "containers": [container]},
        }

    nodes = _p5_nodes()
    notebooks = [bare("jupyter-alice", "p5-0", 1), bare("jupyter-bob", "p5-1", 1)]
    found = Normalizer(ClusterObjects(name="c", items={"nodes": nodes, "pods": notebooks})).inventory("t")
    assert {p.workload for n in found.nodes if (p := n.shape.part(PodPart))} == {
        "ml/Pod/jupyter-alice",
        "ml/Pod/jupyter-bob",
    }
    tests = [bare("nccl-host-1", "p5-0", 8), bare("nccl-host-2", "p5-1", 8)]
    found = Normalizer(ClusterObjects(name="c", items={"nodes": nodes, "pods": tests})).inventory("t")
    assert {p.workload for n in found.nodes if (p := n.shape.part(PodPart))} == {"ml/Pod/nccl-host-*"}


_NEURON_JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: trn-train, namespace: default}
spec:
  parallelism: 2
  completions: 2
  template:
    spec:
      containers:
        - name: train
          image: neuron-training
          resources:
            limits: {aws.amazon.com/neuron: "16", vpc.amazonaws.com/efa: "8"}
"""


def test_a_neuron_pod_is_never_placed_on_gpu_nodes_that_do_not_advertise_neuron(tmp_path: Path) -> None:
    """aws-samples' trn1 MPIJob (samples/k8s4/eks-trn1-llama2-train-mpijob.yaml) asks aws.amazon.com/neuron: 16 and
    8 EFA: with --nodes-from a folder of p5 nodes it was placed on them and reported K8S102 (8 of 32 EFA), a false
    finding: the scheduler never places it where no node advertises neuron. It stays Pending (not judged); beside
    trn1 nodes that advertise it (EKS Neuron device plugin), it is placed on those."""
    p5_only = _dump(tmp_path / "p5", nodes=_p5_nodes(), daemonsets=[_EFA_PLUGIN])
    code, report = _judge(_NEURON_JOB, p5_only, tmp_path)
    assert code == 2 and report["complete"] is False
    assert report["findings"] == [] and {c["status"] for c in report["clusters"]} == {"incomplete"}
    trn1 = {"aws.amazon.com/neuron": "16", "vpc.amazonaws.com/efa": "8"}
    both = _p5_nodes() + [
        _node(f"trn-{i}", "trn1.32xlarge", trn1, f"aws:///us-west-2a/i-t{i}", **{"eks.amazonaws.com/nodegroup": "trn"})
        for i in range(2)
    ]
    _code, report = _judge(_NEURON_JOB, _dump(tmp_path / "both", nodes=both, daemonsets=[_EFA_PLUGIN]), tmp_path)
    assert not any(rule == "K8S102" for rule, _ in _rules(report)), report["findings"]
    assert [c["instance_types"] for c in report["clusters"]] == [["trn1.32xlarge"]]
