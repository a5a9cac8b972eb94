"""The degraded states as the model prices them since issue 22: GPUDirect RDMA off as a host-staged path, NCCL's
socket transport on its path (host, pod, overlay; sockets, MTU, zones), RoCE at scale, tensor parallelism across
nodes, the one-node step and scaling ratios, a measured step time, ranges narrow enough to act on, and a healthy
baseline recalibrated from a team's own nccl-tests."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from cli_run import one_clean_line, run

from fabriccheck import calibrate, catalog, estimate, penalty
from fabriccheck.errors import FabricCheckError
from fabriccheck.model import FabricKind, NetworkPath
from fabriccheck.penalty import links, steps
from fabriccheck.provider import declaration
from fabriccheck.workloadfile import workload_from_mapping

FSDP = penalty.WORKLOADS["llm-70b-fsdp"]
P5 = estimate.fabric_of_type("p5.48xlarge")
ND_H100 = estimate.fabric_of_type("Standard_ND96isr_H100_v5")
A4 = estimate.fabric_of_type("a4-highgpu-8g")


def _link(fabric: penalty.FabricDescription, text: str, worst: bool = False) -> float:
    found = penalty.degraded_link(fabric, estimate.state_named(text, fabric), worst)
    assert found is not None
    return found.bandwidth / penalty.GB


# ---------------------------------------------------------------------------------------------- GPUDirect off


def test_gpudirect_off_is_bounded_by_the_host_path_on_fast_nics_and_by_the_nic_on_slow_ones() -> None:
    """8 x 400 Gbps IB is faster than what 8 H100s stage through PCIe Gen5: the host bound sets it, each GPU at
    HOST_STAGED_FRACTION of 64 GB/s. 4 x 100 Gbps EFA is slower than 8 A100s stage: the NIC bound sets it."""
    best, worst = _link(ND_H100, "no-gdr"), _link(ND_H100, "no-gdr", worst=True)
    assert best == pytest.approx(links.HOST_STAGED_FRACTION[0] * 64 * 8)
    assert worst == pytest.approx(links.HOST_STAGED_FRACTION[1] * 64 * 8)
    healthy = _link(ND_H100, "healthy")
    assert 0.1 < worst / healthy < best / healthy < 0.4  # NVIDIA/nccl#1412's off/on 0.36 sits in this range
    p4d = estimate.fabric_of_type("p4d.24xlarge")
    assert _link(p4d, "no-gdr") == pytest.approx(_link(p4d, "healthy") * links.STAGING_EFFICIENCY)


def test_a_grace_part_stages_over_nvlink_c2c_and_keeps_most_of_its_fabric() -> None:
    gh200 = estimate.custom_fabric("GH200", 1, 4, 200, "ib", True, None)
    assert _link(gh200, "no-gdr") == pytest.approx(_link(gh200, "healthy") * links.STAGING_EFFICIENCY)


def test_gpudirect_off_costs_fsdp_more_than_3d() -> None:
    off = penalty.FabricState.gpudirect_off()
    fsdp = penalty.estimate(ND_H100, 16, off, FSDP)
    three_d = penalty.estimate(ND_H100, 16, off, penalty.WORKLOADS["llm-175b-3d"])
    assert fsdp.high > three_d.high >= 1.0


# ---------------------------------------------------------------------------------------------- sockets


def test_a_pod_network_gets_one_socket_per_channel_where_the_vm_gets_nccls_autodetected_sixteen() -> None:
    """On AWS a VM's ENA gets 2 threads x 8 sockets per channel and fills the line; a pod's veth has no PCI vendor
    for NCCL to read, so one socket per channel, and the streams bound it."""
    vm, pod = _link(P5, "tcp"), _link(P5, "tcp,pod")
    assert vm == pytest.approx(100 * links.TCP_LINE_EFFICIENCY * (9001 - 40) / 9001 / 8)
    assert pod == pytest.approx(links.SOCKET_CHANNELS * links.STREAM_GBPS[0] * (9001 - 40) / 9001 / 8)
    assert pod < vm
    # more sockets per connection bring the pod back to the line
    assert _link(P5, "tcp,pod,sockets=16") == pytest.approx(vm)


def test_an_overlay_and_a_small_mtu_cost_their_headers() -> None:
    pod, overlay = _link(P5, "tcp,pod"), _link(P5, "tcp,overlay")
    assert overlay == pytest.approx(pod * (9001 - 40 - 50) / (9001 - 40))
    share = ((1500 - 40) / 1500) / ((9001 - 40) / 9001)  # a smaller frame carries a larger share of headers
    assert _link(P5, "tcp,pod,mtu=1500") == pytest.approx(pod * share)


def test_outside_one_placement_group_aws_halves_each_flow() -> None:
    """AWS: 5 Gbps per flow outside a cluster placement group, 10 inside (penalty-model row 31)."""
    pod = _link(P5, "tcp,pod")
    assert _link(P5, "tcp,pod,cross-zone") == pytest.approx(pod * declaration("aws").sockets.loose_flow_share)
    assert _link(P5, "tcp,pod,no-placement") == pytest.approx(pod * declaration("aws").sockets.loose_flow_share)
    assert _link(ND_H100, "tcp,cross-zone") == pytest.approx(_link(ND_H100, "tcp"))  # no such cap documented


@pytest.mark.parametrize("text", ["tcp", "tcp,pod", "tcp,overlay", "tcp,sockets=1", "tcp,cross-zone"])
def test_every_socket_state_has_both_ends_and_the_worst_is_no_better(text: str) -> None:
    for fabric in (P5, ND_H100, A4, estimate.fabric_of_type("a3-megagpu-8g")):
        best, worst = _link(fabric, text), _link(fabric, text, worst=True)
        assert 0 < worst <= best * (1 + 1e-12)
        assert best / worst <= links.STREAM_GBPS[0] / links.STREAM_GBPS[1] * (1 + 1e-9)


def test_sockets_per_connection_follow_nccls_own_count() -> None:
    """ncclNetSocketGetNsockNthread (NVIDIA/nccl@5067397 src/transport/net_socket.cc): what the job sets wins,
    the rest comes from the NIC's PCI vendor (AWS ENA 2 x 8, gVNIC 4 x 1, else no helper thread: the control
    socket alone), threads capped at 16 and sockets at 64 (NSOCKS_PERTHREAD then 64 / threads)."""
    assert links.nccl_sockets(None, None, "aws", NetworkPath.HOST) == 16
    assert links.nccl_sockets(None, None, "gcp", NetworkPath.HOST) == 4
    assert links.nccl_sockets(None, None, "azure", NetworkPath.HOST) == 1
    assert links.nccl_sockets(None, None, "aws", NetworkPath.POD) == 1  # a veth has no vendor file
    assert links.nccl_sockets(None, 4, "gcp", NetworkPath.HOST) == 16  # GCP's 4 threads, the job's 4 each
    assert links.nccl_sockets(4, None, "azure", NetworkPath.HOST) == 4
    assert links.nccl_sockets(0, None, "aws", NetworkPath.HOST) == 1  # no helper thread: the control socket
    assert links.nccl_sockets(20, 1, None, NetworkPath.HOST) == 16  # MAX_THREADS
    assert links.nccl_sockets(16, 8, None, NetworkPath.HOST) == 64  # MAX_SOCKETS: 8 per thread becomes 4


def test_a_jobs_socket_settings_and_channels_price_its_fallback() -> None:
    """A workload that sets NCCL_SOCKET_NTHREADS / NCCL_NSOCKS_PERTHREAD, or whose log shows more channels, opens
    more TCP streams: on ND H100 v5 (Azure's Mellanox VF: NCCL's default is one socket) the fallback costs less,
    and never more than the line allows (the --state words sockets=N, channels=N say the same)."""
    doc = {"parameters": "8B", "layers": 32, "hidden": 4096, "seq_len": 8192, "tokens_per_gpu": 8192,
           "parallelism": "ddp"}  # fmt: skip
    plain = workload_from_mapping(doc, "w.yaml")
    tuned = workload_from_mapping(doc | {"nccl_socket_nthreads": 4, "nccl_nsocks_perthread": 4}, "w.yaml")
    wide = workload_from_mapping(doc | {"nccl_channels": 16}, "w.yaml")
    assert (tuned.socket_threads, tuned.sockets_per_thread, wide.socket_channels) == (4, 4, 16)
    tcp = penalty.FabricState.tcp_fallback()
    base, more, chans = (penalty.estimate(ND_H100, 2, tcp, w) for w in (plain, tuned, wide))
    assert base.degraded_best_gbytes_per_s is not None and more.degraded_best_gbytes_per_s is not None
    # two streams of the default reach 33 Gbps; sixteen fill the 80 Gbps line (x 0.66, less 40 of 1500 bytes)
    line = (ND_H100.ethernet_gbps or 0.0) * links.TCP_LINE_EFFICIENCY * (1500 - 40) / 1500 / 8
    assert base.degraded_best_gbytes_per_s == pytest.approx(2 * links.STREAM_GBPS[0] * (1500 - 40) / 1500 / 8)
    assert more.degraded_best_gbytes_per_s == pytest.approx(line)
    assert more.low < base.low and chans.low < base.low
    assert _link(ND_H100, "tcp,sockets=16") == pytest.approx(more.degraded_best_gbytes_per_s)
    assert _link(ND_H100, "tcp,channels=16") > _link(ND_H100, "tcp")
    with pytest.raises(FabricCheckError, match="nccl_channels -1 is not a whole number"):
        workload_from_mapping(doc | {"nccl_channels": -1}, "w.yaml")


# ---------------------------------------------------------------------------------------------- RoCE at scale


def test_roce_beyond_two_nodes_has_an_ecmp_worst_end_and_infiniband_does_not() -> None:
    size = 16 * 2**30
    for nodes, share in ((2, 1.0), (8, links.ECMP_WORST), (64, links.ECMP_WORST)):
        best = penalty.collective_bandwidth(A4, nodes, "all_reduce", size)
        worst = penalty.collective_bandwidth(A4, nodes, "all_reduce", size, worst=True)
        assert best is not None and worst is not None
        assert worst[1] == pytest.approx(best[1] * share, rel=0.02)
    ib = [penalty.collective_bandwidth(ND_H100, 8, "all_reduce", size, worst=w) for w in (False, True)]
    assert ib[0] == ib[1]
    # a healthy RoCE cluster still costs nothing: ECMP is the fabric's, not a state's
    assert penalty.estimate(A4, 64, penalty.FabricState.healthy(), FSDP).high == 1.0


# ---------------------------------------------------------------------------------------------- steps


def test_one_node_is_priced_and_scaling_ratios_form() -> None:
    one = penalty.estimate(P5, 1, penalty.FabricState.healthy(), FSDP)
    assert not one.estimated and one.reason == penalty.ONE_NODE and one.healthy_step_seconds
    scaled = penalty.scaling(P5, 32, penalty.FabricState.healthy(), FSDP)
    assert scaled is not None and scaled.one_node_step_seconds == pytest.approx(one.healthy_step_seconds)
    assert 0.5 < scaled.low <= scaled.high <= 1.0
    tcp = penalty.scaling(P5, 32, penalty.FabricState.tcp_fallback(), FSDP)
    assert tcp is not None and tcp.high < scaled.low  # a fallback scales far worse
    # strong scaling (a global batch): per-GPU throughput, not step time
    strong = penalty.scaling(P5, 16, penalty.FabricState.healthy(), penalty.WORKLOADS["llm-175b-3d"])
    assert strong is not None and 0.3 < strong.low <= 1.0


def test_without_the_sm_overhead_healthy_scaling_would_be_perfect() -> None:
    saved = steps.COMM_SM_OVERHEAD
    try:
        steps.COMM_SM_OVERHEAD = 0.0
        perfect = penalty.scaling(P5, 16, penalty.FabricState.healthy(), penalty.WORKLOADS["llm-8b-fsdp"])
    finally:
        steps.COMM_SM_OVERHEAD = saved
    real = penalty.scaling(P5, 16, penalty.FabricState.healthy(), penalty.WORKLOADS["llm-8b-fsdp"])
    assert perfect is not None and real is not None and real.low < perfect.low <= 1.0


def test_tensor_parallelism_across_nodes_puts_activation_all_reduces_on_the_critical_path() -> None:
    inside = replace(penalty.WORKLOADS["llm-175b-3d"], tensor_parallel=8)
    across = replace(inside, tensor_parallel=16)
    accel = catalog.accelerator("H100")
    assert accel is not None
    link = penalty.Link(50e9, 30e-6)
    a = penalty.step_times(inside, 16, 8, accel, link)
    b = penalty.step_times(across, 16, 8, accel, link)
    assert b.critical > a.critical + 1.0
    # and TCP between the halves of a layer costs far more than TCP between pipeline stages
    tcp = penalty.FabricState.tcp_fallback()
    assert penalty.estimate(P5, 16, tcp, across).high > penalty.estimate(P5, 16, tcp, inside).high


def test_a_measured_step_time_replaces_the_mfu_prior() -> None:
    """A team that measured 30 s per step on 4 healthy nodes gets a healthy step of 30 s there, and the same
    communication on top of its own compute elsewhere."""
    mine = replace(FSDP, measured_step_seconds=30.0, measured_nodes=4)
    assert penalty.estimate(P5, 4, penalty.FabricState.healthy(), mine).healthy_step_seconds == pytest.approx(30.0)
    prior = penalty.estimate(P5, 4, penalty.FabricState.tcp_fallback(), FSDP)
    slower_compute = penalty.estimate(P5, 4, penalty.FabricState.tcp_fallback(), mine)
    assert slower_compute.high < prior.high  # more compute hides more and dilutes the fallback


# ---------------------------------------------------------------------------------------------- ranges


@pytest.mark.parametrize("workload", sorted(penalty.WORKLOADS))
def test_a_named_workloads_range_is_at_most_three_fold(workload: str) -> None:
    """Ranges narrow enough to act on (issue 22): high / low <= 3 for every named workload, fabric and state."""
    types = ("p5.48xlarge", "p4d.24xlarge", "Standard_ND96isr_H100_v5", "a3-megagpu-8g", "a3-highgpu-8g",
             "a4-highgpu-8g", "a4x-highgpu-4g", "g6e.48xlarge", "trn1.32xlarge", "Standard_ND96isr_MI300X_v5",
             "a2-highgpu-8g")  # fmt: skip
    states = (
        "tcp",
        "tcp,pod",
        "tcp,overlay",
        "tcp,cross-zone",
        "nics=1",
        "no-gdr",
        "no-placement",
        "healthy,domains=4",
    )
    for name in types:
        fabric = estimate.fabric_of_type(name)
        for nodes in (2, 8, 64):
            for text in states:
                if text.startswith("nics") and fabric.nics < 1:
                    continue
                s = penalty.estimate(fabric, nodes, estimate.state_named(text, fabric), penalty.WORKLOADS[workload])
                if s.estimated and not s.cannot_run:
                    assert s.high / s.low <= 3.0, (name, nodes, text, s.low, s.high)


# ---------------------------------------------------------------------------------------------- estimate


def test_the_state_grammar_and_its_errors() -> None:
    state = estimate.state_named("tcp,pod,sockets=4,mtu=1500,cross-zone", P5)
    assert (state.fabric, state.socket_path, state.sockets, state.mtu, state.cross_zone) == (
        "tcp-fallback",
        "pod",
        4,
        1500,
        True,
    )
    assert estimate.state_named("nics=4,no-placement", P5) == penalty.FabricState.partial(4, loose_placement=True)
    assert estimate.state_named("healthy,domains=3", A4).nvlink_domains == 3
    for bad, needle in (("tcp,pods", "'pods' is not a modifier"), ("pod", "--state pod: use"), ("tcp,mtu=0", "mtu")):
        with pytest.raises(FabricCheckError, match=needle):
            estimate.state_named(bad, P5)


def test_the_bandwidth_table_prints_both_ends_in_text_and_json() -> None:
    report = estimate.run(P5, 4, "tcp,pod", FSDP)
    big = next(c for c in report.collectives if c.op == "all_reduce" and c.bytes == 16 * 2**30)
    assert big.busbw_worst_gbytes_per_s < big.busbw_gbytes_per_s
    text = estimate.render_text(report)
    assert f"{big.busbw_worst_gbytes_per_s:.2f}–{big.busbw_gbytes_per_s:.2f}" in text
    assert "scaling efficiency from one node" in text and report.scaling_efficiency is not None
    doc = json.loads(report.model_dump_json())
    assert {"algbw_worst_gbytes_per_s", "busbw_worst_gbytes_per_s"} <= set(doc["collectives"][0])
    one = estimate.run(P5, 1, "healthy", FSDP)
    assert one.one_node_step_seconds and one.healthy_step_seconds == pytest.approx(one.one_node_step_seconds)


def test_a_workload_file_with_layout_batch_and_measured_step() -> None:
    w = workload_from_mapping(
        {
            "parameters": "70B",
            "layers": 80,
            "hidden": 8192,
            "seq_len": 4096,
            "global_batch": 512,
            "parallelism": "3d",
            "tensor_parallel": 16,
            "pipeline_parallel": 4,
            "bucket_mb": 50,
            "step_seconds": 12.5,
            "step_nodes": 16,
        },
        "w.yaml",
    )
    assert (w.global_batch, w.tensor_parallel, w.bucket_bytes) == (512, 16, 50e6)
    assert (w.measured_step_seconds, w.measured_nodes) == (12.5, 16)
    with pytest.raises(FabricCheckError, match="step_nodes is missing"):
        workload_from_mapping({"parameters": 1e9, "layers": 1, "hidden": 1, "seq_len": 1, "tokens_per_gpu": 1,
                               "step_seconds": 3}, "w.yaml")  # fmt: skip


# ---------------------------------------------------------------------------------------------- --calibrate

# An all_reduce table in nccl-tests' own shape (hosts of 8 H100s named on Rank lines), at a busbw half
# what 8 x 400 Gbps InfiniBand reaches healthy: the baseline calibrates to about half the fabric's efficiency.
CALIBRATION_RUN = """# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 8589934592 step: 2(factor) warmup iters: 5
#
# Using devices
{ranks}
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
  1073741824     268435456     float     sum      -1    {t1}   {a1}   {b1}      0    {t1}   {a1}   {b1}      0
  8589934592    2147483648     float     sum      -1    {t8}   {a8}   {b8}      0    {t8}   {a8}   {b8}      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : {b8}
