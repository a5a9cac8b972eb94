"""`fabriccheck slurm --from-dump DIR [--cloud-dump DIR]`: Slurm's view of a GPU cluster joined to its cloud.

The Slurm dump in fixtures/slurm/pcluster is shaped as Slurm's own data_parser writes it (SchedMD/slurm
src/plugins/data_parser/v0.0.43/parsers.c at 284c3b95: PARSER_ARRAY(NODE), PARSER_ARRAY(PARTITION_INFO),
OPENAPI_META; fixtures/slurm/SOURCES.md names each file's source); its cloud is the demo's AWS dump
(fixtures/demo/aws), whose instances the Slurm nodes name by NodeAddr (their private IPs).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run

from fabriccheck.errors import FabricCheckError
from fabriccheck.providers.slurm import topology
from fabriccheck.providers.slurm.dump import load_dump
from fabriccheck.providers.slurm.files import COMMANDS, gpus_of
from fabriccheck.providers.slurm.hostlist import expand
from fabriccheck.providers.slurm.support import NOT_JOINED
from fabriccheck.resources.slurm import SlurmPart

ROOT = Path(__file__).resolve().parents[1]
SLURM = ROOT / "fixtures" / "slurm" / "pcluster"
AWS = ROOT / "fixtures" / "demo" / "aws"


def _report(*args: str) -> tuple[int, dict[str, Any]]:
    result = run("slurm", *args, "-f", "json")
    assert result.returncode in (0, 1, 2) and result.stdout, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return result.returncode, report


def _findings(report: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f["rule"], r) for f in report["findings"] for r in f["resources"]}


def test_host_lists_expand_as_slurm_writes_them() -> None:
    """topology.conf(5) writes `Nodes=tux[0-3,12,18-20]`; ranges keep the zero padding of their first number."""
    assert expand("tux[0-3,12,18-20]") == ["tux0", "tux1", "tux2", "tux3", "tux12", "tux18", "tux19", "tux20"]
    assert expand("node[01-02],login1") == ["node01", "node02", "login1"]
    assert expand("a[1-2]b[3-4]") == ["a1b3", "a1b4", "a2b3", "a2b4"]
    for bad in ("node[1-", "node[a-b]", "node[5-1]"):
        with pytest.raises(FabricCheckError, match="host list"):
            expand(bad)


def test_gres_strings_count_gpus() -> None:
    """Gres= as slurm.conf(5) and gres.conf(5) write it: name[:type]:count, with an optional socket binding."""
    assert gpus_of("gpu:h100:8(S:0-1)") == 8
    assert gpus_of("gpu:4,nvme:1") == 4
    assert gpus_of("nvme:1") == 0


def test_scontrol_show_topology_text_of_both_plugins() -> None:
    """The lines `scontrol show topology` prints: topology_tree.c `SwitchName=%s Level=%u LinkSpeed=%u Nodes=%s`
    and topology_block.c `BlockName=%s BlockIndex=%u Nodes=%s BlockSize=%u` (SchedMD/slurm at 284c3b95)."""
    tree = topology.from_lines(
        "SwitchName=s0 Level=0 LinkSpeed=1 Nodes=tux[0-1]\n"
        "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=tux[2-3]\n"
        "SwitchName=s2 Level=1 LinkSpeed=1 Switches=s[0-1]\n",
        "topology.txt",
    )
    assert tree.plugin == "tree" and tree.group_of() == {"tux0": "s0", "tux1": "s0", "tux2": "s1", "tux3": "s1"}
    block = topology.from_lines(
        "BlockName=b1 BlockIndex=0 Nodes=node[01-04] BlockSize=4\nAggregatedBlock=b1 BlockIndex=4 Nodes=node[01-08] "
        "BlockSize=16\n",
        "topology.txt",
    )
    assert block.plugin == "block" and set(block.groups) == {"b1"}
    assert topology.from_lines("", "topology.txt").plugin == "flat"  # topology/flat prints no record
    with pytest.raises(FabricCheckError, match="mixes SwitchName= and BlockName="):
        topology.from_lines("SwitchName=s0 Nodes=a\nBlockName=b Nodes=c\n", "topology.conf")


def test_topology_yaml_of_the_man_page() -> None:
    """topology.yaml(5) EXAMPLE (Slurm 25.05+): a default tree topology and a named block one."""
    document = [
        {
            "topology": "topo1",
            "cluster_default": True,
            "tree": {
                "switches": [
                    {"switch": "sw_root", "children": "s[1-2]"},
                    {"switch": "s1", "nodes": "node[01-02]"},
                    {"switch": "s2", "nodes": "node[03-04]"},
                ]
            },
        },
        {
            "topology": "topo2",
            "cluster_default": False,
            "block": {"block_sizes": [4, 16], "blocks": [{"block": "b1", "nodes": "node[01-04]"}]},
        },
        {"topology": "topo3", "cluster_default": False, "flat": True},
    ]
    found = topology.from_yaml(document, "topology.yaml")
    assert found[""].name == "topo1" and found[""].group_of()["node03"] == "s2"
    assert found["topo2"].plugin == "block" and found["topo2"].block_sizes == (4, 16)
    assert found["topo3"].plugin == "flat"


def test_a_parallelcluster_dump_on_aws() -> None:
    """Three partitions over the demo's EC2 instances: `train` has a node outside every block (SLURM101) and spans
    two placement groups (SLURM121); `spot` spans us-east-1a and us-east-1b (SLURM120), and so does its block, which
    SLURM120 names (one split, one finding: not SLURM111 again); `dev` (MaxNodes=1) trains alone and is not judged.
    Of the jobs (squeue --json), 101 runs in one block and zone (clean), 102 across the two zones (SLURM141), 103 is
    pending (no nodes yet: not judged)."""
    code, report = _report("--from-dump", str(SLURM), "--cloud-dump", str(AWS))
    assert code == 1 and report["complete"] is True
    assert _findings(report) == {
        ("SLURM101", "train-st-p5-5"),
        ("SLURM120", "spot-dy-p5-1"),
        ("SLURM120", "spot-dy-p5-2"),
        *{("SLURM121", f"train-st-p5-{n}") for n in range(1, 6)},
        ("SLURM141", "spot-dy-p5-1"),
        ("SLURM141", "spot-dy-p5-2"),
    }
    jobs = {c["id"]: c["status"] for c in report["clusters"] if "slurm-job" in c["id"]}
    assert jobs == {"slurm:llm:slurm:slurm-job/101": "clean", "slurm:llm:slurm:slurm-job/102": "findings"}
    status = {c["id"]: c["status"] for c in report["clusters"] if "slurm-partition" in c["id"]}
    assert status == {
        "slurm:llm:slurm:slurm-partition/spot": "findings",
        "slurm:llm:slurm:slurm-partition/train": "findings",
    }
    split = next(f for f in report["findings"] if f["rule"] == "SLURM120")
    assert "in one block: block2 (us-east-1a, us-east-1b); even a job Slurm keeps inside" in split["message"]
    spot = next(c for c in report["clusters"] if c["id"].endswith("spot"))
    assert spot["gpus"] == 16 and spot["penalty"]["lost_share"] == {"low": 1.0, "high": 1.0}


def test_nodes_join_by_address_and_keep_their_instance() -> None:
    """NodeAddr 10.0.0.6 is i-00000000000000001's PrivateIpAddress in the demo's describe-instances.json."""
    inventory = load_dump(SLURM, None, AWS)
    node = next(n for n in inventory.nodes if n.id == "train-st-p5-1")
    assert (part := node.shape.part(SlurmPart)) is not None and part.joined_by == "address"
    joined = {(i.node, i.cloud, i.instance) for i in inventory.slurm.instances}
    assert ("train-st-p5-1", "aws", "i-00000000000000001") in joined
    assert (node.instance_type, node.zone, node.placed_by("placement-group")) == (
        "p5.48xlarge",
        "us-east-1a",
        "pg-llm-prod",
    )
    assert part.group == "block1" and part.topology == "block"
    assert not any(n.id == "dev-st-p5-1" and (p := n.shape.part(SlurmPart)) and p.multi_node for n in inventory.nodes)


def _tagged_aws(tmp_path: Path) -> Path:
    """The demo's AWS dump with the first instance tagged as ParallelCluster tags a compute node (AWS ParallelCluster
    User Guide, "View tags": parallelcluster:queue-name, parallelcluster:compute-resource-name)."""
    cloud = tmp_path / "aws"
    shutil.copytree(AWS, cloud)
    answer = json.loads((cloud / "describe-instances.json").read_text())
    instance = answer["Reservations"][0]["Instances"][0]
    instance["Tags"] += [
        {"Key": "parallelcluster:queue-name", "Value": "train"},
        {"Key": "parallelcluster:compute-resource-name", "Value": "p5"},
    ]
    (cloud / "describe-instances.json").write_text(json.dumps(answer))
    return cloud


def _with_a_powered_down_node(slurm: Path) -> Path:
    """The ParallelCluster dump copied to `slurm`, with a powered-down dynamic node train-dy-p5-1 added to nodes.json
    (a CLOUD node that is POWERED_DOWN has no instance: its NodeAddr and hostname are its name)."""
    shutil.copytree(SLURM, slurm)
    nodes = json.loads((slurm / "nodes.json").read_text())
    ghost = {**nodes["nodes"][0], "name": "train-dy-p5-1", "address": "train-dy-p5-1", "hostname": "train-dy-p5-1",
             "state": ["IDLE", "CLOUD", "POWERED_DOWN"]}  # fmt: skip
    nodes["nodes"].append(ghost)
    (slurm / "nodes.json").write_text(json.dumps(nodes))
    return slurm


def test_a_powered_down_parallelcluster_node_joins_its_compute_resource(tmp_path: Path) -> None:
    """A powered-down dynamic node has no instance (NodeAddr is its name): its name QUEUE-dy-RESOURCE-N gives the
    compute resource whose instances it would be, so it takes their type and placement, but no instance id."""
    slurm = _with_a_powered_down_node(tmp_path / "slurm")
    inventory = load_dump(slurm, None, _tagged_aws(tmp_path))
    node = next(n for n in inventory.nodes if n.id == "train-dy-p5-1")
    assert node.state == "pending" and node.instance_type == "p5.48xlarge"
    assert (part := node.shape.part(SlurmPart)) is not None and part.joined_by == "name"
    assert not any(i.node == "train-dy-p5-1" for i in inventory.slurm.instances)  # no instance of its own
    # Not joined (the untagged demo): its zone is unknown, so the partition's zone rule is not judged, not passed.
    code, report = _report("--from-dump", str(slurm), "--cloud-dump", str(AWS))
    train = next(c for c in report["clusters"] if c["id"].endswith("train"))
    assert code == 2 and train["complete"] is False
    assert ("SLURM120", NOT_JOINED) in {(n["rule"], n["reason"]) for n in train["not_judged"]}
    # In no block: judged on Slurm's view alone. Two placement groups among the joined nodes already: that finding
    # stands whatever the last node's is.
    assert {("SLURM101", "train-dy-p5-1"), ("SLURM121", "train-st-p5-1")} <= _findings(report)


def test_without_the_cloud_only_slurms_view_is_judged() -> None:
    """No --cloud-dump: the topology rule is judged on Slurm's files; the zone and placement rules are named as not
    judged, and the run cannot pass a gate."""
    code, report = _report("--from-dump", str(SLURM))
    assert code == 2
    assert {rule for rule, _ in _findings(report)} == {"SLURM101"}
    train = next(c for c in report["clusters"] if c["id"].endswith("train"))
    assert train["status"] == "findings" and train["complete"] is False
    # The job rules read the same facts: a partition lists them too (they never fire on one). SLURM142 leaves a job
    # over more NVLink domains than it needs to SLURM140, so without the nodes' types it is not judged either; nor is
    # the GPU type gres.conf gives the nodes (h100) against a type the dump does not tell (SLURM125).
    assert {n["rule"] for n in train["not_judged"]} == {
        "SLURM110", "SLURM111", "SLURM120", "SLURM121", "SLURM122", "SLURM123", "SLURM125", "SLURM130", "SLURM140",
        "SLURM141", "SLURM142",
    }  # fmt: skip
    text = run("slurm", "--from-dump", str(SLURM)).stdout
    assert "not joined to a cloud instance" in " ".join(text.split()) and "NOT FULLY JUDGED" in text
    job = next(c for c in report["clusters"] if c["id"].endswith("slurm-job/102"))
    assert job["complete"] is False and "SLURM141" in {n["rule"] for n in job["not_judged"]}
    # dev (MaxNodes=1, one node) trains alone: nothing of it is unjudged.
    assert not any(c["id"].endswith("dev") for c in report["clusters"])


def test_a_saved_inventory_is_judged_alike(tmp_path: Path) -> None:
    saved = tmp_path / "inventory.json"
    run("slurm", "--from-dump", str(SLURM), "--cloud-dump", str(AWS), "--save-inventory", str(saved))
    _, direct = _report("--from-dump", str(SLURM), "--cloud-dump", str(AWS))
    again = run("check", str(saved), "-f", "json")
    assert _findings(json.loads(again.stdout)) == _findings(direct)


def test_print_commands_names_every_file_of_the_dump() -> None:
    result = run("slurm", "--print-commands")
    assert result.returncode == 0
    for name, command in COMMANDS.items():
        assert command in result.stdout and name in command
    assert "cannot be used together" in one_clean_line(run("slurm", "--print-commands", "--from-dump", str(SLURM)))


def _bad(tmp_path: Path, files: dict[str, Any], *more: str) -> str:
    dump = tmp_path / "slurm"
    if dump.exists():
        shutil.rmtree(dump)
    dump.mkdir()
    for name, content in files.items():
        (dump / name).write_text(content if isinstance(content, str) else json.dumps(content))
    return one_clean_line(run("slurm", "--from-dump", str(dump), *more))


def test_bad_dumps_are_one_line_naming_the_file(tmp_path: Path) -> None:
    nodes = {"nodes": [{"name": "a", "partitions": ["p"], "state": ["IDLE"]}]}
    assert "no nodes.json" in _bad(tmp_path, {"jobs.json": {"jobs": []}})
    assert "nodes.json" in _bad(tmp_path, {"nodes.json": "{not json"})
    assert "not the output of scontrol show nodes --json" in _bad(
        tmp_path, {"nodes.json": {"kind": "List", "items": []}}
    )
    assert "nodes[0] has no name" in _bad(tmp_path, {"nodes.json": {"nodes": [{"address": "10.0.0.1"}]}})
    assert "not the output of squeue --json" in _bad(tmp_path, {"nodes.json": nodes, "jobs.json": {"nodes": []}})
    line = _bad(tmp_path, {"nodes.json": nodes, "topology.conf": "NodeName=a CPUs=4\n"})
    assert "topology.conf: line 1: neither SwitchName= nor BlockName=" in line
    assert "topology.yaml" in _bad(tmp_path, {"nodes.json": nodes, "topology.yaml": "- topology: [unclosed\n"})
    # A malformed host list names the file and the line or field it is in, not only the list.
    line = _bad(tmp_path, {"nodes.json": nodes, "topology.conf": "BlockName=b Nodes=a[1-\n"})
    assert "topology.conf: line 1: Nodes=: host list 'a[1-': unbalanced brackets" in line
    jobs = {"jobs": [{"job_id": 7, "nodes": "a[", "job_state": ["RUNNING"]}]}
    assert "jobs.json: jobs[0].nodes: host list 'a['" in _bad(tmp_path, {"nodes.json": nodes, "jobs.json": jobs})
    gres = "NodeName=a[1-2 Name=gpu File=/dev/nvidia[0-7]\n"
    assert "gres.conf: line 1: NodeName=: host list" in _bad(tmp_path, {"nodes.json": nodes, "gres.conf": gres})
    block = "- topology: t\n  block:\n    blocks:\n      - block: b1\n        nodes: a[x]\n"
    assert "topology.yaml: blocks[0].nodes: host list 'a[x]'" in _bad(
        tmp_path, {"nodes.json": nodes, "topology.yaml": block}
    )
    assert "give one cloud's dump" in _bad(tmp_path, {"nodes.json": nodes}, "--cloud-dump", str(tmp_path / "slurm"))


SCRIPTS = ROOT / "fixtures" / "slurm" / "scripts"


def test_no_report_is_written_over_a_job_script_or_into_the_cloud_dump(tmp_path: Path) -> None:
    """`-o` naming a --scripts file replaced the job script with the report, and `-o` into --cloud-dump replaced
    describe-instances.json: both are refused in one line (exit 2), every file kept."""
    script = tmp_path / "fsdp-efa.sbatch"
    shutil.copy(SCRIPTS / "fsdp-efa.sbatch", script)
    cloud = tmp_path / "aws"
    shutil.copytree(AWS, cloud)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    common = ("slurm", "--from-dump", str(SLURM), "--cloud-dump", str(cloud))
    line = one_clean_line(run(*common, "--scripts", str(script), "-o", str(script), "-f", "text"))
    assert line == f"fabriccheck: error: --output {script} is a job script being judged (--scripts): write the " + (
        "report elsewhere"
    )
    inside = cloud / "describe-instances.json"
    line = one_clean_line(run(*common, "-o", str(inside)))
    assert f"--output {inside} is a file in the cloud's dump folder being read (--cloud-dump)" in line
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_job_scripts_that_turn_the_fabric_off() -> None:
    """sbatch(1) reads #SBATCH lines before the first command; NCCL_NET=Socket forces sockets on any fabric and
    NCCL_SOCKET_IFNAME=lo leaves NCCL's bootstrap an address no other node reaches (NCCL environment variables,
    docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html). The EFA script (FI_PROVIDER=efa, an exclusion list
    for the socket interfaces) is clean."""
    good, bad = SCRIPTS / "fsdp-efa.sbatch", SCRIPTS / "debug-sockets.sbatch"
    _, report = _report(
        "--from-dump", str(SLURM), "--cloud-dump", str(AWS), "--scripts", str(good), "--scripts", str(bad)
    )
    scripts = {(rule, r) for rule, r in _findings(report) if rule.startswith("SLURM15")}
    assert scripts == {("SLURM150", str(bad)), ("SLURM151", str(bad))}
    fabric_off = next(f for f in report["findings"] if f["rule"] == "SLURM150")
    assert "NCCL_NET=Socket" in fabric_off["message"] and "efa fabric of their p5.48xlarge" in fabric_off["message"]


def test_script_settings_are_read_as_the_shell_and_srun_read_them(tmp_path: Path) -> None:
    """srun(1) --export separates variables with commas; elsewhere a comma is part of the value."""
    from fabriccheck.providers.slurm.scripts import read_script, settings

    assert settings("srun --export=ALL,NCCL_SOCKET_IFNAME=^docker,lo python x.py") == [
        ("NCCL_SOCKET_IFNAME", "^docker")
    ]
    assert settings('export NCCL_SOCKET_IFNAME="lo,eth0"  # both') == [("NCCL_SOCKET_IFNAME", "lo,eth0")]
    assert settings("mpirun -x FI_PROVIDER=tcp a.out") == [("FI_PROVIDER", "tcp")]
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH -p gpu -N 4-8\nsrun hostname\n#SBATCH --nodes=1\n")
    found = read_script(script)
    assert (found.partition, found.nodes) == ("gpu", 4)  # an #SBATCH line after the first command is a comment
    script.write_text("#SBATCH --nodes=many\n")
    with pytest.raises(FabricCheckError, match="not a node count"):
        read_script(script)
    unnamed = tmp_path / "other.sh"
    unnamed.write_text("#!/bin/bash\nsrun hostname\n")
    _, report = _report("--from-dump", str(SLURM), "--scripts", str(unnamed))
    assert f"{unnamed} names no partition (#SBATCH --partition) of the dump: not judged" in report["notes"]


GCP = ROOT / "fixtures" / "demo" / "gcp"


def test_a_slurm_gcp_cluster_joins_its_instances_by_name(tmp_path: Path) -> None:
    """slurm-gcp (Cluster Toolkit) names each GCE instance after its Slurm node, so the demo's GCP instances
    (fixtures/demo/gcp/instances-list.json) join by name. Partition a3h: four A3 High nodes under a tree topology
    whose leaf switch misses one (SLURM101, cluster-toolkit#3316); partition mixed: an A3 High and an A3 Mega node of
    two compact placement policies (SLURM121), and so of two instance types (SLURM123)."""
    dump = tmp_path / "slurm"
    dump.mkdir()
    template = json.loads((SLURM / "nodes.json").read_text())
    names = {f"a3h-train-{n}": ["a3h", "mixed"] if n == 0 else ["a3h"] for n in range(4)} | {"a3m-half-0": ["mixed"]}
    nodes = [
        {**template["nodes"][0], "name": name, "address": name, "hostname": name, "partitions": parts}
        for name, parts in names.items()
    ]
    (dump / "nodes.json").write_text(json.dumps({**template, "nodes": nodes}))
    (dump / "topology.txt").write_text(
        "SwitchName=s0 Level=0 LinkSpeed=1 Nodes=a3h-train-[0-2],a3m-half-0\n"
        "SwitchName=root Level=1 LinkSpeed=1 Switches=s0\n"
    )
    inventory = load_dump(dump, None, GCP)
    joined = {(i.node, i.cloud, i.instance) for i in inventory.slurm.instances}
    assert ("a3h-train-0", "gcp", "a3h-train-0") in joined and len(joined) == 5
    code, report = _report("--from-dump", str(dump), "--cloud-dump", str(GCP))
    assert code == 1 and report["complete"] is True
    assert {(rule, r) for rule, r in _findings(report)} == {
        ("SLURM101", "a3h-train-3"),
        ("SLURM121", "a3h-train-0"),
        ("SLURM121", "a3m-half-0"),
        ("SLURM123", "a3h-train-0"),
        ("SLURM123", "a3m-half-0"),
    }


def test_a_node_without_a_type_is_no_unknown_type() -> None:
    """Without the cloud, a Slurm node whose cloud plugin sets no InstanceType has no type: the report calls no type
    unknown (a note "capability unknown for instance type(s) " naming nothing), and says under each partition what
    that leaves unjudged."""
    _, report = _report("--from-dump", str(SLURM))
    assert report["summary"]["unknown_instance_types"] == []
    assert not any("capability unknown" in note for note in report["notes"])


def test_a_gres_gpu_count_that_is_not_the_instance_types(tmp_path: Path) -> None:
    """SLURM124: a node whose Gres= gives 4 GPUs on its p5.48xlarge (8 H100s, joined by NodeAddr) is flagged, and
    only it (Gres= as slurm.conf(5) writes it: name:type:count)."""
    dump = tmp_path / "slurm"
    shutil.copytree(SLURM, dump)
    doc = json.loads((dump / "nodes.json").read_text())
    for node in doc["nodes"]:
        if node["name"] == "train-st-p5-2":
            node["gres"] = "gpu:h100:4"
    (dump / "nodes.json").write_text(json.dumps(doc))
    _, report = _report("--from-dump", str(dump), "--cloud-dump", str(AWS))
    assert {r for rule, r in _findings(report) if rule == "SLURM124"} == {"train-st-p5-2"}
    _, clean = _report("--from-dump", str(SLURM), "--cloud-dump", str(AWS))
    assert not {r for rule, r in _findings(clean) if rule == "SLURM124"}


def test_a_pending_job_is_judged_on_the_nodes_slurm_plans_it_on(tmp_path: Path) -> None:
    """squeue --json gives a pending job the nodes the backfill scheduler plans to start it on (`scheduled_nodes`, a
    host list: SlinkyProject/slurm-client api/v0044 V0044JobInfo); over two zones that is SLURM141 before it runs.
    A pending job with no planned nodes (the fixture's job 103) is not judged."""
    _, plain = _report("--from-dump", str(SLURM), "--cloud-dump", str(AWS))
    assert not any(c["id"].endswith("slurm-job/103") for c in plain["clusters"])
    dump = tmp_path / "slurm"
    shutil.copytree(SLURM, dump)
    doc = json.loads((dump / "jobs.json").read_text())
    pending = next(j for j in doc["jobs"] if j["job_id"] == 103)
    pending.update({"partition": "spot", "scheduled_nodes": "spot-dy-p5-[1-2]"})
    (dump / "jobs.json").write_text(json.dumps(doc))
    _, report = _report("--from-dump", str(dump), "--cloud-dump", str(AWS))
    job = [f for f in report["findings"] if f["cluster"].endswith("slurm-job/103")]
    assert [(f["rule"], f["resources"]) for f in job] == [("SLURM141", ["spot-dy-p5-1", "spot-dy-p5-2"])]
    assert "Job 103 (partition spot) is planned on 2 nodes in 2 zones" in job[0]["message"]


def test_the_header_says_which_node_types_are_unknown(tmp_path: Path) -> None:
    """Without the cloud a Slurm node has no type: the cluster's header says so, not "5 nodes × , 0 accelerators";
    with one node of six not joined (a powered-down node no instance is tagged for), the header counts it apart."""
    text = " ".join(run("slurm", "--from-dump", str(SLURM)).stdout.split())
    assert "Slurm partition: 5 nodes of an unknown instance type, accelerators unknown" in text
    assert "× ," not in text and "0 accelerators" not in text
    slurm = _with_a_powered_down_node(tmp_path / "slurm")
    text = " ".join(run("slurm", "--from-dump", str(slurm), "--cloud-dump", str(AWS)).stdout.split())
    assert "Slurm partition: 6 nodes: 5 × p5.48xlarge (40 accelerators) and 1 of an unknown instance type" in text
    markdown = run("slurm", "--from-dump", str(SLURM), "-f", "markdown").stdout
    assert "5 nodes of an unknown instance type, accelerators unknown" in markdown
    html = run("slurm", "--from-dump", str(SLURM), "-f", "html").stdout
    assert "5 nodes of an unknown instance type, accelerators unknown" in html and "× ," not in html


def test_a_gres_gpu_type_that_is_not_the_instance_types(tmp_path: Path) -> None:
    """SLURM125: gres.conf(5) `Type=a100` on p5.48xlarge nodes (8 H100s) is flagged once per node, on its partition
    (not again for job 101, which runs on two of them); the type AutoDetect=nvml reports for an H100 (NVML's `NVIDIA
    H100 80GB HBM3`, spaces as underscores) in Gres= is the same GPU and clean. Without the cloud the type of the
    node is unknown: the rule is named as not judged, never passed."""
    dump = tmp_path / "slurm"
    shutil.copytree(SLURM, dump)
    (dump / "gres.conf").write_text("NodeName=train-st-p5-[1-5] Name=gpu Type=a100 File=/dev/nvidia[0-7]\n")
    doc = json.loads((SLURM / "nodes.json").read_text())
    for node in doc["nodes"]:
        node["gres"] = "gpu:8"  # Gres= names no type: gres.conf's Type= is the nodes'
    (dump / "nodes.json").write_text(json.dumps(doc))
    _, report = _report("--from-dump", str(dump), "--cloud-dump", str(AWS))
    flagged = [(f["cluster"].rsplit(":", 1)[-1], r) for f in report["findings"] if f["rule"] == "SLURM125"
               for r in f["resources"]]  # fmt: skip
    assert sorted(flagged) == [("slurm-partition/train", f"train-st-p5-{n}") for n in range(1, 6)]
    finding = next(f for f in report["findings"] if f["rule"] == "SLURM125")
    assert "(p5.48xlarge, 8 H100) is given GPUs of type a100 (A100)" in finding["message"]
    code, alone = _report("--from-dump", str(dump))
    assert code == 2
    train = next(c for c in alone["clusters"] if c["id"].endswith("train"))
    assert ("SLURM125", NOT_JOINED) in {(n["rule"], n["reason"]) for n in train["not_judged"]}
    doc = json.loads((SLURM / "nodes.json").read_text())
    for node in doc["nodes"]:
        node["gres"] = "gpu:nvidia_h100_80gb_hbm3:8(S:0-1)"
    (dump / "nodes.json").write_text(json.dumps(doc))  # the node's own Gres= comes before gres.conf
    _, clean = _report("--from-dump", str(dump), "--cloud-dump", str(AWS))
    assert not {r for rule, r in _findings(clean) if rule in ("SLURM124", "SLURM125")}


def test_gres_types_as_slurm_writes_them(tmp_path: Path) -> None:
    from fabriccheck.providers.slurm.gres import gpu_types_of, gres_types

    assert gpu_types_of("gpu:h100:8(S:0-1)") == ("h100",)
    assert gpu_types_of("gpu:8,nvme:1") == ()
    assert gpu_types_of("gpu:a100:4,gpu:nvidia_h100_80gb_hbm3:4") == ("a100", "nvidia_h100_80gb_hbm3")
    conf = tmp_path / "gres.conf"
    conf.write_text("AutoDetect=nvml\nNodeName=n[1-2] Name=gpu Type=h100 Count=8\nName=gpu File=/dev/nvidia0\n")
    assert gres_types(conf) == {"n1": ("h100",), "n2": ("h100",)}
