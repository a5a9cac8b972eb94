"""GCP placement on real estates: TCPX/TCPXO clusters across zones, capacity Google places densely itself, and
slurm-gcp's compact policy per exclusive job.

Shapes (the Compute API's JSON, through the demo builder):
- a regional managed instance group's instances name it in their `created-by` metadata item
  (projects/NUMBER/regions/REGION/instanceGroupManagers/NAME; a zonal group's is .../zones/ZONE/..., as the
  forseti-security recorded instance shows, forseti-security/forseti-security@9069bfb04e818e51f484d860a249de0d578d4cf3:
  tests/services/inventory/test_data/mock_gcp_results.py). A3 High / Mega GPU NICs sit on regional subnets of
  global VPC networks, so peers in other zones are reachable; RDMA networks are zonal ("RDMA network profiles").
- `scheduling.provisioningModel` RESERVATION_BOUND ("Bound to the lifecycle of the reservation in which it is
  provisioned", Compute v1 Scheduling.ProvisioningModel), the model future-reservation capacity is consumed with
  (AI Hypercomputer, "Obtain capacity"); `reservationAffinity` {"consumeReservationType": "SPECIFIC_RESERVATION",
  "key": "compute.googleapis.com/reservation-name", "values": [NAME]}. AI Hypercomputer, "Compact placement policy
  and workload policy overview": capacity from future reservations or MIG resize requests of A4X, A4, A3 Ultra, A3
  Mega and A3 High (8 GPUs) is densely colocated.
- slurm-gcp v6 names each exclusive job's compact policy {cluster}-slurmgcp-managed-{nodeset}-{job}-{chunk}
  (GoogleCloudPlatform/cluster-toolkit@02895beac250f6e3a07b2cbb9947afb510035c16:community/modules/scheduler/
  schedmd-slurm-gcp-v6-controller/modules/slurm_files/scripts/resume.py, _allocate_nodes_to_placements; its tests
  name c-slurmgcp-managed-n-4-0 for job 4 of nodeset n of cluster c).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_run import run

from fabriccheck.builders.demo_gcp import Project, a3_high_nets, a3_mega_nets, gke, slurm


def report_of(project: Project, tmp_path: Path, *args: str) -> tuple[int, dict[str, Any]]:
    project.write(tmp_path / "dump")
    result = run("gcp", "--from-dump", str(tmp_path / "dump"), "-f", "json", *args)
    assert "Traceback" not in result.stderr
    return result.returncode, json.loads(result.stdout)


def rules_of(report: dict[str, Any]) -> set[str]:
    return {f["rule"] for f in report["findings"]}


def mega_mig_over_zones() -> Project:
    """A regional MIG of four correct A3 Mega nodes spread over three zones of us-central1 (no compact policy: a
    compact policy holds one zone)."""
    project = Project()
    host, *gpu = a3_mega_nets(project)
    for i, zone in enumerate(("us-central1-a", "us-central1-b", "us-central1-c", "us-central1-a")):
        project.instance(
            f"a3m-{i}", "a3-megagpu-8g", [(host, "GVNIC")] + [(n, "GVNIC") for n in gpu], {},
            zone=zone, mig="a3m-regional", regional_mig=True,
        )  # fmt: skip
    return project


def test_a3_mega_across_zones_loses_compact_placement_not_its_fabric(tmp_path: Path) -> None:
    code, report = report_of(mega_mig_over_zones(), tmp_path)
    assert code == 0 and report["complete"] is True  # a warning: the fabric is used
    assert rules_of(report) == {"GCP112"}
    [cluster] = report["clusters"]
    assert cluster["id"].endswith("instanceGroupManagers/a3m-regional")
    penalty = cluster["penalty"]
    assert penalty["cannot_run"] is False and penalty["slowdown"]["high"] < 1.1
    message = report["findings"][0]["message"]
    assert "3 zones (us-central1-a, us-central1-b, us-central1-c)" in message and "regional subnets" in message


def test_a3_ultra_across_zones_still_cannot_run(tmp_path: Path) -> None:
    project = Project()
    project.network("u-host", mtu=8896)
    project.network("u-host2", mtu=8896)
    project.network("roce-a", mtu=8896, profile_zone="us-central1-a")
    for i, zone in enumerate(("us-central1-a", "us-central1-b")):
        nics = [("u-host", "GVNIC"), ("u-host2", "GVNIC")] + [("roce-a", "MRDMA")] * 8
        project.instance(f"u-{i}", "a3-ultragpu-8g", nics, gke("t", "ultra"), zone=zone, reservation="u-res")
    code, report = report_of(project, tmp_path)
    assert code == 1 and "GCP111" in rules_of(report)
    assert report["clusters"][0]["penalty"]["cannot_run"] is True


def _a3_high(project: Project, name: str, machine: str = "a3-highgpu-8g", **kwargs: Any) -> None:
    host, *gpu = a3_high_nets(project)
    for i in range(2):
        project.instance(
            f"{name}-{i}", machine, [(host, "GVNIC")] + [(n, "GVNIC") for n in gpu], gke("t", name), **kwargs
        )


def test_future_reservation_capacity_of_a3_mega_and_a3_high_needs_no_policy(tmp_path: Path) -> None:
    project = Project()
    host, *gpu = a3_mega_nets(project)
    for i in range(2):
        project.instance(
            f"m-{i}", "a3-megagpu-8g", [(host, "GVNIC")] + [(n, "GVNIC") for n in gpu], gke("t", "mega"),
            reservation="fr-a3m-block-1", provisioning="RESERVATION_BOUND",
        )  # fmt: skip
    _a3_high(project, "high", reservation="fr-a3h-block-1", provisioning="RESERVATION_BOUND")
    code, report = report_of(project, tmp_path, "--fail-on", "warning")
    assert (code, report["findings"]) == (0, [])
    assert {c["status"] for c in report["clusters"]} == {"clean"}


def test_a_reservation_the_answer_cannot_tell_is_said_not_asserted(tmp_path: Path) -> None:
    """A specific reservation of A3 High with the standard provisioning model: a Reservations API reservation
    (not dense) or dense capacity arranged otherwise; GCP130 still warns, and says it cannot tell."""
    project = Project()
    _a3_high(project, "high", reservation="a3h-res-1")
    _, report = report_of(project, tmp_path)
    [finding] = report["findings"]
    assert finding["rule"] == "GCP130"
    assert (
        "The nodes consume reservation a3h-res-1: capacity of a future reservation is placed densely"
        in (finding["message"])
    )
    assert "the answer does not say whether it is one" in finding["message"]


def test_reservation_bound_a3_high_with_fewer_gpus_is_no_dense_capacity(tmp_path: Path) -> None:
    project = Project()
    _a3_high(project, "high", reservation="fr-1", provisioning="RESERVATION_BOUND")
    _a3_high(project, "loose")
    _, report = report_of(project, tmp_path)
    # The 8-GPU reservation-bound pool is dense; the pool without a policy or reservation is loose, and said plainly.
    [finding] = report["findings"]
    assert finding["rule"] == "GCP130" and finding["cluster"].endswith("/loose")
    assert "consume reservation" not in finding["message"]


def slurm_jobs() -> Project:
    """One A3 Mega nodeset of a slurm-gcp cluster: two exclusive jobs of two nodes, each under its own compact
    policy, and two static nodes under the nodeset's job-0 policy."""
    project = Project()
    host, *gpu = a3_mega_nets(project)
    nics = [(host, "GVNIC")] + [(n, "GVNIC") for n in gpu]
    for policy, names in (
        ("hpc-slurmgcp-managed-a3m-1234-0", ("hpc-a3m-0", "hpc-a3m-1")),
        ("hpc-slurmgcp-managed-a3m-1235-0", ("hpc-a3m-2", "hpc-a3m-3")),
        ("hpc-slurmgcp-managed-a3m-0-0", ("hpc-a3m-4", "hpc-a3m-5")),
    ):
        project.policy(policy, vm_count=None)
        for name in names:
            project.instance(name, "a3-megagpu-8g", nics, slurm("hpc", "a3m"), [policy])
    return project


