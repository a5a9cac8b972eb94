"""Benchmark: start-up time of `fabriccheck --help` and `fabriccheck azure --help` (no cloud SDK may be imported for
either; tests/test_azure_dump.py checks the imports, this measures the time). Target: under 0.5 s.

Run: python benchmarks/bench_help.py
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import time

for args in (["--help"], ["azure", "--help"]):
    command = [shutil.which("fabriccheck") or "fabriccheck", *args]
    subprocess.run(command, capture_output=True, check=True)  # warm the file cache
    runs = []
    for _ in range(10):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        runs.append(time.perf_counter() - start)
    print(
        f"fabriccheck {' '.join(args)}: median {statistics.median(runs) * 1000:.0f} ms, "
        f"worst {max(runs) * 1000:.0f} ms over {len(runs)} runs (target < 500 ms)"
    )
