"""Azure answers that are not what they claim (issue 18, Azure parts): capability values in a form Azure does not
give, dump files without their list or of another kind, and (driven through the real azure-mgmt clients against
tests/arm_replay.py on 127.0.0.1) 200 answers that are not the operation's answer, looping nextLinks, resets and
an endpoint that dies mid-run. Each is that call's failure, named, and the rest of the run finishes."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from arm_replay import ArmReplay, make_certificate, serve, use_fake_az
from cli_run import one_clean_line, run

from fabriccheck import flow, report
from fabriccheck.builders import demo_azure as demo_builder
from fabriccheck.providers.azure import collect, dump

SUB = demo_builder.SUBSCRIPTION


def _rules(report: report.Report) -> set[tuple[str, str]]:
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


# ---------------------------------------------------------------------------------------- 18.1, 18.8, 18.9: live


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def azure_env(
    tmp_path: Path, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """AzureCliCredential with a fake `az` first on PATH, the test certificate trusted, and one retry per call
    (azure-core's first retry waits no time), so that a fault costs a second, not a minute."""
    env = use_fake_az(tmp_path, certificate[0], monkeypatch)
    monkeypatch.setattr(collect, "RETRY_TOTAL", 1)
    yield {**os.environ, **env}


def _replay(**faults: Any) -> ArmReplay:
    return ArmReplay({SUB: demo_builder.demo(SUB).files}, page_size=4, **faults)


def _collect(replay: ArmReplay, certificate: tuple[Path, Path]) -> Any:
    with serve(replay, *certificate) as url:
        return collect.collect_live([SUB], endpoint_url=url)


def _errors(inventory: Any) -> list[tuple[str, str]]:
    return sorted((e.call, e.code) for e in inventory.errors)


CLEAN_NODES = 25  # the demo subscription's VMs, scale-set VMs included


@pytest.mark.parametrize("fault", ["empty-object", "html", "empty-body", "value-object", "value-string",
                                   "value-numbers"])  # fmt: skip
def test_a_200_that_is_not_the_vm_list_is_bad_response_not_no_vms(
    azure_env: dict[str, str], certificate: tuple[Path, Path], fault: str
) -> None:
    """`200 {}`, a captive portal's HTML, an empty body or a value of another type for the VM list: BadResponse
    for that call (retried first, as a cut answer is), the run incomplete; the scale sets' VMs, NICs and the rest
    are still collected. Today's `200 {}` made the standalone VMs vanish from a run that said complete."""
    replay = _replay(faults={"vm-list.json": fault})
    inventory = _collect(replay, certificate)
    assert _errors(inventory) == [("VirtualMachines.ListAll", "BadResponse")]
    [error] = inventory.errors
    assert "answered 200 with" in error.message and "/virtualMachines" in error.message
    assert replay.count("/providers/Microsoft.Compute/virtualMachines") == 2  # the answer and one retry
    assert not inventory.has("azure", SUB, "eastus", "vms")
    members = [n for n in inventory.nodes if "/virtualmachinescalesets/" in n.id.lower()]
    assert members and len(inventory.nodes) == len(members) < CLEAN_NODES
    assert inventory.has("azure", SUB, "eastus", "nics")


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("vmss-list.json", "VirtualMachineScaleSets.ListAll"),
        ("vm-availability-set-list.json", "AvailabilitySets.ListBySubscription"),
        ("ppg-list.json", "ProximityPlacementGroups.ListBySubscription"),
        ("network-nic-list.json", "NetworkInterfaces.ListAll"),
        ("network-vnet-list.json", "VirtualNetworks.ListAll"),
        ("vmss-list-instances.json", "VirtualMachineScaleSetVMs.List"),
        ("vm-list-skus.json", "ResourceSkus.List"),
        ("vm-list.json?statusOnly", "VirtualMachines.ListAll(statusOnly)"),
    ],
)
def test_every_azure_list_call_checks_its_200(
    azure_env: dict[str, str], certificate: tuple[Path, Path], name: str, call: str
) -> None:
    inventory = _collect(_replay(faults={name: "value-object"}), certificate)
    assert _errors(inventory) == [(call, "BadResponse")]


def test_the_command_reports_a_bad_answer_and_exits_2(
    azure_env: dict[str, str], certificate: tuple[Path, Path]
) -> None:
    replay = _replay(faults={"network-nic-list.json": "html"})
    with serve(replay, *certificate) as url:
        result = run("azure", "--endpoint-url", url, "--subscription", SUB, "--format", "json", env=azure_env)
    assert result.returncode == 2, result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert report["complete"] is False
    assert [(e["call"], e["code"]) for e in report["errors"]] == [("NetworkInterfaces.ListAll", "BadResponse")]
    assert "text/html" in report["errors"][0]["message"]
    assert report["findings"]  # the rest was judged


