"""`fabriccheck gcp --from-dump`: gcloud-shaped answers, the demo project's fixtures, bad input, and the GCP facts
that are unknown rather than guessed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run

from fabriccheck import flow
from fabriccheck.builders.demo_gcp import PROJECT, Project, build
from fabriccheck.clusters import build_clusters
from fabriccheck.errors import FabricCheckError
from fabriccheck.examples import load_rules
from fabriccheck.facts import FactBuilder
from fabriccheck.inventory import Inventory
from fabriccheck.judge import judge
from fabriccheck.providers.gcp.dump import load_dump
from fabriccheck.providers.gcp.listing import CALLS, INSTANCES, NETWORKS
from fabriccheck.providers.gcp.normalize import normalize

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo" / "gcp"


# The demo builder's list of each call, in CALLS order.
ATTRIBUTES = ("policies", "networks", "subnetworks", "firewalls", "firewall_policies", "instances")


def findings_by_cluster(inventory: Inventory) -> dict[str, set[str]]:
    report = flow.run(inventory, flow.Options())
    found: dict[str, set[str]] = {}
    for finding in report.findings:
        found.setdefault((finding.cluster or "").rsplit("/", 1)[-1], set()).add(finding.rule)
    return found


def answers(project: Project, skip: object = None) -> dict[Any, Any]:
    """The project's resource lists by call, as a dump or a live run hands them to the normalizer."""
    lists = [getattr(project, attribute) for attribute in ATTRIBUTES]
    return {call: items for call, items in zip(CALLS, lists, strict=True) if call is not skip}


def test_demo_fixtures_are_what_the_builder_writes(tmp_path: Path) -> None:
    project = Project()
    build(project)
    project.write(tmp_path)
    for name in (c.dump_file for c in CALLS):
        assert json.loads((tmp_path / name).read_text()) == json.loads((DEMO / name).read_text()), name


def test_demo_project_has_one_clean_cluster_and_one_per_gcp_category() -> None:
    inventory = load_dump(DEMO)
    assert inventory.complete
    found = findings_by_cluster(inventory)
    assert found == {
        "hostonly": {"GCP101"},  # A3 High with only the host NIC
        "a3mhalf": {"GCP102"},  # A3 Mega with 4 of 8 GPU NICs
        "a3mextra": {"GCP103"},  # A3 Mega with an extra gVNIC
        "ultra-gvnic": {"GCP120"},  # A3 Ultra with gVNIC instead of MRDMA
        "ultra-zone": {"GCP122"},  # MRDMA NICs on another zone's RoCE VPC
        "a3loose": {"GCP130"},  # no compact placement policy
        "a3h-small-mig": {"GCP150"},  # single-NIC A3 High sizes
    }
    report = flow.run(inventory, flow.Options())
    categories = {f.category for f in report.findings}
    assert categories == {
        "fabric-missing",
        "fabric-partial",
        "fabric-isolated",
        "placement",
        "network-config",
        "instance-choice",
    }
    clean = [c for c in report.clusters if c.status == "clean"]
    assert [c.id.rsplit("/", 1)[-1] for c in clean] == ["a3-high"]  # the correct A3 High cluster


def test_the_correct_a3_high_cluster_has_all_its_facts() -> None:
    inventory = load_dump(DEMO)
    facts = FactBuilder(inventory)
    node = next(n for n in inventory.nodes if n.id == "a3h-train-0")
    got = facts.node(node)
    assert got["fabric"]["attached"] == 4 and got["fabric"]["max"] == 4
    assert (got["gpu_firewall"], got["gpu_mtu"], got["extra_nics"], got["unknown"]) == ("ok", "ok", 0, {})
    cluster = next(c for c in build_clusters(inventory) if c.id.endswith("a3-high"))
    placement = facts.cluster(cluster)["placement"]
    assert placement["policy"] == "compact" and placement["policies"] == "a3h-train-compact"
    assert cluster.signal == "GKE node pool"


def test_project_folders_each_keep_their_project(tmp_path: Path) -> None:
    for name in ("proj-one", "proj-two"):
        project = Project(name)
        build(project)
        project.write(tmp_path / name)
    inventory = load_dump(tmp_path)
    assert inventory.complete
    assert {n.account for n in inventory.nodes} == {"proj-one", "proj-two"}
    assert len(inventory.nodes) == 48
    clusters = {c.id for c in build_clusters(inventory)}
    assert "gcp:proj-one:us-central1:gke-node-pool/train/a3-high" in clusters
    assert "gcp:proj-two:us-central1:gke-node-pool/train/a3-high" in clusters


