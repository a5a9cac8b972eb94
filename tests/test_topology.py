"""Topology is a fact of a node, whoever published it (model.Topology): EC2 DescribeInstanceTopology, Compute Engine
resourceStatus.physicalHostTopology, and the node labels EKS, GKE and NVIDIA's GPU DRA driver set. Each publisher's
real shape is read into the one field, placements are judged against it (AWS150, AWS160, GCP160, GCP170, K8S150,
K8S160), and a publisher that failed leaves those rules not judged, never clean.

Shapes:
- DescribeInstanceTopology: /work/shared/samples/aws/awscli_topology.json (the AWS CLI reference's example output:
  InstanceId, InstanceType, GroupName, NetworkNodes, ZoneId, AvailabilityZone), and InstanceTopology.CapacityBlockId
  (EC2 API reference, https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_InstanceTopology.html).
- physicalHostTopology {cluster, block, subblock, host}: Compute Engine API reference,
  ResourceStatusPhysicalHostTopology (https://cloud.google.com/compute/docs/reference/rest/v1/instances), and the
  installed google-cloud-compute's own message type.
- Node labels: topology.k8s.aws/network-node-layer-1..3 (https://docs.aws.amazon.com/eks/latest/userguide/
  ml-workload-topology.html), cloud.google.com/gce-topology-block/-subblock/-host (https://cloud.google.com/
  ai-hypercomputer/docs/workloads/schedule-gke-workloads-tas), nvidia.com/gpu.clique (https://docs.nvidia.com/
  topograph/v0.5.0/providers/dra).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import boto3
from botocore.stub import Stubber
from ec2_shapes import answers, instance, write

from fabriccheck import flow, report
from fabriccheck.model import Node, Topology
from fabriccheck.providers.aws import collect
from fabriccheck.providers.aws.dump import load_dump
from fabriccheck.providers.gcp.normalize import instance_topology
from fabriccheck.providers.k8s.objects import ClusterObjects, Normalizer

SAMPLE = Path("/work/shared/samples/aws/awscli_topology.json")
# The AWS CLI reference's example answer (the shared sample's content), kept here so the test needs no outside file.
CLI_EXAMPLE: dict[str, Any] = {
    "Instances": [
        {
            "InstanceId": "i-1111111111example",
            "InstanceType": "p4d.24xlarge",
            "GroupName": "my-ml-cpg",
            "NetworkNodes": ["nn-1111111111example", "nn-2222222222example", "nn-3333333333example"],
            "ZoneId": "usw2-az2",
            "AvailabilityZone": "us-west-2a",
        },
        {
            "InstanceId": "i-2222222222example",
            "InstanceType": "p4d.24xlarge",
            "NetworkNodes": ["nn-1111111111example", "nn-2222222222example", "nn-3333333333example"],
            "ZoneId": "usw2-az2",
            "AvailabilityZone": "us-west-2a",
        },
    ],
    "NextToken": "SomeEncryptedToken",
}


def _rules(result: report.Report) -> set[tuple[str, str]]:
    return {(f.rule, r) for f in result.findings for r in f.resources}


# ------------------------------------------------------------------------------------------------ AWS


def test_the_cli_examples_network_nodes_are_the_nodes_layers_top_first(tmp_path: Path) -> None:
    """The CLI reference's answer: layer 1 is the top ("How Amazon EC2 instance topology works"); two p4d under the
    same three network nodes are not spread (AWS150 clean)."""
    if SAMPLE.exists():  # the shared copy, where this machine has it, is the same answer
        assert json.loads(SAMPLE.read_text())["Instances"][:2] == CLI_EXAMPLE["Instances"]
    nodes = [
        instance(i["InstanceId"], "p4d.24xlarge", zone="us-west-2a", group="my-ml-cpg")
        for i in CLI_EXAMPLE["Instances"]
    ]
    docs = answers(nodes, placement_groups=[{"GroupName": "my-ml-cpg", "Strategy": "cluster", "State": "available"}])
    docs["describe-instance-topology.json"] = CLI_EXAMPLE
    inventory = load_dump(write(tmp_path, docs))
    [first, _] = inventory.nodes
    assert first.topology == Topology(
        source="DescribeInstanceTopology",
        levels=("nn-1111111111example", "nn-2222222222example", "nn-3333333333example"),
        level_names=("layer-1", "layer-2", "layer-3"),
    )
    result = flow.run(inventory, flow.Options())
    assert not [f for f in result.findings if f.rule == "AWS150"]
    assert result.clusters[0].status == "clean"


def _gb200_client(nodes: list[dict[str, Any]]) -> tuple[Any, Stubber]:
    client = boto3.session.Session().client("ec2", region_name="us-east-1")
    stub = Stubber(client)
    docs = answers(nodes)
    stub.add_response("describe_instances", docs["describe-instances.json"], None)
    stub.add_response("describe_instance_types", {"InstanceTypes": []}, None)  # the types in use, then the rest
    stub.add_response("describe_instance_types", {"InstanceTypes": []}, None)
    stub.add_response("describe_placement_groups", docs["describe-placement-groups.json"], None)
    stub.add_response("describe_security_groups", docs["describe-security-groups.json"], None)
    stub.add_response("describe_subnets", docs["describe-subnets.json"], None)
    stub.add_response("describe_launch_template_versions", {"LaunchTemplateVersions": []}, None)
    stub.add_response("describe_capacity_reservations", {"CapacityReservations": []}, None)
    return client, stub


def test_a_denied_instance_topology_leaves_the_topology_rules_not_judged_never_clean() -> None:
    """AccessDenied on DescribeInstanceTopology (botocore's Stubber, validated against the EC2 model): the GB200
    cluster is neither clean nor flagged; AWS150 and AWS160 are named as not judged, with the call that failed."""
    nodes = [instance(f"i-0{n:016x}", "p6e-gb200.36xlarge", efa=17) for n in range(2)]
    client, stub = _gb200_client(nodes)
    stub.add_client_error("describe_instance_topology", "UnauthorizedOperation", "You are not authorized", 403)
    with stub:
        inventory = collect.collect_region(client, "us-east-1", topology=True)
    stub.assert_no_pending_responses()
    result = flow.run(inventory, flow.Options())
    [cluster] = result.clusters
    assert cluster.status != "clean" and not result.complete
    assert not [f for f in result.findings if f.rule in ("AWS150", "AWS160")]
    unjudged = {n.rule: n.reason for n in report.unjudged_rules(cluster)}
    assert {"AWS150", "AWS160"} <= set(unjudged)
    assert "DescribeInstanceTopology failed" in unjudged["AWS160"]


def test_an_answered_instance_topology_judges_the_ultraservers() -> None:
    """The same two nodes, topology answered: two UltraServers (CapacityBlockId) where one holds 18 nodes."""
    nodes = [instance(f"i-0{n:016x}", "p6e-gb200.36xlarge", efa=17) for n in range(2)]
    client, stub = _gb200_client(nodes)
    topology = {
        "Instances": [
            {
                "InstanceId": node["InstanceId"],
                "InstanceType": "p6e-gb200.36xlarge",
                "NetworkNodes": ["nn-a", "nn-b", f"nn-c{n}"],
                "AvailabilityZone": "us-east-1a",
                "ZoneId": "use1-az1",
                "CapacityBlockId": f"cb-0{n}",
            }
            for n, node in enumerate(nodes)
        ]
    }
    stub.add_response("describe_instance_topology", topology, None)
    with stub:
        inventory = collect.collect_region(client, "us-east-1", topology=True)
    result = flow.run(inventory, flow.Options())
    assert {r for r, _ in _rules(result)} >= {"AWS160"}
    assert inventory.nodes[0].topology is not None and inventory.nodes[0].topology.nvlink_domain == "cb-00"


# ------------------------------------------------------------------------------------------------ GCP


def test_the_installed_compute_client_gives_physical_host_topology_as_the_normalizer_reads_it() -> None:
    """google-cloud-compute's Instance carries resource_status.physical_host_topology; the collector's to_dict
    (camelCase, as gcloud prints) gives physicalHostTopology {cluster, block, subblock, host}."""
    from google.cloud import compute_v1

    proto = compute_v1.Instance(
        name="a4x-0",
        machine_type="zones/us-central1-a/machineTypes/a4x-highgpu-4g",
        resource_status=compute_v1.ResourceStatus(
            physical_host_topology=compute_v1.ResourceStatusPhysicalHostTopology(
                cluster="europe-west4-cluster-jfhb",
                block="3e3056e23cf91a5cb4a8621b6a52c100",
                subblock="0fc09525cdf4ee8b1c8d4b4c8b6ab2c5",
                host="f0b7b1a9e0d2c7d5e6b3f1a2c4d8e9b0",
            )
        ),
    )
    item = type(proto).to_dict(proto, preserving_proto_field_name=False, use_integers_for_enums=False)
    topology = instance_topology(item["resourceStatus"], "a4x-highgpu-4g")
    assert topology is not None
    assert topology.level_names == ("cluster", "block", "subblock")
    assert topology.levels[1] == "/europe-west4-cluster-jfhb/3e3056e23cf91a5cb4a8621b6a52c100"
    # A4X: "An NVLink domain, also known as a sub-block" (AI Hypercomputer terminology): the node's NVLink domain.
    assert topology.nvlink_domain == topology.levels[2]
    # An A3 Ultra's sub-block is no NVLink domain: its NVLink ends at the VM.
    a3_ultra = instance_topology(item["resourceStatus"], "a3-ultragpu-8g")
    assert a3_ultra is not None and a3_ultra.nvlink_domain is None


def _gcp_node(name: str, machine_type: str, block: str, subblock: str) -> Node:
    status = {"physicalHostTopology": {"cluster": "c1", "block": block, "subblock": subblock, "host": f"h-{name}"}}
    return Node.flat(
        id=name,
        provider="gcp",
        account="p",
        region="us-central1",
        zone="us-central1-b",
        instance_type=machine_type,
        tags={"goog-k8s-cluster-name": "c", "goog-k8s-node-pool-name": "pool"},
        interfaces=[{"id": f"{name}/nic0", "network": "host"}],
        topology=instance_topology(status, machine_type),
    )


def _gcp_report(nodes: list[Node]) -> report.Report:
    from fabriccheck.inventory import Inventory

    return flow.run(Inventory(source="test", nodes=nodes, collected=["gcp:p:us-central1:instances"]), flow.Options())


def test_gcp_blocks_and_a4x_sub_blocks_are_judged_from_physical_host_topology() -> None:
    """A3 Ultra over two blocks: GCP170 (info, cost not estimated); over two sub-blocks of one block: clean of it.
    A4X over two sub-blocks (two NVL72 domains) where one holds them: GCP160, priced as a split NVLink domain."""
    two_blocks = _gcp_report(
        [_gcp_node("a-0", "a3-ultragpu-8g", "b1", "s1"), _gcp_node("a-1", "a3-ultragpu-8g", "b2", "s1")]
    )
    [finding] = [f for f in two_blocks.findings if f.rule == "GCP170"]
    assert "2 different blocks" in finding.message and "not estimated" in finding.message
    one_block = _gcp_report(
        [_gcp_node("a-0", "a3-ultragpu-8g", "b1", "s1"), _gcp_node("a-1", "a3-ultragpu-8g", "b1", "s2")]
    )
    assert not [f for f in one_block.findings if f.rule == "GCP170"]
    a4x = _gcp_report([_gcp_node("x-0", "a4x-highgpu-4g", "b1", "s1"), _gcp_node("x-1", "a4x-highgpu-4g", "b1", "s2")])
    assert "GCP160" in {f.rule for f in a4x.findings}
    slowdown = a4x.clusters[0].penalty.slowdown
    assert slowdown is not None and slowdown.low > 1.0
    same = _gcp_report([_gcp_node("x-0", "a4x-highgpu-4g", "b1", "s1"), _gcp_node("x-1", "a4x-highgpu-4g", "b1", "s1")])
    assert not [f for f in same.findings if f.rule in ("GCP160", "GCP170")]


# ------------------------------------------------------------------------------------------------ Kubernetes


def _k8s_node(name: str, instance_type: str, labels: dict[str, str]) -> dict[str, Any]:
    base = {"node.kubernetes.io/instance-type": instance_type, "topology.kubernetes.io/zone": "us-east-1a"}
    base |= {"topology.kubernetes.io/region": "us-east-1", "eks.amazonaws.com/nodegroup": "gpu"}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": base | labels},
        "spec": {"providerID": f"aws:///us-east-1a/i-0{abs(hash(name)) % 10**16:016d}"},
        "status": {"allocatable": {"nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "17"}},
    }


def _k8s_pod(name: str, node: str, gpus: int = 4) -> dict[str, Any]:
    # Every GPU and EFA device of a p6e-gb200.36xlarge node (17 network cards: EC2 instance types, catalog row), and
    # the host's IMEX channels through a hostPath (NVIDIA/k8s-dra-driver-gpu: /dev/nvidia-caps-imex-channels), so
    # multi-node NVLink reaches across the pods' nodes and only their cliques decide (K8S145 judges a missing channel).
    limits = {"nvidia.com/gpu": str(gpus), "vpc.amazonaws.com/efa": "17"}
    imex = {"name": "imex", "hostPath": {"path": "/dev/nvidia-caps-imex-channels"}}
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "ownerReferences": [{"kind": "Job", "name": "t", "controller": True}],
        },
        "spec": {
            "nodeName": node,
            "volumes": [imex],
            "containers": [{"name": "main", "image": "x", "resources": {"limits": limits}}],
        },
        "status": {"phase": "Running"},
    }


def _k8s_report(nodes: list[dict[str, Any]]) -> report.Report:
    pods = [_k8s_pod(f"t-{i}", n["metadata"]["name"]) for i, n in enumerate(nodes)]
    objects = ClusterObjects(name="c1", items={"nodes": nodes, "pods": pods})
    return flow.run(Normalizer(objects).inventory("test"), flow.Options())


def test_a_gb200_workload_over_two_nvlink_cliques_is_flagged_and_one_clique_is_clean() -> None:
    """nvidia.com/gpu.clique (<ClusterUUID>.<CliqueID>, Topograph DRA provider): two cliques where one NVL72 domain
    holds the 8 GPUs is K8S160 with the split-domain penalty; one clique is clean of it."""
    clique = "nvidia.com/gpu.clique"
    split = _k8s_report(
        [
            _k8s_node("n-0", "p6e-gb200.36xlarge", {clique: "5f3c2d1e-aaaa-bbbb-cccc-0123456789ab.1"}),
            _k8s_node("n-1", "p6e-gb200.36xlarge", {clique: "5f3c2d1e-aaaa-bbbb-cccc-0123456789ab.2"}),
        ]
    )
    [finding] = [f for f in split.findings if f.rule == "K8S160"]
    assert "2 NVLink domains" in finding.message and "where 1 would hold them" in finding.message
    slowdown = split.clusters[0].penalty.slowdown
    assert slowdown is not None and slowdown.low > 1.0
    same = _k8s_report(
        [
            _k8s_node("n-0", "p6e-gb200.36xlarge", {clique: "5f3c2d1e-aaaa-bbbb-cccc-0123456789ab.1"}),
            _k8s_node("n-1", "p6e-gb200.36xlarge", {clique: "5f3c2d1e-aaaa-bbbb-cccc-0123456789ab.1"}),
        ]
    )
    assert not [f for f in same.findings if f.rule == "K8S160"]


def test_eks_network_layers_and_gke_blocks_in_node_labels_are_judged() -> None:
    """EKS layer labels: pods under two layer-1 network nodes are K8S150 (info, not estimated); under one, clean of
    it. GKE's gce-topology-block: two blocks are K8S150."""
    layers = [f"topology.k8s.aws/network-node-layer-{n}" for n in (1, 2, 3)]
    eks = {"n-0": ["nn-e50490a237cb0f01a", "nn-b1", "nn-c1"], "n-1": ["nn-0a1b2c3d4e5f60718", "nn-b2", "nn-c2"]}
    apart = _k8s_report([_k8s_node(n, "p5.48xlarge", dict(zip(layers, v, strict=True))) for n, v in eks.items()])
    [finding] = [f for f in apart.findings if f.rule == "K8S150"]
    assert "2 different layer-1 network nodes" in finding.message and "not estimated" in finding.message
    near = copy.deepcopy(eks)
    near["n-1"][0] = near["n-0"][0]
    together = _k8s_report([_k8s_node(n, "p5.48xlarge", dict(zip(layers, v, strict=True))) for n, v in near.items()])
    assert not [f for f in together.findings if f.rule == "K8S150"]
    gke = _k8s_report(
        [
            _k8s_node(
                "g-0",
                "a3-ultragpu-8g",
                {"cloud.google.com/gce-topology-block": "b-1", "cloud.google.com/gce-topology-subblock": "s-1"},
            ),
            _k8s_node(
                "g-1",
                "a3-ultragpu-8g",
                {"cloud.google.com/gce-topology-block": "b-2", "cloud.google.com/gce-topology-subblock": "s-1"},
            ),
        ]
    )
    assert "K8S150" in {f.rule for f in gke.findings}


def test_a_job_a_x36_ultraserver_cannot_hold_is_not_said_to_fit_one(tmp_path: Path) -> None:
    """u-p6e-gb200x36 holds 9 p6e-gb200.36xlarge, x72 holds 18 (EKS user guide, P6e-GB200 UltraServers), and
    DescribeInstanceTopology does not say which: 10 nodes over two UltraServers may be two x36, so no AWS160; 4 nodes
    over two are AWS160 whichever size they are."""

    def split(nodes_count: int) -> set[str]:
        nodes = [instance(f"i-0{n:016x}", "p6e-gb200.36xlarge", efa=17) for n in range(nodes_count)]
        docs = answers(nodes)
        docs["describe-instance-topology.json"] = {
            "Instances": [
                {
                    "InstanceId": node["InstanceId"],
                    "InstanceType": "p6e-gb200.36xlarge",
                    "NetworkNodes": ["nn-a", "nn-b", "nn-c"],
                    "CapacityBlockId": f"cb-{n % 2}",
                }
                for n, node in enumerate(nodes)
            ]
        }
        result = flow.run(load_dump(write(tmp_path / str(nodes_count), docs)), flow.Options())
        return {f.rule for f in result.findings}

    assert "AWS160" not in split(10)
    assert "AWS160" in split(4)


# ------------------------------------------------------------------------------------------------ before launch


def _gb200_plan(tmp_path: Path) -> Path:
    """Four planned p6e-gb200.36xlarge of one EKS node group, two in each of two Capacity Reservations."""

    from fabriccheck.builders.plan_builder import PlanBuilder, const

    plan = PlanBuilder()
    plan.region_settings["aws"] = {"region": const("us-east-1")}
    for name, reservation in (("a", "cr-0aaaaaaaaaaaaaaa1"), ("b", "cr-0bbbbbbbbbbbbbbb2")):
        for i in range(2):
            target = [{"capacity_reservation_target": [{"capacity_reservation_id": reservation}]}]
            plan.resource(
                "aws_instance",
                name,
                {
                    "instance_type": "p6e-gb200.36xlarge",
                    "availability_zone": "us-east-1a",
                    "capacity_reservation_specification": target,
                    "tags": {"eks:cluster-name": "c", "eks:nodegroup-name": "gb200"},
                },
                index=i,
                count=2,
            )
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan.build()))
    return path