@pytest.mark.parametrize("fault", ["self-link", "loop"])
def test_a_next_link_back_to_a_page_already_read_is_stopped(
    azure_env: dict[str, str], certificate: tuple[Path, Path], fault: str
) -> None:
    """A nextLink pointing at itself (or back to the first page) made 9,039 requests in 400 s. The pager stops at a
    link already followed, records BadResponse for that call, and the run goes on."""
    replay = _replay(faults={"network-nic-list.json": fault})
    inventory = _collect(replay, certificate)
    assert _errors(inventory) == [("NetworkInterfaces.ListAll", "BadResponse")]
    assert "leads back to a page already read" in inventory.errors[0].message
    pages = -(-len(demo_builder.demo(SUB).files["network-nic-list.json"]) // 4)
    assert replay.count("/providers/Microsoft.Network/networkInterfaces") <= pages + 1
    assert len(inventory.nodes) == CLEAN_NODES


def test_a_list_that_never_ends_is_stopped_at_the_page_cap(
    azure_env: dict[str, str], certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from fabriccheck.providers.azure import answers

    monkeypatch.setattr(answers, "MAX_PAGES", 2)
    replay = ArmReplay({SUB: demo_builder.demo(SUB).files}, page_size=1)
    inventory = _collect(replay, certificate)
    assert ("VirtualMachines.ListAll", "BadResponse") in _errors(inventory)
    assert replay.count("/providers/Microsoft.Compute/virtualMachines") == 2


def test_a_reset_on_every_nic_list_is_that_calls_failure(
    azure_env: dict[str, str], certificate: tuple[Path, Path]
) -> None:
    """A connection reset on every NIC list (retried, then recorded) ended the whole run with 'internal error'."""
    replay = _replay(faults={"network-nic-list.json": "reset"})
    inventory = _collect(replay, certificate)
    assert _errors(inventory) == [("NetworkInterfaces.ListAll", "Unreachable")]
    assert replay.count("/providers/Microsoft.Network/networkInterfaces") == 2  # the first try and one retry
    assert len(inventory.nodes) == CLEAN_NODES
    report = flow.run(inventory, flow.Options())
    assert not report.complete and any(c.status == "incomplete" for c in report.clusters)


def test_an_endpoint_that_dies_mid_run_leaves_a_report(
    azure_env: dict[str, str], certificate: tuple[Path, Path]
) -> None:
    """The endpoint answers the first lists and then goes away (connections refused): the calls after it are
    Unreachable, each recorded against its call, and the command still prints its report, exit 2."""
    replay = _replay(die_after=3)
    with serve(replay, *certificate) as url:
        result = run("azure", "--endpoint-url", url, "--subscription", SUB, "--format", "json", env=azure_env)
    assert result.returncode == 2, result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert report["complete"] is False
    assert {e["code"] for e in report["errors"]} == {"Unreachable"}
    assert {e["call"] for e in report["errors"]} >= {"NetworkInterfaces.ListAll", "VirtualNetworks.ListAll"}


def test_subscriptions_answered_with_html_are_one_line(
    azure_env: dict[str, str], certificate: tuple[Path, Path]
) -> None:
    replay = _replay(faults={"subscriptions": "html"})
    with serve(replay, *certificate) as url:
        line = one_clean_line(run("azure", "--endpoint-url", url, "--format", "json", env=azure_env))
    assert "listing subscriptions" in line and "text/html" in line


def test_a_live_sku_answer_with_rdma_enabled_yes_is_unknown(
    azure_env: dict[str, str], certificate: tuple[Path, Path]
) -> None:
    answers = {SUB: demo_builder.demo(SUB).files}
    for sku in answers[SUB]["vm-list-skus.json"]:
        for cap in sku["capabilities"]:
            if cap["name"] == "RdmaEnabled" and sku["name"] == "Standard_ND96isr_H100_v5":
                cap["value"] = "Yes"
    inventory = _collect(ArmReplay(answers, page_size=50), certificate)
    assert "Standard_ND96isr_H100_v5" not in inventory.capabilities
    assert [(e.call, e.code) for e in inventory.errors] == [("ResourceSkus.List", "BadResponse")]
    assert "RdmaEnabled 'Yes'" in inventory.errors[0].message
