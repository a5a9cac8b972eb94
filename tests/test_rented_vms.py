"""Every VM a user rents gets an estimate (issue 32 item 5): the small GCP VMs are priced over their one NIC at the
bandwidth Google gives each machine type, the names people type resolve or get a "did you mean", and a scan's
cost line says when its price rests on the extrapolated per-GPU NIC cap, as `estimate` does.

Figures: Google Cloud, GPU machine types (https://docs.cloud.google.com/compute/docs/gpus, updated 2026-04-14),
per-machine-type column "Maximum network bandwidth (Gbps)" (catalog source GCP-GPU-TYPES-BW)."""

from __future__ import annotations

import json
from pathlib import Path

import cli_run
import pytest
from ec2_shapes import answers, instance, write

from fabriccheck import estimate, flow, penalty
from fabriccheck.errors import FabricCheckError
from fabriccheck.providers.aws.dump import load_dump

DDP = penalty.WORKLOADS["llm-1b-ddp"]  # fits one L4 (24 GB): the workload every small VM here can run


@pytest.mark.parametrize(
    ("size", "gpus", "gbps"),
    [
        ("a3-highgpu-1g", 1, 25),
        ("a3-highgpu-2g", 2, 50),
        ("a3-highgpu-4g", 4, 100),
        ("a2-highgpu-1g", 1, 24),
        ("a2-highgpu-2g", 2, 32),
        ("a2-highgpu-4g", 4, 50),
        ("a2-ultragpu-1g", 1, 24),
        ("a2-ultragpu-2g", 2, 32),
        ("a2-ultragpu-4g", 4, 50),
        ("g2-standard-4", 1, 10),
        ("g2-standard-8", 1, 16),
        ("g2-standard-12", 1, 16),
        ("g2-standard-16", 1, 32),
        ("g2-standard-24", 2, 32),
        ("g2-standard-32", 1, 32),
        ("g2-standard-48", 4, 50),
    ],
)
def test_a_small_gcp_vm_is_priced_over_its_one_nic(size: str, gpus: int, gbps: float) -> None:
    """No GPU NICs: sockets over the one NIC at Google's figure for the type, never faster than that NIC; the
    healthy state is that path, so it costs nothing (there is no fabric to lose)."""
    fabric = estimate.fabric_of_type(size)
    assert (fabric.gpus_per_node, fabric.nics, fabric.ethernet_gbps) == (gpus, 0, gbps)
    report = estimate.run(fabric, 2, "healthy", DDP)
    assert report.estimated and report.slowdown is not None and report.slowdown.high == pytest.approx(1.0)
    line_rate = gbps / 8  # GB/s, one direction
    big = [c for c in report.collectives if c.bytes >= 2**30]
    assert big and all(c.algorithm in ("ring", "tree", "p2p") for c in big)
    # one GPU a node: busbw is what each node's one NIC carries (nccl-tests' formula), never above its line rate
    assert all(c.busbw_gbytes_per_s <= line_rate for c in big if gpus == 1)
    assert estimate.render_text(report).splitlines()[0].count(f"tcp over Ethernet ({gbps:g} Gbps), no fabric") == 1


def test_one_gpu_a_node_has_no_nvlink_and_more_gpus_share_the_one_nic() -> None:
    """a3-highgpu-1g has no NVLink peer: the one-node step has no collective to run. a3-highgpu-4g's four H100 share
    one 100 Gbps NIC: per GPU, less network than a 1g's 25 Gbps alone."""
    one = estimate.run(estimate.fabric_of_type("a3-highgpu-1g"), 2, "healthy", DDP)
    four = estimate.run(estimate.fabric_of_type("a3-highgpu-4g"), 2, "healthy", DDP)
    assert one.one_node_step_seconds is not None and one.healthy_step_seconds is not None
    assert one.healthy_step_seconds > one.one_node_step_seconds  # the NIC costs what one GPU alone does not
    big_one = next(c for c in one.collectives if c.op == "all_reduce" and c.bytes == 16 * 2**30)
    big_four = next(c for c in four.collectives if c.op == "all_reduce" and c.bytes == 16 * 2**30)
    assert big_one.algbw_gbytes_per_s <= 25 / 8 and big_four.algbw_gbytes_per_s <= 100 / 8


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("A3-HIGHGPU-1G", "a3-highgpu-1g"),
        ("g2-standard-48", "g2-standard-48"),
        ("nd h200 v5", "Standard_ND96isr_H200_v5"),
        ("p6e", "p6e-gb200.36xlarge"),
        ("P4DE", "p4de.24xlarge"),
    ],
)
def test_more_names_people_type_resolve(typed: str, meant: str) -> None:
    assert estimate.fabric_of_type(typed).instance_type == meant


@pytest.mark.parametrize(
    ("typed", "suggests"),
    [
        ("g2", "did you mean g2-standard-4, g2-standard-8, g2-standard-12"),  # not Azure's CPU-only G2
        ("a2", "did you mean a2-highgpu-1g, a2-highgpu-2g, a2-highgpu-4g"),
        ("a3-highgpu", "did you mean a3-highgpu-1g, a3-highgpu-2g, a3-highgpu-4g, a3-highgpu-8g"),
        ("nc a100 v4", "did you mean Standard_NC24ads_A100_v4, Standard_NC48ads_A100_v4, Standard_NC96ads_A100_v4"),
    ],
)
def test_a_family_name_gets_a_did_you_mean(typed: str, suggests: str) -> None:
    with pytest.raises(FabricCheckError, match=suggests):
        estimate.fabric_of_type(typed)