"""


def _calibration_file(tmp_path: Path, fabric: penalty.FabricDescription, nodes: int, share: float) -> Path:
    lines = []
    for n in range(nodes):
        for g in range(fabric.gpus_per_node):
            rank = n * fabric.gpus_per_node + g
            lines.append(f"#  Rank {rank:2d} Group  0 Pid {1000 + rank} on node{n} device  {g} [0x{g:02x}] NVIDIA H100")
    cells: dict[str, str] = {}
    for key, size in (("1", 2**30), ("8", 2**33)):
        found = penalty.collective_bandwidth(replace(fabric, calibration=share), nodes, "all_reduce", size)
        assert found is not None
        algbw, busbw = found
        cells |= {f"t{key}": f"{size / algbw / 1e3:.1f}", f"a{key}": f"{algbw:.2f}", f"b{key}": f"{busbw:.2f}"}
    path = tmp_path / "nccl.txt"
    path.write_text(CALIBRATION_RUN.format(ranks="\n".join(lines), **cells))
    return path


def test_calibrate_recovers_the_fabric_a_run_measured(tmp_path: Path) -> None:
    path = _calibration_file(tmp_path, ND_H100, 4, 0.5)
    fabric, said = calibrate.calibrated(ND_H100, path)
    assert fabric.calibration == pytest.approx(0.5, rel=0.02)
    assert len(said) == 1 and "all_reduce on 4 nodes" in said[0]
    healthy = penalty.collective_bandwidth(fabric, 4, "all_reduce", 2**33)
    published = penalty.collective_bandwidth(ND_H100, 4, "all_reduce", 2**33)
    assert healthy is not None and published is not None
    assert healthy[1] == pytest.approx(published[1] * 0.5, rel=0.02)
    # a recalibrated fabric prices its degraded states from its own baseline, its TCP fallback from the NIC
    assert _link(fabric, "nics=4") == pytest.approx(_link(ND_H100, "nics=4") * 0.5, rel=0.02)
    assert _link(fabric, "tcp") == pytest.approx(_link(ND_H100, "tcp"))


def test_calibrate_on_the_command_line_and_its_refusals(tmp_path: Path) -> None:
    path = _calibration_file(tmp_path, ND_H100, 4, 0.5)
    out = run("estimate", "--instance-type", "Standard_ND96isr_H100_v5", "--nodes", "8", "--state", "nics=4",
              "--calibrate", str(path), "-f", "json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["fabric"]["calibration"] == pytest.approx(0.5, rel=0.02)
    assert any(n.startswith("calibration run: all_reduce on 4 nodes") for n in doc["notes"])
    one_node = tmp_path / "one.txt"
    one_node.write_text(path.read_text().replace("node1", "node0").replace("node2", "node0").replace("node3", "node0"))
    line = one_clean_line(
        run("estimate", "--instance-type", "Standard_ND96isr_H100_v5", "--nodes", "8", "--calibrate", str(one_node))
    )
    assert "no multi-node all_reduce" in line and str(one_node) in line


def test_a_custom_tcp_fabric_recalibrates_its_socket_path(tmp_path: Path) -> None:
    tcp_only = estimate.custom_fabric("A100", 8, 0, 0, "tcp", False, 100)
    assert tcp_only.fabric is FabricKind.NONE
    scaled = replace(tcp_only, calibration=2.0)
    assert _link(scaled, "healthy") == pytest.approx(2 * _link(tcp_only, "healthy"))


def test_a_kubernetes_node_group_falls_back_over_its_pod_network(tmp_path: Path) -> None:
    """A scanned EKS node group without EFA is priced as `estimate --state tcp,pod` (its pods' veth gets one socket
    per channel); the same nodes in an Auto Scaling group of VMs as `--state tcp`."""
    from ec2_shapes import answers, instance, write

    from fabriccheck import flow
    from fabriccheck.providers.aws.dump import load_dump

    eks = {"eks:cluster-name": "train", "eks:nodegroup-name": "gpu"}
    for name, tags, state in (("eks", eks, "tcp,pod"), ("asg", None, "tcp")):
        nodes = [instance(f"i-0{n:016x}", "p5.48xlarge", efa=0, tags=tags) for n in range(4)]
        report = flow.run(load_dump(write(tmp_path / name, answers(nodes))), flow.Options())
        [cluster] = report.clusters
        expected = estimate.run(P5, 4, state, FSDP).slowdown
        assert cluster.penalty.slowdown is not None and expected is not None
        assert (cluster.penalty.slowdown.low, cluster.penalty.slowdown.high) == pytest.approx(
            (expected.low, expected.high)
        ), name


@pytest.mark.parametrize("path", ["pod", "overlay"])
def test_a_type_without_a_fabric_on_a_pod_network_is_healthy_there(path: str) -> None:
    """A GKE node pool of a2-highgpu-8g (no fabric) trains over its pod network: that is its healthy state, and
    nothing is lost until a finding names something."""
    a2 = estimate.fabric_of_type("a2-highgpu-8g")
    s = penalty.estimate(a2, 4, estimate.state_named(f"healthy,{path}", a2), FSDP)
    assert s.estimated and (s.low, s.high) == (1.0, 1.0)
    assert s.healthy_gbytes_per_s == pytest.approx(_link(a2, f"healthy,{path}"))


# ---------------------------------------------------------------------------------------------- FSDP wrapping


def _fsdp(wrap: str, micro_batches: int = 1) -> penalty.Workload:
    return workload_from_mapping(
        {"parameters": "70B", "layers": 80, "hidden": 8192, "seq_len": 8192, "tokens_per_gpu": 16384,
         "parallelism": "fsdp", "fsdp_wrap": wrap, "micro_batches": micro_batches},
        "w.yaml",
    )  # fmt: skip


def test_fsdp_wrapping_prices_the_traffic_each_wrap_moves() -> None:
    """Per layer (the default): the parameters gathered for forward and again for backward, gradients
    reduce-scattered, most of it behind compute. One unit around the model (fully_shard's root keeps its
    parameters from forward into backward, docs.pytorch.org distributed.fsdp.fully_shard): one gather and one
    reduce-scatter, less traffic but none of it hidden. Hybrid (HSDP): gathers over NVLink, only a gradient
    all-reduce crosses the nodes, so a TCP fallback costs it less than full sharding."""
    accel = catalog.accelerator("H100")
    assert accel is not None
    link = penalty.Link(364 * penalty.GB, 30e-6)
    layer, model, hybrid = (steps.step_times(_fsdp(w), 8, 8, accel, link) for w in ("layer", "model", "hybrid"))
    assert model.communication < layer.communication and model.phases == ()
    assert hybrid.communication > 0
    # over a slow link (4 GB/s, a TCP fallback's order) hybrid moves less: its gathers ride NVLink
    slow = penalty.Link(4 * penalty.GB, 200e-6)
    slow_layer, slow_hybrid = (steps.step_times(_fsdp(w), 8, 8, accel, slow) for w in ("layer", "hybrid"))
    assert slow_hybrid.communication < slow_layer.communication / 1.3
    # nothing hides the whole-model gather and reduce-scatter: both are on the critical path
    intra = penalty.intra_bandwidth(accel)
    size = 70e9 * 2
    whole = penalty.collective_seconds("all_gather", size, 8, 8, link, intra) + penalty.collective_seconds(
        "reduce_scatter", size, 8, 8, link, intra
    )
    assert model.critical == pytest.approx(whole) and layer.critical < whole / 10
    tcp = penalty.FabricState.tcp_fallback()
    costs = {w: penalty.estimate(ND_H100, 8, tcp, _fsdp(w)) for w in ("layer", "hybrid")}
    assert costs["hybrid"].low < costs["layer"].low and costs["hybrid"].high < costs["layer"].high
    assert _fsdp("hybrid").fsdp_wrap == "hybrid" and _fsdp("layer") == replace(_fsdp("hybrid"), fsdp_wrap="layer")
    with pytest.raises(FabricCheckError, match="fsdp_wrap 'blocks': choose from layer, model, hybrid"):
        _fsdp("blocks")


def test_the_layout_and_its_defaults_are_named_in_every_report() -> None:
    report = estimate.run(P5, 4, "tcp", FSDP)
    assert "layout: FSDP wrapping each layer (the default; fsdp_wrap: layer, model or hybrid)" in report.notes
    ddp = estimate.run(P5, 4, "tcp", penalty.WORKLOADS["llm-8b-ddp"])
    assert (
        "layout: DDP, 25 MB gradient buckets (the default) reduced during the backward pass"
        " (ddp_overlap: true, the default)" in ddp.notes
    )
    assert penalty.layout_line(_fsdp("model")) == "FSDP wrapping the whole model in one unit (fsdp_wrap: model)"


def test_ddp_without_overlap_exposes_every_bucket_and_says_so() -> None:
    """ddp_overlap (workload file): PyTorch DDP reduces each bucket during the backward pass as its gradients are
    ready (docs.pytorch.org/docs/stable/notes/ddp.html, the default); DeepSpeed ZeRO-1 reduces after it
    (microsoft/DeepSpeed#1246: its backward hooks trigger no reduction), so every bucket but none hidden is paid."""
    fields = {"parameters": "8B", "layers": 32, "hidden": 4096, "seq_len": 8192, "tokens_per_gpu": 8192,
              "parallelism": "zero1"}  # fmt: skip
    overlapped = workload_from_mapping(fields, "w.yaml")
    after = workload_from_mapping({**fields, "ddp_overlap": False}, "w.yaml")
    assert overlapped.ddp_overlap and not after.ddp_overlap
    link = links.Link(50e9, 30e-6)
    h100 = catalog.accelerator("H100")
    assert h100 is not None
    with_overlap = steps.step_times(overlapped, 4, 8, h100, link)
    without = steps.step_times(after, 4, 8, h100, link)
    assert without.step(overlap=True) == pytest.approx(without.compute + without.communication)
    # what hid behind the backward pass cost COMM_SM_OVERHEAD of itself; without overlap it costs all of itself
    [phase] = with_overlap.phases
    hidden = min(phase.comm, phase.window)
    assert hidden > 0
    assert without.step(overlap=True) - with_overlap.step(overlap=True) == pytest.approx(
        (1 - steps.COMM_SM_OVERHEAD) * hidden
    )
    assert penalty.layout_line(after).endswith("reduced after the backward pass ends (ddp_overlap: false)")
    with pytest.raises(FabricCheckError, match=r"w\.yaml: ddp_overlap must be true or false, not 'no'"):
        workload_from_mapping({**fields, "ddp_overlap": "no"}, "w.yaml")
