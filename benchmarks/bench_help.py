"""Benchmark: `fabriccheck --help` start-up time (cloud SDKs must not be imported). Target: under 0.5 s.

Run: python benchmarks/bench_help.py
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import time

command = [shutil.which("fabriccheck") or "fabriccheck", "--help"]
subprocess.run(command, capture_output=True, check=True)  # warm the file cache
runs = []
for _ in range(10):
    start = time.perf_counter()
    subprocess.run(command, capture_output=True, check=True)
    runs.append(time.perf_counter() - start)
print(
    f"fabriccheck --help: median {statistics.median(runs) * 1000:.0f} ms, worst {max(runs) * 1000:.0f} ms "
    f"over {len(runs)} runs (target < 500 ms)"
)