def _reservation_topology(tmp_path: Path, blocks: dict[str, str]) -> Path:
    """`aws ec2 describe-capacity-reservation-topology --output json` (EC2 API reference,
    CapacityReservationTopology: CapacityReservationId, CapacityBlockId, State, InstanceType, NetworkNodes,
    AvailabilityZone, AvailabilityZoneId)."""
    doc = {
        "CapacityReservations": [
            {
                "CapacityReservationId": reservation,
                "CapacityBlockId": block,
                "State": "active",
                "InstanceType": "p6e-gb200.36xlarge",
                "NetworkNodes": ["nn-1", "nn-2", f"nn-{block}"],
                "AvailabilityZone": "us-east-1a",
                "AvailabilityZoneId": "use1-az1",
            }
            for reservation, block in blocks.items()
        ]
    }
    path = tmp_path / f"topology-{len(set(blocks.values()))}.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_plan_whose_reservations_sit_in_two_ultraservers_is_flagged_before_apply(tmp_path: Path) -> None:
    """plan --reservation-topology: the reservations the plan's instances name are placed before apply; two
    UltraServers for 16 GPUs is AWS160 (exit 1 at --fail-on warning); one is not; a file that is no such answer is
    one line, exit 2."""
    from cli_run import one_clean_line, run

    plan = _gb200_plan(tmp_path)
    apart = _reservation_topology(tmp_path, {"cr-0aaaaaaaaaaaaaaa1": "cb-a", "cr-0bbbbbbbbbbbbbbb2": "cb-b"})
    together = _reservation_topology(tmp_path, {"cr-0aaaaaaaaaaaaaaa1": "cb-a", "cr-0bbbbbbbbbbbbbbb2": "cb-a"})
    split = run("plan", str(plan), "--reservation-topology", str(apart), "-f", "json", "--fail-on", "never")
    found = json.loads(split.stdout)
    aws160 = [f for f in found["findings"] if f["rule"] == "AWS160"]
    assert len(aws160) == 1 and "cb-a, cb-b" in aws160[0]["message"], split.stdout
    one = json.loads(run("plan", str(plan), "--reservation-topology", str(together), "-f", "json").stdout)
    assert not [f for f in one["findings"] if f["rule"] == "AWS160"]
    unplaced = json.loads(run("plan", str(plan), "-f", "json").stdout)  # no topology: not judged as split
    assert not [f for f in unplaced["findings"] if f["rule"] == "AWS160"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"Instances": []}))
    result = run("plan", str(plan), "--reservation-topology", str(bad))
    assert result.returncode == 2
    assert "describe-capacity-reservation-topology" in one_clean_line(result)


