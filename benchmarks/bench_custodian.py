"""Benchmark: fabriccheck side by side with Cloud Custodian and a plain paginated DescribeInstances, on one local
EC2 endpoint serving 1,000 p5.48xlarge instances with 32 EFA interfaces each.

The endpoint is tests/ec2_replay.py (moto cannot show EFA interfaces) in its own process on 127.0.0.1; it keeps
each answer it has rendered, so after a warm-up every tool is timed on its own work, not the endpoint's. A few
instances are wrong on purpose: 3 with no EFA interface, 2 with 16 of their 32, and a group of 8 outside any
placement group. Custodian runs an equivalent policy (p5* instances with fewer than 32 EFA interfaces, or with
no placement group) and must find exactly the instances fabriccheck's fabric and placement findings name.

Each tool runs as a fresh process (interpreter and imports included), the three interleaved, best of N:
  plain      python: boto3 paginator over DescribeInstances (PageSize 1000), nothing else
  fabriccheck  fabriccheck aws --region us-east-1 --endpoint-url URL -f json (every call, rules, report)
  custodian  custodian run (c7n in its own virtualenv, not a dependency of fabriccheck)

Custodian lives in its own virtualenv; make it once with:
    python3 -m venv /work/c7n-venv && /work/c7n-venv/bin/pip install c7n

Run: python benchmarks/bench_custodian.py [--instances 1000] [--repeat 3] [--c7n-venv /work/c7n-venv]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from fabriccheck.builders.demo_aws import (  # noqa: E402
    ACCOUNT,
    SG_EFA,
    Account,
    placement_groups,
    recorded_instance_types,
    security_groups,
    subnets,
    write,
)

SUBNET = "subnet-0a00000000000000a"
WRONG_NO_EFA = 3
WRONG_HALF_EFA = 2
LOOSE = 8  # p5 instances outside any placement group

SERVER = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from ec2_replay import Ec2Replay, serve

class Remembering(Ec2Replay):
    # The same request gets the same answer: render each once, so the tools are timed, not the endpoint.
    seen = {}
    def respond(self, region, params):
        if params.get("Action") == ["GetCallerIdentity"]:  # STS: who is asking (Custodian wants to know)
            return 200, STS.format(account=sys.argv[3])
        key = (region, tuple(sorted((k, tuple(v)) for k, v in params.items())))
        if key not in self.seen:
            self.seen[key] = super().respond(region, params)
        return self.seen[key]

STS = (
    '<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>'
    "<Arn>arn:aws:iam::{account}:user/benchmark</Arn><UserId>AIDABENCHMARK</UserId><Account>{account}</Account>"
    "</GetCallerIdentityResult><ResponseMetadata><RequestId>0</RequestId></ResponseMetadata>"
    "</GetCallerIdentityResponse>"
)
replay = Remembering.from_dump(Path(sys.argv[2]))
with serve(replay) as url:
    print(url, flush=True)
    sys.stdin.read()  # until the benchmark closes our stdin
"""

PLAIN = """
import sys, boto3
client = boto3.client("ec2", region_name="us-east-1", endpoint_url=sys.argv[1])
pages = client.get_paginator("describe_instances").paginate(PaginationConfig={"PageSize": 1000})
print(sum(len(r["Instances"]) for page in pages for r in page["Reservations"]))
"""

POLICY = """
policies:
  - name: p5-fabric-unused
    resource: aws.ec2
    filters:
      - type: value
        key: InstanceType
        op: glob
        value: "p5*"
      - or:
          - type: value
            key: "length(NetworkInterfaces[?InterfaceType=='efa' || InterfaceType=='efa-only'])"
            op: lt
            value: 32
          - type: value
            key: Placement.GroupName
            value: empty
"""


