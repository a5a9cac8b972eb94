"""Benchmark: `fabriccheck slurm --from-dump` on a large cluster against loading the same files with `json.load`.

Cluster (default): 10,000 GPU nodes on the EC2 instances of a fleet dump (bench_dump.build_fleet, 20,000 instances,
given as --cloud-dump and joined by NodeAddr) (`scontrol show nodes --json`, each node in the shape of
fixtures/slurm/pcluster/nodes.json), 10 partitions of 1,000 nodes, a topology/block topology.conf of 18-node blocks
(one in 50 nodes left out of every block: findings to report), and 50,000 jobs (`squeue --json`, the shape of
fixtures/slurm/pcluster/jobs.json): 4,000 running jobs of 2 nodes, the rest pending. Both sides run as fresh
processes; the fabriccheck time is the whole command (interpreter, imports, read, normalize, judge, penalty, JSON
report). The target (issue 31) is at most 1.5x the time a whole process takes to json.load the same files; the
json.load time inside that process is printed beside it.

    python benchmarks/bench_slurm.py [--nodes 10000 --jobs 50000 --repeat 3 --keep /tmp/slurm10k]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dump import JSON_LOAD, build_fleet, measure

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "slurm" / "pcluster"
PARTITION = 1_000  # nodes per partition
BLOCK = 18  # nodes per block (a GB200 NVL72 rack of 4-GPU nodes)
LEFT_OUT = 50  # one node in this many is in no block
RUNNING = 4_000  # running jobs of two nodes each


def _name(index: int) -> str:
    return f"q{index // PARTITION}-st-p5-{index % PARTITION + 1}"


def _gpu_addresses(cloud: Path, nodes: int) -> list[str]:
    """The private IPs of `nodes` GPU instances of an EC2 fleet dump (bench_dump.build_fleet: p5 and p4d groups of
    16 in cluster placement groups, half as many c5 instances)."""
    build_fleet(cloud, 2 * nodes)
    answer = json.loads((cloud / "describe-instances.json").read_text())
    found = [
        instance["PrivateIpAddress"]
        for reservation in answer["Reservations"]
        for instance in reservation["Instances"]
        if instance["InstanceType"] != "c5.xlarge"
    ]
    return found[:nodes]


def build(folder: Path, nodes: int, jobs: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    addresses = _gpu_addresses(folder / "aws", nodes)
    node_doc = json.loads((FIXTURE / "nodes.json").read_text())
    template = node_doc["nodes"][0]
    listed = []
    for index, address in enumerate(addresses):
        node = copy.deepcopy(template)
        node.update(name=_name(index), address=address, hostname=f"ip-{address.replace('.', '-')}",
                    partitions=[f"q{index // PARTITION}"])  # fmt: skip
        listed.append(node)
    node_doc["nodes"] = listed
    (folder / "nodes.json").write_text(json.dumps(node_doc))
    part_doc = json.loads((FIXTURE / "partitions.json").read_text())
    part_template = part_doc["partitions"][0]
    part_doc["partitions"] = [
        {**copy.deepcopy(part_template), "name": f"q{p}"} for p in range(-(-nodes // PARTITION))
    ]
    (folder / "partitions.json").write_text(json.dumps(part_doc))
    job_doc = json.loads((FIXTURE / "jobs.json").read_text())
    running, pending = job_doc["jobs"][0], job_doc["jobs"][2]
    listed = []
    for index in range(jobs):
        job: dict[str, Any] = copy.deepcopy(running if index < RUNNING else pending)
        first = (index * 2) % nodes
        job.update(job_id=1000 + index, partition=f"q{first // PARTITION}")
        if index < RUNNING:
            job["nodes"] = f"{_name(first)},{_name(first + 1)}"
        listed.append(job)
    job_doc["jobs"] = listed
    (folder / "jobs.json").write_text(json.dumps(job_doc))
    lines = ["BlockSizes=18"]
    for start in range(0, nodes, BLOCK):
        members = [_name(i) for i in range(start, min(start + BLOCK, nodes)) if i % LEFT_OUT != LEFT_OUT - 1]
        lines.append(f"BlockName=b{start // BLOCK} Nodes={','.join(members)}")
    (folder / "topology.conf").write_text("\n".join(lines) + "\n")
    shutil.copy(FIXTURE / "slurm.conf", folder / "slurm.conf")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="build the dump here and keep it")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="fabriccheck-slurm-bench-"))
    if not (folder / "jobs.json").exists():
        build(folder, args.nodes, args.jobs)
    files = sorted(str(p) for p in folder.rglob("*.json"))
    print(f"dump: {sum(os.path.getsize(f) for f in files) / 1e6:.0f} MB in {len(files)} JSON files ({folder})")
    fabriccheck = shutil.which("fabriccheck") or "fabriccheck"
    process_times, load_times, run_times = [], [], []
    out = ""
    for _ in range(args.repeat):
        wall, _, loaded = measure([sys.executable, "-c", JSON_LOAD, *files])
        process_times.append(wall)
        load_times.append(float(loaded.strip()))
        command = [fabriccheck, "slurm", "--from-dump", str(folder), "--cloud-dump", str(folder / "aws"), "-f", "json"]
        wall, _, out = measure([*command, "--fail-on", "never"])
        run_times.append(wall)
    report = json.loads(out)
    process_t, run_t = min(process_times), min(run_times)
    print(f"a process that json.loads the files: best {process_t:.2f} s (json.load itself {min(load_times):.2f} s)")
    median = statistics.median(run_times)
    print(f"fabriccheck slurm --from-dump --cloud-dump (whole command): best {run_t:.2f} s, median {median:.2f} s")
    summary = report["summary"]
    print(f"  {len(report['findings'])} findings in {summary['clusters']} clusters, {summary['nodes']} nodes judged")
    print(f"time ratio (fabriccheck / json.load process): best {run_t / process_t:.2f}  (target <= 1.5)")
    if not args.keep:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
