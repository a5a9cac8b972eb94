"""Benchmark: how many EC2 calls one region costs. DescribeInstances pages grow as ceil(N/1000); every other
call must not grow with N. Served by the local replay endpoint on 127.0.0.1 (tests/ec2_replay.py).

Run: python benchmarks/bench_calls.py [--instances 2500]
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
os.environ.update(
    {"AWS_ACCESS_KEY_ID": "AKIDBENCH", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_EC2_METADATA_DISABLED": "true"}
)

from ec2_replay import Ec2Replay, serve  # noqa: E402

from fabriccheck.providers.aws import collect  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", type=int, default=2500)
    args = parser.parse_args()
    demo = ROOT / "fixtures" / "demo" / "aws"
    answers = {p.name: json.loads(p.read_text()) for p in demo.glob("describe-*.json")}
    template = answers["describe-instances.json"]["Reservations"][0]["Instances"][0]  # a p5 with 32 EFAs
    answers["describe-instances.json"] = {
        "Reservations": [
            {
                "OwnerId": "111122223333",
                "ReservationId": f"r-{i:017x}",
                "Groups": [],
                "Instances": [{**template, "InstanceId": f"i-{i:017x}"}],
            }
            for i in range(args.instances)
        ]
    }
    replay = Ec2Replay({"us-east-1": answers})
    with serve(replay) as url:
        start = time.perf_counter()
        inventory = collect.collect_live(["us-east-1"], endpoint_url=url)
        elapsed = time.perf_counter() - start
    counts = collections.Counter(action for _, action in replay.calls)
    pages = counts.pop("DescribeInstances")
    print(f"{len(inventory.nodes)} instances collected in {elapsed:.2f} s (local endpoint)")
    print(f"DescribeInstances pages: {pages} (ceil(N/1000) = {math.ceil(args.instances / 1000)})")
    print(f"other calls: {sum(counts.values())} ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))})")
    print(f"total EC2 calls for N = {args.instances}: {pages + sum(counts.values())}")


if __name__ == "__main__":
    main()
