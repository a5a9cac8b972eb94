"""The GCP collector against the real google-cloud-compute clients, over HTTP on 127.0.0.1.

Recorded Compute API JSON (tools/build_demo_gcp.py, the demo project) is served by tests/gce_replay.py; the
real InstancesClient, ResourcePoliciesClient, NetworksClient, SubnetworksClient and FirewallsClient parse it,
with credentials from a generated service-account key (reference/testing.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run, run_installed
from gce_replay import ComputeReplay, fake_service_account_key, serve, use_fake_google_key

from fabriccheck.builders.demo_gcp import PROJECT, Project, build
from fabriccheck.providers.gcp import collect, effective
from fabriccheck.providers.gcp.dump import load_dump
from fabriccheck.providers.gcp.listing import CALLS

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo" / "gcp"


@pytest.fixture(autouse=True)
def google_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fake service-account key for ADC; no gcloud config, no metadata server (reference/testing.md)."""
    key = use_fake_google_key(tmp_path, monkeypatch)
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    yield key


def demo_project(name: str = PROJECT) -> Project:
    project = Project(name)
    build(project)
    return project


def replay_of(*projects: Project, **kwargs: Any) -> ComputeReplay:
    return ComputeReplay.from_files({p.name: p.files() for p in projects}, **kwargs)


def _nodes(inventory: Any) -> list[dict[str, Any]]:
    return sorted((n.model_dump() for n in inventory.nodes), key=lambda n: (n["account"], n["id"]))


def test_aggregated_pages_are_followed_and_match_the_dump() -> None:
    replay = replay_of(demo_project(), page_size=5)
    with serve(replay) as url:
        inventory = collect.collect_live([PROJECT], endpoint_url=url)
    assert inventory.complete, inventory.errors
    dumped = load_dump(DEMO)
    assert _nodes(inventory) == _nodes(dumped)
    assert inventory.gcp.networks == dumped.gcp.networks
    assert inventory.gcp.subnetworks == dumped.gcp.subnetworks
    assert inventory.gcp.firewalls == dumped.gcp.firewalls
    strip = {"max_distance_known"}
    assert [p.model_dump(exclude=strip) for p in inventory.gcp.resource_policies] == [
        p.model_dump(exclude=strip) for p in dumped.gcp.resource_policies
    ]
    paths = replay.paths()
    assert f"/compute/v1/projects/{PROJECT}/aggregated/instances" in paths
    assert f"/compute/v1/projects/{PROJECT}/aggregated/resourcePolicies" in paths
    assert f"/compute/v1/projects/{PROJECT}/aggregated/subnetworks" in paths
    # 24 instances in pages of 5: five requests, the later ones with the token the previous page gave.
    instance_pages = [r for r in replay.requests if r.path.endswith("/aggregated/instances")]
    assert len(instance_pages) == 5
    assert [r.query.get("pageToken") for r in instance_pages] == [None, "5", "10", "15", "20"]
    assert all(r.query.get("maxResults") == "500" for r in instance_pages)


def test_zones_asked_use_zonal_and_regional_lists() -> None:
    replay = replay_of(demo_project())
    with serve(replay) as url:
        inventory = collect.collect_live([PROJECT], zones=["us-central1-a"], endpoint_url=url)
    assert inventory.complete
    assert len(inventory.nodes) == 24
    assert set(replay.paths()) == {
        f"/compute/v1/projects/{PROJECT}/zones/us-central1-a/instances",
        f"/compute/v1/projects/{PROJECT}/regions/us-central1/resourcePolicies",
        f"/compute/v1/projects/{PROJECT}/regions/us-central1/subnetworks",
        f"/compute/v1/projects/{PROJECT}/global/networks",
        f"/compute/v1/projects/{PROJECT}/global/firewalls",
        f"/compute/v1/projects/{PROJECT}/global/firewallPolicies",
        # the policies in effect on the GPU networks, in the region of their nodes (effective.py)
        f"/compute/v1/projects/{PROJECT}/regions/us-central1/firewallPolicies/getEffectiveFirewalls",
    }


