"""`fabriccheck k8s --manifests` never says green on nothing (issue 29, items 2, 3 and 9): an empty or closed
standard input, /dev/null, a 0-byte file, a failed `helm template` piped in, manifests cut short, counts and
quantities the API would refuse; TrainJob and RayJob manifests judged as the pods they create; a YAML alias bomb
refused before it costs memory.

Shapes followed: the quantity grammar of k8s.io/apimachinery pkg/api/resource/quantity.go (<signedNumber><suffix>);
a container's `name` is required (k8s.io/api core/v1 Container); TrainJob spec.trainer.numNodes / resourcesPerNode /
podSpecOverrides[].targetJobs (kubeflow/trainer pkg/apis/trainer/v1alpha1/trainjob_types.go); RayJob
spec.rayClusterSpec and worker groups' replicas x numOfHosts (ray-project/kuberay ray-operator/apis/ray/v1/
rayjob_types.go, raycluster_types.go).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run

from fabriccheck.providers.k8s import role
from fabriccheck.providers.k8s.templates import templates

ROOT = Path(__file__).resolve().parents[1]
EKS = ROOT / "fixtures" / "demo" / "k8s" / "eks-train"
MPIJOB = ROOT / "fixtures" / "k8s" / "manifests" / "nccl-tests-mpijob.yaml"
NODES = ["--nodes-from", str(EKS), "-f", "json"]
COMMAND = [sys.executable, "-m", "fabriccheck", "k8s", "--manifests", "-", *NODES]


def _judged(path: Path) -> dict[str, Any]:
    result = run("k8s", "--manifests", str(path), *NODES)
    assert result.returncode in (0, 1), result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_the_undamaged_mpijob_is_judged() -> None:
    """The baseline the damaged copies are held against: two workers of 8 GPUs judged, findings."""
    report = _judged(MPIJOB)
    assert report["summary"]["nodes"] == 2 and report["findings"]


def test_nothing_read_is_exit_2(tmp_path: Path) -> None:
    """Empty standard input (what pytest hands a run), /dev/null, a 0-byte file, a file of comments only: each was
    exit 0 with "nothing to judge"."""
    empty = tmp_path / "empty.yaml"
    empty.write_bytes(b"")
    comments = tmp_path / "comments.yaml"
    comments.write_text("# rendered nothing\n---\n")
    for path, said in (
        ("-", "--manifests standard input (-): nothing read"),
        ("/dev/null", "--manifests /dev/null: not a file or folder: nothing read"),
        (str(empty), f"--manifests {empty}: nothing read"),
        (str(comments), f"--manifests {comments}: nothing read"),
    ):
        line = one_clean_line(run("k8s", "--manifests", path, *NODES))
        assert line.startswith(f"fabriccheck: error: {said}"), line


def test_a_folder_of_empty_files_is_nothing_read(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("")
    (tmp_path / "b.yaml").write_text("---\n")
    line = one_clean_line(run("k8s", "--manifests", str(tmp_path), *NODES))
    assert f"--manifests {tmp_path}: nothing read (no Kubernetes object in them)" in line


def test_a_failed_helm_template_and_a_closed_stdin_are_exit_2() -> None:
    """`helm template ... | fabriccheck k8s --manifests -` when helm fails: a real pipe whose writer printed its error
    and nothing else (helm is stood in for by a shell that fails as it does); then standard input closed."""
    helm = "echo 'Error: INSTALLATION FAILED: values.yaml: gpus required' >&2; exit 1"
    quoted = " ".join(f"'{part}'" for part in COMMAND)
    for shell in (f"({helm}) | {quoted}", f"exec {quoted} <&-"):
        result = subprocess.run(["sh", "-c", shell], capture_output=True, text=True, timeout=120)
        assert result.returncode == 2, result.stderr
        assert result.stdout == ""
        assert result.stderr.splitlines()[-1] == (
            "fabriccheck: error: --manifests standard input (-): nothing read (no Kubernetes object in it): "
            "nothing to judge"
        )


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ("replicas: 2", "replicas: -5", "spec.mpiReplicaSpecs.Worker.replicas: -5 is not a number of replicas"),
        ("replicas: 2", 'replicas: "two"', "spec.mpiReplicaSpecs.Worker.replicas: 'two' is not a number of replicas"),
        (
            "nvidia.com/gpu: 8\n                  memory",
            'nvidia.com/gpu: "${GPUS}"\n                  memory',
            "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.limits.nvidia.com/gpu: '${GPUS}' is "
            "not a Kubernetes quantity",
        ),
        (
            "nvidia.com/gpu: 8\n                  memory",
            "nvidia.com/gpu: -8\n                  memory",
            "containers[0].resources.limits.nvidia.com/gpu: -8 is negative",
        ),
        (
            "resources:",
            "resourceS:",
            "Worker.template.spec.containers[0].resourceS: unknown field (did you mean resources?)",
        ),
    ],
    ids=["negative-replicas", "text-replicas", "unrendered-gpus", "negative-gpus", "misspelt-resources"],
)
def test_a_value_the_api_would_refuse_is_one_line_naming_file_and_field(
    tmp_path: Path, old: str, new: str, said: str
) -> None:
    text = MPIJOB.read_text()
    assert old in text
    path = tmp_path / "job.yaml"
    path.write_text(text.replace(old, new, 1))
    line = one_clean_line(run("k8s", "--manifests", str(path), *NODES))
    assert line.startswith(f"fabriccheck: error: {path}: document 1 (MPIJob nccl-tests): "), line
    assert said in line


def test_manifests_cut_short_are_not_judged_as_less(tmp_path: Path) -> None:
    """Cut inside the worker's container (no name yet), or after the workers' `containers:` key: refused, where the
    cut copy used to judge no pod and exit 0."""
    text = MPIJOB.read_text()
    worker = text.index("    Worker:")
    for end in (text.index("nccl-tests-worker", worker) - 40, text.index("containers:", worker) + len("containers:")):
        path = tmp_path / f"cut{end}.yaml"
        path.write_text(text[:end])
        result = run("k8s", "--manifests", str(path), *NODES)
        line = one_clean_line(result)
        assert "spec.mpiReplicaSpecs.Worker.template.spec.containers" in line and "cut short" in line, line


TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: llama-fsdp
  namespace: default
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 2
    image: 111122223333.dkr.ecr.us-east-1.amazonaws.com/llama:latest
    resourcesPerNode:
      limits:
        nvidia.com/gpu: 8
  podSpecOverrides:
    - targetJobs:
        - name: node
      nodeSelector:
        node.kubernetes.io/instance-type: p5.48xlarge
"""

