"""Shared VPC: the GPU networks and their firewall rules live in a host project, the instances in a service project.

Shape: a service project's instance names the host project's network and subnetwork in its networkInterfaces
(https://www.googleapis.com/compute/v1/projects/HOST/global/networks/NAME and .../regions/R/subnetworks/NAME;
Cluster Toolkit's multivpc module passes `subnetwork_project` for the same reason, GoogleCloudPlatform/
cluster-toolkit@10f808466679d2c4849db92675c0eca15e4e1a80:modules/network/multivpc/main.tf), while the networks,
subnetworks and firewall rules are listed by `gcloud compute ... list --project HOST` (Google Cloud, "Shared VPC
overview": the host project holds the networks and their firewall rules; `gcloud compute shared-vpc
get-host-project SERVICE` names it). The lists are the demo builder's, in the Compute API's JSON shape.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_run import run
from gce_replay import ComputeReplay, serve, use_fake_google_key

from fabriccheck import flow
from fabriccheck.builders.demo_gcp import Project, a3_high_nets
from fabriccheck.providers.gcp import collect
from fabriccheck.providers.gcp.dump import load_dump

HOST = "gpu-net-host"
SERVICE = "train-service"


def shared_vpc() -> tuple[Project, Project]:
    """A host project with the A3 High networks (MTU 8244, internal traffic allowed on every port) and a service
    project with two A3 High nodes of one GKE node pool on them, under one compact policy."""
    host, service = Project(HOST), Project(SERVICE)
    host_net, *gpu = a3_high_nets(host)
    service.policy("a3h-compact", vm_count=2)
    for i in range(2):
        service.instance(
            f"a3h-{i}",
            "a3-highgpu-8g",
            [(host_net, "GVNIC")] + [(n, "GVNIC") for n in gpu],
            {"goog-k8s-cluster-name": "train", "goog-k8s-node-pool-name": "a3h"},
            ["a3h-compact"],
            network_project=HOST,
        )
    return host, service


def test_the_service_projects_nodes_are_judged_on_the_host_projects_networks(tmp_path: Path) -> None:
    host, service = shared_vpc()
    host.write(tmp_path / HOST)
    service.write(tmp_path / SERVICE)
    inventory = load_dump(tmp_path)
    assert inventory.complete
    report = flow.run(inventory, flow.Options())
    [cluster] = report.clusters
    assert (cluster.account, cluster.status) == (SERVICE, "clean")
    assert not report.findings


def test_a_firewall_fault_in_the_host_project_is_found(tmp_path: Path) -> None:
    host, service = shared_vpc()
    host.firewalls = [f for f in host.firewalls if "a3-gpu-1" not in f["name"]]
    host.write(tmp_path / HOST)
    service.write(tmp_path / SERVICE)
    report = flow.run(load_dump(tmp_path), flow.Options())
    assert [(f.rule, f.account) for f in report.findings] == [("GCP110", SERVICE)] * 2
    assert "GPU NICs on a3-gpu-1," in report.findings[0].message


def test_a_host_project_not_collected_is_unknown_and_named_never_missing(tmp_path: Path) -> None:
    _, service = shared_vpc()
    service.write(tmp_path / SERVICE)
    result = run("gcp", "--from-dump", str(tmp_path), "-f", "json")
    assert result.returncode == 2, result.stderr
    report = json.loads(result.stdout)
    assert report["findings"] == []  # no GCP110 "missing", no GCP140 on networks it never saw
    [cluster] = report["clusters"]
    assert cluster["status"] == "incomplete"
    reasons = {u["rule"]: u["reason"] for u in cluster["not_judged"]}
    assert set(reasons) >= {"GCP110", "GCP140"}
    assert reasons["GCP110"] == (
        f"firewall rules were not collected for project {HOST}, which owns network a3-gpu-0 "
        f"(a Shared VPC host project of {SERVICE}: collect it too)"
    )
    assert f"networks were not collected for project {HOST}" in reasons["GCP140"]


@pytest.fixture
def google_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    key = use_fake_google_key(tmp_path, monkeypatch, SERVICE)
    yield key


def test_a_live_scan_of_both_projects_looks_the_networks_up_in_the_host(google_key: Path) -> None:
    host, service = shared_vpc()
    replay = ComputeReplay.from_files({HOST: host.files(), SERVICE: service.files()})
    env = {**os.environ, "GOOGLE_APPLICATION_CREDENTIALS": str(google_key)}
    with serve(replay) as url:
        both = run("gcp", "--endpoint-url", url, "-p", SERVICE, "-p", HOST, "-f", "json", env=env)
        alone = collect.collect_live([SERVICE], endpoint_url=url)
    assert both.returncode == 0, both.stderr
    report: dict[str, Any] = json.loads(both.stdout)
    assert report["complete"] is True
    assert [c["status"] for c in report["clusters"]] == ["clean"]
    # Scanned alone, the service project's GPU networks are not judged: their project was not asked for.
    judged = flow.run(alone, flow.Options())
    assert not judged.findings
    assert [c.status for c in judged.clusters] == ["incomplete"]
