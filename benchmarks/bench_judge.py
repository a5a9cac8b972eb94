"""Benchmark: what flow.run costs after the dump is read and the node and cluster facts are built.

The facts (facts.py) are built before the clock starts, so what is timed is the rest of the pipeline: clusters,
roles, judge.judge, fingerprints, cluster reports and penalties, the summary and the Report. Each repeat builds
the facts afresh (the penalty caches live in the FactBuilder), and the best of --repeat runs is printed. The clock
is this process's CPU time: the stages run on one thread, and on a shared machine wall time mostly measures the
neighbours. The rule files are loaded (and cached) before the clock starts too.

Run: python benchmarks/bench_judge.py DUMPS [--repeat 5] [--profile]
DUMPS holds gcp/ (fabriccheck/builders/demo_gcp.fleet(5000).write) and az/ (build_demo_azure); either may be missing.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

from fabriccheck import clusters, flow, judge
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


def prebuilt_in_flow(inventory: Inventory) -> Any:
    """flow.run with a FactBuilder whose facts are built already."""
    builder = prebuilt(inventory)
    return mock.patch.object(flow, "FactBuilder", lambda _inventory: builder)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dumps", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="print the cProfile of one flow.run per cloud")
    args = parser.parse_args()
    for cloud, (folder, load) in loaders().items():
        where = args.dumps / folder
        if not where.is_dir():
            continue
        inventory = load(where)
        rules = flow._rules(flow.Options(), frozenset({cloud}))
        times: dict[str, list[float]] = {"clusters": [], "judge": [], "flowrun": []}
        report: Any = None
        for _ in range(args.repeat):
            start = time.process_time()
            judged = [c for c in clusters.build_clusters(inventory) if c.judged]
            times["clusters"].append(time.process_time() - start)
            builder = prebuilt(inventory)
            start = time.process_time()
            judge.judge(rules, inventory, judged, builder, [])
            times["judge"].append(time.process_time() - start)
            with prebuilt_in_flow(inventory):
                start = time.process_time()
                report = flow.run(inventory, flow.Options())
                times["flowrun"].append(time.process_time() - start)
        print(
            f"{cloud}: {len(inventory.nodes)} nodes, {len(report.clusters)} clusters, {len(report.findings)} "
            "findings; best of {}: ".format(args.repeat)
            + ", ".join(f"{k} {min(v) * 1000:.1f} ms" for k, v in times.items())
            + " (flowrun: all of flow.run after the facts, clusters and judge included)"
        )
        if args.profile:
            with prebuilt_in_flow(inventory):
                profile = cProfile.Profile()
                profile.runcall(flow.run, inventory, flow.Options())
            pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