def test_an_exact_size_without_accelerators_is_still_read_as_itself() -> None:
    assert estimate.fabric_of_type("Standard_G2").gpus_per_node == 0  # typed exactly: no family guessed for it


@pytest.mark.parametrize(
    ("typed", "name"),
    [("h100-sxm5", "H100"), ("GB200", "GB200"), ("gaudi 2", "Gaudi2"), ("Rtx Pro 6000", "RTX PRO 6000")],
)
def test_more_device_names_resolve_in_any_case(typed: str, name: str) -> None:
    assert estimate.accelerator_named(typed) == name


def test_estimate_cli_prices_the_newly_sourced_devices_and_names_what_mi355x_lacks() -> None:
    for gpu in ("Gaudi 2", "RTX PRO 6000"):
        given = ("--state", "tcp", "--ethernet-gbps", "100", "-f", "json")
        result = cli_run.run("estimate", "--gpu", gpu, "--nodes", "2", *given)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["estimated"] is True, gpu
    result = cli_run.run("estimate", "--gpu", "MI355X", "--nodes", "2", "-f", "json")
    doc = json.loads(result.stdout)
    assert doc["estimated"] is False and "dense BF16/FP16 peak throughput for MI355X" in doc["reason"]
    assert "MFU prior" not in doc["reason"]  # the one assumed figure is not what is missing


def _scan(folder: Path, size: str, efa: int) -> dict[str, object]:
    nodes = [instance(f"i-0{n:016x}", size, efa=efa) for n in (1, 2)]
    report = flow.run(load_dump(write(folder, answers(nodes))), flow.Options())
    [cluster] = report.clusters
    return cluster.penalty.model_dump()


def test_a_scan_price_resting_on_the_extrapolated_nic_cap_says_so(tmp_path: Path) -> None:
    """2 x p6-b300.48xlarge (8 B300, 16 EFA, 6,400 Gbps) with no EFA attached fall back to sockets; the healthy
    figure the slowdown is measured against is the per-GPU cap (55.3 GB/s, fitted on GB300 RoCE, NVIDIA/aicr#1413),
    not the NICs' rate: the cost line says it is extrapolated, as `estimate` does."""
    found = _scan(tmp_path / "b300", "p6-b300.48xlarge", 0)
    assert found["estimated"] and found["extrapolated"] is not None
    assert "extrapolated to B300 over efa, not measured" in str(found["extrapolated"])
    # p5.48xlarge: 32 x 100 Gbps = 400 GB/s, under 8 x 55.3: the NICs bind first, nothing extrapolated to say
    assert _scan(tmp_path / "p5", "p5.48xlarge", 0)["extrapolated"] is None


def test_the_scan_text_and_json_carry_the_caveat(tmp_path: Path) -> None:
    nodes = [instance(f"i-0{n:016x}", "p6-b300.48xlarge", efa=0) for n in (1, 2)]
    folder = write(tmp_path, answers(nodes))
    text = cli_run.run("aws", "--from-dump", str(folder))
    assert "the price rests on: 16 NICs for 8 GPUs" in " ".join(text.stdout.split())
    doc = json.loads(cli_run.run("aws", "--from-dump", str(folder), "-f", "json").stdout)
    [cluster] = doc["clusters"]
    assert "extrapolated to B300 over efa" in cluster["penalty"]["extrapolated"]


@pytest.mark.parametrize(
    ("size", "gpus", "gbps"),
    [("g4-standard-48", 1, 50), ("g4-standard-96", 2, 100), ("g4-standard-192", 4, 200), ("g4-standard-384", 8, 400)],
)
def test_gcp_g4_is_rtx_pro_6000_over_its_ethernet(size: str, gpus: int, gbps: float) -> None:
    """Google Cloud, GPU machine types, G4 table: RTX PRO 6000 Blackwell, 1-8 a VM, 50-400 Gbps, no GPU NICs."""
    fabric = estimate.fabric_of_type(size)
    assert (fabric.accelerator, fabric.gpus_per_node, fabric.nics, fabric.ethernet_gbps) == (
        "RTX PRO 6000",
        gpus,
        0,
        gbps,
    )
    assert estimate.run(fabric, 2, "healthy", DDP).estimated


def test_aws_g7e_names_its_gpu_as_describe_instance_types_does() -> None:
    """The recorded DescribeInstanceTypes answer calls g7e's GPU "RTX PRO Server 6000": it is the RTX PRO 6000 row,
    so a g7e falling back to sockets is priced."""
    fabric = estimate.fabric_of_type("g7e.48xlarge")
    assert fabric.accelerator == "RTX PRO Server 6000"
    report = estimate.run(estimate.with_overrides(fabric, 100, False), 2, "tcp", DDP)
    assert report.estimated and report.slowdown is not None and report.slowdown.low > 1.0
