"""Benchmark: `fabriccheck plan` on a 2,000-resource plan across three clouds (issue 17, item 17).

1. A plan written by builders/plan_builder.PlanBuilder as `terraform show -json` writes it (computed arguments
   and references unknown until apply, configuration with references and module calls) with 2,000 resources:
   modules of AWS p4d.24xlarge instances (count) from a launch template, with their subnet, cluster placement
   group and self-referencing security group (every other group's template without EFA: AWS101 findings); Azure
   ND H100 v5 scale sets with their virtual network and subnet; GCP A3 High instances on five networks (NICs named
   by subnetwork alone, as Cluster Toolkit writes them) with their subnetworks, firewall rules and compact policy.
   The plan must be judged complete: every cluster clean or with findings, none "not judged".
2. The judging, in one warm process: read and map (load_plan), then rules and penalty (flow.run), best and median
   of runs, wall and CPU time. Target: at most 1 s.
3. The whole command, `fabriccheck plan FILE -f json -o /dev/null` in a fresh process (interpreter and imports
   included), best of runs, and its exit code (0 or 1).
4. `fabriccheck plan --help` start-up (no cloud SDK imported). Target: under 0.3 s.

Run: python benchmarks/bench_plan.py [--resources 2000] [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

from fabriccheck.builders.plan_builder import PlanBuilder, const, ref  # noqa: E402


def _aws_group(plan: PlanBuilder, group: int) -> None:
    """One module instance: a subnet, a cluster placement group, a security group that lets EFA traffic flow with
    itself, a launch template and 8 p4d.24xlarge instances (count) from it; every other group's template has no
    EFA interface (AWS101 on each instance)."""
    module = f'module.train["g{group}"]'
    plan.resource(
        "aws_subnet",
        "a",
        {"availability_zone": "us-east-1a", "cidr_block": f"10.{group % 250}.1.0/24"},
        module=module,
        expressions={"vpc_id": ref("var.vpc_id")},
    )
    plan.resource("aws_placement_group", "pg", {"name": f"pg-{group}", "strategy": "cluster"}, module=module)
    plan.resource("aws_security_group", "efa", {"name": f"efa-{group}"}, module=module)
    for kind in ("ingress", "egress"):
        plan.resource(
            f"aws_vpc_security_group_{kind}_rule",
            kind,
            {"ip_protocol": "-1"},
            module=module,
            expressions={
                "security_group_id": ref("aws_security_group.efa.id"),
                "referenced_security_group_id": ref("aws_security_group.efa.id"),
            },
        )
    efa = group % 2 == 0
    cards = [{"device_index": 0 if c == 0 else 1, "network_card_index": c, "interface_type": "efa"} for c in range(4)]
    plan.resource(
        "aws_launch_template",
        "gpu",
        {"name": f"gpu-{group}", "instance_type": "p4d.24xlarge", "network_interfaces": cards if efa else []},
        module=module,
        unknown={"network_interfaces": [{"security_groups": True, "subnet_id": True} for _ in cards]} if efa else {},
        expressions={
            "network_interfaces": [
                {"security_groups": ref("aws_security_group.efa.id"), "subnet_id": ref("aws_subnet.a.id")}
                for _ in cards
            ]
        }
        if efa
        else {"vpc_security_group_ids": ref("aws_security_group.efa.id")},
    )
    for i in range(8):
        plan.resource(
            "aws_instance",
            "node",
            {"launch_template": [{"version": "$Latest"}]},
            module=module,
            index=i,
            count=8,
            unknown={"launch_template": [{"id": True}]},
            expressions={
                "launch_template": [{"id": ref("aws_launch_template.gpu.id")}],
                "subnet_id": ref("aws_subnet.a.id"),
                "placement_group": ref("aws_placement_group.pg.id"),
            },
        )


def _azure_group(plan: PlanBuilder, group: int) -> None:
    """A virtual network and subnet, and a Uniform scale set of 8 ND H100 v5 VMs limited to one placement group,
    on the Ubuntu-HPC image."""
    plan.resource(
        "azurerm_virtual_network",
        f"vnet{group}",
        {"name": f"vnet{group}", "location": "eastus", "address_space": ["10.10.0.0/16"]},
    )
    plan.resource(
        "azurerm_subnet",
        f"sub{group}",
        {"name": "compute", "address_prefixes": ["10.10.1.0/24"]},
        expressions={"virtual_network_name": ref(f"azurerm_virtual_network.vnet{group}.name")},
    )
    plan.resource(
        "azurerm_linux_virtual_machine_scale_set",
        f"nd{group}",
        {
            "name": f"nd{group}",
            "location": "eastus",
            "sku": "Standard_ND96isr_H100_v5",
            "instances": 8,
            "single_placement_group": True,
            "source_image_reference": [{"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204"}],
            "network_interface": [{"name": "nic", "enable_accelerated_networking": True, "ip_configuration": [{}]}],
        },
        unknown={"network_interface": [{"ip_configuration": [{"subnet_id": True}]}]},
        expressions={
            "network_interface": [{"ip_configuration": [{"subnet_id": ref(f"azurerm_subnet.sub{group}.id")}]}]
        },
    )


def _gcp_group(plan: PlanBuilder, group: int) -> None:
    """Five networks with a subnetwork and a firewall rule each, a compact policy and 8 A3 High instances (count)
    whose NICs name the subnetworks alone (as Cluster Toolkit writes them) and whose policy is referenced by its
    self link."""
    nets = [f"g{group}-host", *(f"g{group}-gpu{i}" for i in range(4))]
    for net in nets:
        plan.resource("google_compute_network", net, {"name": net, "mtu": 8244, "auto_create_subnetworks": False})
        plan.resource(
            "google_compute_subnetwork",
            net,
            {"name": f"{net}-sub", "region": "us-central1", "ip_cidr_range": "10.1.0.0/24"},
            expressions={"network": ref(f"google_compute_network.{net}.id")},
        )
        plan.resource(
            "google_compute_firewall",
            net,
            {"name": f"{net}-fw", "allow": [{"protocol": "tcp", "ports": []}], "source_ranges": ["10.0.0.0/8"]},
            expressions={"network": ref(f"google_compute_network.{net}.self_link")},
        )
    plan.resource(
        "google_compute_resource_policy",
        f"p{group}",
        {"name": f"p{group}", "region": "us-central1", "group_placement_policy": [{"collocation": "COLLOCATED"}]},
    )
    for i in range(8):
        plan.resource(
            "google_compute_instance",
            f"a3_{group}",
            {
                "name": f"a3-{group}-{i}",
                "zone": "us-central1-a",
                "machine_type": "a3-highgpu-8g",
                "labels": {"slurm_cluster_name": "bench", "slurm_nodeset": f"n{group}"},
                "network_interface": [{"nic_type": "GVNIC"} for _ in nets],
            },
            index=i,
            count=8,
            expressions={
                "network_interface": [
                    {"subnetwork": ref(f"google_compute_subnetwork.{net}.self_link")} for net in nets
                ],
                "resource_policies": ref(f"google_compute_resource_policy.p{group}.self_link"),
            },
        )


def big_plan(resources: int) -> dict[str, Any]:
    """About `resources` resources, a third per cloud, in groups of eight nodes, written as Terraform writes a plan
    (fabriccheck/builders/plan_builder.PlanBuilder: computed arguments and references unknown until apply)."""
    plan = PlanBuilder()
    plan.region_settings["aws"] = {"region": const("us-east-1")}
    plan.region_settings["azurerm"] = {"subscription_id": const("11111111-2222-3333-4444-555555555555")}
    plan.region_settings["google"] = {"project": const("bench"), "region": const("us-central1")}
    plan.resource("aws_vpc", "train", {"cidr_block": "10.0.0.0/8"})
    plan.module("module.train", "./train", {"vpc_id": ref("aws_vpc.train.id")})
    per_cloud = resources // 3
    group = 0
    while len(plan.changes) < per_cloud:
        _aws_group(plan, group)
        group += 1
    while len(plan.changes) < 2 * per_cloud:
        _azure_group(plan, group)
        group += 1
    while len(plan.changes) < resources:
        _gcp_group(plan, group)
        group += 1
    return plan.build()


def judge(path: Path) -> tuple[float, float, float, int, int, list[str]]:
    """(wall seconds, CPU seconds of this process, of which reading and mapping the plan; nodes, findings, the
    statuses of the clusters). The CPU time is what the run costs when the machine's two cores are shared with
    other jobs; the wall time is what a user waits."""
    from fabriccheck import flow
    from fabriccheck.sources.terraform import load_plan

    start, cpu = time.perf_counter(), time.process_time()
    inventory = load_plan(str(path))
    mapped = time.process_time()
    report = flow.run(inventory, flow.Options())
    statuses: list[str] = [c.status for c in report.clusters]
    return (
        time.perf_counter() - start,
        time.process_time() - cpu,
        mapped - cpu,
        len(inventory.nodes),
        len(report.findings),
        statuses if report.complete else ["collection incomplete"],
    )


def _ms(values: list[float]) -> str:
    return f"best {min(values) * 1000:.0f} ms, median {statistics.median(values) * 1000:.0f} ms"


def _whole_command(path: Path, runs: int) -> None:
    """`fabriccheck plan` as a user runs it, in a fresh process each time: wall time, and the CPU time the process
    used (what it costs when the machine is shared)."""
    fabriccheck = shutil.which("fabriccheck") or "fabriccheck"
    times, cpus, codes = [], [], set()
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run([fabriccheck, "plan", str(path), "-f", "json", "-o", "/dev/null"], capture_output=True)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        codes.add(done.returncode)
    print(
        f"whole command `fabriccheck plan FILE -f json`, fresh process (interpreter and imports included): wall "
        f"{_ms(times)}; CPU {_ms(cpus)}; exit codes {sorted(codes)}"
    )


def _start_up() -> None:
    # Interleaved with `check --help` (another subcommand) and `--help`: every subcommand's help makes typer
    # import its coercion module (and pydantic with it); the plan module adds nothing at import.
    fabriccheck = shutil.which("fabriccheck") or "fabriccheck"
    commands = {
        "plan --help": [fabriccheck, "plan", "--help"],
        "check --help": [fabriccheck, "check", "--help"],
        "--help": [fabriccheck, "--help"],
    }
    timings: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(10):
        for name, command in commands.items():
            start = time.perf_counter()
            subprocess.run(command, capture_output=True, check=True)
            timings[name].append(time.perf_counter() - start)
    print(
        "start-up, best of 10 (target: plan --help < 300 ms): "
        + ", ".join(f"{name} {min(runs) * 1000:.0f} ms" for name, runs in timings.items())
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--resources", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "plan.json"
        doc = big_plan(args.resources)
        path.write_text(json.dumps(doc))
        judge(path)  # warm: rule compilation and the catalog load once per process
        walls, cpus, maps = [], [], []
        nodes = findings = 0
        statuses: list[str] = []
        for _ in range(args.runs):
            wall, cpu, mapped, nodes, findings, statuses = judge(path)
            walls.append(wall)
            cpus.append(cpu)
            maps.append(mapped)
        counted = {s: statuses.count(s) for s in sorted(set(statuses))}
        print(
            f"plan of {len(doc['resource_changes'])} resources ({path.stat().st_size / 1e6:.1f} MB, {nodes} nodes, "
            f"{findings} findings; clusters {counted}): judging over {args.runs} runs: wall {_ms(walls)}; CPU "
            f"{_ms(cpus)}, of which reading and mapping the plan {_ms(maps)} (target <= 1000 ms)"
        )
        if "incomplete" in counted or "collection incomplete" in counted:
            print("NOT judged complete: some cluster was not fully judged")
        _whole_command(path, args.runs)
        _start_up()


if __name__ == "__main__":
    main()
