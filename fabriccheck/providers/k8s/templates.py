"""The pods a workload object would create: its pod templates and how many of each, by kind. Manifests before
apply are judged as these pods (manifests.py); so are the workloads of a dump whose pods do not exist (rejected at
admission, or not created yet: objects.py).

Where each kind keeps its pod templates: the Kubernetes API reference (Pod, Deployment, ReplicaSet, StatefulSet,
Job, CronJob), kubernetes-sigs/jobset (spec.replicatedJobs[].template), kubeflow training-operator
(spec.pytorchReplicaSpecs / mpiReplicaSpecs / tfReplicaSpecs), kubeflow trainer v2 TrainJob (spec.trainer: numNodes,
resourcesPerNode, image, env; spec.podSpecOverrides[].targetJobs / nodeSelector / affinity / tolerations:
kubeflow/trainer pkg/apis/trainer/v1alpha1/trainjob_types.go), kubernetes-sigs/lws (spec.leaderWorkerTemplate),
ray-project/kuberay (RayCluster headGroupSpec, workerGroupSpecs[] with replicas x numOfHosts; RayJob
spec.rayClusterSpec: ray-operator/apis/ray/v1/rayjob_types.go, raycluster_types.go), volcano (spec.tasks[]).

A template the API would refuse is one line naming the field (BadField): a count that is not a whole number of
replicas (`-5`, `"two"`), a pod without containers (a manifest cut short), a resource value that is not a
Kubernetes quantity (`"${GPUS}"`: a template rendered without its values). Judging it as something else would pass
a gate on less than was written.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

from fabriccheck.errors import FabricCheckError

MAX_PODS = 10_000  # per workload: a replicas field past this is a typo, not a plan

Template = tuple[str, dict[str, Any], int, str]  # (role, pod template, how many pods, where it is in the object)

# The quantity grammar of k8s.io/apimachinery pkg/api/resource/quantity.go: <signedNumber><suffix>, the suffix a
# binary SI (Ki ... Ei), a decimal SI (n u m "" k M G T P E) or a decimal exponent (e3, E-2).
QUANTITY = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
# Where trainer v2 runs the trainer: the replicated job and container named `node` of every built-in runtime
# (kubeflow/trainer manifests/base/runtimes: torch-distributed, mpi-distributed ...).
TRAINER_JOB = "node"


# The Container fields the judging reads (k8s.io/api core/v1 Container): one spelt in another case (`resourceS`) is
# an unknown field, which kubectl apply refuses (strict field validation, the default since Kubernetes 1.27:
# kubernetes.io/docs/reference/using-api/api-concepts/#field-validation); read as absent, the pod would ask nothing.
_MISSPELT = {k.lower(): k for k in ("name", "image", "resources", "env", "securityContext", "restartPolicy")}


class BadField(FabricCheckError):
    """A field of a workload the API would refuse, named by its path in the object."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")


def _shown(value: Any) -> str:
    return repr(value)[:60]


def _count(value: Any, field: str, default: int = 1) -> int:
    """A replicas-like count: absent is the API's default; anything but a whole number from 0 is BadField."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadField(field, f"{_shown(value)} is not a number of replicas (a whole number from 0)")
    return value


def _obj(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadField(field, f"{_shown(value)} is not an object")
    return value


def _list(value: Any, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadField(field, f"{_shown(value)} is not a list")
    return value


def _job_template(job_spec: dict[str, Any], role: str, times: int, field: str) -> list[Template]:
    template = _obj(job_spec.get("template"), f"{field}.template")
    return [(role, template, times * _count(job_spec.get("parallelism"), f"{field}.parallelism"), f"{field}.template")]


def _replica_specs(specs: Any, field: str) -> list[Template]:
    found: list[Template] = []
    for role, spec in _obj(specs, field).items():
        at = f"{field}.{role}"
        spec = _obj(spec, at)
        template = _obj(spec.get("template"), f"{at}.template")
        found.append((str(role).lower(), template, _count(spec.get("replicas"), f"{at}.replicas"), f"{at}.template"))
    return found


def _ray(spec: dict[str, Any], field: str) -> list[Template]:
    """A RayCluster's pods (a RayJob's spec.rayClusterSpec): one head, each worker group's replicas x numOfHosts."""
    head = _obj(_obj(spec.get("headGroupSpec"), f"{field}.headGroupSpec").get("template"), f"{field}.headGroupSpec")
    found: list[Template] = [("head", head, 1, f"{field}.headGroupSpec.template")]
    for index, group in enumerate(_list(spec.get("workerGroupSpecs"), f"{field}.workerGroupSpecs")):
        at = f"{field}.workerGroupSpecs[{index}]"
        group = _obj(group, at)
        hosts = _count(group.get("numOfHosts"), f"{at}.numOfHosts")
        times = _count(group.get("replicas"), f"{at}.replicas") * hosts
        template = _obj(group.get("template"), f"{at}.template")
        found.append((str(group.get("groupName", "worker")), template, times, f"{at}.template"))
    return found


