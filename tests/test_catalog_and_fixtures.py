"""The capability catalog and the bundled fixtures: sourced, consistent with the EC2 model."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
import yaml
from botocore.stub import Stubber

from fabriccheck import catalog
from fabriccheck.inventory import Inventory
from fabriccheck.model import Capability, FabricKind, Node
from fabriccheck.providers.aws import instance_types, normalize

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo" / "aws"


def test_every_catalog_row_has_sources_and_a_date() -> None:
    doc = yaml.safe_load((ROOT / "fabriccheck" / "data" / "catalog.yaml").read_text())
    assert doc["as_of"]
    for row in doc["types"]:
        assert row["sources"] and all(tag in doc["sources"] for tag in row["sources"]), row["type"]
        cap = catalog.catalog_entry(row["type"])
        assert cap is not None and cap.source.startswith("fabriccheck catalog:") and cap.as_of


@pytest.mark.parametrize(
    ("name", "kind", "nics", "gbps"),
    [
        ("p5.48xlarge", "efa", 32, 3200),
        ("p5en.48xlarge", "efa", 16, 3200),
        ("p4d.24xlarge", "efa", 4, 400),
        ("Standard_ND96isr_H100_v5", "infiniband", 8, 3200),
        ("a3-megagpu-8g", "gpudirect-tcpxo", 8, 1600),
        ("a3-ultragpu-8g", "rdma", 8, 3200),
        ("Standard_NC40ads_H100_v5", "none", 0, None),
    ],
)
def test_catalog_facts_from_the_reference(name: str, kind: str, nics: int, gbps: float | None) -> None:
    cap = catalog.resolve(name, {})
    assert cap is not None
    assert (cap.fabric.value, cap.fabric_interfaces, cap.fabric_gbps) == (kind, nics, gbps)


def test_live_answer_wins_and_is_completed_from_the_catalog() -> None:
    live = {
        "p4d.24xlarge": Capability(
            instance_type="p4d.24xlarge",
            provider="aws",
            fabric=FabricKind.EFA,
            fabric_interfaces=4,
            fabric_gbps=400,
            source="live",
        )
    }
    cap = catalog.resolve("p4d.24xlarge", live)
    assert cap is not None and cap.source == "live" and cap.gpudirect_rdma is True and cap.ethernet_gbps == 100


def test_unknown_type_is_unknown_not_no_fabric() -> None:
    from fabriccheck import flow

    assert catalog.resolve("p9.96xlarge", {}) is None
    inventory = Inventory(
        nodes=[
            Node.flat(
                id=f"i-{i}",
                account="111122223333",
                region="us-east-1",
                instance_type="p9.96xlarge",
                tags={"aws:autoscaling:groupName": "g"},
            )
            for i in range(2)
        ]
    )
    report = flow.run(inventory, flow.Options())
    assert report.summary.unknown_instance_types == ["p9.96xlarge"]
    assert any("p9.96xlarge" in n for n in report.notes)
    assert not report.findings


def test_recorded_api_table_agrees_with_the_documented_catalog() -> None:
    """Two independent sources: the recorded DescribeInstanceTypes answer and the rows curated from AWS's
    documentation. They must agree on the fabric, its NIC count and the accelerators of every type both hold.
    (Their bandwidth figures disagree for several types; which one is right is a separate question.)"""
    rows = yaml.safe_load((ROOT / "fabriccheck" / "data" / "catalog.yaml").read_text())["types"]
    recorded = catalog._recorded_types()
    # The recording has no NeuronInfo for trn2u; the documented row wins in catalog.resolve, as checked here.
    known_gaps = {"trn2u.48xlarge"}
    compared, disagree = 0, set()
    for row in rows:
        table = recorded.get(row["type"])
        if row["provider"] != "aws" or table is None:
            continue
        compared += 1
        documented = (row["fabric"], row.get("fabric_interfaces", 0), row.get("accelerators", 0))
        if (table.fabric.value, table.fabric_interfaces, table.accelerators) != documented:
            disagree.add(row["type"])
    assert compared >= 10 and disagree == known_gaps
    resolved = catalog.resolve("trn2u.48xlarge", {})
    assert resolved is not None and resolved.accelerators == 16


def test_live_mapping_reads_the_api_fields() -> None:
    """One DescribeInstanceTypes item from the demo account, checked against AWS's published p5 figures."""
    types = json.loads((DEMO / "describe-instance-types.json").read_text())["InstanceTypes"]
    p5 = instance_types.capability_from_instance_type(next(t for t in types if t["InstanceType"] == "p5.48xlarge"), "x")
    assert (p5.fabric, p5.fabric_interfaces, p5.accelerators, p5.accelerator_name) == (FabricKind.EFA, 32, 8, "H100")
    assert p5.network_cards == 32


@pytest.mark.parametrize("path", sorted(DEMO.glob("describe-*.json")), ids=lambda p: p.name)
def test_demo_answers_have_the_ec2_api_shape(path: Path) -> None:
    """botocore's Stubber validates an answer against the EC2 service model."""
    client = boto3.client("ec2", region_name="us-east-1")
    call = next(c for c in normalize.CALLS if c.dump_file == path.name)
    answer = json.loads(path.read_text())
    with Stubber(client) as stub:
        stub.add_response(call.method, answer)  # raises ParamValidationError on a wrong shape
        result = getattr(client, call.method)()
    assert result[call.result_key]
