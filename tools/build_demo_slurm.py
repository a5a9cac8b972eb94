"""Rebuild the demo's Slurm cluster under fixtures/demo/slurm: a ParallelCluster on the demo AWS account
(fixtures/demo/aws), its nodes named by NodeAddr (the instances' private IPs), with a right and a wrong partition and
job. It is fixtures/slurm/pcluster (Slurm's own output shapes; fixtures/slurm/SOURCES.md names each file's source)
without the node that fixture keeps out of its topology and placement group (train-st-p5-5), so that:

- partition `train` (train-st-p5-[1-4]: one block, one zone, one placement group) and its job 101 are right;
- partition `spot` (spot-dy-p5-[1-2]: one block over two zones) and its job 102 are wrong;
- job 103 waits for four nodes of `train`.

`fabriccheck demo` reads it joined to fixtures/demo/aws (fabriccheck/cli/scans.py, demo_inventory).

Run: python tools/build_demo_slurm.py
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "fixtures" / "slurm" / "pcluster"
OUT = ROOT / "fixtures" / "demo" / "slurm"
DROPPED = "train-st-p5-5"


def _write_json(path: Path, doc: object) -> None:
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    nodes = json.loads((SOURCE / "nodes.json").read_text())
    nodes["nodes"] = [n for n in nodes["nodes"] if n["name"] != DROPPED]
    _write_json(OUT / "nodes.json", nodes)
    partitions = json.loads((SOURCE / "partitions.json").read_text())
    for partition in partitions["partitions"]:
        partition["nodes"]["configured"] = partition["nodes"]["configured"].replace("[1-5]", "[1-4]")
    _write_json(OUT / "partitions.json", partitions)
    shutil.copy(SOURCE / "jobs.json", OUT / "jobs.json")
    shutil.copy(SOURCE / "topology.conf", OUT / "topology.conf")
    for name in ("slurm.conf", "gres.conf"):
        (OUT / name).write_text((SOURCE / name).read_text().replace("train-st-p5-[1-5]", "train-st-p5-[1-4]"))


if __name__ == "__main__":
    main()
