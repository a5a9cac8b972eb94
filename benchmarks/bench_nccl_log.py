"""Benchmark: `fabriccheck nccl-log` on a 1 GB NCCL_DEBUG=INFO log, streamed.

The log is built in /tmp from the real line shapes of tests/fixtures/nccl/log_*.txt (sources in SOURCES.md):
each fixture message is printed by 512 processes (64 hosts x 8 GPUs, as a 64-node x 8-GPU job prints them),
and every block of lines gets new thread ids (as each communicator init starts new threads), so no two lines of
the file are the same: the reader cannot skip repeated lines, only repeated (process, message) pairs.
The command runs as a fresh process
(`fabriccheck nccl-log FILE --format json`); its peak memory (max RSS of the child) is printed next to the
same command on a 100 MB log: flat memory means the reader does not keep lines.

Run: python benchmarks/bench_nccl_log.py [--gigabytes 1.0] [--keep]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "nccl"
PREFIX = re.compile(r"^([^\s:|]+):(\d+):(\d+) \[\d+\] ")
HOSTS, PER_HOST = 64, 8


def shapes() -> list[str]:
    out = []
    for path in sorted(FIXTURES.glob("log_*.txt")):
        for line in path.read_text().splitlines():
            if PREFIX.match(line):
                out.append(PREFIX.sub("", line))  # the message; the prefix is made per process below
    return out


def build(path: Path, target_bytes: int) -> int:
    messages = shapes()
    block = []
    for index, message in enumerate(messages * 4):
        host, pid = index % HOSTS, (index // HOSTS) % PER_HOST
        block.append(f"gpu-node-{host:03d}:{10_000 + pid}:2000{pid} [{pid}] {message}\n")
    written = 0
    template = "".join(block)
    with path.open("wb") as out:
        for round_ in range(10**9):
            if written >= target_bytes:
                break
            chunk = template.replace(":2000", f":{round_ % 100_000:05d}").encode()
            out.write(chunk)
            written += len(chunk)
    return written


def measure(path: Path) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one `fabriccheck nccl-log` child process. CPU time is
    printed too because the wall time grows when other work shares the machine."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, cpu_before = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "fabriccheck", "nccl-log", str(path), "--format", "json", "--fail-on", "never"],
        capture_output=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(done.stderr.decode())
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime - cpu_before
    return seconds, cpu, max(usage.ru_maxrss, before) / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gigabytes", type=float, default=1.0)
    parser.add_argument("--keep", action="store_true", help="keep the generated logs in /tmp")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="fabriccheck-nccl-log-", dir="/tmp"))
    small, large = folder / "small.log", folder / "large.log"
    try:
        small_bytes = build(small, int(0.1 * 1e9))
        large_bytes = build(large, int(args.gigabytes * 1e9))
        lines = sum(1 for _ in large.open("rb"))
        s_time, s_cpu, s_rss = measure(small)  # first: RUSAGE_CHILDREN's max only grows
        l_time, l_cpu, l_rss = measure(large)
        print(f"log: {large_bytes / 1e9:.2f} GB, {lines:,} lines, {HOSTS * PER_HOST} processes")
        print(f"nccl-log {small_bytes / 1e9:.2f} GB: {s_time:6.2f} s ({s_cpu:5.2f} s CPU), peak RSS {s_rss:6.1f} MB")
        print(f"nccl-log {large_bytes / 1e9:.2f} GB: {l_time:6.2f} s ({l_cpu:5.2f} s CPU), peak RSS {l_rss:6.1f} MB")
        print(f"throughput {large_bytes / 1e6 / l_time:,.0f} MB/s; target: at most 20 s, memory flat")
    finally:
        if not args.keep:
            for p in (small, large):
                if p.exists():
                    os.unlink(p)
            folder.rmdir()
        else:
            print(f"kept in {folder}")


if __name__ == "__main__":
    main()
