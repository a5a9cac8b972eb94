"""NCCL_SOCKET_IFNAME and the GKE plugins' NIC lists (K8S131, K8S132), on the demo's real-shaped pods.

What NCCL_SOCKET_IFNAME does: NVIDIA's NCCL env.html (prefix lists, `^` to exclude, `=` for exact names; lo and docker*
are skipped unless nothing else is left). Where InfiniBand, EFA or a GKE plugin carries the data it picks only the
bootstrap / control interface: GKE's TCPXO recipe sets NCCL_SOCKET_IFNAME=eth0 beside NCCL_FASTRAK_CTRL_DEV=eth0 and
NCCL_FASTRAK_IFNAME=eth1,...,eth8 (container-engine-accelerators gpudirect-tcpxo README, gke-tcpxo-release-notes.md in
the shared samples); aws-samples/awsome-distributed-training's FSDP PyTorchJob sets `^lo`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_run import run

from fabriccheck.model import FabricKind
from fabriccheck.providers.k8s.support import _plugin_ifname, _socket_ifname
from fabriccheck.resources.k8s import PodPart

CLUSTERS = Path(__file__).resolve().parents[1] / "fixtures" / "demo" / "k8s"
VM_NAMES = "enp6s0,enp7s0,enp13s0,enp14s0,enp134s0,enp135s0,enp141s0,enp142s0"  # a VM's NICs, not a pod's


def _with_env(tmp_path: Path, cluster: str, workload: str, env: dict[str, str]) -> Path:
    """A copy of a demo cluster whose pods of `workload` set `env` in their first container (replacing a value)."""
    dump = tmp_path / cluster
    shutil.copytree(CLUSTERS / cluster, dump)
    pods = json.loads((dump / "pods.json").read_text())
    for pod in pods["items"]:
        if pod["metadata"]["name"].startswith(f"{workload}-"):
            container = pod["spec"]["containers"][0]
            kept = [v for v in container.get("env", []) if v["name"] not in env]
            container["env"] = kept + [{"name": k, "value": v} for k, v in env.items()]
    (dump / "pods.json").write_text(json.dumps(pods))
    return dump


def _findings(dump: Path, rule: str) -> tuple[set[str], dict[str, Any]]:
    result = run("k8s", "--from-dump", str(dump), "-f", "json", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return {r for f in report["findings"] if f["rule"] == rule for r in f["resources"] if "/" in r}, report


def test_the_demo_sets_these_variables_rightly() -> None:
    for cluster in ("eks-train", "gke-a3mega", "aks-ndv5"):
        _, report = _findings(CLUSTERS / cluster, "K8S131")
        assert not {"K8S131", "K8S132"} & {f["rule"] for f in report["findings"]}


FSDP = {"default/llama3-1-8b-fsdp-worker-0", "default/llama3-1-8b-fsdp-worker-1"}


def test_lo_on_a_two_node_efa_job_cannot_run(tmp_path: Path) -> None:
    dump = _with_env(tmp_path, "eks-train", "llama3-1-8b-fsdp-worker", {"NCCL_SOCKET_IFNAME": "lo"})
    flagged, report = _findings(dump, "K8S131")
    assert flagged == FSDP
    cluster = next(c for c in report["clusters"] if c["id"].endswith("/PyTorchJob/llama3-1-8b-fsdp"))
    assert cluster["penalty"]["cannot_run"] is True


@pytest.mark.parametrize("value", ["eth0", "^lo", "^lo,docker", "^=docker0", "ens"])
def test_an_ifname_that_leaves_a_real_interface_is_not_flagged(tmp_path: Path, value: str) -> None:
    dump = _with_env(tmp_path, "eks-train", "llama3-1-8b-fsdp-worker", {"NCCL_SOCKET_IFNAME": value})
    assert _findings(dump, "K8S131")[0] == set()


def test_an_mpijob_workers_own_env_is_not_what_its_ranks_see(tmp_path: Path) -> None:
    """mpirun starts an MPIJob's ranks over ssh with the variables it passes (-x), not the worker container's env."""
    dump = _with_env(tmp_path, "aks-ndv5", "nccl-tests-worker", {"NCCL_SOCKET_IFNAME": "lo"})
    assert _findings(dump, "K8S131")[0] == set()


def test_a_vms_nic_names_in_a_tcpxo_pod_leave_the_plugin_no_gpu_nic(tmp_path: Path) -> None:
    dump = _with_env(tmp_path, "gke-a3mega", "nccl-tcpxo-test", {"NCCL_FASTRAK_IFNAME": VM_NAMES})
    flagged, report = _findings(dump, "K8S132")
    assert {r.rsplit("-", 1)[0] for r in flagged} == {"default/nccl-tcpxo-test-0", "default/nccl-tcpxo-test-1"}
    assert not any(f["rule"] == "K8S131" for f in report["findings"])  # NCCL_SOCKET_IFNAME=eth0 stays harmless
    # A list naming some of the mapped interfaces is not flagged: K8S132 flags only one that names none.
    dump = _with_env(tmp_path / "half", "gke-a3mega", "nccl-tcpxo-test", {"NCCL_FASTRAK_IFNAME": "eth1,eth2"})
    assert _findings(dump, "K8S132")[0] == set()


@pytest.mark.parametrize(
    ("value", "flagged"),
    [
        ("lo", True),
        ("=lo", True),
        ("lo,docker0", True),
        ("docker", True),
        (" =docker0 ", True),
        ("^lo", False),
        ("^docker,lo", False),
        ("eth0", False),
        ("lo,eth0", False),
        ("l", False),  # a prefix of lo, but of other names too
        ("", False),
    ],
)
def test_socket_ifname_reading(value: str, flagged: bool) -> None:
    pod = PodPart(workload="ml/Job/j", kind="Job", env=(("NCCL_SOCKET_IFNAME", value),))
    assert bool(_socket_ifname(pod)) is flagged


def test_plugin_ifname_reading() -> None:
    mapped = PodPart(workload="ml/Job/j", kind="Job", interfaces=("eth1", "eth2", "eth3", "eth4"))
    tcpx = "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME"

    def flags(pod: PodPart, fabric: FabricKind, value: str, variable: str = tcpx) -> bool:
        return bool(_plugin_ifname(pod.model_copy(update={"env": ((variable, value),)}), fabric))

    assert flags(mapped, FabricKind.TCPX, "eth0")
    assert not flags(mapped, FabricKind.TCPX, "eth1,eth2,eth3,eth4")
    assert not flags(mapped, FabricKind.TCPX, "eth")  # a prefix of them: read leniently
    assert not flags(mapped, FabricKind.TCPXO, "eth0")  # TCPXO reads NCCL_FASTRAK_IFNAME, not the TCPX variable
    assert flags(mapped, FabricKind.TCPXO, "enp6s0", "NCCL_FASTRAK_IFNAME")
    assert not flags(mapped, FabricKind.RDMA, "enp6s0", "NCCL_FASTRAK_IFNAME")
    on_host = mapped.model_copy(update={"host_network": True})
    assert not flags(on_host, FabricKind.TCPX, "eth0")  # the node's names are not known
