"""GB200/GB300 NVL72 domains: the model prices a job spread over more domains than it needs, and the clouds whose
APIs say where a node's domain is (AWS: an UltraServer instance's topology names its Capacity Block; GCP: the rack
above the host in physicalHost) flag it. Azure's API tells no ND GB200 v6 VM's rack: nothing is flagged there."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from ec2_shapes import answers, instance, write

from fabriccheck import estimate, flow, penalty, report
from fabriccheck.model import NetworkPath
from fabriccheck.penalty import collectives
from fabriccheck.penalty.members import node_state
from fabriccheck.providers.aws.dump import load_dump

GB200 = "p6e-gb200.36xlarge"
FSDP = penalty.WORKLOADS["llm-70b-fsdp"]


def _topology(nodes: list[dict[str, Any]], blocks: list[str | None]) -> dict[str, Any]:
    return {
        "Instances": [
            {
                "InstanceId": node["InstanceId"],
                "InstanceType": node["InstanceType"],
                "NetworkNodes": ["nn-1", "nn-2", f"nn-{index}"],
                "AvailabilityZone": "us-east-1a",
                **({"CapacityBlockId": block} if block else {}),
            }
            for index, (node, block) in enumerate(zip(nodes, blocks, strict=True))
        ]
    }


def _report(tmp_path: Path, blocks: list[str | None] | None) -> report.Report:
    nodes = [instance(f"i-0{n:016x}", GB200, efa=17) for n in range(4)]
    docs = answers(nodes)
    if blocks is not None:
        docs["describe-instance-topology.json"] = _topology(nodes, blocks)
    return flow.run(load_dump(write(tmp_path, docs)), flow.Options())


def test_a_job_over_two_ultraservers_where_one_would_hold_it_is_flagged_and_priced(tmp_path: Path) -> None:
    report = _report(tmp_path, ["cb-1", "cb-1", "cb-2", "cb-2"])
    [cluster] = report.clusters
    assert [f.rule for f in report.findings if f.rule == "AWS160"] == ["AWS160"]
    [finding] = [f for f in report.findings if f.rule == "AWS160"]
    assert "2 UltraServers (cb-1, cb-2) where 1 would hold them" in finding.message
    # the penalty is the model's for the same nodes over two NVLink domains
    fabric = estimate.fabric_of_type(GB200)
    expected = penalty.estimate(fabric, 4, penalty.FabricState("healthy", nvlink_domains=2), FSDP)
    assert cluster.penalty.slowdown is not None and expected.low > 1.0
    assert (cluster.penalty.slowdown.low, cluster.penalty.slowdown.high) == pytest.approx((expected.low, expected.high))


def test_one_ultraserver_or_no_topology_is_not_flagged(tmp_path: Path) -> None:
    cases: list[tuple[str, list[str | None] | None]] = [("one", ["cb-1"] * 4), ("untold", None), ("none", [None] * 4)]
    for name, blocks in cases:
        report = _report(tmp_path / name, blocks)
        assert not [f for f in report.findings if f.rule == "AWS160"], name


def test_the_aws_normalizer_records_the_ultraserver_as_the_nodes_domain(tmp_path: Path) -> None:
    nodes = [instance(f"i-0{n:016x}", GB200, efa=17) for n in range(2)]
    docs = answers(nodes)
    docs["describe-instance-topology.json"] = _topology(nodes, ["cb-7", None])
    inventory = load_dump(write(tmp_path, docs))
    domains = {n.id: n.topology.nvlink_domain if n.topology else None for n in inventory.nodes}
    assert domains == {nodes[0]["InstanceId"]: "cb-7", nodes[1]["InstanceId"]: None}


@pytest.mark.parametrize("workload", sorted(penalty.WORKLOADS))
def test_spreading_over_more_domains_costs_and_one_domain_costs_nothing(workload: str) -> None:
    """Inside one NVL72 domain every byte rides NVLink; spread over two, the traffic between them takes the
    scale-out NICs of half the nodes each. Spreading further never costs less."""
    fabric = estimate.fabric_of_type("a4x-highgpu-4g")
    w = penalty.WORKLOADS[workload]
    one = penalty.estimate(fabric, 8, penalty.FabricState("healthy", nvlink_domains=1), w)
    assert (one.low, one.high) == (1.0, 1.0)
    costs = [penalty.estimate(fabric, 8, penalty.FabricState("healthy", nvlink_domains=k), w) for k in (2, 4, 8)]
    assert all(c.low > 1.0 for c in costs)
    assert all(a.high <= b.high * (1 + 1e-9) for a, b in itertools.pairwise(costs))
    # 36 nodes need two domains at least: two is healthy there, four is not
    assert penalty.estimate(fabric, 36, penalty.FabricState("healthy", nvlink_domains=2), w).high == 1.0
    assert penalty.estimate(fabric, 36, penalty.FabricState("healthy", nvlink_domains=4), w).low > 1.0


def test_a_domain_counts_its_nodes_nics_together() -> None:
    """Two domains of 9 nodes: the traffic between them rides more NICs than one node's, where two domains of one
    node each (2 nodes, each in its own rack) have one node's 4; but a domain's rings drive about 8.9 NICs' worth
    of its own (coreweave/nccl-tests@cb86553, 20 GB200 racks: 405.74 GB/s busbw over 400 Gbps NICs), not all 36."""
    fabric = estimate.fabric_of_type("a4x-highgpu-4g")
    two = penalty.FabricState("healthy", nvlink_domains=2)
    wide = penalty.collective_bandwidth(fabric, 18, "all_gather", 2**34, two)
    narrow = penalty.collective_bandwidth(fabric, 2, "all_gather", 2**34, two)
    assert wide is not None and narrow is not None and wide[0] > 1.8 * narrow[0]
    per_nic = fabric.gbps_per_nic / 8 * penalty.EFFICIENCY[fabric.fabric]
    assert wide[1] <= collectives.DOMAIN_RING_NICS * per_nic * 1.01  # busbw: the rings' NICs, not all 36


def test_the_named_nvlink_states_split_and_down_are_stable_and_priced() -> None:
    """penalty.NVLINK_SPLIT and penalty.NVLINK_DOWN are the names rule effects (split-nvlink-domain, nvlink-down)
    and `--state` share. A split with no count takes one domain more than the job needs; multi-node NVLink down
    leaves every GB200 tray on its own NICs (NVIDIA MNNVL: the IMEX/fabric-manager service joins trays into one
    NVLink domain; without it each tray is a 4-GPU node, docs.nvidia.com/multi-node-nvlink-systems)."""
    assert (penalty.NVLINK_SPLIT, penalty.NVLINK_DOWN) == ("nvlink-split", "nvlink-down")
    fabric = estimate.fabric_of_type("a4x-highgpu-4g")
    split, down = estimate.state_named("nvlink-split", fabric), estimate.state_named("nvlink-down", fabric)
    assert (split.name, down.name, penalty.FabricState.healthy().name) == ("nvlink-split", "nvlink-down", "healthy")
    assert estimate.state_named("nvlink-split,domains=3", fabric).nvlink_domains == 3
    # 8 trays fit one domain: the smallest split is two domains, priced as domains=2
    smallest = penalty.estimate(fabric, 8, split, FSDP)
    assert smallest.low == penalty.estimate(fabric, 8, penalty.FabricState("healthy", nvlink_domains=2), FSDP).low
    assert smallest.low > 1.0
    # down: each tray its own unit, as 8 domains of one tray; worse than any split into fewer domains
    cut = penalty.estimate(fabric, 8, down, FSDP)
    assert cut.low == penalty.estimate(fabric, 8, penalty.FabricState("healthy", nvlink_domains=8), FSDP).low
    assert cut.low > smallest.low
    # a type without multi-node NVLink loses nothing when it is "down"
    assert penalty.estimate(estimate.fabric_of_type("p5.48xlarge"), 4, down, FSDP).high == 1.0


def test_the_nvlink_down_effect_maps_to_the_named_state() -> None:
    assert node_state({"nvlink-down"}, None, NetworkPath.HOST, 0).name == penalty.NVLINK_DOWN
    assert node_state({"split-nvlink-domain"}, None, NetworkPath.HOST, 0).name == penalty.NVLINK_SPLIT
    assert node_state({"split-nvlink-domain"}, None, NetworkPath.HOST, 3).nvlink_domains == 3


def test_nvlink_states_on_a_fabric_without_a_multi_node_domain_say_they_change_nothing() -> None:
    """An H100 node's NVLink ends at the node: 'nvlink-down' there is priced as healthy, and the estimate says so
    rather than let 1.00x read as multi-node NVLink going down costing nothing; an NVL72 rack's estimate says no
    such thing."""
    fabric = estimate.fabric_of_type("Standard_ND96isr_H100_v5")
    for state in ("nvlink-down", "nvlink-split,domains=2"):
        report = estimate.run(fabric, 2, state, penalty.WORKLOADS["llm-70b-fsdp"])
        assert any(n.startswith("H100 nodes have no multi-node NVLink domain") for n in report.notes), state
    rack = estimate.run(estimate.fabric_of_type("a4x-highgpu-4g"), 36, "nvlink-down", penalty.WORKLOADS["llm-70b-fsdp"])
    assert rack.slowdown is not None and rack.slowdown.high > 1.005
    assert not any("no multi-node NVLink domain" in n for n in rack.notes)
