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
from cli_run import run

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
    assert len(_rules(clean)) >= 8


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
