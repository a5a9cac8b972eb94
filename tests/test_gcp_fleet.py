"""GCP at fleet scale through the real clients on 127.0.0.1: projects listed under an organization or folder
with Resource Manager v3 (google-cloud-resource-manager), projects collected concurrently, retries counted
per project, and one project's failure leaving the rest collected."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from gce_replay import ComputeReplay, rm_folder, rm_project, serve, use_fake_google_key

from fabriccheck.builders.demo_gcp import PROJECT, Project, build
from fabriccheck.errors import FabricCheckError
from fabriccheck.providers.gcp import collect

ORG = "organizations/123456789"


DEMO_GPU_NETWORKS = 12  # a3-gpu-0..3 and a3m-gpu-0..7 (tools/build_demo_gcp.py), all in us-central1


@pytest.fixture(autouse=True)
def google_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    key = use_fake_google_key(tmp_path, monkeypatch)
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    yield key


def estate() -> ComputeReplay:
    """An organization with one project at the top, a folder holding two more (one of them being deleted), and
    a nested folder holding the fourth; every active project runs the demo."""
    names = ["top-project", "team-a", "team-b", "doomed"]
    projects = {}
    for name in names:
        project = Project(name)
        build(project)
        projects[name] = project.files()
    replay = ComputeReplay.from_files(projects)
    replay.rm_projects = {
        ORG: [rm_project("top-project", ORG)],
        "folders/20": [rm_project("team-a", "folders/20"), rm_project("doomed", "folders/20", "DELETE_REQUESTED")],
        "folders/30": [rm_project("team-b", "folders/30")],
    }
    replay.rm_folders = {ORG: [rm_folder("20", ORG)], "folders/20": [rm_folder("30", "folders/20")]}
    return replay


def test_organization_lists_active_projects_through_nested_folders() -> None:
    replay = estate()
    with serve(replay) as url:
        inventory = collect.collect_live([], endpoint_url=url, organization="123456789", concurrency=2)
    assert inventory.complete, inventory.errors
    assert {s.account for s in inventory.scopes} == {"top-project", "team-a", "team-b"}
    assert {n.account for n in inventory.nodes} == {"top-project", "team-a", "team-b"}
    assert not any(r.path.startswith("/compute/v1/projects/doomed") for r in replay.requests)
    listed = [(r.path, r.query.get("parent")) for r in replay.requests if r.path.startswith("/v3/")]
    assert sorted(listed) == sorted(
        [(f"/v3/{kind}", parent) for kind in ("projects", "folders") for parent in (ORG, "folders/20", "folders/30")]
    )
    # Each project's requests are counted: six lists of one page each (network firewall policies the sixth), and
    # one getEffectiveFirewalls per GPU network of the demo's TCPX/TCPXO nodes (4 of A3 High, 8 of A3 Mega).
    assert {s.api_calls for s in inventory.scopes} == {6 + DEMO_GPU_NETWORKS}


def test_folder_lists_only_what_is_under_it() -> None:
    replay = estate()
    with serve(replay) as url:
        inventory = collect.collect_live([], endpoint_url=url, folder="30")
    assert {s.account for s in inventory.scopes} == {"team-b"}


def test_a_denied_listing_names_the_permissions() -> None:
    replay = estate()
    replay.rm_denied = {ORG}
    with serve(replay) as url, pytest.raises(FabricCheckError) as raised:
        collect.collect_live([], endpoint_url=url, organization="123456789")
    assert "resourcemanager.folders.list and resourcemanager.projects.list" in str(raised.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"organization": "1", "folder": "2"}, "--organization and --folder cannot be used together"),
        ({"organization": "acme"}, "--organization acme: give the numeric id"),
        ({"folder": "1", "projects": ["p"]}, "--project and --folder cannot be used together"),
    ],
)
def test_listing_options_are_checked(kwargs: dict[str, object], message: str) -> None:
    projects = kwargs.pop("projects", [])
    with pytest.raises(FabricCheckError, match=message):
        collect.collect_live(projects, endpoint_url="http://127.0.0.1:9", **kwargs)  # type: ignore[arg-type]


def test_a_throttled_and_a_failing_project_leave_the_rest_collected_and_retries_are_counted() -> None:
    replay = estate()
    replay.failures_once[("team-a", "instances")] = 429  # once, then served: a retry
    replay.failures[("team-b", "*")] = 403  # every call of team-b denied
    with serve(replay) as url:
        inventory = collect.collect_live([], endpoint_url=url, organization="123456789", retry_budget=5.0)
    assert not inventory.complete
    scopes = {s.account: s for s in inventory.scopes}
    assert scopes["team-a"].complete and scopes["team-a"].retries == 1
    assert scopes["team-a"].api_calls == 7 + DEMO_GPU_NETWORKS
    assert scopes["top-project"].complete and scopes["top-project"].retries == 0
    assert not scopes["team-b"].complete and "AccessDenied" in (scopes["team-b"].reason or "")
    denied = [e for e in inventory.errors if e.account == "team-b"]
    assert denied and all(e.permission and e.permission.startswith("compute.") for e in denied)
    assert {n.account for n in inventory.nodes} == {"top-project", "team-a"}


def test_custom_role_for_listing_adds_exactly_the_listing_permissions() -> None:
    plain = set(collect.custom_role()["includedPermissions"])
    listing = set(collect.custom_role(listing=True)["includedPermissions"])
    assert listing - plain == {"resourcemanager.folders.list", "resourcemanager.projects.list"}
    assert PROJECT  # the demo project stays the default of the other tests


def test_a_misshapen_answer_makes_its_project_incomplete_and_the_rest_stands() -> None:
    replay = estate()
    replay.projects["team-a"]["instances"][0]["networkInterfaces"] = "not a list"
    with serve(replay) as url:
        inventory = collect.collect_live([], endpoint_url=url, organization="123456789")
    scopes = {s.account: s for s in inventory.scopes}
    assert not scopes["team-a"].complete and "BadResponse" in (scopes["team-a"].reason or "")
    assert scopes["top-project"].complete and scopes["team-b"].complete
    assert {e.account for e in inventory.errors} == {"team-a"}


def test_a_refused_token_is_one_line_naming_google_and_what_to_do() -> None:
    replay = estate()
    replay.failures[("team-a", "*")] = 401
    with serve(replay) as url, pytest.raises(FabricCheckError) as raised:
        collect.collect_live(["team-a", "team-b"], endpoint_url=url)
    message = str(raised.value)
    assert message.startswith("Google credentials could not be used (401"), message
    assert "gcloud auth application-default login" in message and "\n" not in message
