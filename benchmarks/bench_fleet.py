"""Benchmark: an AWS organization of 50 accounts x 4 regions on a local moto server (127.0.0.1), collected with
`--org-role` at concurrency 1, 8 and 32: wall time, peak memory and API calls.

moto keeps each account's resources apart and honours cross-account AssumeRole, so every scope (account x
region) answers with its own instances. moto does not implement DescribePlacementGroups (it answers HTTP 500),
nor DescribeCapacityReservations, so the benchmark gives its server the empty answers AWS gives an account
without them; everything else is moto's own. Each measurement runs
in a fresh process (its peak RSS is the process's own, imports included; the baseline after imports is shown
too), the concurrency levels interleaved round by round, best wall time of the rounds kept.

Run: python benchmarks/bench_fleet.py [--accounts 50] [--regions 4] [--instances 4] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REGIONS = ["us-east-1", "us-west-2", "eu-west-1", "ap-northeast-1", "eu-central-1", "ap-south-1"]
ROLE = "OrganizationAccountAccessRole"
ENV = {
    "AWS_ACCESS_KEY_ID": "AKIDBENCHFLEET000001",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}


def _empty_placement_groups() -> None:
    """moto answers DescribePlacementGroups with HTTP 500 (not implemented): give it the empty answer AWS gives
    an account without placement groups, so the benchmark measures collection rather than retries."""
    from moto.ec2.responses import EC2Response

    def describe_placement_groups(self: EC2Response) -> str:
        return (
            '<DescribePlacementGroupsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
            "<requestId>0</requestId><placementGroupSet/></DescribePlacementGroupsResponse>"
        )

    def describe_capacity_reservations(self: EC2Response) -> str:
        return (
            '<DescribeCapacityReservationsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
            "<requestId>0</requestId><capacityReservationSet/></DescribeCapacityReservationsResponse>"
        )

    EC2Response.describe_placement_groups = describe_placement_groups  # type: ignore[attr-defined]
    EC2Response.describe_capacity_reservations = describe_capacity_reservations  # type: ignore[attr-defined]


def build(url: str, accounts: int, regions: list[str], instances: int) -> list[str]:
    """An organization with `accounts` member accounts, each running `instances` p4d.24xlarge per region
    (launched through the member's own assumed role, as they would be)."""
    import boto3

    org = boto3.client("organizations", region_name="us-east-1", endpoint_url=url)
    org.create_organization(FeatureSet="ALL")
    for n in range(accounts):
        org.create_account(AccountName=f"team-{n:03d}", Email=f"team-{n:03d}@example.com")
    members = [a["Id"] for a in org.list_accounts()["Accounts"] if a["Name"].startswith("team-")]
    sts = boto3.client("sts", region_name="us-east-1", endpoint_url=url)
    for account in members:
        given = sts.assume_role(RoleArn=f"arn:aws:iam::{account}:role/{ROLE}", RoleSessionName="setup")["Credentials"]
        keys = {
            "aws_access_key_id": given["AccessKeyId"],
            "aws_secret_access_key": given["SecretAccessKey"],
            "aws_session_token": given["SessionToken"],
        }
        for region in regions:
            ec2 = boto3.client("ec2", region_name=region, endpoint_url=url, **keys)
            ec2.run_instances(
                ImageId="ami-12c6146b",
                MinCount=instances,
                MaxCount=instances,
                InstanceType="p4d.24xlarge",
                TagSpecifications=[
                    {"ResourceType": "instance", "Tags": [{"Key": "aws:autoscaling:groupName", "Value": "trainers"}]}
                ],
            )
    return members


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM: unlike ru_maxrss, not inherited across exec from the parent,
    which holds the moto server)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(concurrency: int, regions: list[str]) -> None:
    """One collection in this (fresh) process; prints one JSON line."""
    import boto3

    from fabriccheck.providers.aws import collect, fleet

    baseline = peak_rss_mb()
    session = boto3.session.Session()
    sent: list[str] = []
    session.events.register("before-send", lambda **_: sent.append(""))
    start = time.perf_counter()
    inventory = collect.collect_live(
        regions, session=session, accounts=fleet.Fleet(org_role=ROLE), concurrency=concurrency
    )
    wall = time.perf_counter() - start
    peak = peak_rss_mb()
    scopes = [s for s in inventory.scopes if s.region]
    print(
        json.dumps(
            {
                "concurrency": concurrency,
                "wall": wall,
                "peak_mb": peak,
                "baseline_mb": baseline,
                "requests": len(sent),
                "retries": sum(s.retries for s in inventory.scopes),
                "scopes": len(scopes),
                "incomplete": sum(1 for s in inventory.scopes if not s.complete),
                "nodes": len(inventory.nodes),
                "errors": sorted({f"{e.call} {e.code}" for e in inventory.errors}),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--accounts", type=int, default=50)
    parser.add_argument("--regions", type=int, default=4)
    parser.add_argument("--instances", type=int, default=4, help="instances per account and region")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--levels", default="1,8,32")
    parser.add_argument("--measure", type=int, help=argparse.SUPPRESS)  # the child: collect at this concurrency
    args = parser.parse_args()
    regions = REGIONS[: args.regions]
    os.environ.update(ENV)
    if args.measure is not None:
        measure(args.measure, regions)
        return

    from moto.server import ThreadedMotoServer

    _empty_placement_groups()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    os.environ["AWS_ENDPOINT_URL"] = url  # EC2, STS and Organizations alike, as boto3 reads it
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    started = time.perf_counter()
    members = build(url, args.accounts, regions, args.instances)
    print(
        f"organization: {len(members)} accounts x {len(regions)} regions x {args.instances} instances "
        f"(built in {time.perf_counter() - started:.0f} s on moto at {url})"
    )
    levels = [int(n) for n in args.levels.split(",")]
    results: dict[int, list[dict[str, object]]] = {n: [] for n in levels}
    for _ in range(args.rounds):
        for level in levels:  # interleaved: each round measures every level once
            child = subprocess.run(
                [sys.executable, __file__, "--measure", str(level), "--regions", str(args.regions)],
                capture_output=True,
                text=True,
                env={**os.environ},
                check=True,
            )
            results[level].append(json.loads(child.stdout.strip().splitlines()[-1]))
    server.stop()
    print(f"{'concurrency':>11} {'wall s':>8} {'peak MB':>8} {'after imports':>13} {'requests':>9} {'scopes':>7} nodes")
    for level in levels:
        runs = results[level]
        best = min(runs, key=lambda r: float(str(r["wall"])))
        print(
            f"{level:>11} {float(str(best['wall'])):>8.2f} {max(float(str(r['peak_mb'])) for r in runs):>8.0f} "
            f"{float(str(best['baseline_mb'])):>13.0f} {best['requests']!s:>9} {best['scopes']!s:>7} {best['nodes']}"
            + (f"  incomplete: {best['incomplete']} {best['errors']}" if best["incomplete"] else "")
        )


if __name__ == "__main__":
    main()
