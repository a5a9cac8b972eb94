"""Benchmark: `estimate` for 10,000 configurations (type x nodes x state x workload), through the same penalty
core the scan uses; and the nccl-tests-shaped bandwidth table for one of them. Target: 10,000 in at most 2 s.

Run: python benchmarks/bench_estimate.py
"""

from __future__ import annotations

import itertools
import time

from fabriccheck import estimate, penalty

TYPES = ["p5.48xlarge", "p4d.24xlarge", "p5en.48xlarge", "Standard_ND96isr_H100_v5", "a3-megagpu-8g"]
STATES = ["healthy", "tcp", "nics=1", "no-gdr", "no-placement", "unreachable"]


def main() -> None:
    fabrics = {t: estimate.fabric_of_type(t) for t in TYPES}
    configs = list(itertools.product(TYPES, range(2, 2 + 112), STATES, sorted(penalty.WORKLOADS)))[:10_000]
    start = time.perf_counter()
    for name, nodes, state, workload in configs:
        fabric = fabrics[name]
        penalty.estimate(fabric, nodes, estimate.state_named(state, fabric), penalty.WORKLOADS[workload])
    core = time.perf_counter() - start
    print(f"{len(configs):,} slowdown estimates: {core:.2f} s (target <= 2 s)")
    start = time.perf_counter()
    report = estimate.run(fabrics["p5.48xlarge"], 16, "tcp", penalty.WORKLOADS["llm-70b-fsdp"])
    print(
        f"one full estimate with {len(report.collectives)} collectives: {(time.perf_counter() - start) * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