def test_only_get_requests_and_the_role_names_exactly_the_permissions_used() -> None:
    replay = replay_of(demo_project(), page_size=7)
    with serve(replay) as url:
        collect.collect_live([PROJECT], endpoint_url=url)
        collect.collect_live([PROJECT], zones=["us-central1-a", "us-central1-b"], endpoint_url=url)
    assert {r.method for r in replay.requests} == {"GET"}
    used = {
        effective.PERMISSION
        if r.path.endswith("/getEffectiveFirewalls")
        else f"compute.{r.path.rsplit('/', 1)[-1]}.list"  # the path's collection names the permission
        for r in replay.requests
    }
    assert used == set(collect.custom_role()["includedPermissions"])
    assert used == {c.permission for c in CALLS} | {effective.PERMISSION}


def test_a_403_on_one_project_is_recorded_with_the_permission_and_the_rest_finishes() -> None:
    replay = replay_of(demo_project(), demo_project("locked-project"))
    replay.failures[("locked-project", "instances")] = 403
    with serve(replay) as url:
        inventory = collect.collect_live([PROJECT, "locked-project"], endpoint_url=url)
    assert not inventory.complete
    assert [(e.account, e.call, e.code, e.permission) for e in inventory.errors] == [
        ("locked-project", "instances", "AccessDenied", "compute.instances.list")
    ]
    assert "Required 'compute.instances.list' permission" in inventory.errors[0].message
    assert {n.account for n in inventory.nodes} == {PROJECT}
    # The locked project's other answers still count as collected; its instances do not.
    assert inventory.has("gcp", "locked-project", "global", "networks")
    assert not inventory.has("gcp", "locked-project", "global", "instances")


def test_a_missing_project_is_one_not_found_error() -> None:
    replay = replay_of(demo_project())
    with serve(replay) as url:
        inventory = collect.collect_live(["no-such-project"], endpoint_url=url)
    assert [(e.account, e.code) for e in inventory.errors] == [("no-such-project", "NotFound")]
    assert "is the project id right" in inventory.errors[0].message
    assert len(replay.requests) == 1  # the first call says it; the others are not tried


def test_a_429_is_retried_with_backoff_and_then_succeeds() -> None:
    replay = replay_of(demo_project())
    replay.failures_once[(PROJECT, "instances")] = 429
    with serve(replay) as url:
        inventory = collect.collect_live([PROJECT], endpoint_url=url, retry_budget=5.0)
    assert inventory.complete
    assert len(inventory.nodes) == 24
    assert sum(1 for r in replay.requests if r.path.endswith("/aggregated/instances")) == 2


def test_a_429_that_lasts_is_recorded_as_throttled_and_the_run_is_incomplete() -> None:
    replay = replay_of(demo_project())
    replay.failures[(PROJECT, "firewalls")] = 429
    with serve(replay) as url:
        inventory = collect.collect_live([PROJECT], endpoint_url=url, retry_budget=1.0)
    assert [(e.call, e.code) for e in inventory.errors] == [("firewalls", "Throttled")]
    assert sum(1 for r in replay.requests if r.path.endswith("/firewalls")) >= 2  # retried before giving up
    assert len(inventory.nodes) == 24
    assert not inventory.has("gcp", PROJECT, "us-central1", "firewalls")


def test_an_unreachable_endpoint_is_one_error_per_project() -> None:
    inventory = collect.collect_live([PROJECT], endpoint_url="http://127.0.0.1:9", retry_budget=1.0)
    assert [(e.account, e.code) for e in inventory.errors] == [(PROJECT, "Unreachable")]


def test_max_distance_dropped_by_the_client_is_reported_as_unseen() -> None:
    project = demo_project()
    project.policies[0]["groupPlacementPolicy"]["maxDistance"] = 2
    replay = replay_of(project)
    with serve(replay) as url:
        inventory = collect.collect_live([PROJECT], endpoint_url=url)
    policy = next(p for p in inventory.gcp.resource_policies if p.name == project.policies[0]["name"])
    assert policy.collocation == "COLLOCATED" and policy.max_distance is None and not policy.max_distance_known
    from fabriccheck import flow

    report = flow.run(inventory, flow.Options())
    assert any("maxDistance could not be seen" in note for note in report.notes)