def test_a_missing_file_is_a_collection_error_naming_the_gcloud_command(tmp_path: Path) -> None:
    shutil.copytree(DEMO, tmp_path / "d")
    (tmp_path / "d" / "firewall-rules-list.json").unlink()
    inventory = load_dump(tmp_path / "d")
    assert [(e.account, e.code) for e in inventory.errors] == [(PROJECT, "MissingDump")]
    assert "gcloud compute firewall-rules list --project fabriccheck-demo --format=json" in inventory.errors[0].message
    # The firewall facts of TCPX clusters are unknown, so those rules are reported as not judged.
    result = run("gcp", "--from-dump", str(tmp_path / "d"), "-f", "json")
    assert result.returncode == 2
    report = json.loads(result.stdout)
    assert report["complete"] is False
    assert "GCP110" not in report["summary"]["by_rule"]


def test_firewalls_not_collected_leave_gcp110_unjudged_with_why(tmp_path: Path) -> None:
    shutil.copytree(DEMO, tmp_path / "d")
    (tmp_path / "d" / "firewall-rules-list.json").unlink()
    inventory = load_dump(tmp_path / "d")
    evaluation = judge(load_rules(), inventory, build_clusters(inventory))
    reasons = {u.reason for items in evaluation.unjudged.values() for u in items if u.rule == "GCP110"}
    assert reasons == {"firewall rules were not collected for project fabriccheck-demo"}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "instances-list.json: not valid JSON"),
        ('{"items": 5}', "instances-list.json: field items: expected a list"),
        ('"text"', "instances-list.json: expected a JSON list of instances"),
        ("[1]", "instances-list.json: field [0]: expected an object"),
        ('[{"name": "x"}]', "instances-list.json: [0]: missing field 'machineType'"),
        ('[{"name": "x", "machineType": "m", "zone": "z", "networkInterfaces": 5}]', "instances-list.json"),
    ],
)
def test_malformed_dump_is_one_line_naming_the_file(tmp_path: Path, content: str, expected: str) -> None:
    shutil.copytree(DEMO, tmp_path / "d")
    (tmp_path / "d" / "instances-list.json").write_text(content)
    line = one_clean_line(run("gcp", "--from-dump", str(tmp_path / "d")))
    assert expected in line


def test_a_folder_that_is_no_project_is_one_line(tmp_path: Path) -> None:
    shutil.copytree(DEMO, tmp_path / "d" / "good-project")
    (tmp_path / "d" / "Not_A_Project").mkdir()
    assert "is not a project folder" in one_clean_line(run("gcp", "--from-dump", str(tmp_path / "d")))
    (tmp_path / "empty").mkdir()
    assert "no gcloud answers found" in one_clean_line(run("gcp", "--from-dump", str(tmp_path / "empty")))
    assert "not a folder" in one_clean_line(run("gcp", "--from-dump", str(tmp_path / "nope")))


def test_api_list_and_aggregated_shapes_read_like_gcloud_lists() -> None:
    project = Project()
    build(project)
    flat = normalize({INSTANCES: project.instances}, None, lambda c: c.dump_file)
    listed = normalize({INSTANCES: {"items": project.instances}}, None, lambda c: c.dump_file)
    scoped: dict[str, Any] = {"zones/us-east1-b": {"warning": {"code": "NO_RESULTS_ON_PAGE"}}}
    for item in project.instances:
        scoped.setdefault("zones/us-central1-a", {"instances": []})["instances"].append(item)
    aggregated = normalize({INSTANCES: {"items": scoped}}, None, lambda c: c.dump_file)
    assert flat.nodes == listed.nodes == aggregated.nodes
    assert {n.account for n in flat.nodes} == {PROJECT}  # from the selfLinks


def test_facts_are_unknown_when_networks_were_not_collected() -> None:
    project = Project()
    build(project)
    inventory = normalize(
        {c: getattr(project, a) for c, a in zip(CALLS, ATTRIBUTES, strict=True) if c is not NETWORKS},
        PROJECT,
        lambda c: c.dump_file,
    )
    facts = FactBuilder(inventory)
    ultra = facts.node(next(n for n in inventory.nodes if n.id == "a3u-wrongzone-0"))
    assert ultra["rdma_profile"] == "unknown" and ultra["gpu_mtu"] == "unknown"
    assert ultra["unknown"]["rdma_profile"] == "networks were not collected for project fabriccheck-demo"
    assert ultra["non_rdma_on_rdma_vpc"] == -1


