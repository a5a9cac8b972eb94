"""The NCCL release a job runs decides the algorithm NCCL picks for a large all_reduce at 2 nodes (issue 32 item 4).

Each gate is read from NVIDIA/nccl's own tags (fabriccheck/penalty/links.py names them): NCCL 2.4 picked trees by a
threshold (v2.4.8-1 src/init.cc, ncclTreeThreshold), NVLSTree first ships in v2.18.1-1 (src/include/devcomm.h).
The fabrics below are the calibration table's own (fabriccheck/data/calibration.yaml: xe9680-2n-ib, 2 x 8 H100 and
8 x 400 Gbps InfiniBand, NVIDIA/nccl-tests#309; dgx1-v100-2n-tree, 2 x DGX-1 and 4 x 100 Gbps, NVIDIA/nccl#307).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from cli_run import one_clean_line, run

from fabriccheck import estimate, penalty
from fabriccheck.penalty import links, releases

GIB16 = 16 * 2**30
H100_IB = ("H100", 8, 8, 400.0, "ib")  # xe9680-2n-ib
V100_IB = ("V100", 8, 4, 100.0, "ib")  # dgx1-v100-2n-tree


def _fabric(spec: tuple[str, int, int, float, str], gpus: int | None = None) -> penalty.FabricDescription:
    gpu, per_node, nics, gbps, transport = spec
    return estimate.custom_fabric(gpu, gpus or per_node, nics, gbps, transport, True, None)


def _all_reduce(fabric: penalty.FabricDescription, version: tuple[int, int]) -> penalty.CollectiveEstimate:
    state = replace(links.HEALTHY, nccl_version=version)
    found = penalty.collective_estimate(fabric, 2, "all_reduce", GIB16, state)
    assert found is not None
    return found


def test_nvls_tree_at_2_nodes_needs_nccl_2_18() -> None:
    """H100 is an NVLS accelerator: from 2.18 NVLSTree carries a 2-node all_reduce (each node sends the buffer
    once, bounded here by the NVLink chain), before it NCCL keeps rings, which move it twice over the NICs."""
    fabric = _fabric(H100_IB)
    old, new = _all_reduce(fabric, (2, 17)), _all_reduce(fabric, releases.FIRST_NVLS_TREE_NCCL)
    assert (old.algorithm, new.algorithm) == ("ring", "tree")
    assert new.algbw > 1.25 * old.algbw
    assert abs(new.algbw - 250.667) / 250.667 < 0.25  # xe9680-2n-ib, NCCL 2.26.2: NVLSTree's release


def test_nccl_2_4_ran_trees_at_2_nodes_on_nvlink_nodes() -> None:
    fabric = _fabric(V100_IB)
    assert _all_reduce(fabric, (2, 4)).algorithm == "tree"
    assert _all_reduce(fabric, (2, 5)).algorithm == "ring"  # 2.5 on: NCCL's tuning model, no NVLSTree on V100
    assert _all_reduce(_fabric(V100_IB, gpus=2), (2, 4)).algorithm == "ring"  # under the threshold's GPUs


def test_threshold_gpus_recomputed_from_nccl_2_4() -> None:
    """v2.4.8-1 src/init.cc ncclTreeThreshold: ringlat = 6 us x (ranks - 1), treelat = 15 us x log2(nodes) +
    4 us x (ranks a node - 1); trees run while ringlat > treelat (and on NVLink a 2-node tree's bandwidth tops the
    ring's). At 2 nodes the fewest GPUs a node for which that holds:"""
    fewest = next(g for g in range(1, 17) if 6 * (2 * g - 1) > 15 * math.log2(2) + 4 * (g - 1))
    assert fewest == releases.THRESHOLD_TREE_MIN_GPUS


@pytest.mark.parametrize(
    ("text", "version"),
    [("2.27", (2, 27)), ("2.21.5", (2, 21)), ("v2.21.5-1", (2, 21)), ("2.29.2+cuda12.8", (2, 29)), ("3.1", None)],
)
def test_versions_as_people_and_logs_write_them(text: str, version: tuple[int, int] | None) -> None:
    assert releases.nccl_version_of(text) == version


def _json(*args: str) -> dict[str, object]:
    result = run("estimate", "--gpu", "H100", "--nodes", "2", "--format", "json", *args)
    assert result.returncode == 0, result.stderr
    report: dict[str, object] = json.loads(result.stdout)
    return report


def _big_all_reduce(report: dict[str, object]) -> str:
    found = [c for c in report["collectives"] if c["op"] == "all_reduce" and c["bytes"] == GIB16]  # type: ignore[attr-defined]
    return str(found[0]["algorithm"])


def test_every_estimate_names_its_nccl_release() -> None:
    default = _json()
    assert any(str(n).startswith("NCCL 2.27 (the default; --nccl-version") for n in default["notes"])  # type: ignore[attr-defined]
    assert _big_all_reduce(default) == "tree"
    told = _json("--nccl-version", "2.17.1")
    assert any(str(n).startswith("NCCL 2.17 (--nccl-version)") for n in told["notes"])  # type: ignore[attr-defined]
    assert _big_all_reduce(told) == "ring"


def test_workload_file_names_the_release(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    shape = "parameters: 8B\nlayers: 32\nhidden: 4096\nseq_len: 8192\ntokens_per_gpu: 16384\n"
    path.write_text(shape + 'nccl_version: "2.17"\n')
    report = _json("--workload-file", str(path))
    assert any(str(n).startswith("NCCL 2.17 (the workload's nccl_version)") for n in report["notes"])  # type: ignore[attr-defined]
    assert _big_all_reduce(report) == "ring"
    path.write_text(shape + "nccl_version: 2.21\n")  # a YAML float: 2.20 would read 2.2
    bad = run("estimate", "--gpu", "H100", "--nodes", "2", "--workload-file", str(path))
    assert f"--workload-file {path}: nccl_version 2.21 is not an NCCL release" in one_clean_line(bad)


@pytest.mark.parametrize("value", ["3.1", "latest", "2"])
def test_bad_nccl_version_is_one_line(value: str) -> None:
    line = one_clean_line(run("estimate", "--gpu", "H100", "--nodes", "2", "--nccl-version", value))
    assert f"--nccl-version {value!r}: not an NCCL release" in line


def test_sharp_is_said_to_be_priced_as_the_ring() -> None:
    infiniband = _json()
    assert estimate.SHARP_NOTE in infiniband["notes"]  # type: ignore[operator]
    efa = run("estimate", "--instance-type", "p5.48xlarge", "--nodes", "4", "--format", "json")
    assert estimate.SHARP_NOTE not in json.loads(efa.stdout)["notes"]


FIXTURES = Path(__file__).parent / "fixtures" / "nccl"
NCCL_TESTS_FABRIC = ("--gpu", "H100", "--gpus-per-node", "8", "--nics", "8", "--nic-gbps", "400", "--transport", "ib")


def _two_node_h100_run(tmp_path: Path, version_line: str | None) -> Path:
    """A 2 x 8 H100 all_reduce: the header and 16 rank lines of tests_header_2x8_h100_gcp.txt (its SOURCES.md row),
    one 8 GiB row at the busbw NVIDIA/nccl-tests#309 reports for 2 x XE9680 ('470 GB/s'), and, when given, the
    INFO line NCCL prints its release on (the shape of log_fastsocket_2.20.5.txt)."""
    header = (FIXTURES / "tests_header_2x8_h100_gcp.txt").read_text().splitlines()[6:29]
    columns = [
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw"
        " #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
        "  8589934592    2147483648     float     sum      -1    34270  250.66  469.98      0    34300  250.43  469.56"
        "      0",
        "# Out of bounds values : 0 OK",
        "# Avg bus bandwidth    : 469.77",
    ]
    lines = ([version_line] if version_line else []) + header + columns
    path = tmp_path / "all_reduce.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _expected_busbw(path: Path) -> tuple[float, list[str]]:
    result = run("nccl-tests", str(path), *NCCL_TESTS_FABRIC, "-f", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    comparison = report["clusters"][0]["evidence"]["runs"][0]["comparisons"][-1]
    return float(comparison["expected_busbw_gbytes_per_s"]), list(report["notes"])


def test_nccl_tests_judged_by_the_release_the_file_prints(tmp_path: Path) -> None:
    default, default_notes = _expected_busbw(_two_node_h100_run(tmp_path, None))
    line = "ztan-mig-235z:6899:6899 [0] NCCL INFO NCCL version 2.17.1+cuda12.1"
    old, notes = _expected_busbw(_two_node_h100_run(tmp_path, line))
    assert old < 0.8 * default  # 2.17 has no NVLSTree: a ring's busbw, the NICs' rate, not the 2-node tree's
    assert any(n.startswith("judged as NCCL 2.17, the release the file's NCCL lines print") for n in notes)
    assert not any(n.startswith("judged as NCCL") for n in default_notes)


def test_no_trees_before_nccl_2_4() -> None:
    """v2.3.7-1 has no tree algorithm (trees arrive with v2.4.2-1's ncclTreeThreshold): a small all_reduce over 8
    nodes, which a tree's log2 latency wins today, is a ring there."""
    fabric = _fabric(H100_IB)
    today = penalty.collective_estimate(fabric, 8, "all_reduce", 8192, links.HEALTHY)
    old = penalty.collective_estimate(fabric, 8, "all_reduce", 8192, replace(links.HEALTHY, nccl_version=(2, 3)))
    assert today is not None and old is not None
    assert (today.algorithm, old.algorithm) == ("tree", "ring")
    assert old.algbw < today.algbw
    # the estimate's release note says so, not that the release only matters at 2 nodes
    notes = json.loads(run("estimate", "--gpu", "H100", "--nodes", "8", "-f", "json", "--nccl-version", "2.3.7").stdout)
    assert (
        "NCCL 2.3 (--nccl-version): before 2.4 NCCL has no tree, so all_reduce runs rings at every size"
        in notes["notes"]
    )