Runtimes = dict[tuple[str, str], dict[str, Any]]  # (kind, name) -> a TrainingRuntime or ClusterTrainingRuntime
RUNTIME_KINDS = ("ClusterTrainingRuntime", "TrainingRuntime")
_ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def runtime_of(spec: dict[str, Any], runtimes: Runtimes) -> tuple[str, str, dict[str, Any] | None]:
    """(kind, name, the runtime or None) a TrainJob's spec.runtimeRef names; the kind defaults to
    ClusterTrainingRuntime (kubeflow/trainer trainjob_types.go RuntimeRef)."""
    ref = _obj(spec.get("runtimeRef"), "spec.runtimeRef")
    kind, name = str(ref.get("kind") or RUNTIME_KINDS[0]), str(ref.get("name") or "")
    return kind, name, runtimes.get((kind, name))


def _runtime_pod(runtime: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The trainer's pod template in a runtime's JobSet template (the replicated job labelled
    trainjob-ancestor-step: trainer, else the one named `node`, as torch-distributed has it) and
    spec.mlPolicy.numNodes, a copy the TrainJob's own settings go into."""
    meta = runtime.get("metadata")
    at = f"{runtime.get('kind')} {meta.get('name') if isinstance(meta, dict) else ''}: spec"
    spec = _obj(runtime.get("spec"), at)
    nodes = _count(_obj(spec.get("mlPolicy"), f"{at}.mlPolicy").get("numNodes"), f"{at}.mlPolicy.numNodes")
    jobs = _list(
        _obj(_obj(spec.get("template"), f"{at}.template").get("spec"), f"{at}.template.spec").get("replicatedJobs"),
        f"{at}.template.spec.replicatedJobs",
    )
    jobs = [_obj(job, f"{at}.template.spec.replicatedJobs[]") for job in jobs]
    trainer = next((j for j in jobs if _ancestor(j) == "trainer"), None)
    trainer = trainer or next((j for j in jobs if j.get("name") == TRAINER_JOB), None)
    if trainer is None:
        return {"spec": {}}, nodes
    job_spec = _obj(_obj(trainer.get("template"), f"{at}.replicatedJobs.template").get("spec"), f"{at}.job spec")
    return copy.deepcopy(_obj(job_spec.get("template"), f"{at}.pod template")), nodes


def _ancestor(job: dict[str, Any]) -> Any:
    template = job.get("template")
    meta = template.get("metadata") if isinstance(template, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return labels.get(_ANCESTOR) if isinstance(labels, dict) else None


def _trainjob(spec: dict[str, Any], runtimes: Runtimes) -> list[Template]:
    """A TrainJob's training nodes: spec.trainer.numNodes pods (else its runtime's mlPolicy.numNodes, else 1), each
    the runtime's trainer pod (when the runtime is at hand) with the trainer container's resources, image and env
    from spec.trainer, placed as the podSpecOverrides for the `node` job say."""
    trainer = _obj(spec.get("trainer"), "spec.trainer")
    _, _, runtime = runtime_of(spec, runtimes)
    template, nodes = _runtime_pod(runtime) if runtime is not None else ({"spec": {}}, 1)
    pod = template.setdefault("spec", {})
    containers = pod.setdefault("containers", [])
    container = next((c for c in containers if isinstance(c, dict) and c.get("name") == TRAINER_JOB), None)
    if container is None:
        container = {"name": TRAINER_JOB, "image": ""}
        containers.append(container)
    if trainer.get("image"):
        container["image"] = str(trainer["image"])
    per_node = _obj(trainer.get("resourcesPerNode"), "spec.trainer.resourcesPerNode")
    if per_node.get("limits") is not None or per_node.get("requests") is not None:
        # They replace the trainer container's resources (kubeflow/trainer pkg/runtime/framework/plugins/jobset
        # builder.go: Trainer.ResourcesPerNode with limits or requests set).
        container["resources"] = {k: per_node[k] for k in ("limits", "requests") if per_node.get(k) is not None}
    container["env"] = [*(container.get("env") or []), *_list(trainer.get("env"), "spec.trainer.env")]
    for index, override in enumerate(_list(spec.get("podSpecOverrides"), "spec.podSpecOverrides")):
        at = f"spec.podSpecOverrides[{index}]"
        override = _obj(override, at)
        targets = _list(override.get("targetJobs"), f"{at}.targetJobs")
        if any(isinstance(t, dict) and t.get("name") == TRAINER_JOB for t in targets):
            pod.update({k: override[k] for k in ("nodeSelector", "affinity", "tolerations") if k in override})
    nodes = _count(trainer.get("numNodes"), "spec.trainer.numNodes", default=nodes)
    return [(TRAINER_JOB, template, nodes, "spec.trainer")]


def _lws(spec: dict[str, Any]) -> list[Template]:
    lws = _obj(spec.get("leaderWorkerTemplate"), "spec.leaderWorkerTemplate")
    groups = _count(spec.get("replicas"), "spec.replicas")
    size = _count(lws.get("size"), "spec.leaderWorkerTemplate.size")
    worker = _obj(lws.get("workerTemplate"), "spec.leaderWorkerTemplate.workerTemplate")
    leader = _obj(lws.get("leaderTemplate"), "spec.leaderWorkerTemplate.leaderTemplate") or worker
    where = "spec.leaderWorkerTemplate"
    return [
        (
            "leader",
            leader,
            groups,
            f"{where}.leaderTemplate" if lws.get("leaderTemplate") else f"{where}.workerTemplate",
        ),
        ("worker", worker, groups * max(size - 1, 0), f"{where}.workerTemplate"),
    ]


def _jobset(spec: dict[str, Any]) -> list[Template]:
    found: list[Template] = []
    for index, replicated in enumerate(_list(spec.get("replicatedJobs"), "spec.replicatedJobs")):
        at = f"spec.replicatedJobs[{index}]"
        replicated = _obj(replicated, at)
        job_spec = _obj(_obj(replicated.get("template"), f"{at}.template").get("spec"), f"{at}.template.spec")
        times = _count(replicated.get("replicas"), f"{at}.replicas")
        found += _job_template(job_spec, str(replicated.get("name", "job")), times, f"{at}.template.spec")
    return found


_REPLICA_SPECS = {"PyTorchJob": "pytorchReplicaSpecs", "MPIJob": "mpiReplicaSpecs", "TFJob": "tfReplicaSpecs"}


def templates(doc: dict[str, Any], runtimes: Runtimes | None = None) -> list[Template]:
    """The pod templates a workload object would create pods from, with how many of each; BadField for a field the
    API would refuse. `runtimes`: the TrainingRuntimes a TrainJob may name (found beside it)."""
    kind = doc.get("kind")
    spec = _obj(doc.get("spec"), "spec")
    api = str(doc.get("apiVersion") or "")
    if kind == "Pod":
        return [("pod", {"metadata": doc.get("metadata") or {}, "spec": spec}, 1, "")]  # its own spec
    if kind in ("Deployment", "ReplicaSet", "StatefulSet"):
        template = _obj(spec.get("template"), "spec.template")
        return [("replica", template, _count(spec.get("replicas"), "spec.replicas"), "spec.template")]
    if kind == "Job" and api.startswith("batch.volcano.sh"):
        found: list[Template] = []
        for index, task in enumerate(_list(spec.get("tasks"), "spec.tasks")):
            at = f"spec.tasks[{index}]"
            task = _obj(task, at)
            template = _obj(task.get("template"), f"{at}.template")
            times = _count(task.get("replicas"), f"{at}.replicas")
            found.append((str(task.get("name", "task")), template, times, f"{at}.template"))
        return found
    if kind == "Job":
        return _job_template(spec, "job", 1, "spec")
    if kind == "CronJob":
        job_template = _obj(spec.get("jobTemplate"), "spec.jobTemplate")
        return _job_template(_obj(job_template.get("spec"), "spec.jobTemplate.spec"), "job", 1, "spec.jobTemplate.spec")
    if kind == "JobSet":
        return _jobset(spec)
    if kind in _REPLICA_SPECS:
        return _replica_specs(spec.get(_REPLICA_SPECS[kind]), f"spec.{_REPLICA_SPECS[kind]}")
    if kind == "TrainJob":
        return _trainjob(spec, runtimes or {})
    if kind == "LeaderWorkerSet":
        return _lws(spec)
    if kind == "RayCluster":
        return _ray(spec, "spec")
    if kind == "RayJob":
        return _ray(_obj(spec.get("rayClusterSpec"), "spec.rayClusterSpec"), "spec.rayClusterSpec")
    return []


def check_template(template: dict[str, Any], where: str) -> None:
    """What the API checks first of a pod template and the judging reads: at least one container, and each resource
    limit and request a quantity that is not negative."""
    prefix = f"{where}.spec" if where else "spec"
    spec = _obj(template.get("spec"), prefix)
    containers = _list(spec.get("containers"), f"{prefix}.containers")
    if not containers:
        raise BadField(f"{prefix}.containers", "no container (a pod needs one: is the manifest cut short?)")
    for part in ("containers", "initContainers"):
        for index, container in enumerate(_list(spec.get(part), f"{prefix}.{part}")):
            at = f"{prefix}.{part}[{index}]"
            container = _obj(container, at)
            if not isinstance(container.get("name"), str) or not container["name"]:
                raise BadField(f"{at}.name", "missing (every container has a name: is the manifest cut short?)")
            for key in container:
                meant = _MISSPELT.get(str(key).lower())
                if meant is not None and key != meant:
                    raise BadField(f"{at}.{key}", f"unknown field (did you mean {meant}?): kubectl apply refuses it")
            resources = _obj(container.get("resources"), f"{at}.resources")
            for kind in ("limits", "requests"):
                for name, value in _obj(resources.get(kind), f"{at}.resources.{kind}").items():
                    _check_quantity(value, f"{at}.resources.{kind}.{name}")


def _check_quantity(value: Any, field: str) -> None:
    text = str(value).strip() if isinstance(value, str | int | float) and not isinstance(value, bool) else None
    if text is None or not QUANTITY.match(text):
        raise BadField(field, f"{_shown(value)} is not a Kubernetes quantity (8, 500m, 2Gi)")
    if text.startswith("-"):
        raise BadField(field, f"{_shown(value)} is negative")


def pods_of(
    doc: dict[str, Any], checked: bool = True, runtimes: Runtimes | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(pod id, pod object) for each pod the workload would create, owned by it. `checked`: each template is
    checked first (check_template); a cluster's own objects passed the API's checks, and a dump may hold them cut
    down to what is judged."""
    meta = _obj(doc.get("metadata"), "metadata")
    name, namespace = str(meta.get("name") or "unnamed"), str(meta.get("namespace") or "default")
    owner = [{"kind": doc["kind"], "name": name, "controller": True}]
    for role, template, times, where in templates(doc, runtimes):
        if times and checked:
            check_template(template, where)
        template_meta = _obj(template.get("metadata"), f"{where}.metadata" if where else "metadata")
        for index in range(min(times, MAX_PODS)):
            pod_name = name if doc["kind"] == "Pod" else f"{name}-{role}-{index}"
            pod_meta = {**template_meta, "name": pod_name, "namespace": namespace}
            if doc["kind"] != "Pod":
                pod_meta["ownerReferences"] = owner
            yield f"{namespace}/{pod_name}", {"metadata": pod_meta, "spec": template.get("spec") or {}}
