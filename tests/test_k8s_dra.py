"""Dynamic Resource Allocation: a pod's fabric, GPUs and IMEX channels are what its ResourceClaims give it.

Shapes followed (cited per test too):
- ResourceClaimTemplate of EFA devices: AWS containers blog "Simplify AI infrastructure for AWS Trainium and Elastic
  Fabric Adapter with Kubernetes Dynamic Resource Allocation" (`exactly: {deviceClassName: efa.networking.k8s.aws,
  count: N}`), karpenter.sh/docs/tasks/dra;
- a pod's `spec.resourceClaims[]` and container `resources.claims[]`: kubernetes/website
  content/en/examples/dra/dra-device-metadata-template-pod.yaml; `status.resourceClaimStatuses[]` and a claim's
  `status.allocation.devices.results[]` (request, driver, pool, device): the Kubernetes API reference, Pod v1 and
  ResourceClaim v1; v1beta1 keeps `deviceClassName` / `count` on the request itself;
- NVIDIA's GPU DRA driver classes (gpu.nvidia.com, compute-domain-default-channel.nvidia.com) and the ComputeDomain
  with its channel template: NVIDIA/k8s-dra-driver-gpu, and GoogleCloudPlatform/container-engine-accelerators
  gpudirect-rdma/nccl-test-a4x-max-jobset.yaml (copy in /work/shared/samples/k8s, used as it is below).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run
from kube_replay import KubeReplay, kubeconfig, serve

from fabriccheck.providers.k8s.claims import FABRIC_NIC, GPU, IMEX_CHANNEL, Claims
from fabriccheck.providers.k8s.objects import ClusterObjects, Normalizer
from fabriccheck.resources.k8s import PodPart

SAMPLES = Path("/work/shared/samples/k8s")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "k8s" / "dra"
A4X_MAX = SAMPLES / "gke-rdma-nccl-test-a4x-max-jobset.yaml"


def _node(
    name: str, instance_type: str, allocatable: dict[str, str] | None = None, provider_id: str = "", **labels: str
) -> dict[str, Any]:
    labels = {
        "node.kubernetes.io/instance-type": instance_type,
        "topology.kubernetes.io/zone": "us-east-1a",
        "topology.kubernetes.io/region": "us-east-1",
        "eks.amazonaws.com/nodegroup": "gpu",
        **labels,
    }
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": provider_id or f"aws:///us-east-1a/i-{name}"},
        "status": {"allocatable": allocatable or {}},  # a DRA node advertises no extended resource for its devices
    }


def _pod(name: str, node: str, claims: dict[str, str], gpus: int = 0, owner: str = "train") -> dict[str, Any]:
    """A JobSet's pod whose claims come from templates (claims: claim entry name -> template name), scheduled, with
    the claims made for it named in its status."""
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {"cpu": "8"}
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "labels": {"jobset.sigs.k8s.io/jobset-name": owner},
        },
        "spec": {
            "nodeName": node,
            "resourceClaims": [{"name": k, "resourceClaimTemplateName": v} for k, v in claims.items()],
            "containers": [
                {
                    "name": "main",
                    "image": "nccl-tests",
                    "resources": {"limits": limits, "claims": [{"name": k} for k in claims]},
                }
            ],
        },
        "status": {
            "phase": "Running",
            "resourceClaimStatuses": [{"name": k, "resourceClaimName": f"{name}-{k}"} for k in claims],
        },
    }


def _template(name: str, device_class: str, count: int | None = None, v1beta1: bool = False) -> dict[str, Any]:
    request: dict[str, Any] = {"deviceClassName": device_class}
    if count is None:
        request["allocationMode"] = "All"
    else:
        request["count"] = count
    spec = {"name": "devices", **request} if v1beta1 else {"name": "devices", "exactly": request}
    return {
        "apiVersion": "resource.k8s.io/v1beta1" if v1beta1 else "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"spec": {"devices": {"requests": [spec]}}},
    }


def _allocated(pod: str, entry: str, device_class: str, driver: str, devices: int) -> dict[str, Any]:
    """The claim made from a template for `pod`, allocated: one result per device, as the scheduler writes them."""
    results = [{"request": "devices", "driver": driver, "pool": pod, "device": f"dev-{i}"} for i in range(devices)]
    return {
        "kind": "ResourceClaim",
        "metadata": {"name": f"{pod}-{entry}", "namespace": "ml"},
        "spec": {"devices": {"requests": [{"name": "devices", "exactly": {"deviceClassName": device_class}}]}},
        "status": {"allocation": {"devices": {"results": results}}},
    }


def _dump(folder: Path, **kinds: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for plural, items in kinds.items():
        (folder / f"{plural}.json").write_text(json.dumps({"kind": "List", "items": items}))
    return folder


def _report(folder: Path) -> tuple[int, dict[str, Any]]:
    result = run("k8s", "--from-dump", str(folder), "-f", "json")
    assert result.returncode in (0, 1), result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return result.returncode, report


def _rules(report: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f["rule"], r) for f in report["findings"] for r in f["resources"]}


def _p5_efa_by_claim(tmp_path: Path) -> Path:
    nodes = [_node(n, "p5.48xlarge", {"nvidia.com/gpu": "8"}) for n in ("n1", "n2")]
    pods = [_pod(f"train-{i}", f"n{i + 1}", {"efa": "efa-32"}, gpus=8) for i in range(2)]
    claims = [_allocated(f"train-{i}", "efa", "efa.networking.k8s.aws", "dra.net", 32) for i in range(2)]
    templates = [_template("efa-32", "efa.networking.k8s.aws", 32)]
    return _dump(tmp_path / "eks-dra", nodes=nodes, pods=pods, resourceclaims=claims, resourceclaimtemplates=templates)


def test_p5_pods_that_get_efa_through_a_claim_are_clean(tmp_path: Path) -> None:
    """Two p5 pods, GPUs from the device plugin, all 32 EFA devices from a claim of device class
    efa.networking.k8s.aws (AWS containers blog, DRA for Trainium and EFA): was K8S101 "requests 0
    vpc.amazonaws.com/efa"."""
    code, report = _report(_p5_efa_by_claim(tmp_path))
    assert code == 0, report["findings"]
    [cluster] = report["clusters"]
    assert cluster["status"] == "clean" and cluster["gpus"] == 16
    assert report["complete"] is True


