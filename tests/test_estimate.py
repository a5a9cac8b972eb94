"""`fabriccheck estimate`: the same core as the scan, nccl-tests-shaped bandwidths, sensible edges."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from cli_run import one_clean_line, run
from ec2_shapes import answers, instance, write

from fabriccheck import estimate, flow, penalty
from fabriccheck.model import FabricKind
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
    assert unreachable.lost_gpu_hours_per_day is not None and unreachable.lost_gpu_hours_per_day.high == 64 * 24
    assert unreachable.lost_share is not None and unreachable.lost_share.low == 1.0
    assert unreachable.lost_dollars_per_day is not None and unreachable.lost_dollars_per_day.high == 64 * 24 * 2.0
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
    # What is lost is out of what the 4 x 8 GPUs are paid for: 1 - 1/slowdown of 768 GPU-hours a day.
    assert doc["gpu_hours_per_day"] == 768.0 and "extra_gpu_hours_per_day" not in doc
    for bound in ("low", "high"):
        assert doc["lost_share"][bound] == pytest.approx(1 - 1 / doc["slowdown"][bound])
        assert doc["lost_gpu_hours_per_day"][bound] == pytest.approx(768 * doc["lost_share"][bound])
    cannot = run("estimate", "--instance-type", "p4d.24xlarge", "--nodes", "4", "--state", "unreachable")
    assert "GPU-hours lost per day: 768 of 768 (100%)" in cannot.stdout
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


PRESET_AS_FILE = """
name: llm-8b-ddp
parameters: 8B
layers: 32
hidden: 4096
seq_len: 8192
tokens_per_gpu: 8192
parallelism: zero1
precision: bf16
"""


def test_a_workload_file_describes_the_same_workload_as_its_preset(tmp_path: Path) -> None:
    """ZeRO-1 moves what DDP moves: the 8B DDP preset written as a ZeRO-1 file prices exactly the same."""
    path = tmp_path / "w.yaml"
    path.write_text(PRESET_AS_FILE)
    loaded = estimate.workload_from_file(path)
    preset = penalty.WORKLOADS["llm-8b-ddp"]
    assert (loaded.strategy, loaded.parameters, loaded.bytes_per_value) == ("ddp", 8e9, 2)
    fabric = estimate.fabric_of_type("p5.48xlarge")
    for state in ("tcp", "nics=4"):
        assert estimate.run(fabric, 8, state, loaded).slowdown == estimate.run(fabric, 8, state, preset).slowdown


def test_a_toml_workload_with_layout_precision_and_experts(tmp_path: Path) -> None:
    path = tmp_path / "moe.toml"
    path.write_text(
        'parameters = "47B"\nactive_parameters = "13B"\nlayers = 32\nhidden = 4096\nseq_len = 4096\n'
        'tokens_per_gpu = 8192\nmicro_batches = 4\nparallelism = "zero3"\nexpert_parallel = 16\nprecision = "fp32"\n'
    )
    w = estimate.workload_from_file(path)
    assert (w.name, w.strategy, w.bytes_per_value, w.expert_parallel, w.micro_batches) == ("moe", "fsdp", 4, 16, 4)
    assert w.active_parameters == 13e9
    fabric = estimate.fabric_of_type("p5.48xlarge")
    dense = penalty.Workload("dense", "", 47e9, 32, 4096, 4096, "fsdp", 8192, bytes_per_value=4, micro_batches=4)
    # the expert all-to-all crosses nodes (16 GPUs span 2 nodes): losing NICs costs the MoE more than the same
    # model without experts
    moe_cost = estimate.run(fabric, 8, "nics=8", w).slowdown
    dense_cost = estimate.run(fabric, 8, "nics=8", dense).slowdown
    assert moe_cost is not None and dense_cost is not None and moe_cost.low > dense_cost.low > 1.0


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("parameters: 8B\nlayers: 0\nhidden: 1\nseq_len: 1\ntokens_per_gpu: 1\n", "layers 0 is not a whole number"),
        ("parameters: 8B\nlayerz: 3\n", "unknown field layerz"),
        ("layers: 3\n", "parameters is missing"),
        ("parameters: lots\n", "parameters 'lots' is not a number"),
        ("parameters: 8B\nparallelism: ring\n", "parallelism 'ring': choose from"),
        ("parameters: 8B\nprecision: int4\n", "precision 'int4': choose from"),
        ("- just\n- a list\n", "expected a mapping"),
        ("a: [\n", "not valid YAML"),
    ],
)
def test_a_bad_workload_file_is_one_line_and_exit_2(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(text)
    result = run("estimate", "--instance-type", "p5.48xlarge", "--nodes", "2", "--workload-file", str(path))
    line = one_clean_line(result)
    assert needle in line and str(path) in line


def test_thousands_of_nodes_stay_finite_and_ordered() -> None:
    fabric = estimate.fabric_of_type("p5.48xlarge")
    costs = [estimate.run(fabric, n, "nics=16", FSDP).slowdown for n in (16, 1024, 8192)]
    assert all(c is not None and 1.0 < c.low <= c.high < 100 for c in costs)
    big = estimate.run(fabric, 8192, "healthy", FSDP)
    ar = [c for c in big.collectives if c.op == "all_reduce" and c.bytes == 16 * 2**30]
    assert ar and ar[0].busbw_gbytes_per_s == pytest.approx(3200 / 8 * penalty.EFFICIENCY[FabricKind.EFA], rel=0.02)


def test_the_two_node_note_says_which_algorithm_runs() -> None:
    """H100 (NVLSTree) and EFA (aws-ofi-nccl's tuner) run trees at 2 nodes; A100 over InfiniBand keeps rings."""
    p5 = estimate.run(estimate.fabric_of_type("p5.48xlarge"), 2, "healthy", FSDP)
    a100_ib = estimate.run(estimate.custom_fabric("A100", 8, 4, 200, "ib", True, 100), 2, "healthy", FSDP)
    assert any("NCCL runs a tree here" in n for n in p5.notes)
    assert any("NCCL keeps rings here" in n for n in a100_ib.notes)
    big = {(c.op, c.algorithm) for c in a100_ib.collectives if c.bytes == 16 * 2**30}
    assert ("all_reduce", "ring") in big and ("alltoall", "p2p") in big


def test_a_scan_prices_a_workload_file_as_its_preset(tmp_path: Path) -> None:
    """`--workload FILE` on a scan: the 8B preset written as a file gives the demo's clusters the same penalties
    as the preset does, and names the file's workload; a bad file is one line naming the option, exit 2."""
    demo = Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "aws"
    path = tmp_path / "w.yaml"
    path.write_text(PRESET_AS_FILE.replace("name: llm-8b-ddp", "name: our-8b"))
    penalties, reasons = {}, {}
    for workload in ("llm-8b-ddp", str(path)):
        out = tmp_path / "report.json"
        result = run("aws", "--from-dump", str(demo), "--workload", workload, "-f", "json", "-o", str(out))
        assert result.returncode == 1, result.stderr
        report = json.loads(out.read_text())
        penalties[workload] = {c["id"]: c["penalty"]["slowdown"] for c in report["clusters"]}
        reasons[workload] = {c["id"]: c["penalty"]["reason"] or "" for c in report["clusters"]}
    # Issue 32: 8B does not fit legacy-g5's four 24 GB A10Gs; the preset is priced as the named workload that
    # fits, the user's own file is refused, each saying so. Everywhere else the two agree.
    small = "aws:111122223333:us-east-1:auto-scaling-group/legacy-g5"
    assert "priced as llm-1b-ddp" in reasons["llm-8b-ddp"][small]
    assert reasons[str(path)][small].startswith("our-8b does not fit 4 x 1 A10G (24 GB each)")
    assert {k: v for k, v in penalties[str(path)].items() if k != small} == {
        k: v for k, v in penalties["llm-8b-ddp"].items() if k != small
    }
    assert any(s is not None for s in penalties["llm-8b-ddp"].values())
    assert report["workload"]["name"] == "our-8b"
    path.write_text("parameters: many\n")
    bad = run("aws", "--from-dump", str(demo), "--workload", str(path))
    assert one_clean_line(bad).startswith(f"fabriccheck: error: --workload {path}: parameters")


# ---------------------------------------------------------------------------------------------- issue 17 item 22


@pytest.mark.parametrize(
    ("instance_type", "accelerator"),
    [
        ("g4dn.metal", "T4"),
        ("g6.48xlarge", "L4"),
        ("g5.48xlarge", "A10G"),
        ("p6-b300.48xlarge", "B300"),
        ("Standard_ND96isr_MI300X_v5", "MI300X"),
        ("dl1.24xlarge", "Gaudi"),
        ("trn1.32xlarge", "Trainium"),
    ],
)
def test_every_accelerator_the_catalog_names_gets_an_estimate(instance_type: str, accelerator: str) -> None:
    fabric = estimate.fabric_of_type(instance_type)
    assert fabric.accelerator == accelerator
    result = estimate.run(fabric, 4, "tcp", FSDP)
    assert result.estimated and result.slowdown is not None and result.slowdown.high > 1, result.reason
    assert {c.op for c in result.collectives} == set(estimate.OPS)
    big = [c.busbw_gbytes_per_s for c in result.collectives if c.op == "all_reduce" and c.bytes == 16 * 2**30]
    assert big and 0 < big[0] <= fabric.fabric_gbps / 8  # a TCP fallback never beats the fabric


def test_gh200_by_hand_and_the_figures_named_beside_each_value() -> None:
    gh200 = estimate.custom_fabric(estimate.accelerator_named("NVIDIA GH200 480GB"), 1, 1, 400, "ib", True, 100)
    result = estimate.run(gh200, 4, "tcp", FSDP)
    assert gh200.accelerator == "GH200" and result.estimated and result.collectives
    doc = yaml.safe_load((Path(estimate.__file__).parent / "data" / "accelerators.yaml").read_text())
    for name, row in doc["accelerators"].items():
        for figure, cell in row.items():
            if figure != "aliases":
                assert set(cell) <= {"value", "source", "assumed"} and cell["source"].strip(), (name, figure)


def test_a_missing_figure_is_one_line_naming_it() -> None:
    k80 = estimate.run(estimate.fabric_of_type("p2.16xlarge"), 2, "tcp", FSDP)
    assert not k80.estimated and k80.collectives == [] and k80.slowdown is None
    assert k80.reason == (
        "K80 is not in the accelerator table (fabriccheck/data/accelerators.yaml): no sourced dense BF16/FP16 peak "
        "throughput or NVLink/PCIe bandwidth between the devices of a node, so no collectives and no step time"
    )
    assert not any("K80" in n for n in k80.notes)  # said once
    trn = estimate.run(estimate.fabric_of_type("trn1.32xlarge"), 2, "tcp", FSDP)
    assert any(n.startswith("Trainium's NVLink/PCIe bandwidth") and "assumed" in n for n in trn.notes)
    text = run("estimate", "--instance-type", "p2.16xlarge", "--nodes", "2")
    assert text.returncode == 0 and text.stdout.count("K80") == 1


def test_an_unknown_gpu_by_hand_is_an_unknown_model() -> None:
    line = one_clean_line(run("estimate", "--gpu", "Z9000", "--nodes", "2"))
    assert line.startswith("fabriccheck: error: unknown model: --gpu Z9000: unknown accelerator (known: A100")
    assert "bad usage: --state fast" in one_clean_line(
        run("estimate", "--instance-type", "p5.48xlarge", "--nodes", "2", "--state", "fast")
    )
    assert "unknown model: --instance-type p9.1xlarge" in one_clean_line(
        run("estimate", "--instance-type", "p9.1xlarge", "--nodes", "2")
    )


def test_device_names_as_nccl_tests_and_clouds_print_them() -> None:
    from fabriccheck import catalog

    named = {n: (a.name if (a := catalog.accelerator(n)) else None) for n in (
        "NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-32GB", "A100-SXM4-40GB", "Tesla T4", "AMD Instinct MI300X",
        "Gaudi HL-205", "h100", "H100 PCIe", "V100-PCIE-16GB", "Gaudi2",
    )}  # fmt: skip
    assert named == {
        "NVIDIA H100 80GB HBM3": "H100", "Tesla V100-SXM2-32GB": "V100", "A100-SXM4-40GB": "A100",
        "Tesla T4": "T4", "AMD Instinct MI300X": "MI300X", "Gaudi HL-205": "Gaudi", "h100": "H100",
        "H100 PCIe": None, "V100-PCIE-16GB": None,  # other figures: not the SXM part's
        "Gaudi2": "Gaudi2",  # its own row (432 BF16 TFLOPS, 96 GB), never first-generation Gaudi's figures
    }  # fmt: skip
