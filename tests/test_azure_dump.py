"""`fabriccheck azure --from-dump`: `az -o json` files (and ARM pages) into the model, the demo subscription's
clusters, bad input as one line, and which SDKs each command imports."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run, run_installed

from fabriccheck import flow, report
from fabriccheck.builders import demo_azure as demo_builder
from fabriccheck.errors import FabricCheckError
from fabriccheck.model import fact_key
from fabriccheck.providers.azure import dump
from fabriccheck.providers.azure.normalize import CALLS, role_definition

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo" / "azure"
SUB = demo_builder.SUBSCRIPTION


def _report(directory: Path, **options: Any) -> report.Report:
    return flow.run(dump.load_dump(directory), flow.Options(**options))


def _by_cluster(report: report.Report) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {c.id.rsplit("/", 1)[-1]: set() for c in report.clusters}
    for finding in report.findings:
        assert finding.cluster is not None
        found.setdefault(finding.cluster.rsplit("/", 1)[-1], set()).add(finding.rule)
    return found


def test_demo_fixtures_are_what_the_builder_makes(tmp_path: Path) -> None:
    demo_builder.write(demo_builder.demo(), tmp_path / SUB)
    for path in sorted((DEMO / SUB).iterdir()):
        assert json.loads(path.read_text()) == json.loads((tmp_path / SUB / path.name).read_text()), path.name


def test_demo_has_one_clean_cluster_and_one_per_category() -> None:
    report = _report(DEMO)
    assert report.complete
    clusters = _by_cluster(report)
    assert clusters["nd-h100-train"] == set()
    assert clusters["solo-ppg"] == {"AZ110"}
    assert clusters["nd-h200-flex"] == {"AZ112"}
    assert clusters["nc-a100-train"] == {"AZ120"}
    assert clusters["cfd-as"] == {"AZ130"}
    assert clusters["nd-a100-custom"] == {"AZ140"}
    assert clusters["ndv4-as"] == {"AZ150"}
    # A CycleCloud node array over two scale sets: each set is its own, clean InfiniBand cluster, and a note says
    # they belong to one node array.
    arrays = [c for c in report.clusters if "cyclecloud" in c.id]
    assert sorted(c.id.rsplit("/", 1)[-1] for c in arrays) == ["cc-gpu-a", "cc-gpu-b"]
    assert all(c.status == "clean" and c.grouped_by == "CycleCloud node array, one scale set" for c in arrays)
    assert any("/nodearrays/gpu" in n and "2 scale sets (cc-gpu-a, cc-gpu-b)" in n for n in report.notes)
    aks = next(c for c in report.clusters if "aks-node-pool" in c.id)
    assert {f.rule for f in report.findings if f.cluster == aks.id} == {"AZ111"}  # AKS pool, one IB extension
    # The parked pair is deallocated (`az vm list -d`): counted, not judged, not charged.
    assert report.summary.nodes_by_state == {"deallocated": 2, "running": 23}
    assert not [c for c in report.clusters if "parked" in c.id] and not [f for f in report.findings if "parked" in
                                                                         " ".join(f.resources)]  # fmt: skip
    categories = {f.category for f in report.findings}
    assert categories == {"fabric-missing", "fabric-isolated", "instance-choice", "network-config", "software"}


def test_cli_shape_and_arm_shape_read_alike(tmp_path: Path) -> None:
    demo_builder.write(demo_builder.demo(), tmp_path / "arm" / SUB, cli_shape=False)
    assert _by_cluster(_report(tmp_path / "arm")) == _by_cluster(_report(DEMO))


def test_flat_folder_takes_the_subscription_from_the_ids(tmp_path: Path) -> None:
    shutil.copytree(DEMO / SUB, tmp_path / "flat")
    inventory = dump.load_dump(tmp_path / "flat")
    assert {n.account for n in inventory.nodes} == {SUB}
    assert inventory.has("azure", SUB, "eastus", "nics")


def test_two_subscriptions_with_the_same_names_are_two_scopes(tmp_path: Path) -> None:
    other = "22222222-3333-4444-5555-666666666666"
    demo_builder.write(demo_builder.demo(), tmp_path / SUB)
    demo_builder.write(demo_builder.demo(other), tmp_path / other)
    report = _report(tmp_path)
    assert len(report.clusters) == 20  # the node array's two scale sets are two clusters in each subscription
    assert {c.account for c in report.clusters} == {SUB, other}
    only = dump.load_dump(tmp_path, [other])
    assert {n.account for n in only.nodes} == {other}


def test_missing_file_leaves_the_run_incomplete_and_says_how_to_make_it(tmp_path: Path) -> None:
    shutil.copytree(DEMO / SUB, tmp_path / SUB)
    (tmp_path / SUB / "network-nic-list.json").unlink()
    inventory = dump.load_dump(tmp_path)
    assert [e.code for e in inventory.errors] == ["MissingDump"]
    assert "az network nic list -o json" in inventory.errors[0].message
    assert not inventory.has("azure", SUB, "eastus", "nics")
    report = flow.run(inventory, flow.Options())
    assert not report.complete
    # AZ150 reads accelerated networking: the GPU clusters could not be judged, so they are incomplete.
    assert any(c.status == "incomplete" for c in report.clusters)


def test_a_saved_arm_page_with_next_link_is_truncated(tmp_path: Path) -> None:
    demo_builder.write(demo_builder.demo(), tmp_path / SUB, cli_shape=False)
    page = json.loads((tmp_path / SUB / "vm-list.json").read_text())
    page["nextLink"] = (
        "https://management.azure.com/subscriptions/x/providers/Microsoft.Compute/virtualMachines?$skiptoken=1"
    )
    (tmp_path / SUB / "vm-list.json").write_text(json.dumps(page))
    inventory = dump.load_dump(tmp_path)
    assert [e.code for e in inventory.errors] == ["Truncated"]
    assert not inventory.has("azure", SUB, "eastus", "vms")


def test_without_skus_the_catalog_answers_and_the_report_says_so(tmp_path: Path) -> None:
    shutil.copytree(DEMO / SUB, tmp_path / SUB)
    (tmp_path / SUB / "vm-list-skus.json").unlink()
    report = _report(tmp_path)
    assert report.complete  # the SKU list is optional
    assert any("Resource SKUs" in n for n in report.notes)


def test_sku_answer_wins_over_the_catalog(tmp_path: Path) -> None:
    shutil.copytree(DEMO / SUB, tmp_path / SUB)
    skus = json.loads((tmp_path / SUB / "vm-list-skus.json").read_text())
    for sku in skus:
        if sku["name"] == "Standard_NC96ads_A100_v4":  # pretend Azure says it has RDMA
            for cap in sku["capabilities"]:
                if cap["name"] == "RdmaEnabled":
                    cap["value"] = "True"
    (tmp_path / SUB / "vm-list-skus.json").write_text(json.dumps(skus))
    assert "AZ120" not in _by_cluster(_report(tmp_path))["nc-a100-train"]


def test_facts_recorded_for_the_subscription_and_region() -> None:
    inventory = dump.load_dump(DEMO)
    for call in CALLS:
        assert fact_key("azure", SUB, "eastus", call.fact) in inventory.collected


def test_role_lists_only_read_actions() -> None:
    actions = role_definition()["Actions"]
    assert actions and all(a.startswith("Microsoft.") and a.endswith("/read") for a in actions)
    assert {c.permission for c in CALLS} <= set(actions)


# ---------------------------------------------------------------------------------------- bad input


def test_malformed_dump_is_one_line(tmp_path: Path) -> None:
    shutil.copytree(DEMO / SUB, tmp_path / SUB)
    (tmp_path / SUB / "vm-list.json").write_text("{not json")
    line = one_clean_line(run("azure", "--from-dump", str(tmp_path)))
    assert "vm-list.json" in line and "not valid JSON" in line


def test_wrong_shape_names_file_and_field(tmp_path: Path) -> None:
    shutil.copytree(DEMO / SUB, tmp_path / SUB)
    (tmp_path / SUB / "vmss-list.json").write_text(json.dumps([{"name": "no-id"}]))
    line = one_clean_line(run("azure", "--from-dump", str(tmp_path)))
    assert "vmss-list.json" in line and "id" in line


def test_unknown_subscription_is_one_line() -> None:
    line = one_clean_line(
        run("azure", "--from-dump", str(DEMO), "--subscription", "00000000-0000-0000-0000-000000000000")
    )
    assert "--subscription 00000000-0000-0000-0000-000000000000" in line and SUB in line


def test_folder_that_is_not_a_subscription_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    assert "not a subscription folder" in one_clean_line(run("azure", "--from-dump", str(tmp_path)))


def test_bad_cloud_and_conflicting_options_are_one_line() -> None:
    assert "--cloud mars" in one_clean_line(run("azure", "--cloud", "mars"))
    assert "--endpoint-url" in one_clean_line(
        run("azure", "--from-dump", str(DEMO), "--endpoint-url", "https://127.0.0.1:1")
    )
    assert "--print-role and" in one_clean_line(run("azure", "--print-role", "--subscription", SUB))


def test_demo_dump_command_exits_1_with_findings() -> None:
    result = run("azure", "--from-dump", str(DEMO), "--format", "json")
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["complete"] is True


def test_print_role_is_json() -> None:
    result = run("azure", "--print-role")
    assert result.returncode == 0
    assert json.loads(result.stdout)["Actions"] == role_definition()["Actions"]


# ---------------------------------------------------------------------------------------- imports


def _modules_after(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint('MODULES', *sorted({m.split('.')[0] for m in sys.modules}))\n"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd="/")
    line = next(line for line in result.stdout.splitlines() if line.startswith("MODULES "))
    return set(line.split()[1:])


def test_aws_never_imports_the_azure_sdk() -> None:
    aws_demo = ROOT / "fixtures" / "demo" / "aws"
    found = _modules_after(
        "from fabriccheck.cli import main\n"
        f"main(['aws', '--from-dump', {str(aws_demo)!r}, '-o', '/dev/null'])\n"
        "import fabriccheck.providers.aws.collect"
    )
    assert "fabriccheck" in found and "azure" not in found


def test_azure_never_imports_boto3_or_google() -> None:
    found = _modules_after(
        "from fabriccheck.cli import main\n"
        f"main(['azure', '--from-dump', {str(DEMO)!r}, '-o', '/dev/null'])\n"
        "import fabriccheck.providers.azure.collect, azure.mgmt.compute, azure.mgmt.network, azure.identity"
    )
    assert "azure" in found
    assert not found & {"boto3", "botocore", "google"}


def test_azure_help_imports_no_sdk() -> None:
    """What keeps `azure --help` quick is that no SDK is imported; its time is measured by
    benchmarks/bench_help.py (a test asserting it failed on a busy machine: issue 30, item 6)."""
    found = _modules_after(
        "from fabriccheck.cli import main\ntry:\n main(['azure', '--help'])\nexcept SystemExit:\n pass"
    )
    assert not found & {"azure", "boto3", "botocore", "google"}
    result = run_installed("azure", "--help")  # the whole process: start-up and imports included
    assert result.returncode == 0 and "--subscription" in result.stdout and "--print-role" in result.stdout


def test_scale_set_with_no_vms_is_judged_as_the_model_it_launches(tmp_path: Path) -> None:
    """An AKS GPU pool scaled to zero still launches what its model says."""
    s = demo_builder.Subscription()
    subnet = s.vnet("rg", "vnet", "10.1.0.0/16")
    custom = {"id": demo_builder.rid(SUB, "rg", "Microsoft.Compute/images", "no-drivers")}
    s.scale_set("rg", "gpu-pool", 0, "Standard_ND96isr_H100_v5", subnet, image=custom, accelerated=False)
    demo_builder.write(s, tmp_path / SUB)
    inventory = dump.load_dump(tmp_path)
    assert not inventory.nodes and [n.origin for n in inventory.specs] == ["template"]
    report = flow.run(inventory, flow.Options())
    assert sorted(f.rule for f in report.findings) == ["AZ140", "AZ150"]
    assert all(f.cluster is None and f.resources == [inventory.specs[0].id] for f in report.findings)


def test_a_vm_naming_a_nic_without_an_id_is_one_line_in_the_normalizers_words(tmp_path: Path) -> None:
    """A NIC reference with no id leaves the VM one interface id short: the dump's one-line error says so in the
    normalizer's words, not a validation library's."""
    folder = tmp_path / "azure"
    shutil.copytree(DEMO, folder)
    (vm_list,) = folder.rglob("vm-list.json")
    vms = json.loads(vm_list.read_text())
    vms[0]["networkProfile"]["networkInterfaces"].append({"primary": False})
    vm_list.write_text(json.dumps(vms))
    with pytest.raises(FabricCheckError) as caught:
        dump.load_dump(folder)
    message = str(caught.value)
    assert message.startswith(str(vm_list)) and "interface ids for" in message
    assert "field :" not in message and "Value error" not in message
