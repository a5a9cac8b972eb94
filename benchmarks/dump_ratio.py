"""The dump target of issues 7 and 8, measured the same way for both clouds: normalize + rules + penalty of a
dump (load_dump, which reads the files, then flow.run) against a plain `json.load` of the same files.

Each side runs in a fresh interpreter (what a user's run pays: nothing warm from an earlier run), its modules
imported before the clock starts (startup is measured apart, as the whole command); the two alternate, `repeat`
times each, and the best and the median of each are compared. Used by bench_azure.py and bench_gcp.py.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

JSON_LOAD = """
import json, sys, time
start = time.perf_counter()
loaded = [json.load(open(path)) for path in sys.argv[1:]]
print(time.perf_counter() - start)
"""

PIPELINE = """
import sys, time
from pathlib import Path
from fabriccheck import flow
from fabriccheck.providers.{cloud}.dump import load_dump
start = time.perf_counter()
inventory = load_dump(Path(sys.argv[1]))
loaded = time.perf_counter()
report = flow.run(inventory, flow.Options())
done = time.perf_counter()
assert report.complete
print(loaded - start, done - loaded, len(report.findings), report.summary.clusters, report.summary.nodes)
"""


def measure(cloud: str, folder: Path, repeat: int) -> None:
    """Print both sides' best and median, and their ratios (target at 5,000 nodes: at most 2.0x)."""
    files = sorted(str(p) for p in folder.rglob("*.json"))
    loads: list[float] = []
    runs: list[tuple[float, float]] = []
    out: list[str] = []
    for _ in range(repeat):
        done = subprocess.run([sys.executable, "-c", JSON_LOAD, *files], capture_output=True, text=True, check=True)
        loads.append(float(done.stdout))
        script = PIPELINE.format(cloud=cloud)
        done = subprocess.run([sys.executable, "-c", script, str(folder)], capture_output=True, text=True, check=True)
        out = done.stdout.split()
        runs.append((float(out[0]), float(out[1])))
    totals = [read + judge for read, judge in runs]
    best = min(runs, key=sum)
    print(f"  json.load of the files: best {min(loads):.3f} s, median {statistics.median(loads):.3f} s")
    print(
        f"  normalize + rules + penalty (read included): best {min(totals):.3f} s (read + normalize {best[0]:.3f} s,"
        f" clusters + rules + penalty {best[1]:.3f} s), median {statistics.median(totals):.3f} s;"
        f" {out[4]} nodes, {out[2]} findings in {out[3]} clusters"
    )
    # Each run of ours against the json.load run just before it: the machine's slow spells (other tenants on this
    # shared host) hit both halves of a pair alike, so the ratios of pairs spread less than either side's times.
    paired = sorted(total / load for total, load in zip(totals, loads, strict=True))
    print(
        f"  ratio: {min(totals) / min(loads):.2f}x best, {statistics.median(totals) / statistics.median(loads):.2f}x"
        f" median; pair by pair {statistics.median(paired):.2f}x median ({paired[0]:.2f}x to {paired[-1]:.2f}x)"
        f" (target at 5,000 nodes <= 2.0x; {repeat} fresh runs of each, alternating)"
    )


WHOLE_JSON_LOAD = "import json, sys\nloaded = [json.load(open(path)) for path in sys.argv[1:]]"


def measure_whole(cloud: str, folder: Path, repeat: int) -> None:
    """The whole command (`fabriccheck CLOUD --from-dump`, JSON report written: interpreter, imports, read,
    judge, write) against a whole `python -c` that json.loads the files, each timed from outside its process,
    alternating (target at 50,000 nodes: at most 1.5x)."""
    files = sorted(str(p) for p in folder.rglob("*.json"))
    command = [shutil.which("fabriccheck") or "fabriccheck", cloud, "--from-dump", str(folder)]
    command += ["-f", "json", "-o", os.devnull, "--fail-on", "never"]
    loads: list[float] = []
    runs: list[float] = []
    for _ in range(repeat):
        for timed, argv in ((loads, [sys.executable, "-c", WHOLE_JSON_LOAD, *files]), (runs, command)):
            start = time.perf_counter()
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
            timed.append(time.perf_counter() - start)
    paired = sorted(run / load for run, load in zip(runs, loads, strict=True))
    print(
        f"  whole process: python -c json.load best {min(loads):.2f} s, median {statistics.median(loads):.2f} s;"
        f" fabriccheck {cloud} --from-dump best {min(runs):.2f} s, median {statistics.median(runs):.2f} s;"
        f" ratio pair by pair {statistics.median(paired):.2f}x median ({paired[0]:.2f}x to {paired[-1]:.2f}x)"
        f" (target at 50,000 nodes <= 1.5x; {repeat} runs of each, alternating)"
    )
