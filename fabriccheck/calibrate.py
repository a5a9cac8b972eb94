"""A team's own nccl-tests output as the healthy baseline of its fabric (`estimate --calibrate FILE`).

The model's healthy link is the fabric's line rate times an efficiency fitted on published runs. A team that has
measured its own cluster knows better: each multi-node run of the file with messages of MIN_BYTES or more is
matched by the model's prediction for the same operation, buffer and node count, and the scale of the fabric's
efficiency that reproduces it is found by bisection (the model is monotone in it). The median scale over the runs
becomes the fabric's `calibration`; every degraded state (k of N NICs, GPUDirect off, a split NVLink domain) is
then priced from the calibrated baseline, while the TCP fallback, which does not use the fabric, is not.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from pathlib import Path

from fabriccheck import penalty
from fabriccheck.errors import usage
from fabriccheck.evidence import nccl_tests

MIN_BYTES = 128 * 2**20  # below this NCCL switches protocols: the efficiency is not what such rows measure
CALIBRATED_OPS = ("all_reduce", "all_gather", "reduce_scatter")
SCALE_LIMITS = (0.02, 3.0)  # a fabric from 2% to 300% of the published efficiency; beyond is a wrong input
AGREEMENT = 0.05  # a run within 5% of the model confirms the published efficiency


@dataclass(frozen=True)
class Point:
    """One run's largest message: measured busbw and the calibration that reproduces it."""

    op: str
    nodes: int
    size: int
    measured: float
    scale: float
    clamped: bool  # the model cannot reach the measurement within SCALE_LIMITS


def calibrated(
    fabric: penalty.FabricDescription, path: Path, nodes: int | None = None
) -> tuple[penalty.FabricDescription, list[str]]:
    """`fabric` recalibrated to the runs in `path` (nccl-tests output, an NCCL log with tables in it), and one line
    per run saying what it measured. `nodes`: the node count when the file names no hosts. Bad input raises a
    usage error naming the file."""
    parsed = nccl_tests.parse_file(path)
    points = [p for run in parsed.runs if (p := _point(fabric, run, nodes)) is not None]
    if not points:
        raise usage(
            f"--calibrate {path}: no multi-node all_reduce, all_gather or reduce_scatter run with messages of "
            f"{MIN_BYTES // 2**20} MiB or more (and hosts named, or --nodes) to calibrate the fabric with"
        )
    scale = statistics.median(p.scale for p in points)
    lines = [
        f"{p.op} on {p.nodes} nodes at {p.size:,} B: measured busbw {p.measured:.2f} GB/s, "
        f"{p.scale:.2f}x the model's fabric efficiency" + (" (beyond what the model reaches)" if p.clamped else "")
        for p in points
    ]
    return replace(fabric, calibration=scale), lines


def _point(fabric: penalty.FabricDescription, run: nccl_tests.Run, nodes: int | None) -> Point | None:
    if run.op not in CALIBRATED_OPS or not run.rows:
        return None
    hosts = len(run.hosts) if run.hosts and not run.duplicate_rank_zero else None
    large = [r for r in run.rows if r.size >= MIN_BYTES and r.best_busbw]
    count = nodes if nodes is not None else hosts if hosts is not None else _nodes_from_ratio(run.op, large, fabric)
    if count is None or count < 2 or not large:
        return None
    row = max(large, key=lambda r: r.size)
    measured = row.best_busbw or 0.0
    scale, clamped = _solve(fabric, count, run.op, row.size, measured)
    return Point(run.op, count, row.size, measured, scale, clamped)


def _nodes_from_ratio(op: str, rows: list[nccl_tests.Row], fabric: penalty.FabricDescription) -> int | None:
    """The node count a table implies when it names no hosts: busbw / algbw is nccl-tests' bus factor for its
    ranks (2(n-1)/n for all_reduce, (n-1)/n otherwise), and the ranks are the nodes' GPUs."""
    ratios = [r.busbw / r.algbw for r in rows if r.busbw and r.algbw]
    if not ratios or fabric.gpus_per_node <= 0:
        return None
    share = statistics.median(ratios) / (2.0 if op == "all_reduce" else 1.0)  # (n-1)/n
    if not 0 < share < 1:
        return None
    ranks = round(1 / (1 - share))
    return ranks // fabric.gpus_per_node if ranks % fabric.gpus_per_node == 0 else None


def _solve(fabric: penalty.FabricDescription, nodes: int, op: str, size: int, measured: float) -> tuple[float, bool]:
    """The calibration whose healthy busbw is `measured`, by bisection; clamped to SCALE_LIMITS. A run the model
    already reproduces within AGREEMENT keeps 1.0: at 2 nodes a tree's chain inside the node (NVLink) often
    bounds busbw, and such a run says little of the NICs."""

    def busbw(scale: float) -> float:
        found = penalty.collective_bandwidth(replace(fabric, calibration=scale), nodes, op, size)
        return found[1] if found is not None else 0.0

    if abs(busbw(1.0) - measured) <= AGREEMENT * measured:
        return 1.0, False
    low, high = SCALE_LIMITS
    if busbw(high) < measured:
        return high, True
    if busbw(low) > measured:
        return low, True
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (middle, high) if busbw(middle) < measured else (low, middle)
    return (low + high) / 2, False