def test_no_report_is_written_over_the_reservation_topology(tmp_path: Path) -> None:
    """`-o` naming the --reservation-topology file replaced the answer with the report: refused in one line (exit
    2), the file kept."""
    from cli_run import one_clean_line, run

    placed = _reservation_topology(tmp_path, {"cr-0aaaaaaaaaaaaaaa1": "cb-a"})
    before = placed.read_bytes()
    result = run("plan", str(_gb200_plan(tmp_path)), "--reservation-topology", str(placed), "-o", str(placed))
    assert one_clean_line(result) == (
        f"fabriccheck: error: --output {placed} is the reservation topology being read (--reservation-topology): "
        "write the report elsewhere"
    )
    assert placed.read_bytes() == before


def test_a_dump_reads_the_reservations_topology(tmp_path: Path) -> None:
    """describe-capacity-reservation-topology.json in a dump places the reservation it names (the reservations
    answer's own record gains it), where the instances answer is read as ever."""
    docs = answers([instance("i-0000000000000000a", "p5.48xlarge", efa=32)])
    docs["describe-capacity-reservations.json"] = {
        "CapacityReservations": [
            {
                "CapacityReservationId": "cr-0aaaaaaaaaaaaaaa1",
                "OwnerId": "111122223333",
                "InstanceType": "p5.48xlarge",
                "AvailabilityZone": "us-east-1a",
                "State": "active",
                "ReservationType": "default",
            }
        ]
    }
    topology = json.loads(_reservation_topology(tmp_path, {"cr-0aaaaaaaaaaaaaaa1": "cb-x"}).read_text())
    del topology["CapacityReservations"][0]["CapacityBlockId"]  # only UltraServers' reservations name a block
    docs["describe-capacity-reservation-topology.json"] = topology
    inventory = load_dump(write(tmp_path / "dump", docs))
    [capacity] = inventory.aws.capacity_reservations
    assert capacity.topology == Topology(
        source="DescribeCapacityReservationTopology",
        levels=("nn-1", "nn-2", "nn-cb-x"),
        level_names=("layer-1", "layer-2", "layer-3"),
    )
    assert "aws:111122223333:us-east-1:reservation_topology" in inventory.collected


