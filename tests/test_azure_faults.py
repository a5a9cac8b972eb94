"""Azure answers that are not what they claim (issue 18, Azure parts): capability values in a form Azure does not
give, dump files without their list or of another kind, and (driven through the real azure-mgmt clients against
tests/arm_replay.py on 127.0.0.1) 200 answers that are not the operation's answer, looping nextLinks, resets and
an endpoint that dies mid-run. Each is that call's failure, named, and the rest of the run finishes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run

from fabriccheck import flow
from fabriccheck.providers.azure import dump

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import build_demo_azure as demo_builder

SUB = demo_builder.SUBSCRIPTION


def _rules(report: flow.Report) -> set[tuple[str, str]]:
    return {(f.rule, (f.cluster or "").rsplit("/", 1)[-1]) for f in report.findings}


def _demo(folder: Path, cli_shape: bool = True) -> Path:
    demo_builder.write(demo_builder.demo(), folder / SUB, cli_shape=cli_shape)
    return folder


# ---------------------------------------------------------------------------------------- 18.5: capability values


@pytest.mark.parametrize("value", ["Yes", 1, {"value": "True"}, None])
def test_rdma_enabled_in_a_form_azure_does_not_give_is_unknown_not_no_infiniband(tmp_path: Path, value: Any) -> None:
    """Resource SKUs give RdmaEnabled as the string "True" or "False" (azure-rest-api-specs ListAvailableResourceSkus
    example). Any other form is not "no InfiniBand": the SKU answer for the size is recorded as unreadable (the run
    is incomplete, exit 2) and the size's capability comes from the shipped catalog, so every InfiniBand cluster
    keeps its findings rather than turning into one AZ120 warning and exit 0."""
    clean = flow.run(dump.load_dump(_demo(tmp_path / "clean")), flow.Options())
    folder = _demo(tmp_path / "odd")
    skus_file = folder / SUB / "vm-list-skus.json"
    skus = json.loads(skus_file.read_text())
    for sku in skus:
        for cap in sku["capabilities"]:
            if cap["name"] == "RdmaEnabled" and cap["value"] == "True":
                cap["value"] = value
    skus_file.write_text(json.dumps(skus))
    report = flow.run(dump.load_dump(folder), flow.Options())
    assert not report.complete
    unreadable = sorted(e.message.split("size ", 1)[1].split(":", 1)[0] for e in report.errors)
    assert unreadable == sorted(s["name"] for s in skus if any(c["value"] == value for c in s["capabilities"]))
    assert all(e.code == "BadResponse" and "vm-list-skus.json" in e.message for e in report.errors)
    assert all("RdmaEnabled" in e.message and repr(value) in e.message for e in report.errors)
    assert _rules(report) == _rules(clean)
    assert {rule for rule, _ in _rules(clean)} == {"AZ110", "AZ111", "AZ112", "AZ120", "AZ130", "AZ140", "AZ150"}


def test_an_unreadable_size_outside_the_catalog_is_not_judged(tmp_path: Path) -> None:
    """HB60rs has 'r' in its name and no catalog row: with RdmaEnabled "Yes" nothing says what it has, so its
    cluster is not judged (named unknown), never judged as a size without InfiniBand."""
    s = demo_builder.Subscription()
    subnet = s.vnet("hpc-rg", "hpc-vnet", "10.10.0.0/16")
    s.sku("Standard_HB60rs", 0, True)
    s.files["vm-list-skus.json"][0]["capabilities"][2]["value"] = "Yes"
    s.vms("hpc-rg", "hb", 2, "Standard_HB60rs", subnet, availability_set=s.availability_set("hpc-rg", "hb-as"))
    demo_builder.write(s, tmp_path / SUB)
    report = flow.run(dump.load_dump(tmp_path), flow.Options())
    assert [e.code for e in report.errors] == ["BadResponse"]
    assert report.summary.unknown_instance_types == ["Standard_HB60rs"]
    assert [c.status for c in report.clusters] == ["incomplete"]


@pytest.mark.parametrize("gpus", ["eight", "8.0", "-1", "100000"])
def test_a_gpu_count_azure_does_not_give_is_unknown(tmp_path: Path, gpus: str) -> None:
    folder = _demo(tmp_path)
    skus_file = folder / SUB / "vm-list-skus.json"
    skus = json.loads(skus_file.read_text())
    for sku in skus:
        for cap in sku["capabilities"]:
            if cap["name"] == "GPUs" and sku["name"] == "Standard_ND96isr_H100_v5":
                cap["value"] = gpus
    skus_file.write_text(json.dumps(skus))
    inventory = dump.load_dump(folder)
    assert "Standard_ND96isr_H100_v5" not in inventory.capabilities
    [error] = inventory.errors
    assert "Standard_ND96isr_H100_v5" in error.message and f"GPUs {gpus!r}" in error.message


def test_the_command_exits_2_on_an_unreadable_capability(tmp_path: Path) -> None:
    folder = _demo(tmp_path)
    skus_file = folder / SUB / "vm-list-skus.json"
    skus_file.write_text(skus_file.read_text().replace('"True"', '"Yes"'))
    result = run("azure", "--from-dump", str(folder), "--format", "json")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert json.loads(result.stdout)["complete"] is False


# ---------------------------------------------------------------------------------------- 18.2: dump file kinds


def _gcp_instance(name: str) -> dict[str, Any]:
    """A Compute Engine instance as `gcloud compute instances list --format=json` prints it (the shape of
    forseti-security@9069bfb0 tests/services/inventory/test_data/mock_gcp_results.py GCE_INSTANCE_TEMPLATE_IAP)."""
    zone = "https://www.googleapis.com/compute/v1/projects/ml-train/zones/us-central1-c"
    return {
        "kind": "compute#instance",
        "id": "1061001",
        "creationTimestamp": "2026-11-26T22:08:11.094-07:00",
        "name": name,
        "machineType": f"{zone}/machineTypes/a3-highgpu-8g",
        "status": "RUNNING",
        "zone": zone,
        "networkInterfaces": [
            {
                "kind": "compute#networkInterface",
                "network": "https://www.googleapis.com/compute/v1/projects/ml-train/global/networks/default",
                "networkIP": "10.128.0.2",
                "name": "nic0",
            }
        ],
    }


def _replace(folder: Path, name: str, document: Any) -> Path:
    (folder / SUB / name).write_text(json.dumps(document))
    return folder


@pytest.mark.parametrize(
    ("document", "holds"),
    [
        ({}, "holds an empty object"),
        ({"Items": []}, "holds an object with keys Items"),  # a misspelt list key is no empty list
        ({"value": {}}, "whose value is a JSON dict, not a list"),
        ({"value": None}, "whose value is a JSON NoneType, not a list"),
        ({"Reservations": []}, "holds an aws ec2 describe-instances answer"),
        ({"kind": "compute#instanceList", "items": []}, "holds a Compute Engine list page"),
        ([_gcp_instance("a3-0"), _gcp_instance("a3-1")], "holds Compute Engine compute#instance items"),
        ([{"InstanceId": "i-0abc", "InstanceType": "p5.48xlarge"}], "holds EC2 instances"),
        ("nics", "holds Microsoft.Network/networkInterfaces resources (what az network nic list prints)"),
    ],
)
def test_a_vm_list_of_another_kind_is_one_line_naming_the_file_and_what_it_holds(
    tmp_path: Path, document: Any, holds: str
) -> None:
    """A file without its list, or of another kind (a GCP or AWS answer saved as vm-list.json, the NIC list saved
    under the VM list's name), is never read as "no VMs" nor as VMs without a size: one line, exit 2."""
    folder = _demo(tmp_path)
    if document == "nics":
        document = json.loads((folder / SUB / "network-nic-list.json").read_text())
    line = one_clean_line(run("azure", "--from-dump", str(_replace(folder, "vm-list.json", document))))
    assert "vm-list.json" in line and holds in line, line
    assert "az vm list -d" in line


def test_the_nic_list_saved_as_the_scale_set_list_is_one_line(tmp_path: Path) -> None:
    folder = _demo(tmp_path)
    nics = json.loads((folder / SUB / "network-nic-list.json").read_text())
    line = one_clean_line(run("azure", "--from-dump", str(_replace(folder, "vmss-list.json", nics))))
    assert "vmss-list.json" in line and "networkInterfaces resources" in line and "az vmss list" in line


@pytest.mark.parametrize("empty", [[], {"value": []}, {"value": [], "nextLink": None}])
def test_a_present_empty_list_is_a_complete_empty_answer(tmp_path: Path, empty: Any) -> None:
    """`[]` (or an ARM page with an empty value) is the complete answer of a subscription without such resources:
    the VM list says there are no standalone VMs, and the scale sets' VMs are judged as before."""
    folder = _replace(_demo(tmp_path), "vm-list.json", empty)
    inventory = dump.load_dump(folder)
    assert inventory.complete, inventory.errors
    assert inventory.has("azure", SUB, "eastus", "vms")
    assert inventory.nodes and all("/virtualmachinescalesets/" in n.id.lower() for n in inventory.nodes)