def test_p5_pods_whose_claim_gets_4_of_32_efa_devices_are_partial(tmp_path: Path) -> None:
    """The same pods when their allocated claims hold 4 EFA devices each: K8S102 (4 of 32), saying they were
    claimed through DRA."""
    folder = _p5_efa_by_claim(tmp_path)
    claims = [_allocated(f"train-{i}", "efa", "efa.networking.k8s.aws", "dra.net", 4) for i in range(2)]
    _dump(folder, resourceclaims=claims)
    code, report = _report(folder)
    assert code == 1
    assert _rules(report) == {("K8S102", "ml/train-0"), ("K8S102", "ml/train-1")}
    message = next(f["message"] for f in report["findings"])
    assert "4 of the 32" in message and "DRA" in message
    assert "claim all 32 of the node's EFA devices" in message  # the fix a DRA pod needs, not a device-plugin ask


def _gb200(tmp_path: Path, channel: bool = True, allocated: bool = False) -> Path:
    """A two-node p6e-gb200 job whose GPUs, IMEX channel and EFA all come from DRA: p6e-gb200 runs on EKS only so
    (EKS user guide, device management); the channel template is the one NVIDIA's controller makes from the
    ComputeDomain."""
    nodes = [_node(n, "p6e-gb200.36xlarge") for n in ("n1", "n2")]
    claims = {"gpus": "four-gpus", "efa": "all-efa"}
    if channel:
        claims["imex"] = "train-domain-channel"
    pods = [_pod(f"train-{i}", f"n{i + 1}", claims) for i in range(2)]
    domain = {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": "train-domain", "namespace": "ml"},
        "spec": {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": "train-domain-channel"}}},
    }
    templates = [_template("four-gpus", "gpu.nvidia.com", 4), _template("all-efa", "efa.networking.k8s.aws")]
    kinds: dict[str, list[dict[str, Any]]] = {
        "nodes": nodes,
        "pods": pods,
        "resourceclaimtemplates": templates,
        "computedomains": [domain],
    }
    if allocated:
        kinds["resourceclaims"] = [
            _allocated(f"train-{i}", "gpus", "gpu.nvidia.com", "gpu.nvidia.com", 4) for i in range(2)
        ] + [_allocated(f"train-{i}", "efa", "efa.networking.k8s.aws", "dra.net", 17) for i in range(2)]
    return _dump(tmp_path / "eks-gb200", **kinds)


@pytest.mark.parametrize("allocated", [False, True], ids=["templates", "allocated-claims"])
def test_a_gb200_job_with_everything_from_dra_is_judged_and_clean(tmp_path: Path, allocated: bool) -> None:
    """Was "0 nodes; 0 training clusters judged", exit 0: the pods ask for no extended resource at all."""
    code, report = _report(_gb200(tmp_path, allocated=allocated))
    assert report["summary"]["nodes"] == 2
    [cluster] = report["clusters"]
    assert cluster["gpus"] == 8 and cluster["status"] == "clean", report["findings"]
    assert code == 0


def test_a_gb200_job_without_an_imex_channel_loses_multi_node_nvlink(tmp_path: Path) -> None:
    """The same job with no ComputeDomain channel claim: K8S145, priced as each node an NVLink domain of its own."""
    code, report = _report(_gb200(tmp_path, channel=False))
    assert code == 1
    assert _rules(report) == {("K8S145", "ml/train-0"), ("K8S145", "ml/train-1")}
    [cluster] = report["clusters"]
    assert cluster["penalty"]["slowdown"]["high"] > 1.0


def test_an_unknown_device_class_is_named_and_the_fabric_not_judged(tmp_path: Path) -> None:
    """A claim of a class fabriccheck does not know is never "no fabric": K8S101 is not judged, the class is named,
    and the run cannot pass a gate."""
    nodes = [_node(n, "p5.48xlarge", {"nvidia.com/gpu": "8"}) for n in ("n1", "n2")]
    pods = [_pod(f"train-{i}", f"n{i + 1}", {"nic": "vendor-nics"}, gpus=8) for i in range(2)]
    templates = [_template("vendor-nics", "nic.example.com", 8)]
    result = run(
        "k8s",
        "--from-dump",
        str(_dump(tmp_path / "c", nodes=nodes, pods=pods, resourceclaimtemplates=templates)),
        "-f",
        "json",
    )
    report = json.loads(result.stdout)
    assert not any(rule == "K8S101" for rule, _ in _rules(report))
    assert "device class nic.example.com" in json.dumps(report)
    # Not judged, so the run cannot pass a gate (the top-level `complete` is another item of issue 28).
    assert [c["status"] for c in report["clusters"]] == ["incomplete"] and result.returncode == 2


def test_a_device_class_of_another_name_is_known_by_its_driver() -> None:
    """kubernetes-sigs/dranet: a DeviceClass selecting `device.driver == "dra.net"` under a name of the user's
    (dranet-rdma-for-mpi in its MPI guide) gives fabric NICs; v1beta1 requests keep count on the request."""
    device_class = {
        "kind": "DeviceClass",
        "metadata": {"name": "dranet-rdma-for-mpi"},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "dra.net"'}}]},
    }
    items = {
        "deviceclasses": [device_class],
        "resourceclaimtemplates": [_template("t", "dranet-rdma-for-mpi", 2, True)],
    }
    pod = _pod("p", "n1", {"nic": "t"})
    found = Claims(items).of_pod(pod, "ml")
    assert found.devices == ((FABRIC_NIC, 2),) and not found.unknown
    assert Claims({"resourceclaimtemplates": items["resourceclaimtemplates"]}).of_pod(pod, "ml").unknown


def test_the_a4x_max_nccl_test_manifests_are_judged_with_their_claims(tmp_path: Path) -> None:
    """GoogleCloudPlatform/container-engine-accelerators gpudirect-rdma/nccl-test-a4x-max-jobset.yaml, as it is
    (with __NUM_NODES__ set to 2, as its README's sed does): 8 mrdma.google.com NICs and a ComputeDomain channel per
    pod, judged against a4x-maxgpu-4g-metal nodes: clean. Without the channel claim: K8S145."""
    text = A4X_MAX.read_text().replace("__NUM_NODES__", "2")
    labels = {"cloud.google.com/gke-accelerator": "nvidia-gb300", "cloud.google.com/gke-nodepool": "a4x"}
    nodes = [
        _node(n, "a4x-maxgpu-4g-metal", {"nvidia.com/gpu": "4"}, f"gce://proj/us-central1-a/{n}", **labels)
        for n in ("g1", "g2")
    ]
    # GKE's gIB NCCL plugin installer DaemonSet (samples/k8s/gke-nccl-rdma-installer.yaml), as a dump holds it.
    installer = {"kind": "DaemonSet", "metadata": {"name": "nccl-rdma-installer", "namespace": "kube-system"}}
    nodes_dir = _dump(tmp_path / "gke", nodes=nodes, daemonsets=[installer])
    manifest = tmp_path / "jobset.yaml"
    manifest.write_text(text)
    result = run("k8s", "--manifests", str(manifest), "--nodes-from", str(nodes_dir), "-f", "json")
    report = json.loads(result.stdout)
    assert report["summary"]["nodes"] == 2
    assert result.returncode == 0, report["findings"]
    # The same JobSet without its IMEX channel claim.
    entry = "              - name: compute-domain-channel\n                resourceClaimTemplateName: "
    dropped = text.replace(entry + "nccl-test-compute-domain-channel\n", "")
    dropped = dropped.replace("                    - name: compute-domain-channel\n", "")
    assert dropped.count("compute-domain-channel") == 1  # the ComputeDomain's template name only
    manifest.write_text(dropped)
    result = run("k8s", "--manifests", str(manifest), "--nodes-from", str(nodes_dir), "-f", "json")
    assert {f["rule"] for f in json.loads(result.stdout)["findings"]} == {"K8S145"}, result.stdout[:2000]


def test_live_reads_dra_objects_at_the_version_the_server_serves(tmp_path: Path) -> None:
    """A 1.32 API server serves resource.k8s.io v1beta1 only: the live reader falls back to it and judges as the
    dump does (the real `kubernetes` client against tests/kube_replay.py on 127.0.0.1)."""
    folder = _p5_efa_by_claim(tmp_path)
    replay = KubeReplay.from_dump(folder, versions={"resourceclaims": "v1beta1", "resourceclaimtemplates": "v1beta1"})
    with serve(replay) as url:
        config = kubeconfig(tmp_path / "kubeconfig", url)
        result = run("k8s", "--kubeconfig", str(config), "-f", "json")
    assert result.returncode == 0, result.stdout[:2000]
    assert "/apis/resource.k8s.io/v1beta1/resourceclaims?limit=500" in replay.requests
    assert "/apis/resource.k8s.io/v1/resourceclaims?limit=500" in replay.requests
    report = json.loads(result.stdout)
    assert report["complete"] is True and [c["status"] for c in report["clusters"]] == ["clean"]


def test_claims_resolve_a_pods_devices_by_kind() -> None:
    """The normalizer's view: GPUs from gpu.nvidia.com claims count as the pod's accelerators, EFA as fabric NICs,
    the ComputeDomain channel as one IMEX channel; allocationMode All takes the node's all."""
    folder_items = {
        "nodes": [_node("n1", "p6e-gb200.36xlarge")],
        "pods": [_pod("p", "n1", {"gpus": "four-gpus", "efa": "all-efa", "imex": "d-channel"})],
        "resourceclaimtemplates": [
            _template("four-gpus", "gpu.nvidia.com", 4),
            _template("all-efa", "efa.networking.k8s.aws"),
        ],
        "computedomains": [
            {
                "kind": "ComputeDomain",
                "metadata": {"name": "d", "namespace": "ml"},
                "spec": {"channel": {"resourceClaimTemplate": {"name": "d-channel"}}},
            }
        ],
    }
    [node] = Normalizer(ClusterObjects(name="c", items=folder_items)).inventory("t").nodes
    pod = node.shape.part(PodPart)
    assert pod is not None
    assert node.shape.accelerators == 4 and pod.gpus == 4
    assert dict(pod.claimed) == {FABRIC_NIC: 256, IMEX_CHANNEL: 1}
    assert GPU not in dict(pod.claimed)


def test_resource_slices_say_what_all_takes_and_which_nics_have_rdma() -> None:
    """kubernetes-sigs/dranet: a DeviceClass `dranet` selecting `device.driver == "dra.net"`, and ResourceSlices
    (Kubernetes API, ResourceSlice v1: spec.driver, spec.pool.name, spec.nodeName, devices[].attributes) publishing
    each NIC with its `rdma` attribute. allocationMode All takes the 8 NICs the node's slice publishes; an allocated
    NIC whose slice says rdma false is not a fabric NIC."""
    nics = [{"name": f"gpu{i}rdma0", "attributes": {"rdma": {"bool": i < 7}}} for i in range(8)]
    slices = [
        {
            "kind": "ResourceSlice",
            "spec": {"driver": "dra.net", "nodeName": "n1", "pool": {"name": "n1"}, "devices": nics},
        }
    ]
    device_class = {
        "kind": "DeviceClass",
        "metadata": {"name": "dranet"},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "dra.net"'}}]},
    }
    items = {
        "deviceclasses": [device_class],
        "resourceslices": slices,
        "resourceclaimtemplates": [_template("all", "dranet")],
    }
    assert Claims(items).of_pod(_pod("p", "n1", {"nic": "all"}), "ml").devices == ((FABRIC_NIC, 8),)
    claim = _allocated("p", "nic", "dranet", "dra.net", 0)
    claim["status"]["allocation"]["devices"]["results"] = [
        {"request": "devices", "driver": "dra.net", "pool": "n1", "device": f"gpu{i}rdma0"} for i in range(8)
    ]
    found = Claims({**items, "resourceclaims": [claim]}).of_pod(_pod("p", "n1", {"nic": "all"}), "ml")
    assert found.devices == ((FABRIC_NIC, 7),)  # gpu7rdma0 has no RDMA


@pytest.mark.parametrize(
    ("name", "code", "rules"),
    [("eks-p5-efa-claims", 0, set()), ("eks-gb200", 0, set()), ("eks-gb200-no-imex", 1, {"K8S145"})],
)
def test_the_dra_fixture_clusters(name: str, code: int, rules: set[str]) -> None:
    """fixtures/k8s/dra (written from this file's helpers, shapes in fixtures/k8s/SOURCES.md): what a user runs
    with `fabriccheck k8s --from-dump fixtures/k8s/dra/NAME`."""
    result = run("k8s", "--from-dump", str(FIXTURES / name), "-f", "json")
    report = json.loads(result.stdout)
    assert result.returncode == code and {f["rule"] for f in report["findings"]} == rules
    assert report["summary"]["nodes"] == 2


def test_a_misshapen_claim_is_one_line_naming_it(tmp_path: Path) -> None:
    """Bad input: a claim whose status.allocation is not an object is one line naming the claim and the field,
    exit 2, never a traceback."""
    folder = _p5_efa_by_claim(tmp_path)
    claims = [_allocated(f"train-{i}", "efa", "efa.networking.k8s.aws", "dra.net", 32) for i in range(2)]
    claims[0]["status"] = {"allocation": "pending"}
    _dump(folder, resourceclaims=claims)
    result = run("k8s", "--from-dump", str(folder))
    assert result.returncode == 2
    assert one_clean_line(result) == (
        "fabriccheck: error: resourceclaims ml/train-0-efa: status.allocation is not an object"
    )