def test_a_gcloud_dump_of_a3_ultra_over_two_blocks_is_gcp170_through_the_dump_reader(tmp_path: Path) -> None:
    """`gcloud compute instances list --format=json` items with resourceStatus.physicalHostTopology (Compute
    Engine API reference, Instance.resourceStatus), read by `gcp --from-dump`: two blocks are GCP170, one block
    with two sub-blocks is not; exit code and the rest of the report as without topology."""

    from cli_run import run

    from fabriccheck.builders.demo_gcp import Project, gke

    def dump(blocks: tuple[str, str], folder: Path) -> dict[str, Any]:
        project = Project()
        project.network("u-host", mtu=8896)
        project.network("u-host2", mtu=8896)
        project.network("roce-a", mtu=8896, profile_zone="us-central1-a")
        for i, block in enumerate(blocks):
            nics = [("u-host", "GVNIC"), ("u-host2", "GVNIC")] + [("roce-a", "MRDMA")] * 8
            project.instance(f"u-{i}", "a3-ultragpu-8g", nics, gke("t", "ultra"), zone="us-central1-a", reservation="r")
            project.instances[-1]["resourceStatus"] = {
                "physicalHost": f"/c1/{block}/h{i}",
                "physicalHostTopology": {"cluster": "c1", "block": block, "subblock": f"s{i}", "host": f"h{i}"},
            }
        project.write(folder)
        result = run("gcp", "--from-dump", str(folder), "-f", "json", "--fail-on", "never")
        assert result.returncode == 0, result.stderr
        report: dict[str, Any] = json.loads(result.stdout)
        return report

    apart = dump(("b1", "b2"), tmp_path / "apart")
    [finding] = [f for f in apart["findings"] if f["rule"] == "GCP170"]
    assert finding["resources"] == ["u-0", "u-1"] and "/c1/b1, /c1/b2" in finding["message"]
    together = dump(("b1", "b1"), tmp_path / "together")
    assert not [f for f in together["findings"] if f["rule"] == "GCP170"]
    assert {f["rule"] for f in apart["findings"]} - {"GCP170"} == {f["rule"] for f in together["findings"]}


