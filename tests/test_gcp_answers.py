"""What a GCP dump file holds: gcloud's flat list, the Compute API's plain list page and aggregated list, an empty
but complete answer, a page cut short by its nextPageToken, and files that are no list of their resources at all.

Shapes: the API's list pages are {"kind": "compute#<resource>List", "id", "items"?, "nextPageToken"?, "selfLink",
"warning"?}, with `items` left out when the page holds none (Compute v1 InstanceList and the other *List messages,
googleapis.dev/ruby/google-cloud-compute-v1/latest/Google/Cloud/Compute/V1/InstanceList.html: "Type of resource.
Always compute#instanceList for lists of Instance resources"; "If the number of results is larger than
maxResults, use the nextPageToken as a value for the query parameter pageToken"). The resources are the demo
builder's (tools/build_demo_gcp.py), each with its `kind` as the API and gcloud write it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run

from fabriccheck.builders.demo_gcp import PROJECT, Project, build
from fabriccheck.providers.gcp.dump import load_dump
from fabriccheck.providers.gcp.listing import CALLS, INSTANCES, RESOURCE_POLICIES, page_kinds

API = "https://www.googleapis.com/compute/v1"


def demo(tmp_path: Path) -> tuple[Project, Path]:
    project = Project()
    build(project)
    folder = tmp_path / "dump"
    project.write(folder)
    return project, folder


def page(call: Any, items: list[dict[str, Any]] | None, token: str | None = None) -> dict[str, Any]:
    """A plain list page as the API sends it (no `items` key when it holds none)."""
    body: dict[str, Any] = {
        "kind": page_kinds(call)[0],
        "id": f"projects/{PROJECT}/{call.resource}",
        "selfLink": f"{API}/projects/{PROJECT}/{call.resource}",
    }
    if items:
        body["items"] = items
    if token:
        body["nextPageToken"] = token
    return body


def report_of(folder: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = run("gcp", "--from-dump", str(folder), "-f", "json", *args)
    assert "Traceback" not in result.stderr
    return result.returncode, json.loads(result.stdout)


@pytest.mark.parametrize("call", CALLS, ids=[c.resource for c in CALLS])
def test_an_api_list_page_reads_like_the_gcloud_list(tmp_path: Path, call: Any) -> None:
    project, folder = demo(tmp_path)
    flat = load_dump(folder)
    items = project.files()[call.dump_file]
    (folder / call.dump_file).write_text(json.dumps(page(call, items)))
    paged = load_dump(folder)
    assert paged.complete, paged.errors
    assert [n.model_dump() for n in paged.nodes] == [n.model_dump() for n in flat.nodes]
    assert paged.gcp == flat.gcp
    assert sorted(paged.collected) == sorted(flat.collected)


@pytest.mark.parametrize("call", CALLS, ids=[c.resource for c in CALLS])
def test_a_page_with_a_next_page_token_is_cut_short_and_the_run_exits_2(tmp_path: Path, call: Any) -> None:
    project, folder = demo(tmp_path)
    items = project.files()[call.dump_file]
    (folder / call.dump_file).write_text(json.dumps(page(call, items[:3], token="Cg5hM2gtdHJhaW4tMg==")))
    inventory = load_dump(folder)
    [error] = inventory.errors
    assert (error.account, error.call, error.code) == (PROJECT, call.dump_file, "Truncated")
    assert "ends with a nextPageToken" in error.message and call.gcloud in error.message
    assert not any(c.endswith(f":{call.fact}") for c in inventory.collected)
    code, report = report_of(folder)
    assert code == 2 and report["complete"] is False


def test_a_page_without_items_is_a_complete_empty_answer(tmp_path: Path) -> None:
    """A project whose A3 Ultra nodes use no resource policy: the API's policies page then has no `items`."""
    project, folder = demo(tmp_path)
    instances = [i for i in project.instances if i["name"].startswith("a3u-gvnic")]
    (folder / INSTANCES.dump_file).write_text(json.dumps(instances))
    (folder / RESOURCE_POLICIES.dump_file).write_text(json.dumps(page(RESOURCE_POLICIES, None)))
    inventory = load_dump(folder)
    assert inventory.complete
    assert inventory.has("gcp", PROJECT, "us-central1", "resource_policies")
    code, report = report_of(folder)
    assert report["complete"] is True and code == 1
    [cluster] = report["clusters"]
    assert cluster["status"] == "findings" and cluster["not_judged"] == []


def test_an_empty_policies_list_counts_for_the_project_the_other_files_name(tmp_path: Path) -> None:
    """`resource-policies-list.json` = [] (gcloud's answer for a project with none) in a flat folder: the project
    has no placement policies, which GCP130 judges; it is not 'policies were not collected'."""
    project, folder = demo(tmp_path)
    loose = [i for i in project.instances if i["name"].startswith("a3h-loose")]
    for instance in loose:
        instance["resourcePolicies"] = []
    (folder / INSTANCES.dump_file).write_text(json.dumps(loose))
    (folder / RESOURCE_POLICIES.dump_file).write_text("[]\n")
    code, report = report_of(folder, "--fail-on", "warning")
    assert code == 1 and report["complete"] is True
    [cluster] = report["clusters"]
    assert cluster["not_judged"] == []
    assert [f["rule"] for f in report["findings"]] == ["GCP130"]
    assert "verdict: none" in report["findings"][0]["message"]


