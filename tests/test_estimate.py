"""`fabriccheck estimate`: the same core as the scan, nccl-tests-shaped bandwidths, sensible edges."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import one_clean_line, run
from ec2_shapes import answers, instance, write

from fabriccheck import estimate, flow, penalty
from fabriccheck.providers.aws.dump import load_dump

FSDP = penalty.WORKLOADS["llm-70b-fsdp"]


def test_a_scanned_cluster_and_estimate_agree(tmp_path: Path) -> None:
    """4 x p4d without EFA: the scan prices it from the finding; estimate --state tcp gives the same range."""
    nodes = [instance(f"i-0{n:016x}", "p4d.24xlarge", efa=0) for n in range(4)]
    report = flow.run(load_dump(write(tmp_path, answers(nodes))), flow.Options())
    [cluster] = report.clusters
    assert cluster.penalty.slowdown is not None
    estimated = estimate.run(estimate.fabric_of_type("p4d.24xlarge"), 4, "tcp", FSDP)
    assert estimated.slowdown is not None
    assert (estimated.slowdown.low, estimated.slowdown.high) == (
        cluster.penalty.slowdown.low,
        cluster.penalty.slowdown.high,
    )


def test_states_order_the_cost() -> None:
    fabric = estimate.fabric_of_type("p5.48xlarge")
    high = {
        state: (estimate.run(fabric, 8, state, FSDP).slowdown or estimate.Range(low=0, high=0)).high
        for state in ("healthy", "nics=16", "nics=4", "tcp")
    }
    assert high["healthy"] == 1.0 < high["nics=16"] < high["nics=4"] < high["tcp"]
    unreachable = estimate.run(fabric, 8, "unreachable", FSDP, price_per_gpu_hour=2.0)
    assert unreachable.cannot_run and unreachable.slowdown is None
    assert unreachable.extra_gpu_hours_per_day is not None and unreachable.extra_gpu_hours_per_day.high == 64 * 24
    assert unreachable.collectives == []  # nothing runs, so nothing is measured


def test_collectives_are_swept_like_nccl_tests_and_busbw_follows_its_formula() -> None:
    result = estimate.run(estimate.fabric_of_type("p5.48xlarge"), 4, "healthy", FSDP)
    sizes = sorted({c.bytes for c in result.collectives})
    assert sizes[0] == 8 and sizes[-1] == 16 * 2**30
    assert {c.op for c in result.collectives} == {"all_reduce", "all_gather", "reduce_scatter", "alltoall"}
    ranks = 32
    for c in result.collectives:
        factor = 2 * (ranks - 1) / ranks if c.op == "all_reduce" else (ranks - 1) / ranks
        assert c.busbw_gbytes_per_s == pytest.approx(c.algbw_gbytes_per_s * factor)
    big = [c.busbw_gbytes_per_s for c in result.collectives if c.op == "all_reduce" and c.bytes >= 2**30]
    assert all(b <= 3200 / 8 for b in big)  # never above the node's 400 GB/s of EFA


def test_edges_say_what_they_are() -> None:
    fabric = estimate.fabric_of_type("p5.48xlarge")
    one = estimate.run(fabric, 1, "tcp", FSDP)
    assert not one.estimated and any("one node" in n for n in one.notes)
    two = estimate.run(fabric, 2, "healthy", FSDP)
    assert any("busbw formula overstates" in n for n in two.notes)
    big = estimate.run(fabric, 4096, "tcp", FSDP)
    assert big.slowdown is not None and big.slowdown.high > 1
    unknown = estimate.run(estimate.custom_fabric("Z9000", 8, 8, 400, "ib", True, 100), 4, "tcp", FSDP)
    assert not unknown.estimated and "Z9000" in (unknown.reason or "") and unknown.collectives == []


def test_a_custom_fabric_matches_the_same_catalog_type() -> None:
    """ND96isr_H100_v5 by hand (8 x 400 Gbps InfiniBand, GPUDirect, 80 Gbps Ethernet) equals its catalog row."""
    by_hand = estimate.custom_fabric("H100", 8, 8, 400, "ib", True, 80)
    from_catalog = estimate.fabric_of_type("Standard_ND96isr_H100_v5")
    for state in ("tcp", "nics=2", "no-gdr"):
        a, b = estimate.run(by_hand, 8, state, FSDP), estimate.run(from_catalog, 8, state, FSDP)
        assert a.slowdown == b.slowdown


def test_json_and_bad_input_on_the_command_line(tmp_path: Path) -> None:
    result = run("estimate", "--instance-type", "p4d.24xlarge", "--nodes", "4", "--state", "nics=1", "-f", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == 1 and doc["fabric"]["nics"] == 4 and doc["state"] == "nics=1"
    assert {"op", "bytes", "algbw_gbytes_per_s", "busbw_gbytes_per_s"} <= set(doc["collectives"][0])
    assert doc["slowdown"]["high"] >= doc["slowdown"]["low"] > 1
    assert "--state nics=9: the fabric has 4 NICs" in one_clean_line(
        run("estimate", "--instance-type", "p4d.24xlarge", "--nodes", "4", "--state", "nics=9")
    )
    assert "--state fast" in one_clean_line(
        run("estimate", "--instance-type", "p5.48xlarge", "--nodes", "2", "--state", "fast")
    )
    assert "not in the catalog" in one_clean_line(run("estimate", "--instance-type", "p9.1xlarge", "--nodes", "2"))
    assert "give --instance-type" in one_clean_line(run("estimate", "--nodes", "2"))
    text = run(
        "estimate", "--gpu", "H100", "--nodes", "4", "--transport", "roce", "--state", "tcp", "--ethernet-gbps", "100"
    )
    assert text.returncode == 0 and "slowdown:" in text.stdout and "busbw GB/s" in text.stdout