RAYJOB = """\
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: ray-train
  namespace: default
spec:
  entrypoint: python train.py
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.9.0
    workerGroupSpecs:
      - groupName: gpu
        replicas: 1
        numOfHosts: 2
        rayStartParams: {}
        template:
          spec:
            nodeSelector:
              node.kubernetes.io/instance-type: p5.48xlarge
            containers:
              - name: ray-worker
                image: rayproject/ray:2.9.0-gpu
                resources:
                  limits:
                    nvidia.com/gpu: 8
"""


@pytest.mark.parametrize(("text", "kind", "pods"), [(TRAINJOB, "TrainJob", 2), (RAYJOB, "RayJob", 2)])
def test_trainjob_and_rayjob_are_judged_as_the_pods_they_create(
    tmp_path: Path, text: str, kind: str, pods: int
) -> None:
    """Were never judged: "nothing to judge", exit 0. Now their GPU pods on p5.48xlarge, asking no EFA, are judged
    as the MPIJob's are (K8S101: the fabric the node has is not requested)."""
    path = tmp_path / "job.yaml"
    path.write_text(text)
    report = _judged(path)
    assert report["summary"]["nodes"] == pods
    workloads = {f["rule"]: f for f in report["findings"]}
    assert "K8S101" in workloads
    assert f"/{kind}/" in json.dumps(workloads["K8S101"])


def test_every_workload_kind_the_readers_know_is_read_from_manifests() -> None:
    """Every owner kind a live run lists (role.KINDS) has pod templates in a manifest: none is skipped unread."""
    pod: dict[str, Any] = {"spec": {"containers": [{"name": "c"}]}}
    job: dict[str, Any] = {"template": pod}
    specs: dict[str, dict[str, Any]] = {
        "Deployment": {"template": pod},
        "ReplicaSet": {"template": pod},
        "StatefulSet": {"template": pod},
        "Job": {"template": pod, "tasks": [{"template": pod}]},
        "JobSet": {"replicatedJobs": [{"template": {"spec": job}}]},
        "PyTorchJob": {"pytorchReplicaSpecs": {"Worker": job}},
        "MPIJob": {"mpiReplicaSpecs": {"Worker": job}},
        "TFJob": {"tfReplicaSpecs": {"Worker": job}},
        "TrainJob": {"trainer": {}},
        "LeaderWorkerSet": {"leaderWorkerTemplate": {"workerTemplate": pod}},
        "RayCluster": {"headGroupSpec": job},
        "RayJob": {"rayClusterSpec": {"headGroupSpec": job}},
    }
    for kind in (k for k in role.KINDS if k.owner):
        api = f"{kind.group}/{kind.version}" if kind.group else kind.version
        found = templates({"apiVersion": api, "kind": kind.kind, "spec": specs[kind.kind]})
        assert found and sum(times for _, _, times, _ in found) >= 1, kind


