"""Benchmark: `fabriccheck plan` on a 2,000-resource plan across three clouds.

1. A plan written by tools/build_demo_plans.PlanBuilder (the `terraform show -json` format) with 2,000 resources:
   AWS p5.48xlarge instances (count) each with its own launch template-free EFA interfaces, security groups with
   self-referencing rules and placement groups; Azure ND H100 v5 scale sets; GCP A3 High instances with their
   GPU networks, subnetworks and firewall rules. Timed: read + map + rules + penalty (load_plan, then flow.run),
   in one process, best and median of runs. Target: at most 1 s.
2. `fabriccheck plan --help` start-up (no cloud SDK imported). Target: under 0.3 s.

Run: python benchmarks/bench_plan.py [--resources 2000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from build_demo_plans import PlanBuilder, const, ref  # noqa: E402


def big_plan(resources: int) -> dict[str, Any]:
    """About `resources` resources, a third per cloud, in groups of eight nodes."""
    plan = PlanBuilder()
    plan.region_settings["aws"] = {"region": const("us-east-1")}
    plan.region_settings["azurerm"] = {"subscription_id": const("11111111-2222-3333-4444-555555555555")}
    plan.region_settings["google"] = {"project": const("bench"), "region": const("us-central1")}
    per_cloud = resources // 3
    group = 0
    # AWS: per group a placement group, a security group, two rule resources, 8 ENIs... kept to 8 instances + 4.
    while len(plan.changes) < per_cloud:
        module = f'module.train["g{group}"]'
        plan.resource("aws_placement_group", "pg", {"name": f"pg-{group}", "strategy": "cluster"}, module=module)
        plan.resource("aws_security_group", "efa", {"name": f"efa-{group}"}, module=module, unknown={"ingress": True})
        for kind in ("ingress", "egress"):
            plan.resource(
                f"aws_vpc_security_group_{kind}_rule",
                kind,
                {"ip_protocol": "-1"},
                module=module,
                unknown={"security_group_id": True, "referenced_security_group_id": True},
                expressions={
                    "security_group_id": ref("aws_security_group.efa.id"),
                    "referenced_security_group_id": ref("aws_security_group.efa.id"),
                },
            )
        for i in range(8):
            plan.resource(
                "aws_instance",
                "node",
                {"instance_type": "p5.48xlarge", "placement_group": f"pg-{group}", "network_interface": []},
                module=module,
                index=i,
                count=8,
                unknown={"vpc_security_group_ids": True},
                expressions={"vpc_security_group_ids": ref("aws_security_group.efa.id")},
            )
        group += 1
    # Azure: a scale set of 8 VMs per resource, with its virtual network.
    while len(plan.changes) < 2 * per_cloud:
        plan.resource(
            "azurerm_virtual_network",
            f"vnet{group}",
            {"name": f"vnet{group}", "location": "eastus", "address_space": ["10.10.0.0/16"]},
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
        )
        group += 1
    # GCP: per group five networks, subnetworks and firewall rules, a compact policy and 8 instances.
    while len(plan.changes) < resources:
        nets = [f"g{group}-host", *(f"g{group}-gpu{i}" for i in range(4))]
        for net in nets:
            plan.resource("google_compute_network", net, {"name": net, "mtu": 8244})
            plan.resource(
                "google_compute_subnetwork",
                net,
                {"name": f"{net}-sub", "region": "us-central1", "ip_cidr_range": "10.1.0.0/24"},
                unknown={"network": True},
                expressions={"network": ref(f"google_compute_network.{net}.id")},
            )
            plan.resource(
                "google_compute_firewall",
                net,
                {"name": f"{net}-fw", "allow": [{"protocol": "tcp", "ports": []}], "source_ranges": ["10.0.0.0/8"]},
                unknown={"network": True},
                expressions={"network": ref(f"google_compute_network.{net}.name")},
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
                    "resource_policies": [f"p{group}"],
                    "network_interface": [{"nic_type": "GVNIC"} for _ in nets],
                },
                index=i,
                count=8,
                unknown={"network_interface": [{"network": True, "subnetwork": True} for _ in nets]},
                expressions={
                    "network_interface": [
                        {
                            "network": ref(f"google_compute_network.{net}.name"),
                            "subnetwork": ref(f"google_compute_subnetwork.{net}.name"),
                        }
                        for net in nets
                    ]
                },
            )
        group += 1
    return plan.build()


def judge(path: Path) -> tuple[float, float, int, int]:
    """(wall seconds, CPU seconds of this process, nodes, findings). The CPU time is what the run costs when the
    machine's two cores are shared with other jobs; the wall time is what a user waits."""
    from fabriccheck import flow
    from fabriccheck.sources.terraform import load_plan

    start, cpu = time.perf_counter(), time.process_time()
    inventory = load_plan(str(path))
    report = flow.run(inventory, flow.Options())
    return time.perf_counter() - start, time.process_time() - cpu, len(inventory.nodes), len(report.findings)


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
        times, cpu_times = [], []
        nodes = findings = 0
        for _ in range(args.runs):
            elapsed, cpu, nodes, findings = judge(path)
            times.append(elapsed)
            cpu_times.append(cpu)
        print(
            f"plan of {len(doc['resource_changes'])} resources ({path.stat().st_size / 1e6:.1f} MB, {nodes} nodes, "
            f"{findings} findings): wall best {min(times) * 1000:.0f} ms, median {statistics.median(times) * 1000:.0f}"
            f" ms; CPU best {min(cpu_times) * 1000:.0f} ms, median {statistics.median(cpu_times) * 1000:.0f} ms; "
            f"over {args.runs} runs (target <= 1000 ms)"
        )
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
        cold = subprocess.run(
            [sys.executable, "-c", "import time,sys; t=time.perf_counter(); from fabriccheck.cli import main; "
             "main(['plan', str(sys.argv[1]), '-f', 'json', '-o', '/dev/null']); "
             "print(time.perf_counter() - t)", str(path)],
            capture_output=True, text=True,
        )  # fmt: skip
        print(f"one cold `fabriccheck plan` process (imports included): {cold.stdout.strip() or cold.stderr[-200:]}")


if __name__ == "__main__":
    main()