def _compute_domain(cliques: dict[str, str]) -> dict[str, Any]:
    """A ComputeDomain as the API gives it (NVIDIA/k8s-dra-driver-gpu, api/nvidia.com/resource/v1beta1/
    computedomain.go: spec.numNodes, spec.channel.resourceClaimTemplate.name; status.status, status.nodes[] of
    name, ipAddress, cliqueID, index, status)."""
    return {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": "t-domain", "namespace": "ml"},
        "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "t-domain-channel"}}},
        "status": {
            "status": "Ready",
            "nodes": [
                {"name": node, "ipAddress": f"10.0.0.{i + 1}", "cliqueID": clique, "index": 0, "status": "Ready"}
                for i, (node, clique) in enumerate(cliques.items())
            ],
        },
    }


def test_a_compute_domains_status_names_the_cliques_where_nodes_carry_no_label(tmp_path: Path) -> None:
    """Listed live (the kubernetes client against an API server on 127.0.0.1, tests/kube_replay.py): the nodes
    carry no nvidia.com/gpu.clique label, the ComputeDomain's status says which clique each joined; two cliques for
    8 GPUs is K8S160, one clique is not. --print-role lists computedomains of resource.nvidia.com."""
    import pytest

    pytest.importorskip("kubernetes")
    from cli_run import run
    from kube_replay import KubeReplay, kubeconfig, serve

    def judged(cliques: dict[str, str], folder: Path) -> set[str]:
        nodes = [_k8s_node(name, "p6e-gb200.36xlarge", {}) for name in cliques]
        pods = [_k8s_pod(f"t-{i}", name) for i, name in enumerate(cliques)]
        replay = KubeReplay({"nodes": nodes, "pods": pods, "computedomains": [_compute_domain(cliques)]})
        with serve(replay) as url:
            config = kubeconfig(folder / "kubeconfig", url)
            result = run("k8s", "--kubeconfig", str(config), "-f", "json", "--fail-on", "never")
        assert result.returncode == 0, result.stderr
        assert any("/apis/resource.nvidia.com/v1beta1/computedomains" in r for r in replay.requests)
        return {f["rule"] for f in json.loads(result.stdout)["findings"]}

    tmp_path.joinpath("a").mkdir()
    tmp_path.joinpath("b").mkdir()
    assert "K8S160" in judged({"n-0": "7d1e.1", "n-1": "7d1e.2"}, tmp_path / "a")
    assert "K8S160" not in judged({"n-0": "7d1e.1", "n-1": "7d1e.1"}, tmp_path / "b")
    role = run("k8s", "--print-role").stdout
    assert "resource.nvidia.com" in role and "computedomains" in role


