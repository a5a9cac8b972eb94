"""An instance EC2 lists without network interfaces (issue 17, item 13): a pending launch whose interfaces have not
attached yet answers with `NetworkInterfaces` absent or []. Its VPC is the instance's own VpcId; with none, the
network is unknown (not judged), never a second VPC that splits the cluster (a false AWS111, "cannot run"); and
its EFA interfaces are unknown, never "has none attached" (a false AWS101).

The pending instance is written in the shape of a real `aws ec2 run-instances` answer for a pending instance
(lavanyak-hub/shell-practice@a5c09eec8327f98e77edf45beb7ab61f81f34ab7:19-loops.sh: Placement, State code 0
"pending", StateReason, top-level SubnetId and VpcId, SecurityGroups), with its interfaces left out as the issue
describes; the running nodes come from tests/ec2_shapes.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_run import run
from ec2_replay import Ec2Replay, serve
from ec2_shapes import ACCOUNT, answers, instance, write

from fabriccheck import flow, report
from fabriccheck.providers.aws import collect
from fabriccheck.providers.aws.dump import load_dump

VPC = f"vpc-{ACCOUNT[:8]}"  # the running nodes' VPC (ec2_shapes)
PENDING = "i-0c6075ae3e35f2fa0"


def _pending(interfaces: list[Any] | None, vpc: str | None = VPC) -> dict[str, Any]:
    """A p5.48xlarge of the trainers group, just launched: the real pending answer's fields, no interfaces."""
    found: dict[str, Any] = {
        "AmiLaunchIndex": 0,
        "ImageId": "ami-09c813fb71547fc4f",
        "InstanceId": PENDING,
        "InstanceType": "p5.48xlarge",
        "LaunchTime": "2025-10-14T13:05:31+00:00",
        "Monitoring": {"State": "disabled"},
        "Placement": {"AvailabilityZone": "us-east-1a", "GroupName": "pg-train", "Tenancy": "default"},
        "PrivateDnsName": "",
        "ProductCodes": [],
        "PublicDnsName": "",
        "State": {"Code": 0, "Name": "pending"},
        "StateTransitionReason": "",
        "SubnetId": f"subnet-{ACCOUNT[:4]}a",
        "Architecture": "x86_64",
        "BlockDeviceMappings": [],
        "ClientToken": "884159a1-f953-42de-9f1d-7c5f1172e18a",
        "EbsOptimized": False,
        "EnaSupport": True,
        "Hypervisor": "xen",
        "RootDeviceName": "/dev/sda1",
        "RootDeviceType": "ebs",
        "SecurityGroups": [{"GroupName": "sg-efa", "GroupId": "sg-efa"}],
        "SourceDestCheck": True,
        "StateReason": {"Code": "pending", "Message": "pending"},
        "Tags": [{"Key": "aws:autoscaling:groupName", "Value": "trainers"}],
        "VirtualizationType": "hvm",
    }
    if vpc is not None:
        found["VpcId"] = vpc
    if interfaces is not None:
        found["NetworkInterfaces"] = interfaces
    return found


def _docs(pending: dict[str, Any]) -> dict[str, Any]:
    running = [instance(f"i-0{n:016x}", "p5.48xlarge", efa=32) for n in (1, 2, 3)]
    return answers([*running, pending])


def _cluster(report: report.Report) -> Any:
    [cluster] = report.clusters
    return cluster


@pytest.mark.parametrize("interfaces", [None, []], ids=["absent", "empty"])
def test_the_instance_vpc_stands_for_its_interfaces(tmp_path: Path, interfaces: list[Any] | None) -> None:
    report = flow.run(load_dump(write(tmp_path, _docs(_pending(interfaces)))), flow.Options())
    cluster = _cluster(report)
    assert PENDING in cluster.nodes and len(cluster.nodes) == 4
    assert report.findings == []  # no AWS111 (one zone, one VPC), no AWS101 on the pending node
    assert cluster.penalty.cannot_run is False
    not_judged = {n.rule: n for n in cluster.not_judged}
    assert "AWS111" not in not_judged  # its VPC is known: judged, and right
    # What its interfaces will carry is not known yet: not judged for it, named, rather than "no EFA".
    assert not_judged["AWS101"].resources == [PENDING]
    assert "lists no network interfaces" in not_judged["AWS101"].reason


