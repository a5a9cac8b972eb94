"""Benchmark: what the gate layer (waivers, baseline, fingerprints, Prometheus, SARIF) adds to judging a fleet.

Fleet: bench_dump's (p5 and p4d node groups of 16, every other p4d group without EFA, CPU groups), loaded once.
Interleaved, best of N, in one process:
- flow.run with no gate settings (the whole judgement, for scale);
- the gate's own work on that run's findings: fingerprints, 200 waivers (globs over cluster ids and node ids,
  half of them stale) and a baseline that holds every finding (timed alone: the machine is shared and noisy,
  so the difference of two whole runs would mostly measure the noise);
- flow.run with those settings, whole;
and the time to render the report as Prometheus text and as SARIF, and to resolve the config layers.

Run: python benchmarks/bench_gate.py [--instances 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dump import build_fleet

from fabriccheck import baseline, config, flow
from fabriccheck import waivers as waiving
from fabriccheck.providers.aws.dump import load_dump
from fabriccheck.reports import render
from fabriccheck.waivers import Waiver


def waivers(count: int) -> list[Waiver]:
    out = []
    for number in range(count):
        if number % 2:  # stale: names groups the fleet does not have
            out.append(Waiver(rule="AWS101", resources=[f"*:auto-scaling-group/none-{number}"], reason="r"))
        else:  # covers one p4d group's cluster-wide and node findings
            out.append(Waiver(category="fabric-missing", resources=[f"*/p4d-{number}"], reason="r"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="fabriccheck-bench-gate-"))
    try:
        build_fleet(folder, args.instances)
        inventory = load_dump(folder)
    finally:
        shutil.rmtree(folder)
    plain = flow.run(inventory, flow.Options())
    gate = flow.Options(
        waivers=waivers(200), waivers_file="w.yaml", baseline=baseline.build(plain.findings), baseline_file="b.json"
    )
    times: dict[str, list[float]] = {
        "plain": [],
        "gate": [],
        "gate work": [],
        "prometheus": [],
        "sarif": [],
        "config": [],
    }
    report = plain
    today = dt.date.today()
    for _ in range(args.repeat):  # interleaved: a slow spell of the machine hits every side
        findings = [f.model_copy() for f in plain.findings]
        chosen = gate.waivers
        recorded = gate.baseline
        assert recorded is not None
        start = time.perf_counter()
        for finding in findings:
            finding.fingerprint = baseline.fingerprint(finding)
        waiving.apply(findings, chosen, "w.yaml", today, plain.rules)
        baseline.apply(findings, recorded, "b.json")
        times["gate work"].append(time.perf_counter() - start)
        for name in ("plain", "gate"):
            start = time.perf_counter()
            report = flow.run(inventory, flow.Options() if name == "plain" else gate)
            times[name].append(time.perf_counter() - start)
        for fmt in ("prometheus", "sarif"):
            start = time.perf_counter()
            render(report, fmt)
            times[fmt].append(time.perf_counter() - start)
        start = time.perf_counter()
        config.resolve({}, {}, cwd=Path.cwd(), env=dict(os.environ))
        times["config"].append(time.perf_counter() - start)
    print(
        f"fleet: {len(inventory.nodes)} nodes, {len(plain.findings)} findings; "
        f"gated run: {report.summary.waived} waived, {report.summary.in_baseline} in the baseline, "
        f"{sum(w.status == 'stale' for w in report.waivers)} stale waivers"
    )
    for name, values in times.items():
        print(f"{name:>10}: best {min(values) * 1000:8.1f} ms, median {statistics.median(values) * 1000:8.1f} ms")
    added = min(times["gate work"])
    print(
        f"the gate's own work is {added * 1000:.1f} ms, {added / min(times['plain']) * 100:.1f} % of a plain flow.run"
    )


if __name__ == "__main__":
    main()