def test_a_policy_not_among_the_collected_ones_is_unknown_placement() -> None:
    project = Project()
    build(project)
    for item in project.instances:
        if item["name"].startswith("a3h-loose"):
            item["resourcePolicies"] = [project.url("regions/us-central1/resourcePolicies/elsewhere")]
    inventory = normalize(
        answers(project),
        PROJECT,
        lambda c: c.dump_file,
    )
    facts = FactBuilder(inventory)
    cluster = next(c for c in build_clusters(inventory) if c.id.endswith("a3loose"))
    got = facts.cluster(cluster)
    assert got["placement"]["policy"] == "unknown"
    assert got["unknown"]["placement"] == "resource policy elsewhere was not among the collected policies"


def test_schedule_policies_do_not_place_and_workload_policies_do() -> None:
    project = Project()
    build(project)
    project.policies.append(
        {
            "kind": "compute#resourcePolicy",
            "name": "wl",
            "region": project.url("regions/us-central1"),
            "selfLink": project.url("regions/us-central1/resourcePolicies/wl"),
            "workloadPolicy": {"type": "HIGH_THROUGHPUT", "maxTopologyDistance": "BLOCK"},
        }
    )
    for item in project.instances:
        if item["name"].startswith("a3h-loose"):
            item["resourcePolicies"].append(project.url("regions/us-central1/resourcePolicies/wl"))
    inventory = normalize(
        answers(project),
        PROJECT,
        lambda c: c.dump_file,
    )
    node = next(n for n in inventory.nodes if n.id == "a3h-loose-0")
    assert [p.id for p in node.placement] == ["wl"]  # daily-snapshots is a schedule, not placement
    assert "a3loose" not in findings_by_cluster(inventory)


def test_gcp_from_dump_refuses_live_options() -> None:
    line = one_clean_line(run("gcp", "--from-dump", str(DEMO), "--endpoint-url", "http://127.0.0.1:1"))
    assert "--from-dump and --endpoint-url cannot be used together" in line


def test_the_demo_dump_exit_code_and_json_report() -> None:
    result = run("gcp", "--from-dump", str(DEMO), "-f", "json")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["complete"] is True
    assert report["summary"]["by_category"]["fabric-missing"] == 4


def test_load_dump_of_a_file_not_a_folder(tmp_path: Path) -> None:
    with pytest.raises(FabricCheckError, match="not a folder"):
        load_dump(DEMO / "instances-list.json")


def test_the_role_label_can_be_written_as_a_gcp_label() -> None:
    # GCP label keys allow lower-case letters, digits, - and _ only: the role is the label fabriccheck-role.
    project = Project()
    build(project)
    for item in project.instances:
        if item["name"].startswith("a3h-hostonly"):
            item["labels"]["fabriccheck-role"] = "inference"
    inventory = normalize(answers(project), PROJECT, lambda c: c.dump_file)
    assert "hostonly" not in findings_by_cluster(inventory)


def _paths(facts: dict[str, Any], prefix: str = "") -> set[str]:
    found = set()
    for key, value in facts.items():
        if key == "unknown":
            continue
        found.add(prefix + key)
        if isinstance(value, dict):
            found |= _paths(value, f"{prefix}{key}.")
    return found


def test_built_gcp_facts_are_exactly_the_listed_ones() -> None:
    from fabriccheck.facts import described

    inventory = load_dump(DEMO)
    facts = FactBuilder(inventory)
    node_schema, cluster_schema = described("gcp")
    for node in inventory.nodes:
        assert _paths(facts.node(node)) == set(node_schema), node.id
    for cluster in build_clusters(inventory):
        assert _paths(facts.cluster(cluster)) == set(cluster_schema), cluster.id


def test_a_gcp_report_lists_only_gcp_rules_and_an_aws_only_selection_is_an_error() -> None:
    report = json.loads(run("gcp", "--from-dump", str(DEMO), "-f", "json").stdout)
    assert report["rules"] and all(r.startswith("GCP") for r in report["rules"])
    line = one_clean_line(run("gcp", "--from-dump", str(DEMO), "--select", "AWS101"))
    assert "--select / --ignore leave no rule to run on gcp" in line


def test_a_saved_gcp_inventory_is_judged_alike_by_check(tmp_path: Path) -> None:
    saved = tmp_path / "inventory.json"
    first = run("gcp", "--from-dump", str(DEMO), "-f", "json", "--save-inventory", str(saved))
    again = run("check", str(saved), "-f", "json")
    assert first.returncode == again.returncode == 1
    assert json.loads(first.stdout)["summary"]["by_rule"] == json.loads(again.stdout)["summary"]["by_rule"]
    assert json.loads(saved.read_text())["gcp"]["firewalls"]
