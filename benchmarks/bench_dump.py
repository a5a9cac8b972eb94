"""Benchmark: `fabriccheck aws --from-dump` on a large fleet against plain `json.load` of the same files.

Fleet (per 10,000 instances): 2,500 p5.48xlarge with 32 EFA interfaces each (33 NICs), 2,500 p4d.24xlarge with
4 EFAs, 5,000 CPU instances, in node groups of 16; about 190 MB of CLI-shaped JSON per 10,000. Both sides run
as fresh processes and their peak memory (max RSS) is read with wait4 for that process alone. The fabriccheck
time is the whole command (interpreter, imports, read, normalize, cluster, rules, penalty, JSON report); the
baseline is json.load alone inside its process.

Targets (issue 11) at 100,000 instances (1.9 GB): peak memory under 1 GB, time at most 1.5x json.load's.
Building that dump takes about two minutes; keep it for later runs:

    python benchmarks/bench_dump.py --instances 100000 --keep /tmp/aws100k --repeat 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fabriccheck.builders.demo_aws import (
    SG_EFA,
    Account,
    placement_groups,
    recorded_instance_types,
    security_groups,
    subnets,
    write,
)


def build_fleet(folder: Path, instances: int) -> None:
    account = Account()
    quarter = instances // 4
    subnet = "subnet-0a00000000000000a"
    for group in range(quarter // 16):
        account.instances(
            16,
            "p5.48xlarge",
            nics=lambda: account.efa_layout(32, subnet, [SG_EFA]),
            placement_group=f"pg-p5-{group}",
            tags={"aws:autoscaling:groupName": f"p5-{group}"},
        )
    for group in range(quarter // 16):
        # every other p4d group forgot its EFA interfaces: findings to report, not just clean clusters
        account.instances(
            16,
            "p4d.24xlarge",
            nics=(lambda: account.efa_layout(4, subnet, [SG_EFA])) if group % 2 else None,
            placement_group=f"pg-p4d-{group}",
            tags={"aws:autoscaling:groupName": f"p4d-{group}"},
        )
    for group in range((instances - 2 * (quarter // 16) * 16) // 50):
        account.instances(50, "c5.xlarge", tags={"aws:autoscaling:groupName": f"web-{group}"})
    groups = {f"pg-p5-{g}": "cluster" for g in range(quarter // 16)} | {
        f"pg-p4d-{g}": "cluster" for g in range(quarter // 16)
    }
    write(
        folder,
        {
            "describe-instances.json": {"Reservations": account.reservations},
            "describe-instance-types.json": {
                "InstanceTypes": recorded_instance_types({"p5.48xlarge", "p4d.24xlarge", "c5.xlarge"})
            },
            "describe-placement-groups.json": placement_groups(groups),
            "describe-security-groups.json": security_groups(),
            "describe-subnets.json": subnets(),
            "describe-launch-template-versions.json": {"LaunchTemplateVersions": []},
            "describe-capacity-reservations.json": {"CapacityReservations": []},
        },
    )


def measure(argv: list[str]) -> tuple[float, float, str]:
    """(wall seconds, max RSS in MB, stdout) of a fresh process."""
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        start = time.perf_counter()
        process = subprocess.Popen(argv, stdout=stdout, stderr=stderr, text=True)
        _, status, usage = os.wait4(process.pid, 0)  # wait4: this child's own peak memory
        wall = time.perf_counter() - start
        stdout.seek(0)
        stderr.seek(0)
        out, err = stdout.read(), stderr.read()
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{argv[0]} failed: {err}")
    return wall, usage.ru_maxrss / 1024, out


JSON_LOAD = """
import json, sys, time
start = time.perf_counter()
loaded = [json.load(open(path)) for path in sys.argv[1:]]
print(time.perf_counter() - start)
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)  # this machine is noisy: take the best of 5
    parser.add_argument("--keep", type=Path, help="build the dump here and keep it")
    parser.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="fabriccheck-bench-"))
    if args.build_only:
        build_fleet(folder, args.instances)
        return
    if not (folder / "describe-instances.json").exists():
        t = time.perf_counter()
        # Built in a child process: a process started from this one inherits its peak RSS (Linux carries the
        # high-water mark across fork and exec), so building 100,000 instances here would inflate both peaks.
        build = [sys.executable, __file__, "--build-only", "--instances", str(args.instances), "--keep", str(folder)]
        subprocess.run(build, check=True)
        print(f"built {args.instances} instances in {time.perf_counter() - t:.1f} s")
    files = sorted(str(p) for p in folder.glob("*.json"))
    size = sum(os.path.getsize(f) for f in files) / 1e6
    print(f"dump: {size:.0f} MB in {len(files)} files ({folder})")

    fabriccheck = shutil.which("fabriccheck") or "fabriccheck"
    load_times, load_rss, run_times, run_rss = [], [], [], []
    for _ in range(args.repeat):
        _, rss, out = measure([sys.executable, "-c", JSON_LOAD, *files])
        load_times.append(float(out.strip()))
        load_rss.append(rss)
        wall, rss, out = measure([fabriccheck, "aws", "--from-dump", str(folder), "-f", "json", "--fail-on", "never"])
        run_times.append(wall)
        run_rss.append(rss)
    report = json.loads(out)
    load_t, run_t = min(load_times), min(run_times)
    # Runs alternate, so a slow spell of the machine hits both sides; best and median are both shown.
    print(
        f"json.load of the files: best {load_t:.2f} s, median {statistics.median(load_times):.2f} s, "
        f"peak RSS {min(load_rss):.0f} MB"
    )
    print(
        f"fabriccheck aws --from-dump (whole command): best {run_t:.2f} s, "
        f"median {statistics.median(run_times):.2f} s, peak RSS {min(run_rss):.0f} MB"
    )
    print(
        f"  {len(report['findings'])} findings in {report['summary']['clusters']} clusters, "
        f"{report['summary']['nodes']} nodes"
    )
    print(
        f"time ratio (fabriccheck / json.load): best {run_t / load_t:.2f}, "
        f"median {statistics.median(run_times) / statistics.median(load_times):.2f}  (target <= 1.5)"
    )
    print(
        f"memory: fabriccheck {min(run_rss):.0f} MB, json.load {min(load_rss):.0f} MB, ratio "
        f"{min(run_rss) / min(load_rss):.2f}  (target: under 1,000 MB at 100,000 instances)"
    )
    print(f"time per 1,000 instances: {run_t / args.instances * 1000 * 1000:.0f} ms")
    if not args.keep:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
