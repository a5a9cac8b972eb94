"""Benchmark: `fabriccheck gcp --from-dump` on a 5,000-instance project against a plain `json.load` of the files,
and the Compute API calls per project as the fleet grows.

Fleet (fabriccheck/builders/demo_gcp.fleet): a3-highgpu-8g in GKE node pools of 16, each pool with its compact policy;
every seventh node lacks two GPU NICs, so there are findings to report. Both sides run in fresh processes,
alternating (benchmarks/dump_ratio.py): the baseline is json.load of the five files; fabriccheck is load_dump
(read + normalize) + clusters + rules + penalty (flow.run) measured inside its process. Then the whole command
(interpreter, imports, JSON report written) against a whole process that json.loads the files (the 50,000-instance
target).
Calls: the live collector against tests/gce_replay.py on 127.0.0.1 (real google-cloud-compute clients).

Run: python benchmarks/bench_gcp.py [--instances 5000] [--repeat 15] [--skip-calls]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from dump_ratio import measure, measure_whole  # noqa: E402

from fabriccheck.builders.demo_gcp import PROJECT, fleet  # noqa: E402  (after the path insert)


def calls(instances: int) -> int:
    from gce_replay import ComputeReplay, fake_service_account_key, serve

    from fabriccheck.providers.gcp import collect

    key = Path(tempfile.mkdtemp()) / "key.json"
    key.write_text(json.dumps(fake_service_account_key()))
    os.environ.update(
        {"GOOGLE_APPLICATION_CREDENTIALS": str(key), "NO_GCE_CHECK": "True", "GCE_METADATA_HOST": "127.0.0.1:9"}
    )
    project = fleet(instances)
    replay = ComputeReplay.from_files({PROJECT: project.files()})
    with serve(replay) as url:
        clients = collect.Clients(collect.credentials()[0], url, 5.0)
        _, errors, count = collect.fetch_project(clients, PROJECT, [])
    assert not errors, errors
    return count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", type=int, default=5_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--skip-calls", action="store_true", help="the dump figures only")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="fabriccheck-bench-gcp-"))
    fleet(args.instances).write(folder)
    files = sorted(str(p) for p in folder.glob("*.json"))
    size = sum(os.path.getsize(f) for f in files) / 1e6
    print(f"dump: {args.instances} instances, {size:.0f} MB in {len(files)} files")

    measure("gcp", folder, args.repeat)
    measure_whole("gcp", folder, args.repeat)
    shutil.rmtree(folder)
    if args.skip_calls:
        return
    for size in (500, 5_000, 20_000):
        print(f"Compute API calls per project for {size:,} instances: {calls(size)} (5 lists, 500 per page)")


if __name__ == "__main__":
    main()
