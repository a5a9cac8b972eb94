"""The live Azure collector, driving the real azure-mgmt-compute / azure-mgmt-network clients and
DefaultAzureCredential (AzureCliCredential with a fake `az`) over HTTPS on 127.0.0.1 against recorded ARM JSON:
nextLink paging, a 403 on one subscription, 429 with Retry-After, only GET requests, and the installed command."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from arm_replay import ArmReplay, make_certificate, serve, use_fake_az
from cli_run import one_clean_line, run, run_installed

from fabriccheck import flow
from fabriccheck.builders import demo_azure as demo_builder
from fabriccheck.errors import FabricCheckError
from fabriccheck.providers.azure import collect, dump

SUB = demo_builder.SUBSCRIPTION
OTHER = "99999999-8888-7777-6666-555555555555"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def azure_env(
    tmp_path: Path, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """AzureCliCredential only, a fake `az` first on PATH, and the test certificate trusted."""
    env = use_fake_az(tmp_path, certificate[0], monkeypatch)
    yield {**os.environ, **env}


def _answers(*subscriptions: str) -> dict[str, dict[str, list[dict[str, Any]]]]:
    return {s: demo_builder.demo(s).files for s in subscriptions}


def _rules(inventory: Any) -> list[tuple[str, str]]:
    report = flow.run(inventory, flow.Options())
    return sorted({(f.rule, f.cluster.split(":", 3)[-1] if f.cluster else "") for f in report.findings})


def test_live_run_reads_what_the_dump_reads(azure_env: dict[str, str], certificate: tuple[Path, Path]) -> None:
    replay = ArmReplay(_answers(SUB), page_size=2)
    with serve(replay, *certificate) as url:
        live = collect.collect_live([SUB], endpoint_url=url)
    assert live.complete, live.errors
    from_dump = dump.load_dump(Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "azure")
    assert _rules(live) == _rules(from_dump)
    assert len(live.nodes) == len(from_dump.nodes) == 25
    # nextLink paging was followed (scale-set VMs come from their own lists), for the VMs and their power states.
    assert replay.count("/providers/Microsoft.Compute/virtualMachines") == 5  # 10 VMs in pages of 2
    assert replay.count("/providers/Microsoft.Compute/virtualMachines?statusOnly=true") == 5
    assert sorted((n.id, n.state) for n in live.nodes) == sorted((n.id, n.state) for n in from_dump.nodes)
    assert sum(1 for n in live.nodes if n.state == "deallocated") == 2
    assert live.capabilities["Standard_ND96isr_H100_v5"].source == "Azure Resource SKUs (live answer)"


def test_only_get_requests(azure_env: dict[str, str], certificate: tuple[Path, Path]) -> None:
    replay = ArmReplay(_answers(SUB, OTHER), page_size=3)
    with serve(replay, *certificate) as url:
        collect.collect_live([], endpoint_url=url)  # also lists the subscriptions
    assert replay.calls
    assert {method for method, _ in replay.calls} == {"GET"}
    assert replay.count("/subscriptions") == 1


def test_denied_subscription_is_recorded_with_the_permission_and_the_rest_finishes(
    azure_env: dict[str, str], certificate: tuple[Path, Path]
) -> None:
    replay = ArmReplay(_answers(SUB, OTHER), deny={OTHER})
    with serve(replay, *certificate) as url:
        inventory = collect.collect_live([SUB, OTHER], endpoint_url=url)
    assert not inventory.complete
    denied = [e for e in inventory.errors if e.account == OTHER]
    assert denied and all(e.code == "AccessDenied" for e in denied)
    assert "Microsoft.Compute/virtualMachines/read" in {e.permission for e in denied}
    assert not [e for e in inventory.errors if e.account == SUB]
    assert {n.account for n in inventory.nodes} == {SUB}


def test_throttled_call_is_retried_after_retry_after(azure_env: dict[str, str], certificate: tuple[Path, Path]) -> None:
    replay = ArmReplay(_answers(SUB), page_size=50, throttle={"vm-list.json": 1}, retry_after="1")
    with serve(replay, *certificate) as url:
        inventory = collect.collect_live([SUB], endpoint_url=url)
    assert inventory.complete, inventory.errors
    assert replay.count("/providers/Microsoft.Compute/virtualMachines") == 2  # the 429, then the answer


def test_throttled_out_is_recorded(
    azure_env: dict[str, str], certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(collect, "RETRY_TOTAL", 2)
    replay = ArmReplay(_answers(SUB), page_size=50, throttle={"network-nic-list.json": 100}, retry_after="0")
    with serve(replay, *certificate) as url:
        inventory = collect.collect_live([SUB], endpoint_url=url)
    assert [e.code for e in inventory.errors] == ["Throttled"]
    assert inventory.errors[0].call == "NetworkInterfaces.ListAll"
    assert replay.count("/providers/Microsoft.Network/networkInterfaces") == 3  # the first try and two retries


def test_server_errors_are_retried_then_recorded(
    azure_env: dict[str, str], certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(collect, "RETRY_TOTAL", 1)
    replay = ArmReplay(_answers(SUB), page_size=50, fail={"ppg-list.json": 1, "network-vnet-list.json": 100})
    with serve(replay, *certificate) as url:
        inventory = collect.collect_live([SUB], endpoint_url=url)
    # One 503 is retried away; a list that keeps failing is recorded, and the rest is collected.
    assert [(e.call, e.code) for e in inventory.errors] == [("VirtualNetworks.ListAll", "HTTP503")]
    assert inventory.has("azure", SUB, "eastus", "proximity_placement_groups")
    assert not inventory.has("azure", SUB, "eastus", "virtual_networks")
    assert len(inventory.nodes) == 25


def test_missing_subscription_is_incomplete(azure_env: dict[str, str], certificate: tuple[Path, Path]) -> None:
    replay = ArmReplay(_answers(SUB))
    with serve(replay, *certificate) as url:
        inventory = collect.collect_live([OTHER], endpoint_url=url)
    assert [e.code for e in inventory.errors] == ["NotFound"]


def test_calls_per_subscription_do_not_grow_with_the_vm_count(
    azure_env: dict[str, str], certificate: tuple[Path, Path]
) -> None:
    counts = []
    for vms in (200, 800):
        fleet = demo_builder.fleet(vms).files
        # Only standalone and availability-set VMs: scale-set VM lists are one call per scale set.
        fleet["vmss-list.json"] = []
        replay = ArmReplay({SUB: fleet}, page_size=1000)
        with serve(replay, *certificate) as url:
            inventory = collect.collect_live([SUB], endpoint_url=url)
        assert inventory.complete
        counts.append(len(replay.calls))
    assert counts[0] == counts[1] == 8  # six lists, the VMs' power states and the resource SKUs


def test_resource_groups_narrow_every_list(azure_env: dict[str, str], certificate: tuple[Path, Path]) -> None:
    replay = ArmReplay(_answers(SUB), page_size=50)
    with serve(replay, *certificate) as url:
        inventory = collect.collect_live([SUB], endpoint_url=url, resource_groups=["hpc-rg", "cfd-rg"])
    assert inventory.complete, inventory.errors
    groups = {n.id.split("/")[4] for n in inventory.nodes}
    assert groups == {"hpc-rg", "cfd-rg"}
    assert {rule for rule, _ in _rules(inventory)} == {"AZ130"}  # the clean cluster and the overlapping one
    listed = [p for _, p in replay.calls if "/providers/" in p and "/skus" not in p and "statusOnly" not in p]
    assert listed and all("/resourceGroups/" in p for p in listed)
    # The power states have no list per group: one subscription-wide statusOnly list, matched to the VMs by id.
    assert [p for _, p in replay.calls if "statusOnly" in p] == [
        f"/subscriptions/{SUB}/providers/Microsoft.Compute/virtualMachines?statusOnly=true"
    ]


def test_token_audience_follows_the_endpoint(
    azure_env: dict[str, str], certificate: tuple[Path, Path], tmp_path: Path
) -> None:
    replay = ArmReplay(_answers(SUB), page_size=50)
    with serve(replay, *certificate) as url:
        collect.collect_live([SUB], endpoint_url=url)
    asked = (tmp_path / "bin" / "az.log").read_text()
    assert f"--resource {url}" in asked or f"--scope {url}/.default" in asked, asked


def test_http_endpoint_is_refused() -> None:
    with pytest.raises(FabricCheckError, match="https"):
        collect.collect_live([SUB], endpoint_url="http://127.0.0.1:9", credential=object())


# ---------------------------------------------------------------------------------------- the command


def test_installed_command_against_the_local_endpoint(
    azure_env: dict[str, str], certificate: tuple[Path, Path]
) -> None:
    replay = ArmReplay(_answers(SUB), page_size=4)
    with serve(replay, *certificate) as url:
        result = run_installed("azure", "--endpoint-url", url, "--subscription", SUB, "--format", "json", env=azure_env)
    assert result.returncode == 1, result.stderr  # error findings
    report = json.loads(result.stdout)
    assert report["complete"] is True
    assert {"AZ110", "AZ111", "AZ112", "AZ120", "AZ130", "AZ140", "AZ150"} <= {f["rule"] for f in report["findings"]}
    assert {method for method, _ in replay.calls} == {"GET"}


def test_command_with_a_denied_subscription_exits_2(azure_env: dict[str, str], certificate: tuple[Path, Path]) -> None:
    replay = ArmReplay(_answers(SUB, OTHER), deny={OTHER})
    with serve(replay, *certificate) as url:
        result = run("azure", "--endpoint-url", url, "--format", "json", env=azure_env)
    assert result.returncode == 2
    report = json.loads(result.stdout)
    assert report["complete"] is False
    assert any(e["account"] == OTHER and e["code"] == "AccessDenied" for e in report["errors"])


def test_unreachable_endpoint_exits_2(azure_env: dict[str, str]) -> None:
    result = run("azure", "--endpoint-url", "https://127.0.0.1:9", "--subscription", SUB, "-f", "json", env=azure_env)
    assert result.returncode == 2
    assert json.loads(result.stdout)["errors"][0]["code"] == "Unreachable"


def test_no_credential_is_one_line(tmp_path: Path, certificate: tuple[Path, Path]) -> None:
    env = {**os.environ, "AZURE_TOKEN_CREDENTIALS": "AzureCliCredential", "PATH": str(tmp_path)}
    env["PATH"] = f"{tmp_path}{os.pathsep}{Path(sys.executable).parent}"  # the command, but no `az`
    replay = ArmReplay(_answers(SUB))
    with serve(replay, *certificate) as url:
        result = run("azure", "--endpoint-url", url, "--subscription", SUB, env=env)
    assert "no Azure credential" in one_clean_line(result)


@pytest.mark.parametrize(
    ("cloud", "endpoint", "authority"),
    [
        ("public", "https://management.azure.com", "login.microsoftonline.com"),
        ("usgov", "https://management.usgovcloudapi.net", "login.microsoftonline.us"),
        ("china", "https://management.chinacloudapi.cn", "login.chinacloudapi.cn"),
    ],
)
def test_cloud_by_name_picks_its_endpoint_and_authority(
    cloud: str, endpoint: str, authority: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real SDK clients and credential are built for the named cloud; nothing is called (the first request
    would leave 127.0.0.1, so the test stops at the client's configuration)."""
    seen: dict[str, Any] = {}

    def stop(credential: Any, subscription: str, url: str, verify: str | None = None, **_: Any) -> Any:
        compute, _ = real_clients(credential, subscription, url)
        seen["base_url"] = url
        seen["scopes"] = compute._config.credential_scopes  # what the SDK's bearer policy will ask for
        raise FabricCheckError("stopped before any call")

    real_clients = collect.clients
    monkeypatch.setattr(collect, "clients", stop)
    with pytest.raises(FabricCheckError, match="stopped"):
        collect.collect_live([SUB], cloud=cloud)
    assert seen["base_url"] == endpoint
    assert seen["scopes"] == [f"{endpoint}/.default"]
    assert collect.CLOUDS[cloud].authority == authority


