"""Plans (issue 28, item 10): a finding on a planned group names its Terraform address once (its nodes #0..#N are
no address a user can find), and a rule about RDMA networks is not asked of a node with no RDMA NIC.

Shapes: google_compute_instance_template + google_compute_instance_group_manager as Cluster Toolkit and the
Terraform registry write them (registry.terraform.io/providers/hashicorp/google/latest/docs/resources/
compute_instance_template: network_interface { network = "default" }, the registry's own example), built with
fabriccheck/builders/plan_builder.py in the layout of `terraform show -json` (resource_changes, configuration).
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_run import run

from fabriccheck.builders.plan_builder import PlanBuilder, const, ref


def _a3_high_on_default(tmp_path: Path) -> Path:
    """Two A3 High VMs (a MIG of a template) with one NIC on the project's `default` network, which the plan does
    not create: no GPU NIC (GCP101), and no RDMA NIC to ask GCP123 about."""
    plan = PlanBuilder()
    plan.region_settings["google"] = {"project": const("proj")}
    plan.resource(
        "google_compute_instance_template",
        "a3",
        {
            "name": "a3-high",
            "machine_type": "a3-highgpu-8g",
            "network_interface": [{"network": "default", "nic_type": "GVNIC"}],
        },
        unknown={"self_link": True},
    )
    plan.resource(
        "google_compute_instance_group_manager",
        "a3",
        {"name": "a3", "zone": "us-central1-a", "target_size": 2, "version": [{"name": "v1"}]},
        unknown={"version": [{"instance_template": True}]},
        expressions={"version": [{"instance_template": ref("google_compute_instance_template.a3.self_link")}]},
    )
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan.build()))
    return path


def test_an_a3_high_plan_on_the_default_network_is_judged(tmp_path: Path) -> None:
    result = run("plan", str(_a3_high_on_default(tmp_path)), "-f", "json")
    report = json.loads(result.stdout)
    assert result.returncode == 1, result.stderr  # judged: GCP101, not "could not judge GCP123"
    assert report["complete"] is True
    [finding] = [f for f in report["findings"] if f["rule"] == "GCP101"]
    # Named once, by the group's Terraform address.
    assert finding["resources"] == ["google_compute_instance_group_manager.a3"]
    assert "#0" not in finding["message"] and "#1" not in finding["message"]
    assert not any(n["rule"] == "GCP123" for c in report["clusters"] for n in c["not_judged"])


def test_the_text_report_names_the_address_once(tmp_path: Path) -> None:
    out = run("plan", str(_a3_high_on_default(tmp_path))).stdout
    assert "on google_compute_instance_group_manager.a3" in out and "a3#" not in out