def test_project_names_a_flat_folder_whose_files_name_none(tmp_path: Path) -> None:
    """A project with nothing in it: every gcloud list is []. Only --project can say whose answers they are."""
    folder = tmp_path / "empty-project"
    folder.mkdir()
    for call in CALLS:
        (folder / call.dump_file).write_text("[]\n")
    unnamed = load_dump(folder)  # no project named: no fact counts as collected for a project
    assert not [c for c in unnamed.collected if not c.endswith(":max_distance")]
    inventory = load_dump(folder, "empty-project-1")
    assert inventory.complete and not inventory.nodes
    assert {c.split(":")[1] for c in inventory.collected} == {"empty-project-1"}
    assert inventory.has("gcp", "empty-project-1", "global", "instances")
    code, report = report_of(folder, "--project", "empty-project-1")
    assert code == 0 and report["complete"] is True


def test_project_with_project_folders_is_one_line(tmp_path: Path) -> None:
    project, _ = demo(tmp_path)
    project.write(tmp_path / "folders" / PROJECT)
    line = one_clean_line(run("gcp", "--from-dump", str(tmp_path / "folders"), "--project", "other-project"))
    assert "holds project folders" in line


AWS_INSTANCES = {"Reservations": [{"ReservationId": "r-0123", "OwnerId": "111122223333", "Instances": []}]}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        # A file without its list is not an empty list (issue 18.2).
        ({}, "holds an empty object, not a list of instances"),
        ({"Items": []}, "holds the key Items where the Compute API writes items"),
        ({"items": {}}, "holds an items object without scopes or kind"),
        # A file of another kind names what it holds instead.
        (AWS_INSTANCES, "holds an AWS CLI answer (top-level Reservations)"),
        ({"value": [], "nextLink": None}, "holds an Azure Resource Manager list (top-level value)"),
        (page(CALLS[1], []), "holds a Compute API list of networks (kind compute#networkList)"),
    ],
)
def test_an_instances_file_that_is_no_instance_list_is_one_line_naming_it(
    tmp_path: Path, content: Any, expected: str
) -> None:
    _, folder = demo(tmp_path)
    (folder / INSTANCES.dump_file).write_text(json.dumps(content))
    line = one_clean_line(run("gcp", "--from-dump", str(folder)))
    assert str(folder / INSTANCES.dump_file) in line and expected in line


def test_a_networks_list_saved_as_instances_is_one_line(tmp_path: Path) -> None:
    project, folder = demo(tmp_path)
    (folder / INSTANCES.dump_file).write_text(json.dumps(project.networks, indent=1))
    line = one_clean_line(run("gcp", "--from-dump", str(folder)))
    assert "instances-list.json: holds networks (kind compute#network) at [0], not a list of instances" in line


def test_aws_and_azure_resources_in_a_flat_list_are_named(tmp_path: Path) -> None:
    _, folder = demo(tmp_path)
    # `aws ec2 describe-instances --query 'Reservations[].Instances[]'` and `az vm list` print flat lists too.
    aws = [{"InstanceId": "i-0abc", "InstanceType": "p5.48xlarge", "State": {"Name": "running"}}]
    azure = [{"id": "/subscriptions/0000/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm0",
              "name": "vm0", "type": "Microsoft.Compute/virtualMachines"}]  # fmt: skip
    for content, expected in ((aws, "AWS EC2 resources"), (azure, "Azure resources")):
        (folder / INSTANCES.dump_file).write_text(json.dumps(content))
        assert expected in one_clean_line(run("gcp", "--from-dump", str(folder)))


@pytest.mark.parametrize(
    "content",
    ["[]", json.dumps({"kind": "compute#instanceAggregatedList", "items": {}}), json.dumps(page(INSTANCES, None))],
)
def test_a_present_empty_instance_list_is_a_complete_empty_answer(tmp_path: Path, content: str) -> None:
    _, folder = demo(tmp_path)
    (folder / INSTANCES.dump_file).write_text(content)
    inventory = load_dump(folder)
    assert inventory.complete and not inventory.nodes
    assert inventory.has("gcp", PROJECT, "global", "instances")


@pytest.mark.parametrize("call", [RESOURCE_POLICIES, INSTANCES], ids=["policies", "instances"])
def test_a_resource_whose_kind_is_not_a_string_is_read_in_full_not_an_internal_error(tmp_path: Path, call: Any) -> None:
    """Found by tests/test_fuzz.py (gcp, seed 0, case 8): a resource's `kind` wrapped in a list made the quick read's
    set of kinds raise TypeError. Such a file is read in full, where the resource is judged by its other keys."""
    _, folder = demo(tmp_path)
    path = folder / call.dump_file
    items = json.loads(path.read_text())
    items[0]["kind"] = [items[0]["kind"]]
    path.write_text(json.dumps(items))
    result = run("gcp", "--from-dump", str(folder), "-f", "json")
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert result.returncode in (1, 2)