def _pairs(report: dict[str, Any]) -> set[tuple[str, tuple[str, ...]]]:
    return {(f["rule"], tuple(f["resources"])) for f in report["findings"]}


@pytest.mark.parametrize("profile", [None, "not-an-object", {"networkInterfaces": "nd-slow-nic-0-nic"}])
def test_a_vm_whose_network_profile_cannot_be_read_is_reported_and_the_others_judged(
    azure_env: dict[str, str], certificate: tuple[Path, Path], profile: Any
) -> None:
    """One VM answers without its networkProfile, or with one of the wrong shape: an error names it and the
    field, the VM stays a node with its NIC facts unknown (its AZ150 not judged rather than 'fine'), and every
    other VM is judged as usual."""
    answers = _answers(SUB)
    replay = ArmReplay(answers)
    with serve(replay, *certificate) as url:
        clean = run("azure", "--endpoint-url", url, "--subscription", SUB, "-f", "json", env=azure_env)
    expected = _pairs(json.loads(clean.stdout))
    [vm] = [v for v in answers[SUB]["vm-list.json"] if v["name"] == "nd-slow-nic-0"]
    bad = vm["id"]
    if profile is None:
        del vm["properties"]["networkProfile"]
    else:
        vm["properties"]["networkProfile"] = profile
    with serve(replay, *certificate) as url:
        result = run("azure", "--endpoint-url", url, "--subscription", SUB, "-f", "json", env=azure_env)
        inventory = collect.collect_live([SUB], endpoint_url=url)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert report["complete"] is False
    [error] = report["errors"]
    assert (error["provider"], error["account"], error["code"]) == ("azure", SUB, "BadResponse")
    assert "nd-slow-nic-0" in error["message"] and "networkProfile" in error["message"]
    found = _pairs(report)
    assert ("AZ150", (bad,)) in expected
    assert found == expected - {("AZ150", (bad,))}
    [node] = [n for n in inventory.nodes if n.id == bad]
    assert not node.interfaces and "networkProfile" in node.unknown["accelerated_networking"]
    assert len(inventory.nodes) == 25