def test_a_pending_instance_in_another_vpc_still_splits_the_cluster(tmp_path: Path) -> None:
    """The VpcId is read, not ignored: a pending node launched into another VPC is the split AWS111 names."""
    report = flow.run(load_dump(write(tmp_path, _docs(_pending([], "vpc-0fdbcf8a50288e334")))), flow.Options())
    [finding] = report.findings
    assert finding.rule == "AWS111" and PENDING in finding.resources
    assert f"2 VPC(s) (vpc-0fdbcf8a50288e334, {VPC})" in finding.message


def test_without_a_vpc_the_network_is_unknown_not_a_second_vpc(tmp_path: Path) -> None:
    report = flow.run(load_dump(write(tmp_path, _docs(_pending(None, vpc=None)))), flow.Options())
    assert report.findings == []
    cluster = _cluster(report)
    assert cluster.status == "incomplete" and cluster.penalty.cannot_run is False
    [unjudged] = [n for n in cluster.not_judged if n.rule == "AWS111"]
    assert "neither network interfaces nor a VpcId" in unjudged.reason and PENDING in unjudged.reason


def test_a_zone_split_is_still_seen_beside_an_unknown_network(tmp_path: Path) -> None:
    pending = _pending(None, vpc=None)
    pending["Placement"]["AvailabilityZone"] = "us-east-1b"
    report = flow.run(load_dump(write(tmp_path, _docs(pending))), flow.Options())
    [finding] = report.findings
    assert finding.rule == "AWS111" and "2 availability zone(s) (us-east-1a, us-east-1b)" in finding.message


def test_the_live_answer_reads_alike(tmp_path: Path) -> None:
    """The same answers over the EC2 query protocol (the instance serialized without networkInterfaceSet), through
    boto3 and the CLI: the same verdict as the dump."""
    replay = Ec2Replay({"us-east-1": _docs(_pending(None))})
    with serve(replay) as url:
        inventory = collect.collect_live(["us-east-1"], endpoint_url=url)
        result = run("aws", "--endpoint-url", url, "-r", "us-east-1", "-f", "json")
    [node] = [n for n in inventory.nodes if n.id == PENDING]
    assert node.state == "pending" and node.interfaces == ()
    report = json.loads(result.stdout)
    assert report["findings"] == []
    [cluster] = report["clusters"]
    assert not cluster["penalty"]["cannot_run"]
    assert "AWS111" not in {n["rule"] for n in cluster["not_judged"]}
    assert result.returncode == 2  # not judged for the pending node: the gate cannot say green


def test_an_inventory_saved_by_version_2_keeps_a_pending_instances_vpc(tmp_path: Path) -> None:
    """Version 2 kept the VpcId of an instance listed without interfaces in `aws.instance_networks`; version 3
    keeps it on the node, and reads a version 2 file as if it had."""
    from fabriccheck.sources.snapshot import load_inventory

    node = {"id": "i-pending", "account": "111122223333", "region": "us-east-1", "instance_type": "p5.48xlarge",
            "state": "pending", "unknown": {"fabric": "not known yet"}}  # fmt: skip
    old = {
        "schema_version": 2,
        "nodes": [node, {**node, "id": "i-other"}],
        "aws": {"instance_networks": [
            {"account": "111122223333", "region": "us-east-1", "instance_id": "i-pending", "vpc_id": "vpc-1"}]},
        "collected": ["aws:111122223333:us-east-1:instances"],
    }  # fmt: skip
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(old))
    inventory = load_inventory(path)
    assert [(n.id, n.shape.network) for n in inventory.nodes] == [("i-pending", "vpc-1"), ("i-other", None)]
