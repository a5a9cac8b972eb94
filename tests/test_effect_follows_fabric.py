"""An effect follows what is attached (issue 28, item 9): a zone- or VPC-split group with no fabric at all trains
over TCP, which crosses zones and peered VPCs; it is AWS101's TCP cost, never "cannot run".

Shape: the demo AWS account (fixtures/demo/aws, `aws ec2 describe-instances` records made by tools/build_demo.py in
the shape of the AWS CLI's own examples, /work/shared/samples/aws), whose ParallelCluster queue `hpc-demo/gpu`
spans us-east-1a and us-east-1b. EFA is an interface type of the instance's network interface
(NetworkInterfaces[].InterfaceType "efa" or "interface"; EC2 API reference, InstanceNetworkInterface); "EFA traffic
cannot cross Availability Zones or VPCs" (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html#efa-limits),
TCP does.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from cli_run import run

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo" / "aws"
QUEUE = "hpc-demo/gpu"
SPLIT = ("i-00000000000000151", "i-00000000000000196", "i-000000000000001dc")


def _report(tmp_path: Path, efa: bool) -> dict[str, Any]:
    folder = tmp_path / "aws"
    shutil.copytree(DEMO, folder)
    path = folder / "describe-instances.json"
    answer = json.loads(path.read_text())
    for reservation in answer["Reservations"]:
        for instance in reservation["Instances"]:
            if instance["InstanceId"] in SPLIT and not efa:
                for nic in instance["NetworkInterfaces"]:
                    nic["InterfaceType"] = "interface"
    path.write_text(json.dumps(answer))
    report: dict[str, Any] = json.loads(run("aws", "--from-dump", str(folder), "-f", "json").stdout)
    return report


def _queue(report: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    cluster = next(c for c in report["clusters"] if c["id"].endswith(QUEUE))
    rules = sorted({f["rule"] for f in report["findings"] if f["cluster"] == cluster["id"]})
    return cluster, rules


def test_a_split_group_without_efa_trains_over_tcp(tmp_path: Path) -> None:
    cluster, rules = _queue(_report(tmp_path, efa=False))
    assert "AWS101" in rules and "AWS111" not in rules
    slowdown = cluster["penalty"]["slowdown"]
    assert slowdown is not None and slowdown["low"] > 1.0  # priced: TCP is slower, not "cannot run"
    assert cluster["penalty"]["cannot_run"] is False


def test_the_same_split_with_efa_attached_cannot_run(tmp_path: Path) -> None:
    """Kept: EFA attached on both sides of the split cannot reach across it (AWS111, unreachable)."""
    cluster, rules = _queue(_report(tmp_path, efa=True))
    assert "AWS111" in rules and cluster["penalty"]["cannot_run"] is True