def test_projects_are_collected_in_parallel_each_under_its_own_id() -> None:
    replay = replay_of(demo_project(), demo_project("second-project"))
    with serve(replay) as url:
        inventory = collect.collect_live([PROJECT, "second-project"], endpoint_url=url)
    assert inventory.complete
    assert {n.account for n in inventory.nodes} == {PROJECT, "second-project"}
    assert len(inventory.nodes) == 48
    # Each project's resources stay in its own scope: a policy of one never places the other's nodes.
    assert {(p.account, p.name) for p in inventory.gcp.resource_policies} >= {
        (PROJECT, "a3h-train-compact"),
        ("second-project", "a3h-train-compact"),
    }


def test_calls_per_project_do_not_grow_with_instances_except_for_pages() -> None:
    counts = []
    for size in (32, 320):
        from fabriccheck.builders.demo_gcp import fleet

        replay = replay_of(fleet(size))
        with serve(replay) as url:
            clients = collect.Clients(collect.credentials()[0], url, 5.0)
            _, errors, calls = collect.fetch_project(clients, PROJECT, [])
        assert not errors
        assert calls == len(replay.requests)
        counts.append(calls)
    assert counts == [6, 6]  # one page of up to 500 per list


def test_installed_command_against_the_local_endpoint(google_key: Path) -> None:
    replay = replay_of(demo_project(), page_size=10)
    env = {**os.environ, "GOOGLE_APPLICATION_CREDENTIALS": str(google_key)}
    with serve(replay) as url:
        result = run_installed("gcp", "--endpoint-url", url, "--project", PROJECT, "-f", "json", env=env)
    assert result.returncode == 1, result.stderr  # errors found
    report = json.loads(result.stdout)
    assert report["complete"] is True
    dumped = run("gcp", "--from-dump", str(DEMO), "-f", "json")
    expected = json.loads(dumped.stdout)
    assert report["summary"]["by_rule"] == expected["summary"]["by_rule"]
    assert {r.method for r in replay.requests} == {"GET"}


def test_installed_command_with_a_403_project_exits_2_and_says_which_permission(google_key: Path) -> None:
    replay = replay_of(demo_project(), demo_project("locked-project"))
    replay.failures[("locked-project", "*")] = 403
    env = {**os.environ, "GOOGLE_APPLICATION_CREDENTIALS": str(google_key)}
    with serve(replay) as url:
        result = run("gcp", "--endpoint-url", url, "-p", PROJECT, "-p", "locked-project", "-f", "json", env=env)
    assert result.returncode == 2
    report = json.loads(result.stdout)
    assert report["complete"] is False
    assert {e["permission"] for e in report["errors"]} == {c.permission for c in CALLS}


def test_no_credential_is_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "missing.json")}
    line = one_clean_line(run("gcp", "--project", PROJECT, "--endpoint-url", "http://127.0.0.1:9", env=env))
    assert "no Google credentials found" in line and "--from-dump" in line
    env.pop("GOOGLE_APPLICATION_CREDENTIALS")
    line = one_clean_line(run("gcp", "--endpoint-url", "http://127.0.0.1:9", env=env))
    assert "no Google credentials found" in line


def test_no_project_is_one_line() -> None:
    # A service-account key names its project; ADC from a user login may not. Then --project is needed.
    key = fake_service_account_key()
    key.pop("project_id")
    path = Path(os.environ["GOOGLE_APPLICATION_CREDENTIALS"])
    path.write_text(json.dumps(key))
    line = one_clean_line(run("gcp", "--endpoint-url", "http://127.0.0.1:9"))
    assert "--project" in line


