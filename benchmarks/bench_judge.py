"""Benchmark: what flow.run costs after the dump is read and the node and cluster facts are built.

The facts (facts.py) are built before the clock starts, so what is timed is the rest of the pipeline: clusters,
roles, engine.judge, fingerprints, cluster reports and penalties, the summary and the Report. Each repeat builds
the facts afresh (the penalty caches live in the FactBuilder), and the best of --repeat runs is printed.

Run: python benchmarks/bench_judge.py DUMPS [--repeat 5] [--profile]
DUMPS holds gcp/ (tools/build_demo_gcp.fleet(5000).write) and az/ (build_demo_azure); either may be missing.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fabriccheck import clusters, engine, flow
from fabriccheck.facts import FactBuilder
from fabriccheck.inventory import Inventory


def loaders() -> dict[str, tuple[str, Callable[[Path], Inventory]]]:
    from fabriccheck.providers.azure.dump import load_dump as azure
    from fabriccheck.providers.gcp.dump import load_dump as gcp

    return {"gcp": ("gcp", gcp), "azure": ("az", azure)}


def prebuilt(inventory: Inventory) -> FactBuilder:
    builder = FactBuilder(inventory)
    for cluster in clusters.build_clusters(inventory):
        if cluster.judged:
            builder.cluster(cluster)
            for node in cluster.nodes:
                builder.node(node)
    return builder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dumps", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="print the cProfile of one flow.run per cloud")
    args = parser.parse_args()
    original = flow.FactBuilder
    for cloud, (folder, load) in loaders().items():
        where = args.dumps / folder
        if not where.is_dir():
            continue
        inventory = load(where)
        rules = flow._rules(flow.Options(), frozenset({cloud}))
        times: dict[str, list[float]] = {"clusters": [], "judge": [], "flowrun": []}
        report: Any = None
        for _ in range(args.repeat):
            start = time.perf_counter()
            judged = [c for c in clusters.build_clusters(inventory) if c.judged]
            times["clusters"].append(time.perf_counter() - start)
            builder = prebuilt(inventory)
            start = time.perf_counter()
            engine.judge(rules, inventory, judged, builder, [])
            times["judge"].append(time.perf_counter() - start)
            builder = prebuilt(inventory)
            flow.FactBuilder = lambda _inventory, b=builder: b  # type: ignore[assignment,misc]
            try:
                start = time.perf_counter()
                report = flow.run(inventory, flow.Options())
                times["flowrun"].append(time.perf_counter() - start)
            finally:
                flow.FactBuilder = original  # type: ignore[misc]
        print(
            f"{cloud}: {len(inventory.nodes)} nodes, {len(report.clusters)} clusters, {len(report.findings)} "
            "findings; best of {}: ".format(args.repeat)
            + ", ".join(f"{k} {min(v) * 1000:.1f} ms" for k, v in times.items())
            + " (flowrun: all of flow.run after the facts, clusters and judge included)"
        )
        if args.profile:
            builder = prebuilt(inventory)
            flow.FactBuilder = lambda _inventory, b=builder: b  # type: ignore[assignment,misc]
            try:
                profile = cProfile.Profile()
                profile.runcall(flow.run, inventory, flow.Options())
            finally:
                flow.FactBuilder = original  # type: ignore[misc]
            pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
