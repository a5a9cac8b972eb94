"""Which NICs are GPU NICs (issue 28, item 7): an A3 Mega node carries nic0 and 8 GPU NICs ("NIC arrangement of
8+1", https://cloud.google.com/compute/docs/gpus/gpu-network-bandwidth; cluster-toolkit's A3 Mega blueprints build
multivpc with network_count 8). An extra gVNIC beyond them is GCP103 once per node; its network is no GPU network,
so GCP110 (firewall) and GCP140 (MTU) are not asked of it.

Shape: the demo project's `a3mextra` nodeset (tools/build_demo_gcp.py, gcloud `instances list --format=json`
records), its extra NIC moved to a network with the default MTU (1460) and no firewall rule: a storage VPC as
users add one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_run import run

from fabriccheck.builders.demo_gcp import Project, build


def _report(tmp_path: Path) -> dict[str, Any]:
    project = Project()
    build(project)
    storage = next(n for n in project.networks if n["name"] == "storage")
    storage.pop("mtu")  # unset: 1460
    project.firewalls = [f for f in project.firewalls if not f["network"].endswith("/networks/storage")]
    project.write(tmp_path / "dump")
    result = run("gcp", "--from-dump", str(tmp_path / "dump"), "-f", "json")
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_an_extra_gvnic_is_gcp103_once_and_no_gpu_network(tmp_path: Path) -> None:
    report = _report(tmp_path)
    extra = [f for f in report["findings"] if f["cluster"].endswith("/a3mextra")]
    assert sorted(f["rule"] for f in extra) == ["GCP103", "GCP103"]  # once per node, nothing on the storage VPC
    cluster = next(c for c in report["clusters"] if c["id"].endswith("/a3mextra"))
    assert cluster["complete"] is True  # judged: the 8 GPU networks are open and at 8244


def test_the_gpu_networks_are_still_judged_on_a_node_with_an_extra_nic(tmp_path: Path) -> None:
    """The 8 GPU NICs keep their rules: a GPU network closed on the same nodes is still GCP110."""
    project = Project()
    build(project)
    project.firewalls = [f for f in project.firewalls if not f["network"].endswith("/networks/a3m-gpu-7")]
    project.write(tmp_path / "dump")
    report = json.loads(run("gcp", "--from-dump", str(tmp_path / "dump"), "-f", "json").stdout)
    flagged = [f for f in report["findings"] if f["rule"] == "GCP110" and f["cluster"].endswith("/a3mextra")]
    assert len(flagged) == 2 and all("a3m-gpu-7" in f["message"] for f in flagged)