def test_unreachable_endpoint_exits_2_with_the_error_in_the_report() -> None:
    result = run("gcp", "-p", PROJECT, "--endpoint-url", "http://127.0.0.1:9", "-f", "json")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert json.loads(result.stdout)["errors"][0]["code"] == "Unreachable"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--zone", "uscentral1"], "--zone uscentral1: not a Compute Engine zone"),
        (["--endpoint-url", "127.0.0.1:9"], "give the scheme"),
        (["--print-role", "--project", "x"], "--print-role and --project cannot be used together"),
        (["--from-dump", str(DEMO), "-p", "a-project", "-p", "b-project"], "--from-dump and --project cannot be used"),
        (["--from-dump", str(DEMO), "--project", "x"], "--project x: not a Google Cloud project id"),
    ],
)
def test_bad_options_are_one_line(args: list[str], expected: str) -> None:
    assert expected in one_clean_line(run("gcp", *args))


def test_print_role_is_the_permissions_the_calls_need(tmp_path: Path) -> None:
    result = run("gcp", "--print-role")
    assert result.returncode == 0
    expected = sorted([*(c.permission for c in CALLS), effective.PERMISSION])
    assert json.loads(result.stdout)["includedPermissions"] == expected
    out = tmp_path / "role.json"
    assert run("gcp", "--print-role", "--output", str(out)).returncode == 0
    assert json.loads(out.read_text()) == json.loads(result.stdout)


def test_other_clouds_and_dumps_never_import_the_google_sdk() -> None:
    code = (
        "import sys\n"
        "from fabriccheck.cli import main\n"
        f"main(['aws', '--from-dump', {str(ROOT / 'fixtures' / 'demo' / 'aws')!r}, '-f', 'json', '-o', '/dev/null'])\n"
        f"main(['gcp', '--from-dump', {str(DEMO)!r}, '-f', 'json', '-o', '/dev/null'])\n"
        "main(['gcp', '--help'])\n"
        "main(['gcp', '--print-role'])\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('google.cloud', 'google.api_core', 'google.auth')))\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def _pairs(report: dict[str, Any]) -> set[tuple[str, tuple[str, ...]]]:
    return {(f["rule"], tuple(f["resources"])) for f in report["findings"]}


def test_an_instance_with_a_bad_interface_is_reported_and_the_others_judged(google_key: Path) -> None:
    """One instance's networkInterfaces holds an item that cannot be read (a NIC index past any machine's):
    an error names the instance and the field, the instance stays a node with its NIC facts unknown (its
    GCP102 not judged rather than 'fine'), and every other instance is judged as usual."""
    project = demo_project()
    env = {**os.environ, "GOOGLE_APPLICATION_CREDENTIALS": str(google_key)}
    with serve(replay_of(project)) as url:
        clean = run("gcp", "--endpoint-url", url, "--project", PROJECT, "-f", "json", env=env)
    expected = _pairs(json.loads(clean.stdout))
    files = project.files()
    [instance] = [i for i in files["instances-list.json"] if i["name"] == "a3m-half-0"]
    instance["networkInterfaces"][1]["name"] = "nic99999999999"
    replay = ComputeReplay.from_files({PROJECT: files})
    with serve(replay) as url:
        result = run("gcp", "--endpoint-url", url, "--project", PROJECT, "-f", "json", env=env)
        inventory = collect.collect_live([PROJECT], endpoint_url=url)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert report["complete"] is False
    [error] = report["errors"]
    assert (error["provider"], error["account"], error["region"]) == ("gcp", PROJECT, "us-central1")
    assert error["code"] == "BadResponse"
    assert "a3m-half-0" in error["message"] and "networkInterfaces" in error["message"]
    assert "device_index" in error["message"]
    [own] = [p for p in expected if p[0] == "GCP102" and p[1][0].endswith("a3m-half-0")]
    assert _pairs(report) == expected - {own}
    [node] = [n for n in inventory.nodes if n.id == "a3m-half-0"]
    assert node.instance_type == "a3-megagpu-8g" and not node.interfaces
    assert "networkInterfaces" in node.unknown["fabric"]
    assert len(inventory.nodes) == len(files["instances-list.json"])