def test_a_yaml_alias_bomb_is_refused_before_it_costs_memory(tmp_path: Path) -> None:
    """Nine levels of nine aliases ("billion laughs": 387 million strings once expanded) in a manifest: one line,
    exit 2, as the API server refuses it (CVE-2019-11253); a manifest with a few anchors is still read."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in "bcdefghi":
        previous = chr(ord(level) - 1)
        lines.append(f"{level}: &{level} [" + ",".join([f"*{previous}"] * 9) + "]")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\ndata:\n  " + "\n  ".join(lines) + "\n")
    line = one_clean_line(run("k8s", "--manifests", str(bomb), *NODES))
    assert line.startswith(f"fabriccheck: error: {bomb}: not valid YAML (its aliases expand to more than"), line
    anchored_text = MPIJOB.read_text().replace("      replicas: 2\n", "      replicas: &two 2\n", 1)
    assert "&two" in anchored_text
    path = tmp_path / "anchored.yaml"
    path.write_text(anchored_text)
    assert _judged(path)["summary"]["nodes"] == 2


def test_a_carriage_return_in_metadata_is_one_line(tmp_path: Path) -> None:
    """Found by the fuzz test: `nam\\re: x` reads as two lines, making metadata a string: was an internal error."""
    path = tmp_path / "job.yaml"
    path.write_bytes(MPIJOB.read_bytes().replace(b"  name: nccl-tests\n", b"  nam\re: nccl-tests\n", 1))
    line = one_clean_line(run("k8s", "--manifests", str(path), *NODES))
    assert line.startswith(f"fabriccheck: error: {path}: document 1 (MPIJob unnamed): metadata: "), line


def test_a_workload_kind_not_read_is_not_judged_as_nothing(tmp_path: Path) -> None:
    """A kind of a workload API group that fabriccheck does not read (a PaddleJob; a PyTorchJob misspelt) creates
    pods that are not judged: the run is incomplete, exit 2, the report naming it, never "nothing to judge"."""
    path = tmp_path / "paddle.yaml"
    path.write_text(
        "apiVersion: kubeflow.org/v1\nkind: PaddleJob\nmetadata:\n  name: paddle\nspec:\n  paddleReplicaSpecs: {}\n"
    )
    result = run("k8s", "--manifests", str(path), *NODES)
    report = json.loads(result.stdout)
    assert result.returncode == 2 and report["complete"] is False
    [error] = report["errors"]
    assert error["code"] == "UnknownKind"
    assert error["message"] == (
        f"{path}: document 1: kubeflow.org/v1 PaddleJob is a kind fabriccheck does not read: its pods were not judged"
    )


RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: torch-efa
spec:
  mlPolicy:
    numNodes: 2
    torch:
      numProcPerNode: auto
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels:
                trainer.kubeflow.org/trainjob-ancestor-step: trainer
            spec:
              template:
                spec:
                  nodeSelector:
                    node.kubernetes.io/instance-type: p5.48xlarge
                  containers:
                    - name: node
                      image: pytorch/pytorch:2.7.1-cuda12.6-cudnn9-runtime
                      resources:
                        limits:
                          nvidia.com/gpu: 8
                          vpc.amazonaws.com/efa: 32
                          hugepages-2Mi: 5120Mi
                          memory: 32000Mi
"""

TRAINJOB_ON_RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: llama-efa
spec:
  runtimeRef:
    name: torch-efa
  trainer:
    image: 111122223333.dkr.ecr.us-east-1.amazonaws.com/llama:latest
"""


def test_a_trainjob_is_judged_on_the_runtime_it_names(tmp_path: Path) -> None:
    """The runtime's trainer pod (the replicated job labelled trainjob-ancestor-step: trainer, as kubeflow/trainer
    manifests/base/runtimes/torch_distributed.yaml has it) asks for the node's 32 EFA interfaces and hugepages, and
    its mlPolicy.numNodes says 2: judged as two pods that use the fabric (no K8S101). Without the runtime, the
    TrainJob alone asks for nothing and the report says what it was judged on."""
    path = tmp_path / "job.yaml"
    path.write_text(RUNTIME + "---\n" + TRAINJOB_ON_RUNTIME)
    report = _judged(path)
    assert report["summary"]["nodes"] == 2
    assert "K8S101" not in {f["rule"] for f in report["findings"]}
    alone = tmp_path / "alone.yaml"
    alone.write_text(TRAINJOB_ON_RUNTIME)
    result = run("k8s", "--manifests", str(alone), "--nodes-from", str(EKS))
    assert "names ClusterTrainingRuntime torch-efa, not in the manifests: judged on its spec.trainer alone" in (
        " ".join(result.stdout.split())
    )