def test_nodes_under_different_slurm_job_policies_are_judged_per_job(tmp_path: Path) -> None:
    code, report = report_of(slurm_jobs(), tmp_path, "--fail-on", "warning")
    assert (code, report["findings"]) == (0, [])
    clusters = {c["id"].split(":")[-1]: c for c in report["clusters"]}
    assert set(clusters) == {"slurm-job/hpc/a3m/1234", "slurm-job/hpc/a3m/1235", "slurm-nodeset/hpc/a3m"}
    assert {c["status"] for c in clusters.values()} == {"clean"}
    assert clusters["slurm-job/hpc/a3m/1234"]["nodes"] == ["hpc-a3m-0", "hpc-a3m-1"]


def test_a_job_that_spans_two_policy_chunks_is_one_cluster_with_several_policies(tmp_path: Path) -> None:
    project = slurm_jobs()
    project.policy("hpc-slurmgcp-managed-a3m-1235-1", vm_count=None)
    project.instances[3]["resourcePolicies"] = [
        project.url("regions/us-central1/resourcePolicies/hpc-slurmgcp-managed-a3m-1235-1")
    ]
    _, report = report_of(project, tmp_path)
    [finding] = report["findings"]
    assert finding["rule"] == "GCP130" and finding["cluster"].endswith("slurm-job/hpc/a3m/1235")
    assert "verdict: several" in finding["message"]