def build(folder: Path, instances: int) -> set[str]:
    """The fleet's answers in `folder`; returns the ids of the instances that are wrong."""
    account = Account()
    wrong: list[str] = []
    efa = lambda: account.efa_layout(32, SUBNET, [SG_EFA])  # noqa: E731
    groups: dict[str, str] = {}
    placed = instances - LOOSE
    for group in range(placed // 16):
        name = f"pg-p5-{group}"
        groups[name] = "cluster"
        size = 16 if group < placed // 16 - 1 else placed - 16 * group
        tags = {"aws:autoscaling:groupName": f"p5-{group}"}
        if group == 0:
            wrong += account.instances(WRONG_NO_EFA, "p5.48xlarge", placement_group=name, tags=tags)
            size -= WRONG_NO_EFA
        if group == 1:
            half = lambda: account.efa_layout(16, SUBNET, [SG_EFA])  # noqa: E731
            wrong += account.instances(WRONG_HALF_EFA, "p5.48xlarge", nics=half, placement_group=name, tags=tags)
            size -= WRONG_HALF_EFA
        account.instances(size, "p5.48xlarge", nics=efa, placement_group=name, tags=tags)
    wrong += account.instances(LOOSE, "p5.48xlarge", nics=efa, tags={"aws:autoscaling:groupName": "p5-loose"})
    write(
        folder,
        {
            "describe-instances.json": {"Reservations": account.reservations},
            "describe-instance-types.json": {"InstanceTypes": recorded_instance_types({"p5.48xlarge"})},
            "describe-placement-groups.json": placement_groups(groups),
            "describe-security-groups.json": security_groups(),
            "describe-subnets.json": subnets(),
            "describe-launch-template-versions.json": {"LaunchTemplateVersions": []},
            "describe-capacity-reservations.json": {"CapacityReservations": []},
        },
    )
    return set(wrong)


_REPORT = ("--fail-on", "never", "-f", "json", "-o")
_C7N = ("-r", "us-east-1", "-q", "--cache-period", "0")


def timed(argv: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> tuple[float, str]:
    start = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
    elapsed = time.perf_counter() - start
    if result.returncode not in ok:
        raise SystemExit(f"{argv[0]} exited {result.returncode}: {result.stderr.strip()[-2000:]}")
    return elapsed, result.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--c7n-venv", type=Path, default=Path("/work/c7n-venv"))
    args = parser.parse_args()
    custodian = args.c7n_venv / "bin" / "custodian"
    if not custodian.exists():
        print(
            f"skipped: Cloud Custodian is not installed at {custodian} (make its own virtualenv with: "
            f"python3 -m venv {args.c7n_venv} && {args.c7n_venv}/bin/pip install c7n)"
        )
        return
    work = Path(tempfile.mkdtemp(prefix="fabriccheck-c7n-"))
    try:
        run(args, custodian, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, custodian: Path, work: Path) -> None:
    wrong = build(work / "dump", args.instances)
    (work / "policy.yml").write_text(POLICY)
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(ROOT / "tests"), str(work / "dump"), ACCOUNT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1:"):
            raise SystemExit(f"the local endpoint did not start: {url!r}")
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env |= {
            "AWS_ACCESS_KEY_ID": "AKIDBENCHMARK",
            "AWS_SECRET_ACCESS_KEY": "benchmark",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
            # Custodian takes its endpoint from the standard variables (boto3 honours them); it also asks STS
            # who it is, so STS points at the same endpoint, which answers it as the account below.
            "AWS_ENDPOINT_URL_EC2": url,
            "AWS_ENDPOINT_URL_STS": url,
        }
        fabriccheck = shutil.which("fabriccheck") or "fabriccheck"
        report = work / "report.json"
        tools = {
            "plain DescribeInstances": [sys.executable, "-c", PLAIN, url],
            "fabriccheck": [fabriccheck, "aws", "-r", "us-east-1", "--endpoint-url", url, *_REPORT, str(report)],
            # --cache-period 0: Custodian would otherwise answer a second run from its own cache of resources.
            "custodian": [str(custodian), "run", "-s", str(work / "c7n"), *_C7N, str(work / "policy.yml")],
        }
        times: dict[str, list[float]] = {name: [] for name in tools}
        for argv in tools.values():  # warm-up: the endpoint renders every answer once
            timed(argv, env)
        for _ in range(args.repeat):
            for name, argv in tools.items():
                times[name].append(timed(argv, env)[0])
    finally:
        if server.stdin:
            server.stdin.close()
        server.wait(timeout=30)

    found = _fabriccheck_found(report)
    resources = json.loads((work / "c7n" / "p5-fabric-unused" / "resources.json").read_text())
    custodian_found = {r["InstanceId"] for r in resources}
    plain = min(times["plain DescribeInstances"])
    print(f"{args.instances} p5.48xlarge with 32 EFAs each on one local endpoint; {len(wrong)} wrong on purpose")
    for name, values in times.items():
        print(f"  {name:24s} best {min(values):6.2f} s   ({min(values) / plain:.2f}x the plain call)")
    print(f"fabriccheck / plain DescribeInstances: {min(times['fabriccheck']) / plain:.2f}  (target <= 1.1)")
    print(f"instances found: fabriccheck {len(found)}, custodian {len(custodian_found)}, planted {len(wrong)}")
    if not (found == custodian_found == wrong):
        raise SystemExit(
            f"the tools disagree: only fabriccheck {sorted(found - custodian_found)}, only custodian "
            f"{sorted(custodian_found - found)}, planted but missed {sorted(wrong - found)}"
        )
    print("same instances found by both")


def _fabriccheck_found(report: Path) -> set[str]:
    """Instances named by fabriccheck's fabric and placement findings (a cluster finding names its nodes)."""
    doc = json.loads(report.read_text())
    categories = {"fabric-missing", "fabric-partial", "placement"}
    return {r for f in doc["findings"] if f["category"] in categories for r in f["resources"] if r.startswith("i-")}


if __name__ == "__main__":
    main()