def test_node_labels_read_into_one_topology() -> None:
    """EKS's four-layer types add layer 4 (EKS user guide, ml-workload-topology); a GKE A4X node's sub-block is its
    NVLink domain where no clique label says it (AI Hypercomputer terminology), an A3 Ultra's is not; a clique label
    wins over the sub-block; labels that publish nothing give no topology."""
    from fabriccheck.providers.k8s.topology import node_topology

    eks = {f"topology.k8s.aws/network-node-layer-{n}": f"nn-{n}" for n in (1, 2, 3, 4)}
    four = node_topology(eks, "p6e-gb200.36xlarge")
    assert four is not None and four.levels == ("nn-1", "nn-2", "nn-3", "nn-4") and four.level_names[-1] == "layer-4"
    gke = {"cloud.google.com/gce-topology-block": "b7", "cloud.google.com/gce-topology-subblock": "s3"}
    a4x = node_topology(gke, "a4x-highgpu-4g")
    assert a4x is not None and a4x.levels == ("b7", "b7/s3") and a4x.nvlink_domain == "b7/s3"
    a3_ultra = node_topology(gke, "a3-ultragpu-8g")
    assert a3_ultra is not None and a3_ultra.nvlink_domain is None
    labelled = node_topology(gke | {"nvidia.com/gpu.clique": "9f.4"}, "a4x-highgpu-4g")
    assert labelled is not None and labelled.nvlink_domain == "9f.4"
    assert node_topology({"topology.kubernetes.io/zone": "us-east-1a"}, "p5.48xlarge") is None
