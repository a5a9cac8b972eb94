"""`fabriccheck demo` holds a Slurm cluster: a ParallelCluster on the demo AWS account (fixtures/demo/slurm, made by
tools/build_demo_slurm.py from fixtures/slurm/pcluster, whose shapes are Slurm's own: fixtures/slurm/SOURCES.md),
joined to fixtures/demo/aws by NodeAddr, with a right and a wrong partition and job."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_run import run

ACCOUNT = "aws:111122223333:us-east-1:"
DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo"


def _demo() -> dict[str, Any]:
    result = run("demo", "-f", "json")
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_the_demo_slurm_cluster_has_a_right_and_a_wrong_partition_and_job() -> None:
    """train (one block, zone and placement group) and its job 101 are clean; spot (one block over two zones) and
    its job 102 are the zone findings; each is joined to the AWS cluster its instances belong to."""
    report = _demo()
    clusters = {c["id"].removeprefix("slurm:llm:slurm:"): c for c in report["clusters"] if c["provider"] == "slurm"}
    assert {k: (c["status"], c["cloud_clusters"]) for k, c in clusters.items()} == {
        "slurm-partition/train": ("clean", [ACCOUNT + "auto-scaling-group/llm-prod"]),
        "slurm-job/101": ("clean", [ACCOUNT + "auto-scaling-group/llm-prod"]),
        "slurm-partition/spot": ("findings", [ACCOUNT + "parallelcluster-queue/hpc-demo/gpu"]),
        "slurm-job/102": ("findings", [ACCOUNT + "parallelcluster-queue/hpc-demo/gpu"]),
    }
    found = {(f["rule"], f["cluster"].rsplit(":", 1)[-1]) for f in report["findings"] if f["provider"] == "slurm"}
    assert found == {
        ("SLURM120", "slurm-partition/spot"),
        ("SLURM141", "slurm-job/102"),
    }
    # Their instances are the AWS clusters': their GPU-hours are paid for once, by the AWS clusters.
    assert [c["instance"] for c in clusters["slurm-job/102"]["cloud_instances"]] == [
        i["instance"] for i in clusters["slurm-partition/spot"]["cloud_instances"]
    ]
    assert report["summary"]["gpu_hours_per_day"] == 13_728


def test_merge_joins_a_slurm_report_to_its_cloud_report(tmp_path: Path) -> None:
    """`fabriccheck merge` of the AWS report and the Slurm report of the same estate: each Slurm cluster names the AWS
    cluster its instances belong to, and the instances are paid for once (the AWS report's GPU-hours alone)."""
    aws, slurm = tmp_path / "aws.json", tmp_path / "slurm.json"
    cloud = run("aws", "--from-dump", str(DEMO / "aws"), "-f", "json", "-o", str(aws), "--fail-on", "never")
    assert cloud.returncode == 0, cloud.stderr
    made = run("slurm", "--from-dump", str(DEMO / "slurm"), "--cloud-dump", str(DEMO / "aws"), "-f", "json",
               "-o", str(slurm), "--fail-on", "never")  # fmt: skip
    assert made.returncode == 0, made.stderr
    merged = run("merge", str(aws), str(slurm), "-f", "json")
    report = json.loads(merged.stdout)
    joined = {c["id"]: c["cloud_clusters"] for c in report["clusters"] if c["provider"] == "slurm"}
    assert joined["slurm:llm:slurm:slurm-partition/spot"] == [ACCOUNT + "parallelcluster-queue/hpc-demo/gpu"]
    assert report["summary"]["gpu_hours_per_day"] == json.loads(aws.read_text())["summary"]["gpu_hours_per_day"]
