"""Azure zones (issue 28, item 8): a Uniform InfiniBand scale set that spans zones has a placement group per zone
at least ("you also have the option to deploy with a single placement group per Availability Zone", and "a zone
redundant or zone spanning scale set spreads instances across all selected zones, "zones": ["1","2","3"]":
https://learn.microsoft.com/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-use-availability-zones),
and InfiniBand connects the VMs of one placement group only (https://learn.microsoft.com/azure/virtual-machines/
setup-infiniband): AZ111. A Terraform plan keeps every zone of `zones = [...]`.

Shape: azurerm_linux_virtual_machine_scale_set as tools/build_demo_plans.py writes it (sku, instances,
single_placement_group, network_interface ...) with the provider's `zones` argument (registry.terraform.io/
providers/hashicorp/azurerm/latest/docs/resources/linux_virtual_machine_scale_set: "zones - (Optional) Specifies a
list of Availability Zones in which this Linux Virtual Machine Scale Set should be located").
"""

from __future__ import annotations

import json
from pathlib import Path

from fabriccheck import flow, report
from fabriccheck.builders.demo_plans import _azure_base, _azure_scale_set
from fabriccheck.builders.plan_builder import PlanBuilder
from fabriccheck.sources.terraform import load_plan

HPC_IMAGE = {"source_image_reference": [{"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204"}]}


def _judge(tmp_path: Path, zones: list[str]) -> report.Report:
    plan = PlanBuilder()
    _azure_base(plan)
    _azure_scale_set(plan, "ib", "Standard_ND96isr_H100_v5", HPC_IMAGE, [])
    [change] = [c for c in plan.changes if c.address == "azurerm_linux_virtual_machine_scale_set.ib"]
    change.values["zones"] = zones
    change.values["instances"] = 4
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan.build()))
    return flow.run(load_plan(str(path)), flow.Options())


def test_a_scale_set_over_three_zones_splits_its_infiniband(tmp_path: Path) -> None:
    found = _judge(tmp_path, ["1", "2", "3"])
    az111 = [f for f in found.findings if f.rule == "AZ111"]
    assert len(az111) == 1 and "eastus-1, eastus-2, eastus-3" in az111[0].message


def test_a_scale_set_in_one_zone_keeps_one_placement_group(tmp_path: Path) -> None:
    found = _judge(tmp_path, ["1"])
    assert not [f for f in found.findings if f.rule == "AZ111"]
