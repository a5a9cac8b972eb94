"""Verdicts on real AWS shapes (issue: right on real AWS accounts). Answers are built in the EC2 API's shape
(tests/ec2_shapes.py) or taken from the recorded DescribeInstanceTypes answer moto ships."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import cli_run
import moto
import pytest
import yaml
from ec2_shapes import ACCOUNT, answers, instance, placement_group, security_group, write

from fabriccheck import catalog, flow, penalty, report
from fabriccheck.errors import FabricCheckError
from fabriccheck.providers.aws.dump import load_dump
from fabriccheck.providers.aws.instance_types import capability_from_instance_type

ROOT = Path(__file__).resolve().parent.parent


def _recorded() -> dict[str, Any]:
    path = os.path.join(os.path.dirname(moto.__file__), "ec2/resources/instance_types.json.gz")
    with gzip.open(path) as raw:
        loaded: dict[str, Any] = json.load(raw)
    return loaded


def _report(folder: Path, **options: Any) -> report.Report:
    return flow.run(load_dump(folder), flow.Options(**options))


def _pairs(report: report.Report) -> set[tuple[str, tuple[str, ...]]]:
    return {(f.rule, tuple(f.resources)) for f in report.findings}


# ------------------------------------------------------------------------------------------- 1. bandwidth


@pytest.mark.parametrize(
    ("name", "fabric_gbps", "ethernet_gbps"),
    [
        ("p6-b200.48xlarge", 3200, 200),  # cards say 8 x 200; NetworkPerformance "3200 Gigabit"
        ("g6e.48xlarge", 400, 100),  # cards say 4 x 400; the instance has 400 in all
        ("g6e.24xlarge", 200, 100),
        ("p6-b300.48xlarge", 6400, 350),  # cards add up to 6750
        ("hpc6id.32xlarge", 200, 100),
        ("p4d.24xlarge", 400, 100),  # "4x 100 Gigabit"
    ],
)
def test_live_bandwidth_follows_network_performance(name: str, fabric_gbps: float, ethernet_gbps: float) -> None:
    cap = capability_from_instance_type(_recorded()[name], "live")
    assert (cap.fabric_gbps, cap.ethernet_gbps) == (fabric_gbps, ethernet_gbps)


def _aws_catalog_types() -> list[str]:
    rows = yaml.safe_load((ROOT / "fabriccheck" / "data" / "catalog.yaml").read_text())["types"]
    recorded = _recorded()
    return [r["type"] for r in rows if r["provider"] == "aws" and r["type"] in recorded]


@pytest.mark.parametrize("name", _aws_catalog_types())
def test_live_answer_and_catalog_give_the_same_verdict_and_penalty(name: str) -> None:
    """The live answer wins over the catalog, so the two must agree where a verdict or penalty depends on them."""
    live = capability_from_instance_type(_recorded()[name], "live")
    table = catalog._catalog_rows()[0][name]
    if name == "trn2u.48xlarge":  # the recording carries no NeuronInfo for trn2u; the catalog row fills it
        live = live.model_copy(update={"accelerators": table.accelerators, "accelerator_name": table.accelerator_name})
    fields = ("fabric", "fabric_interfaces", "fabric_gbps", "ethernet_gbps", "accelerators")
    assert {f: getattr(live, f) for f in fields} == {f: getattr(table, f) for f in fields}
    resolved = catalog.resolve(name, {name: live})
    assert resolved is not None
    workload = penalty.WORKLOADS["llm-8b-ddp"]
    states = [penalty.FabricState("tcp-fallback"), penalty.FabricState("partial", nics_used=1)]
    for state in states:
        from_live = penalty.estimate(penalty.FabricDescription.from_capability(resolved), 4, state, workload)
        from_table = penalty.estimate(penalty.FabricDescription.from_capability(table), 4, state, workload)
        assert (from_live.estimated, from_live.low, from_live.high) == (
            from_table.estimated,
            from_table.low,
            from_table.high,
        )


# ------------------------------------------------------------------------------------------- 2-4. grouping


def test_parallelcluster_compute_resources_are_clusters_of_their_own(tmp_path: Path) -> None:
    def node(n: int, kind: str, resource: str) -> dict[str, Any]:
        tags = {
            "parallelcluster:cluster-name": "hpc",
            "parallelcluster:queue-name": "gpu",
            "parallelcluster:compute-resource-name": resource,
        }
        return instance(f"i-0{n:016x}", kind, efa=32 if kind.startswith("p5") else 4, group=f"pg-{resource}", tags=tags)

    nodes = [node(1, "p5.48xlarge", "p5"), node(2, "p5.48xlarge", "p5"), node(3, "p4d.24xlarge", "p4d")]
    nodes.append(node(4, "p4d.24xlarge", "p4d"))
    pgs = [placement_group("pg-p5"), placement_group("pg-p4d")]
    report = _report(write(tmp_path, answers(nodes, placement_groups=pgs)))
    assert sorted(c.id.rsplit("/", 1)[-1] for c in report.clusters) == ["p4d", "p5"]
    assert {c.grouped_by for c in report.clusters} == {"ParallelCluster compute resource"}
    assert report.findings == []  # no family mix (AWS113), no placement split (AWS120)


def test_efa_is_not_expected_on_outposts(tmp_path: Path) -> None:
    arn = f"arn:aws:outposts:us-east-1:{ACCOUNT}:outpost/op-0123456789abcdef0"
    nodes = [instance(f"i-0{n:016x}", "p4d.24xlarge", efa=0, group=None, OutpostArn=arn) for n in (1, 2)]
    report = _report(write(tmp_path, answers(nodes)))
    assert not {f.rule for f in report.findings} & {"AWS101", "AWS120"}
    # The same nodes in the Region are flagged.
    for node in nodes:
        del node["OutpostArn"]
    assert {"AWS101", "AWS120"} <= {f.rule for f in _report(write(tmp_path, answers(nodes))).findings}


def test_inference_fleets_are_skipped_and_said_so(tmp_path: Path) -> None:
    inf = [instance(f"i-0{n:016x}", "inf2.48xlarge", efa=0, group=None) for n in (1, 2)]
    report = _report(write(tmp_path / "a", answers(inf)))
    assert report.findings == [] and report.clusters == []
    [skipped] = report.skipped_clusters
    assert skipped.role == "inference" and "inf2.48xlarge is an inference type" in skipped.reason
    assert report.summary.skipped_clusters == 1

    tagged = [
        instance(
            f"i-0{n:016x}",
            "p4d.24xlarge",
            efa=0,
            tags={"aws:autoscaling:groupName": "serve", "fabriccheck:role": "Inference"},
        )
        for n in (1, 2)
    ]
    report = _report(write(tmp_path / "b", answers(tagged)))
    assert report.findings == [] and [s.reason for s in report.skipped_clusters] == [
        "tagged fabriccheck:role=inference"
    ]

    ignored = [{**n, "Tags": n["Tags"] + [{"Key": "fabriccheck:role", "Value": "ignore"}]} for n in inf]
    assert _report(write(tmp_path / "c", answers(ignored))).skipped_clusters[0].role == "ignore"

    odd = [
        instance(
            f"i-0{n:016x}", "p4d.24xlarge", efa=0, tags={"aws:autoscaling:groupName": "g", "fabriccheck:role": "batch"}
        )
        for n in (1, 2)
    ]
    report = _report(write(tmp_path / "d", answers(odd)))
    assert "AWS101" in {f.rule for f in report.findings}  # an unknown role is judged as training ...
    assert any("fabriccheck:role takes training, inference or ignore" in n for n in report.notes)  # ... and said


# ------------------------------------------------------------------------------------------- 5. unseen groups


def test_a_security_group_not_collected_is_unknown_and_named(tmp_path: Path) -> None:
    nodes = [instance(f"i-0{n:016x}", security_group="sg-shared") for n in (1, 2)]
    report = _report(write(tmp_path, answers(nodes, groups=[security_group("sg-other")])))
    assert "AWS110" not in {f.rule for f in report.findings}
    [cluster] = report.clusters
    assert cluster.status == "incomplete"
    [unjudged] = [n for n in cluster.not_judged if n.rule == "AWS110"]
    assert "sg-shared" in unjudged.reason and unjudged.resources == []


# ------------------------------------------------------------------------------------------- 6-7. dumps


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_run.run(*args)


def test_a_truncated_dump_is_incomplete_and_says_how_to_redo_it(tmp_path: Path) -> None:
    docs = answers([instance(f"i-0{n:016x}") for n in (1, 2)])
    docs["describe-security-groups.json"]["NextToken"] = "eyJ2IjoxfQ=="
    write(tmp_path, docs)
    result = _cli("aws", "--from-dump", str(tmp_path), "-f", "json")
    assert result.returncode == 2, result.stderr
    [error] = json.loads(result.stdout)["errors"]
    assert error["code"] == "Truncated" and "--max-items" in error["message"]
    assert "aws ec2 describe-security-groups --output json" in error["message"]


@pytest.mark.parametrize("region", ["eusc-de-east-1", "us-gov-west-1", "cn-north-1", "us-isob-east-1"])
def test_every_partitions_regions_are_read(tmp_path: Path, region: str) -> None:
    nodes = [instance(f"i-0{n:016x}", zone=f"{region}a") for n in (1, 2)]
    write(tmp_path / region, answers(nodes))
    report = _report(tmp_path)
    assert report.complete and {n for c in report.clusters for n in c.nodes} == {n["InstanceId"] for n in nodes}
    assert all(f":{region}:" in c.id for c in report.clusters)


def test_a_folder_that_is_neither_region_nor_account_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "us-east-1", answers([instance("i-00000000000000001")]))
    write(tmp_path / "backup", answers([instance("i-00000000000000002")]))
    with pytest.raises(FabricCheckError, match=r"backup is neither a region .* nor a 12-digit account folder"):
        load_dump(tmp_path)


# ------------------------------------------------------------------------------------------- 8-10


def test_capacity_block_instances_need_no_placement_group(tmp_path: Path) -> None:
    nodes = [
        instance(f"i-0{n:016x}", "p5.48xlarge", efa=32, group=None, InstanceLifecycle="capacity-block") for n in (1, 2)
    ]
    assert "AWS120" not in {f.rule for f in _report(write(tmp_path, answers(nodes))).findings}


def test_stopped_and_terminated_nodes_are_counted_not_judged(tmp_path: Path) -> None:
    nodes = [
        instance("i-00000000000000001", efa=0),
        instance("i-00000000000000002", efa=0, state="stopped"),
        instance("i-00000000000000003", efa=0, state="shutting-down"),
        instance("i-00000000000000004", efa=0, state="pending"),
    ]
    report = _report(write(tmp_path, answers(nodes)))
    assert report.summary.nodes_by_state == {"pending": 1, "running": 1, "shutting-down": 1, "stopped": 1}
    assert report.summary.nodes == 2
    flagged = {r for f in report.findings if f.rule == "AWS101" for r in f.resources}
    assert flagged == {"i-00000000000000001", "i-00000000000000004"}


def test_every_version_listed_only_default_and_latest_are_judged(tmp_path: Path) -> None:
    def version(number: int, default: bool) -> dict[str, Any]:
        return {
            "LaunchTemplateId": "lt-0123456789abcdef0",
            "LaunchTemplateName": "gpu",
            "VersionNumber": number,
            "DefaultVersion": default,
            "CreatedBy": f"arn:aws:iam::{ACCOUNT}:user/ops",
            "LaunchTemplateData": {"InstanceType": "p5.48xlarge", "NetworkInterfaces": [{"DeviceIndex": 0}]},
        }

    templates = [version(1, False), version(2, True), version(3, False)]
    report = _report(write(tmp_path, answers([], templates=templates)))
    found = {f.resources[0]: f.message for f in report.findings if f.rule == "AWS140"}
    assert set(found) == {"lt-0123456789abcdef0:2", "lt-0123456789abcdef0:3"}
    assert "the default version" in found["lt-0123456789abcdef0:2"]
    assert "the latest version" in found["lt-0123456789abcdef0:3"]


# ------------------------------------------------------------------------------------------- 11. catalog


@pytest.mark.parametrize(
    ("name", "gpus"),
    [("p2.16xlarge", 16), ("p3.16xlarge", 8), ("p3.2xlarge", 1), ("g3.16xlarge", 4), ("g4ad.16xlarge", 4)],
)
def test_older_accelerated_types_resolve(name: str, gpus: int) -> None:
    cap = catalog.resolve(name, {})
    assert cap is not None and cap.accelerators == gpus and cap.fabric.value == "none"


def test_no_accelerated_type_of_the_recorded_answer_is_unknown() -> None:
    accelerated = [
        name
        for name, item in _recorded().items()
        if (item.get("GpuInfo") or {}).get("Gpus") or (item.get("NeuronInfo") or {}).get("NeuronDevices")
    ]
    assert len(accelerated) > 50
    assert [t for t in accelerated if catalog.resolve(t, {}) is None] == []


# ------------------------------------------------------------------------------------------- 12-13. the gate


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--select", ""], "--select: an empty rule id or category"),
        (["--ignore", "AWS"], "--select / --ignore leave no rule to run"),
        (["--select", "AWS1", "--ignore", "aws1"], "--select / --ignore leave no rule to run"),
        (["--select", "nothing-like-this"], "no rule or category matches 'nothing-like-this'"),
    ],
)
def test_a_selection_that_runs_no_rule_is_an_error(args: list[str], needle: str) -> None:
    result = _cli("aws", "--from-dump", str(ROOT / "fixtures" / "demo" / "aws"), *args)
    assert result.returncode == 2 and needle in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_selection_is_case_insensitive() -> None:
    demo = str(ROOT / "fixtures" / "demo" / "aws")
    lower = json.loads(_cli("aws", "--from-dump", demo, "-f", "json", "--select", "aws110,Placement").stdout)
    assert set(lower["rules"]) == {"AWS110", "AWS120", "AWS121", "AWS150", "AWS160"}


def test_a_cluster_of_an_unknown_type_is_incomplete_and_fails_the_gate(tmp_path: Path) -> None:
    nodes = [instance(f"i-0{n:016x}", "p9.96xlarge") for n in (1, 2)]
    docs = answers(nodes)
    docs["describe-instance-types.json"] = {"InstanceTypes": []}  # the live answer does not know it either
    write(tmp_path, docs)
    result = _cli("aws", "--from-dump", str(tmp_path), "-f", "json")
    report = json.loads(result.stdout)
    # Everything was collected (no error) ... but the run cannot pass a gate, and `complete` says so (issue 28).
    assert result.returncode == 2 and report["errors"] == [] and report["complete"] is False
    [cluster] = report["clusters"]
    assert cluster["status"] == "incomplete"  # ... but nothing could be judged on an unknown type
    assert {n["rule"] for n in cluster["not_judged"]} >= {"AWS101", "AWS102"}
    assert all("p9.96xlarge is unknown" in n["reason"] for n in cluster["not_judged"])


def test_only_the_clouds_in_the_inventory_have_their_rules_run_and_listed(tmp_path: Path) -> None:
    write(tmp_path, answers([instance(f"i-0{n:016x}") for n in (1, 2)]))
    report = _report(tmp_path)
    assert report.rules and all(r.startswith("AWS") for r in report.rules)
    with pytest.raises(FabricCheckError, match="--select / --ignore leave no rule to run on aws"):
        _report(tmp_path, select=["AZ110"])  # an Azure rule exists, but there is no Azure node here
