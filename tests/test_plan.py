"""`fabriccheck plan`: Terraform plan JSON -> the same model, rules, messages and penalty as a live scan."""

from __future__ import annotations

import copy
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run

from fabriccheck import flow, report
from fabriccheck.builders import demo_plans as plans
from fabriccheck.builders.plan_builder import PlanBuilder, const, ref
from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.sources.terraform import check_plan, load_plan

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo"
DEMO_PLANS = DEMO / "plans"
PUBLIC = ROOT / "tests" / "data" / "plans" / "public"


def _write(tmp_path: Path, doc: dict[str, Any], name: str = "plan.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _report(path: Path, terraform_dir: Path | None = None) -> report.Report:
    return flow.run(load_plan(str(path), terraform_dir), flow.Options())


def _findings(report: report.Report) -> Counter[tuple[str, str]]:
    return Counter((f.rule, f.category) for f in report.findings)


# ---------------------------------------------------------------------------------------------- the demo plans


def test_demo_plans_are_what_the_builder_writes(tmp_path: Path) -> None:
    plans.write(tmp_path)
    for path in sorted(tmp_path.glob("*.json")):
        assert json.loads(path.read_text()) == json.loads((DEMO_PLANS / path.name).read_text()), path.name


@pytest.mark.parametrize("cloud", ["aws", "azure", "gcp"])
def test_correct_plan_is_clean(cloud: str) -> None:
    report = _report(DEMO_PLANS / f"{cloud}-correct.json")
    assert report.findings == []
    assert report.complete
    assert [c.status for c in report.clusters] == ["clean"]
    assert report.clusters[0].gpus == 16  # two 8-GPU nodes from one scaling group / scale set / node pool


def test_wrong_aws_plan() -> None:
    report = _report(DEMO_PLANS / "aws-wrong.json")
    assert _findings(report) == Counter(
        {
            # Once for the scaling group's two planned nodes: they are one Terraform address (issue 28, item 10).
            ("AWS101", "fabric-missing"): 1,
            ("AWS120", "placement"): 1,
            # The module's workers: their security group (known only after apply) is followed through the
            # configuration to the group this plan creates, which lets nothing flow with itself.
            ("AWS110", "fabric-isolated"): 3,
            ("AWS121", "placement"): 1,
            ("AWS140", "fabric-missing"): 1,
        }
    )
    by_rule = {f.rule: f for f in report.findings}
    assert by_rule["AWS121"].resources == ["module.gpu.aws_instance.worker[0]", "module.gpu.aws_instance.worker[1]"]
    assert "module.gpu.aws_security_group.efa" in by_rule["AWS110"].message
    # The instance being destroyed is not judged; the report says so.
    assert not any("old_trainer" in r for f in report.findings for r in f.resources)
    assert "1 resource(s) the plan destroys were judged as absent" in report.notes


def test_wrong_azure_and_gcp_plans() -> None:
    azure = _report(DEMO_PLANS / "azure-wrong.json")
    assert _findings(azure) == Counter({("AZ140", "software"): 1, ("AZ110", "fabric-isolated"): 1})
    gcp = _report(DEMO_PLANS / "gcp-wrong.json")
    # A planned group's finding names its Terraform address once, never #0..#N (issue 28, item 10).
    assert _findings(gcp) == Counter({("GCP101", "fabric-missing"): 1})
    assert {r for f in gcp.findings for r in f.resources} == {"google_container_node_pool.hostonly"}
    assert "google_container_node_pool.hostonly (" in gcp.findings[0].message


# ---------------------------------------------------------------------------------------------- plan == dump


def _demo_dump(provider: str) -> Inventory:
    import importlib

    folder = DEMO / provider
    loaded: Inventory = importlib.import_module(f"fabriccheck.providers.{provider}.dump").load_dump(folder)
    return loaded


@pytest.mark.parametrize(
    ("provider", "plan_file", "dump_cluster", "plan_cluster"),
    [
        ("aws", "aws-wrong.json", "auto-scaling-group/vision-train", "auto-scaling-group/vision-train"),
        ("azure", "azure-wrong.json", "virtualmachinescalesets/nd-a100-custom", "scale_set.nd_a100_custom"),
        ("gcp", "gcp-wrong.json", "gke-node-pool/train/hostonly", "gke-node-pool/train/hostonly"),
    ],
)
def test_plan_and_dump_of_one_cluster_agree(
    provider: str, plan_file: str, dump_cluster: str, plan_cluster: str
) -> None:
    """The same cluster, once as the live demo account's dump and once as the plan that would launch it, gives
    the same rule ids, categories and penalty (a plan says a node rule once per Terraform address, a dump once
    per instance)."""
    live = flow.run(_demo_dump(provider), flow.Options())
    planned = _report(DEMO_PLANS / plan_file)
    [live_cluster] = [c for c in live.clusters if c.id.endswith(dump_cluster)]
    [plan_cluster_report] = [c for c in planned.clusters if c.id.endswith(plan_cluster)]
    live_findings = Counter((f.rule, f.category) for f in live.findings if f.cluster == live_cluster.id)
    plan_findings = Counter((f.rule, f.category) for f in planned.findings if f.cluster == plan_cluster_report.id)
    assert live_findings and set(live_findings) == set(plan_findings)
    assert live_cluster.gpus == plan_cluster_report.gpus
    assert live_cluster.penalty.model_dump() == plan_cluster_report.penalty.model_dump()


# ---------------------------------------------------------------------------------------------- unknown values


def _aws_group(plan: PlanBuilder, **expressions: Any) -> None:
    """Two p5.48xlarge instances (count) with all 32 EFA interfaces and a self-referencing security group."""
    plan.region_settings["aws"] = {"region": const("us-east-1")}
    plans._self_sg(plan, "efa")
    plan.resource("aws_vpc", "train", {"cidr_block": "10.0.0.0/16"})
    plan.resource(
        "aws_subnet",
        "a",
        {"availability_zone": "us-east-1a", "cidr_block": "10.0.1.0/24"},
        unknown={"vpc_id": True},
        expressions={"vpc_id": ref("aws_vpc.train.id")},
    )
    plan.resource("aws_placement_group", "train", {"name": "train", "strategy": "cluster"})
    plans._efa_template(plan, "gpu", "p5.48xlarge", 32, "aws_security_group.efa", None)
    for i in range(2):
        plan.resource(
            "aws_instance",
            "worker",
            {"launch_template": [{"version": "$Latest"}], **expressions.pop("values", {})},
            index=i,
            count=2,
            unknown={"launch_template": [{"id": True}], "subnet_id": True},
            expressions={
                "launch_template": [{"id": ref("aws_launch_template.gpu.id")}],
                "subnet_id": ref("aws_subnet.a.id"),
                **expressions,
            },
        )


def test_references_resolve_through_the_configuration(tmp_path: Path) -> None:
    plan = PlanBuilder()
    _aws_group(plan, placement_group=ref("aws_placement_group.train.name"))
    report = _report(_write(tmp_path, plan.build()))
    assert report.findings == []
    assert [c.status for c in report.clusters] == ["clean"]


def test_an_unknown_value_is_not_judged_and_the_report_says_why(tmp_path: Path) -> None:
    """A placement group read from a data source is known only after apply: the placement rules stay silent and
    the cluster is reported as not judged for them, naming the reference."""
    plan = PlanBuilder()
    _aws_group(plan, placement_group=ref("data.aws_placement_group.shared.name"))
    path = _write(tmp_path, plan.build())
    report = _report(path)
    assert report.findings == []
    [cluster] = report.clusters
    assert cluster.status == "incomplete"
    reasons = {n.rule: n.reason for n in cluster.not_judged}
    assert {"AWS120", "AWS121"} <= set(reasons)
    assert "data.aws_placement_group.shared.name" in reasons["AWS120"]
    result = run("plan", str(path))
    assert result.returncode == 2  # a gate that could not see is not green
    assert "data.aws_placement_group.shared.name" in result.stdout


def test_an_unknown_instance_type_is_not_judged(tmp_path: Path) -> None:
    plan = PlanBuilder()
    plan.region_settings["aws"] = {"region": const("us-east-1")}
    for i in range(2):
        plan.resource(
            "aws_instance",
            "worker",
            {"tags": {}},
            index=i,
            count=2,
            unknown={"instance_type": True},
            expressions={"instance_type": ref("data.aws_ec2_instance_type.pick.id")},
        )
    loaded = load_plan(str(_write(tmp_path, plan.build())))
    assert [n.instance_type for n in loaded.nodes] == [None, None]
    assert "instance_type is known only after apply" in loaded.nodes[0].unknown["fabric"]
    assert flow.run(loaded, flow.Options()).findings == []


# ---------------------------------------------------------------------------------------------- shapes


def test_for_each_modules_and_variables(tmp_path: Path) -> None:
    """for_each instances in a module instance two levels down, whose security group comes in through two module
    variables, each become a node of their own; the group resolves to the root's group."""
    plan = PlanBuilder()
    plan.region_settings["aws"] = {"region": const("us-east-1")}
    plans._self_sg(plan, "efa")
    plan.module("module.site", "./site", {"sg": ref("aws_security_group.efa.id")})
    plan.module("module.site.module.nodes", "./nodes", {"sg": ref("var.sg")})
    module = 'module.site.module.nodes["east"]'
    nics = [{"network_card_index": 0, "device_index": 0, "interface_type": "efa"}]
    plan.resource(
        "aws_network_interface",
        "efa",
        {"interface_type": "efa"},
        module=module,
        unknown={"security_groups": True},
        expressions={"security_groups": ref("var.sg")},
    )
    for key in ("a", "b", "c"):
        plan.resource(
            "aws_instance",
            "node",
            {"instance_type": "p4d.24xlarge", "placement_group": "pg", "network_interface": nics},
            module=module,
            index=key,
            for_each=["a", "b", "c"],
            unknown={"network_interface": [{"network_interface_id": True}]},
            expressions={"network_interface": [{"network_interface_id": ref("aws_network_interface.efa.id")}]},
        )
    inventory = load_plan(str(_write(tmp_path, plan.build())))
    assert [n.id for n in inventory.nodes] == [f'{module}.aws_instance.node["{k}"]' for k in "abc"]
    assert {n.interfaces[0].security_groups[0] for n in inventory.nodes} == {"aws_security_group.efa"}
    report = flow.run(inventory, flow.Options())
    assert [c.grouped_by for c in report.clusters] == ["placement group"]
    # The placement group "pg" is not in the plan: its strategy is unknown, so placement is not judged.
    assert {n.rule for n in report.clusters[0].not_judged} >= {"AWS120"}
    assert not any(f.rule == "AWS110" for f in report.findings)  # the group does allow itself


def test_destroy_only_plan_judges_nothing_and_says_so(tmp_path: Path) -> None:
    plan = PlanBuilder()
    plan.destroy("aws_instance", "old", {"id": "i-1", "instance_type": "p5.48xlarge"})
    path = _write(tmp_path, plan.build())
    report = _report(path)
    assert report.findings == [] and report.clusters == []
    assert "the plan only destroys resources (1): nothing to judge" in report.notes
    result = run("plan", str(path))
    assert result.returncode == 0
    assert "only destroys" in result.stdout


def test_replaced_and_drifted_resources(tmp_path: Path) -> None:
    """A replaced instance is judged as what it becomes; resource_drift (Terraform 1.5+) only describes what
    changed outside Terraform and launches nothing."""
    plan = PlanBuilder()
    plan.region_settings["aws"] = {"region": const("us-east-1")}
    for i in range(2):
        plan.resource(
            "aws_instance",
            "worker",
            {"instance_type": "p4d.24xlarge", "id": f"i-{i}"},
            index=i,
            count=2,
            actions=("delete", "create"),
        )
    doc = plan.build()
    doc["resource_drift"] = [copy.deepcopy(doc["resource_changes"][0]) | {"address": "aws_instance.ghost"}]
    report = _report(_write(tmp_path, doc))
    assert Counter(f.rule for f in report.findings) == Counter({"AWS101": 2, "AWS120": 1})
    assert report.locations["aws_instance.worker[0]"].cloud_id == "i-0"


def test_opentofu_provider_names(tmp_path: Path) -> None:
    doc = json.loads((DEMO_PLANS / "gcp-wrong.json").read_text())
    text = json.dumps(doc).replace("registry.terraform.io", "registry.opentofu.org")
    path = tmp_path / "tofu.json"
    path.write_text(text)
    assert _findings(_report(path)) == Counter({("GCP101", "fabric-missing"): 1})


def test_public_plans_parse() -> None:
    module_call = load_plan(str(PUBLIC / "trivy-module-call.json"))
    assert module_call.nodes == [] and module_call.aws.security_groups == []
    assert any("launch no instance" in n for n in module_call.notes)
    old = load_plan(str(PUBLIC / "trivy-plan.json"))
    [group] = old.aws.security_groups
    assert group.id == "aws_security_group.sg" and group.region == "unknown"
    assert [(r.protocol, r.cidrs) for r in group.ingress] == [("tcp", ["0.0.0.0/0"])]


# ---------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", "empty file"),
        ('{"format_version": "1.2", "planned_values": {"root_module": {', "not valid JSON, or cut short"),
        ('{"format_version": "1.0", "terraform_version": "1.9.8", "values": {"root_module": {}}}', "a state file"),
        ('{"format_version": "1.2", "planned_values": {}, "errored": true}', "the plan errored"),
        ('{"format_version": "2.0", "planned_values": {}}', "field format_version: '2.0'"),
        ("[1, 2]", "not a Terraform plan"),
        ('{"format_version": "1.2"}', "no planned_values or resource_changes"),
    ],
)
def test_bad_plan_files_are_one_line(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "plan.json"
    path.write_text(content)
    line = one_clean_line(run("plan", str(path)))
    assert expected in line and str(path) in line


def test_check_plan_rejects_a_non_object() -> None:
    with pytest.raises(FabricCheckError, match="not a Terraform plan"):
        check_plan("text", "x.json")


def test_stdin_and_sarif_locations(tmp_path: Path) -> None:
    text = (DEMO_PLANS / "aws-wrong.json").read_text()
    import subprocess

    result = subprocess.run(
        ["fabriccheck", "plan", "-", "--terraform-dir", str(DEMO_PLANS / "aws-wrong"), "-f", "sarif"],
        input=text,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    results = json.loads(result.stdout)["runs"][0]["results"]
    located = {
        r["locations"][0]["logicalLocations"][0]["name"]: (
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
        )
        for r in results
    }
    main = str(DEMO_PLANS / "aws-wrong" / "main.tf")
    module = str(DEMO_PLANS / "aws-wrong" / "modules" / "gpu" / "main.tf")
    lines = (DEMO_PLANS / "aws-wrong" / "main.tf").read_text().splitlines()
    assert located["aws_autoscaling_group.vision_train"][0] == main
    assert lines[located["aws_autoscaling_group.vision_train"][1] - 1].startswith(
        'resource "aws_autoscaling_group" "vision_train"'
    )
    assert located["module.gpu.aws_instance.worker[0]"][0] == module
    module_lines = Path(module).read_text().splitlines()
    assert module_lines[located["module.gpu.aws_instance.worker[0]"][1] - 1] == 'resource "aws_instance" "worker" {'


def test_terraform_dir_errors(tmp_path: Path) -> None:
    (tmp_path / "main.tf").write_text('resource "aws_instance" "x" {\n  count = \n')
    line = one_clean_line(run("plan", str(DEMO_PLANS / "aws-wrong.json"), "--terraform-dir", str(tmp_path)))
    assert "main.tf: not valid HCL" in line
    line = one_clean_line(run("plan", str(DEMO_PLANS / "aws-wrong.json"), "--terraform-dir", str(tmp_path / "no")))
    assert "not a folder" in line


def test_demo_plan_command() -> None:
    result = run("demo", "--plan", "-f", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["summary"]["clusters_by_status"] == {"clean": 3, "findings": 5, "incomplete": 0}
    assert {f["provider"] for f in report["findings"]} == {"aws", "azure", "gcp"}


def test_plan_help_imports_no_cloud_sdk() -> None:
    import subprocess

    code = (
        "import sys; from fabriccheck.cli import main; "
        "rc = main(['plan', '--help']); "
        "heavy = [m for m in ('boto3', 'botocore', 'azure', 'google', 'hcl2', 'lark', 'cel', 'orjson') "
        "if m in sys.modules]; print(heavy)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_a_list_of_references_to_several_instances(tmp_path: Path) -> None:
    """`[aws_security_group.a[0].id, aws_security_group.a[1].id]` names two groups; `aws_security_group.a[0]`
    after `aws_security_group.a[0].id` names the first again."""
    plan = PlanBuilder()
    plan.region_settings["aws"] = {"region": const("us-east-1")}
    for i in range(2):
        plan.resource("aws_security_group", "a", {"name": f"a{i}"}, index=i, count=2)
    plan.resource(
        "aws_instance",
        "x",
        {"instance_type": "p5.48xlarge"},
        unknown={"vpc_security_group_ids": True},
        expressions={
            "vpc_security_group_ids": {
                "references": [
                    "aws_security_group.a[0].id",
                    "aws_security_group.a[0]",
                    "aws_security_group.a[1].id",
                    "aws_security_group.a[1]",
                    "aws_security_group.a",
                ]
            }
        },
    )
    [node] = load_plan(str(_write(tmp_path, plan.build()))).nodes
    assert node.interfaces[0].security_groups == ("aws_security_group.a[0]", "aws_security_group.a[1]")


def test_module_outputs_and_capacity_block_market(tmp_path: Path) -> None:
    """A security group handed out by a module's output is followed into the module; an instance that asks for
    the capacity-block market runs in a Capacity Block, which places its instances itself."""
    plan = PlanBuilder()
    plan.region_settings["aws"] = {"region": const("us-east-1")}
    plan.module("module.sg", "./sg", outputs={"group_id": ref("aws_security_group.efa.id")})
    plan.resource("aws_security_group", "efa", {"name": "efa"}, module="module.sg", unknown={"ingress": True})
    for i in range(2):
        plan.resource(
            "aws_instance",
            "node",
            {
                "instance_type": "p4d.24xlarge",
                "instance_market_options": [{"market_type": "capacity-block"}],
                "capacity_reservation_specification": [
                    {"capacity_reservation_target": [{"capacity_reservation_id": "cr-0123456789abcdef0"}]}
                ],
            },
            index=i,
            count=2,
            unknown={"vpc_security_group_ids": True},
            expressions={"vpc_security_group_ids": ref("module.sg.group_id")},
        )
    inventory = load_plan(str(_write(tmp_path, plan.build())))
    assert {g for n in inventory.nodes for g in n.interfaces[0].security_groups} == {"module.sg.aws_security_group.efa"}
    report = flow.run(inventory, flow.Options())
    [cluster] = report.clusters
    assert cluster.grouped_by == "Capacity Block"
    assert Counter(f.rule for f in report.findings) == Counter({"AWS101": 2})  # no placement finding


def test_misshapen_plan_is_one_line(tmp_path: Path) -> None:
    doc = json.loads((DEMO_PLANS / "aws-wrong.json").read_text())
    doc["resource_changes"][0]["change"] = ["create"]
    line = one_clean_line(run("plan", str(_write(tmp_path, doc))))
    assert "plan.json: unexpected shape" in line
    doc = json.loads((DEMO_PLANS / "aws-correct.json").read_text())
    for item in doc["planned_values"]["root_module"]["resources"]:
        if item["type"] == "aws_launch_template":
            item["values"]["network_interfaces"][0]["network_card_index"] = 4096
    line = one_clean_line(run("plan", str(_write(tmp_path, doc))))
    assert "plan.json: unexpected shape" in line and "network_card_index" in line
