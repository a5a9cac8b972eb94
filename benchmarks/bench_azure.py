"""Benchmark: `fabriccheck azure` on 5,000 VMs.

1. From a dump (az -o json files made by builders/demo_azure.fleet: 25 Uniform scale sets and 25 availability
   sets of 100 VMs, ND H100 v5 and NC A100 v4): normalize + rules + penalty (dump.load_dump, which reads the
   files, then flow.run) against a plain json.load of the same files, each in fresh interpreters, alternating,
   best and median (benchmarks/dump_ratio.py). Target: at most 2.0x. Then the whole command against a whole
   process that json.loads the files (target at 50,000 VMs: at most 1.5x).
2. ARM calls per subscription through the real SDK clients against the local replay server (HTTPS on
   127.0.0.1, pages of 1,000 as ARM serves VM lists), for fleets of 1,000 and 5,000 VMs: the calls do not grow
   with the VM count except for paging and one scale-set VM list per Uniform scale set.
3. `fabriccheck azure --help` start-up (no SDK import). Target: under 0.3 s.

Run: python benchmarks/bench_azure.py [--vms 5000] [--runs 15] [--skip-calls]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from dump_ratio import measure, measure_whole  # noqa: E402

from fabriccheck.builders import demo_azure as builder  # noqa: E402


def _timed(work: Any, runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def bench_dump(vms: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / builder.SUBSCRIPTION
        builder.write(builder.fleet(vms), folder)
        size = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
        print(f"dump: {vms} VMs, {size:.1f} MB of az -o json")
        measure("azure", Path(tmp), runs)
        measure_whole("azure", Path(tmp), runs)


class _Token:
    """A credential for the local server only (the collector tests use the real chain with a fake `az`)."""

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        from azure.core.credentials import AccessToken

        return AccessToken("fake", 4070908800)


def bench_calls(sizes: list[int]) -> None:
    import os

    from arm_replay import ArmReplay, make_certificate, serve

    from fabriccheck.providers.azure import collect

    with tempfile.TemporaryDirectory() as tmp:
        cert, key = make_certificate(Path(tmp))
        os.environ["REQUESTS_CA_BUNDLE"] = str(cert)
        for vms in sizes:
            replay = ArmReplay({builder.SUBSCRIPTION: builder.fleet(vms).files}, page_size=1000)
            with serve(replay, cert, key) as url:
                start = time.perf_counter()
                inventory = collect.collect_live([builder.SUBSCRIPTION], endpoint_url=url, credential=_Token())
                elapsed = time.perf_counter() - start
            assert inventory.complete, inventory.errors
            kinds = Counter(
                "scale-set VM lists" if "/virtualMachineScaleSets/" in p else p.rsplit("/", 1)[-1]
                for _, p in replay.calls
            )
            detail = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
            print(f"ARM calls for one subscription with {vms} VMs: {len(replay.calls)} in {elapsed:.1f} s ({detail})")


def bench_help() -> None:
    command = [shutil.which("fabriccheck") or "fabriccheck", "azure", "--help"]
    subprocess.run(command, capture_output=True, check=True)
    runs = []
    for _ in range(10):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        runs.append(time.perf_counter() - start)
    print(
        f"fabriccheck azure --help: median {statistics.median(runs) * 1000:.0f} ms, worst {max(runs) * 1000:.0f} ms "
        "(target < 300 ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vms", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--skip-calls", action="store_true", help="the dump figures only")
    args = parser.parse_args()
    bench_dump(args.vms, args.runs)
    if args.skip_calls:
        return
    bench_calls([1000, args.vms])
    bench_help()


if __name__ == "__main__":
    main()
