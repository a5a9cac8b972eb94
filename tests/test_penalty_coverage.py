"""Every accelerator a user rents gets an estimate or one line saying what is missing and how to give it, and the
priors a figure rests on are printed beside it (issue 32, items 4-6)."""

from __future__ import annotations

import json
from pathlib import Path

import cli_run
import pytest

from fabriccheck import catalog, estimate, losses, penalty
from fabriccheck.inventory import Inventory
from fabriccheck.reports import wording
from fabriccheck.resources.k8s import PodPart

ROOT = Path(__file__).resolve().parents[1]

FSDP = penalty.WORKLOADS["llm-70b-fsdp"]


def test_nd_gb300_v6_is_four_400_gbps_infiniband_ports() -> None:
    """Microsoft's node baseline for Standard_ND128isr_GB300_v6 lists IB ports 4 x 400 Gb/s (ib0-ib3), NDR 400
    across racks (stored 'sku-performance-baseline' file, catalog source AZ-NDGB300-BASELINE); the size summary's
    "800 Gb/s per GPU" stays in the row's `uncertain`."""
    fabric = estimate.fabric_of_type("Standard_ND128isr_GB300_v6")
    assert (fabric.nics, fabric.gbps_per_nic, fabric.fabric_gbps) == (4, 400, 1600)
    cap = catalog.resolve("Standard_ND128isr_GB300_v6", {})
    assert cap is not None and "IB ports 4 x 400 Gb/s" in str(cap.source) and "800 Gb/s" in str(cap.source)


@pytest.mark.parametrize("size", ["Standard_ND128isr_GB300_v6", "Standard_ND128isr_NDR_GB200_v6"])
def test_tcp_fallback_on_nd_gb_v6_is_priced_over_its_160_gbps_ethernet(size: str) -> None:
    """MicrosoftDocs/azure-compute-docs nd-gb200-v6-series-specs.md and nd-gb300-v6-series-specs.md: 1 NIC,
    160 Gb/s Ethernet. Two NVL72 domains' worth of nodes over sockets: a slowdown, not 'not estimated'."""
    fabric = estimate.fabric_of_type(size)
    assert fabric.ethernet_gbps == 160
    found = penalty.estimate(fabric, 36, penalty.FabricState.tcp_fallback(), FSDP)
    assert found.estimated and found.low > 1.0


def test_a4x_max_falls_back_over_the_host_nics_its_total_leaves() -> None:
    """Google Cloud "Networking and GPU machines": A4X Max has 3,600 Gbps in all, 3,200 of them on its 8 MRDMA
    functions; the other 400 are the host NICs NCCL's sockets fall back to (it was 'not estimated')."""
    fabric = estimate.fabric_of_type("a4x-maxgpu-4g-metal")
    assert fabric.ethernet_gbps == 400 and fabric.fabric_gbps == 3200
    found = penalty.estimate(fabric, 36, penalty.FabricState.tcp_fallback(), FSDP)
    assert found.estimated and found.low > 1.0


def test_a_node_whose_gpus_cannot_fill_its_nics_says_so() -> None:
    """p6-b300 (16 x 400 Gbps EFA for 8 B300) and A4X Max (8 x 400 Gbps for 4 GB300) are priced at what their GPUs'
    channels drive (links.GPU_NET_GBYTES, NVIDIA/aicr#1413), and the report says so; p5 (400 Gbps a GPU) is not."""
    for size in ("p6-b300.48xlarge", "a4x-maxgpu-4g-metal"):
        notes = estimate.run(estimate.fabric_of_type(size), 4, "healthy", FSDP).notes
        assert any("channels drive about 55.3 GB/s" in n for n in notes), size
    notes = estimate.run(estimate.fabric_of_type("p5.48xlarge"), 4, "healthy", FSDP).notes
    assert not any("channels drive" in n for n in notes)


def test_the_nic_cap_says_where_it_is_an_extrapolation() -> None:
    """GPU_NET_GBYTES was fitted on one GB300 RoCE run (NVIDIA/aicr#1413): on A4X Max (GB300, RoCE) it is that
    figure; on p6-b300 (B300 over EFA) and p6e-gb200 (GB200 over EFA) the note says it is extrapolated."""
    [fitted] = [n for n in estimate.run(estimate.fabric_of_type("a4x-maxgpu-4g-metal"), 4, "healthy", FSDP).notes
                if "channels drive" in n]  # fmt: skip
    assert "extrapolated" not in fitted
    for size, gpu in (("p6-b300.48xlarge", "B300"), ("p6e-gb200.36xlarge", "GB200")):
        [note] = [n for n in estimate.run(estimate.fabric_of_type(size), 4, "healthy", FSDP).notes if "channels" in n]
        assert f"extrapolated to {gpu} over efa, not measured" in note, size


@pytest.mark.parametrize("size", ["a3-edgegpu-8g", "p6e-gb200.36xlarge"])
def test_a_type_without_an_ethernet_figure_says_which_option_gives_it(size: str) -> None:
    """GCP's GPU machine types page gives A3 Edge 400-600 Gbps over 5 NICs with no host-NIC share, and no stored AWS
    source gives p6e-gb200's ENA share: TCP fallback names the type, the one figure, and the option."""
    report = estimate.run(estimate.fabric_of_type(size), 4, "tcp", FSDP)
    assert report.estimated is False
    assert report.reason == (
        f"no ordinary-Ethernet bandwidth figure for {size} (no source gives its host NIC's share): "
        "give it with --ethernet-gbps GBPS (the NIC NCCL's sockets would use)"
    )
    given = estimate.run(estimate.with_overrides(estimate.fabric_of_type("a3-edgegpu-8g"), 200, False), 4, "tcp", FSDP)
    assert given.estimated and given.slowdown is not None and given.slowdown.low > 1.0


def test_the_mfu_prior_is_printed_beside_the_figure() -> None:
    """H100's 45% MFU prior (penalty-model C.3, from published runs) and GB300's assumed 40% are named in the
    report's notes; a measured step time replaces the prior and the note says so."""
    h100 = estimate.run(estimate.fabric_of_type("p5.48xlarge"), 4, "tcp", FSDP)
    assert any("MFU prior of 45% of H100's 989 TFLOPS" in n and "from published runs" in n for n in h100.notes)
    gb300 = estimate.run(estimate.fabric_of_type("Standard_ND128isr_GB300_v6"), 36, "tcp", FSDP)
    assert any("MFU prior of 40% of GB300" in n and "assumed" in n for n in gb300.notes)
    measured = estimate.run(estimate.fabric_of_type("p5.48xlarge"), 4, "tcp", FSDP.__class__(**{
        **FSDP.__dict__, "measured_step_seconds": 20.0, "measured_nodes": 4}))  # fmt: skip
    assert any("compute from the measured step: 20 s on 4 healthy nodes" in n for n in measured.notes)


def test_a_cluster_whose_only_cost_is_a_possible_finding_is_not_called_fully_used() -> None:
    """A possible finding (say AZ140: a custom image may lack the InfiniBand drivers) prices a TCP fallback apart;
    the certain line then says no certain finding costs anything, never that the fabric is fully used."""
    fabric = estimate.fabric_of_type("Standard_ND96isr_H100_v5")
    healthy = penalty.penalty_of(penalty.estimate(fabric, 4, penalty.FabricState.healthy(), FSDP), FSDP, 32, None)
    assert wording.penalty_line(healthy) == "no slowdown (the fabric is fully used)"
    tcp = penalty.penalty_of(penalty.estimate(fabric, 4, penalty.FabricState.tcp_fallback(), FSDP), FSDP, 32, None)
    healthy.possible = tcp
    line = wording.penalty_line(healthy)
    assert "fully used" not in line and line.startswith("no slowdown from the findings certain to hold")
    said = wording.possible_line(healthy, ["AZ140"])
    assert said is not None and said.startswith("if AZ140 holds (possible, not counted above):")


def _paid(gpus: int, lost: float) -> penalty.Penalty:
    return penalty.Penalty(
        workload="w",
        estimated=True,
        gpu_hours_per_day=gpus * 24.0,
        lost_gpu_hours_per_day=penalty.Range(low=lost, high=lost),
    )


def test_a_machine_named_by_several_clusters_is_paid_for_once_and_lost_once() -> None:
    """A cloud node group of 4 machines (32 GPUs) and two Kubernetes workloads on 2 of them each: 32 GPUs are paid
    for, not 64; the loss on a machine is the most any of its clusters says, not their sum; a cluster sharing no
    machine adds its own."""
    group = frozenset({"aws/i-1", "aws/i-2", "aws/i-3", "aws/i-4"})
    left, right = frozenset({"aws/i-1", "aws/i-2"}), frozenset({"aws/i-3", "aws/i-4"})
    alone = frozenset({"gcp/vm-9"})
    clusters = [(32, _paid(32, 0.0)), (16, _paid(16, 300.0)), (16, _paid(16, 100.0)), (8, _paid(8, 50.0))]
    found = losses.totals(clusters, [group, left, right, alone])
    assert found["gpu_hours_per_day"] == (32 + 8) * 24
    assert found["lost_gpu_hours_per_day"] == penalty.Range(low=450.0, high=450.0)  # 300 + 100 on disjoint halves
    # two reports of the same machines (a cloud group and a workload on all of it) lose what the larger says
    same = losses.totals([(32, _paid(32, 200.0)), (32, _paid(32, 500.0))], [group, group])
    assert same["gpu_hours_per_day"] == 32 * 24 and same["lost_gpu_hours_per_day"] == penalty.Range(low=500, high=500)
    # without machine names every cluster is its own (the old sum)
    assert losses.totals(clusters)["gpu_hours_per_day"] == 72 * 24


def test_a_nccl_tests_job_keeps_its_slowdown_but_loses_no_day_of_training() -> None:
    """The demo's EKS nccl-tests MPIJob runs without EFA: its steps are as slow as a TCP fallback makes them, but a
    test runs minutes, so no GPU-hours a day are counted lost; the training job beside it is priced as before."""
    from fabriccheck import flow
    from fabriccheck.cli import demo_inventory

    report = flow.run(demo_inventory(), flow.Options())
    by_id = {c.id.rsplit("/", 2)[-2] + "/" + c.id.rsplit("/", 1)[-1]: c for c in report.clusters if c.provider == "k8s"}
    tests = by_id["MPIJob/nccl-tests"].penalty
    assert tests.slowdown is not None and tests.slowdown.low > 2
    assert tests.lost_gpu_hours_per_day == penalty.Range(low=0.0, high=0.0)
    assert tests.reason is not None and tests.reason.startswith("a test job (nccl-test)")
    # the compute prior closes the line, after the reason: put between the slowdown and "a test job" it read as if
    # the prior were the test job
    line = wording.penalty_line(tests)
    assert " slower steps: a test job (nccl-test): " in line
    assert line.endswith(
        "its findings hold for the training jobs on these nodes; compute at H100's MFU prior of 45% (published)"
    )
    training = by_id["PyTorchJob/llama3-1-8b-fsdp"].penalty
    assert training.reason is None or "test job" not in training.reason


def _with_socket_env(inventory: Inventory, env: tuple[tuple[str, str], ...], field: str = "launcher_env") -> Inventory:
    """The inventory with `env` in the pods of the EKS nccl-tests MPIJob (a job that sets NCCL's socket threads):
    passed by its launcher's mpirun -x (`launcher_env`, what its ranks see), or in the workers' own `env`."""
    nodes = []
    for node in inventory.nodes:
        pod = node.shape.part(PodPart)
        if pod is not None and pod.workload.endswith("MPIJob/nccl-tests") and pod.cloud == "aws":
            parts = node.shape.with_part(pod.model_copy(update={field: getattr(pod, field) + env}))
            shape = node.shape.model_copy(update={"extensions": parts})
            node = node.model_copy(update={"shape": shape})
        nodes.append(node)
    return inventory.model_copy(update={"nodes": nodes})


def test_a_pods_nccl_socket_settings_price_its_fallback() -> None:
    """NCCL_SOCKET_NTHREADS=4 and NCCL_NSOCKS_PERTHREAD=4 as the MPIJob's launcher passes them to its ranks
    (mpirun -x; what NCCL reads, net_socket.cc): 16 sockets per channel instead of the veth's one, so the pods' TCP
    fallback is faster and costs less. The same settings in the workers' own env do not reach ranks mpirun starts
    over ssh, so they change nothing (the rules read ranks' settings the same way: PodPart.rank_env)."""
    from fabriccheck import flow
    from fabriccheck.providers.k8s.dump import load_dump

    plain = load_dump(ROOT / "fixtures" / "demo" / "k8s")
    sixteen = (("NCCL_SOCKET_NTHREADS", "4"), ("NCCL_NSOCKS_PERTHREAD", "4"))
    tuned = _with_socket_env(plain, sixteen)

    def slowdown(inventory: Inventory) -> penalty.Penalty:
        report = flow.run(inventory, flow.Options())
        return next(c.penalty for c in report.clusters if c.id.startswith("k8s:eks-train") and "nccl-tests" in c.id)

    before, after = slowdown(plain), slowdown(tuned)
    workers_only = slowdown(_with_socket_env(plain, sixteen, "env"))
    assert workers_only.slowdown == before.slowdown
    assert before.slowdown is not None and after.slowdown is not None
    assert after.slowdown.low < before.slowdown.low
    assert before.inter_node_gbytes_per_s is not None and after.inter_node_gbytes_per_s is not None
    # two pod streams (33 Gbps) become 32, which fill the 100 Gbps ENA line (66 Gbps of it, penalty.links)
    assert after.inter_node_gbytes_per_s["degraded_best"] == pytest.approx(
        2 * before.inter_node_gbytes_per_s["degraded_best"]
    )


def test_a_workload_that_cannot_fit_the_gpus_is_switched_or_refused_and_says_so() -> None:
    """Weights, gradients and Adam states take 16 bytes a parameter (ZeRO, SC20, section 3.1), sharded as the
    layout shards them. 70B under FSDP on two g5.12xlarge (8 x 24 GB A10G) needs 144 GB a GPU (a layer gathered):
    the preset is priced as the largest named dense FSDP workload that fits (8B: 16 GB), and the report says so;
    the user's own 70B is refused with one line; 175B in 3D on 2 x p5 (16 H100) cannot hold its 2.8 TB either."""
    from fabriccheck.penalty import memory

    g5 = estimate.fabric_of_type("g5.12xlarge")
    report = estimate.run(g5, 2, "tcp", FSDP)
    assert report.estimated and report.workload == "llm-70b-fsdp"
    assert report.reason is not None and report.reason.startswith(
        "llm-70b-fsdp does not fit 2 x 4 A10G (24 GB each): its weights, gradients and Adam states need 144 GB a GPU:"
        " priced as llm-8b-fsdp"
    )
    found = penalty.estimate(g5, 2, penalty.FabricState.tcp_fallback(), FSDP)
    assert found.workload == "llm-8b-fsdp"
    assert penalty.penalty_of(found, FSDP, 8).workload == "llm-8b-fsdp"
    own = FSDP.__class__(**{**FSDP.__dict__, "name": "ours"})
    refused = penalty.estimate(g5, 2, penalty.FabricState.tcp_fallback(), own)
    assert not refused.estimated and refused.reason is not None and "shard it more" in refused.reason
    h100 = catalog.accelerator("H100")
    assert h100 is not None
    assert memory.state_bytes_per_gpu(penalty.WORKLOADS["llm-175b-3d"], 2, 8) == pytest.approx(175e9)
    assert not memory.fits(penalty.WORKLOADS["llm-175b-3d"], 2, 8, h100)
    assert memory.fits(penalty.WORKLOADS["llm-175b-3d"], 8, 8, h100)  # 8 stages: 2.8 TB / 64 = 44 GB
    # four single-A10G nodes hold only the 1B preset (ZeRO-2 form: 2.5 + 4.3 GB)
    four = estimate.fabric_of_type("g5.xlarge")
    small = penalty.estimate(four, 4, penalty.FabricState.tcp_fallback(), penalty.WORKLOADS["llm-8b-ddp"])
    assert small.workload == "llm-1b-ddp"


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("p4d", "p4d.24xlarge"),
        ("P4D.24XLARGE", "p4d.24xlarge"),
        ("ND H100 v5", "Standard_ND96isr_H100_v5"),
        ("standard_nd96isr_h100_v5", "Standard_ND96isr_H100_v5"),
        ("ND GB200 v6", "Standard_ND128isr_NDR_GB200_v6"),
        ("a3 mega", "a3-megagpu-8g"),
    ],
)
def test_instance_type_names_people_type_resolve(typed: str, meant: str) -> None:
    assert estimate.type_named(typed) == meant
    assert estimate.fabric_of_type(typed).instance_type == meant


def test_an_ambiguous_or_unknown_name_gets_a_did_you_mean_or_what_to_give() -> None:
    from fabriccheck.errors import FabricCheckError

    with pytest.raises(FabricCheckError, match=r"--instance-type p5: not in the catalog; did you mean p5\.48xlarge"):
        estimate.fabric_of_type("p5")
    with pytest.raises(FabricCheckError, match=r"describe the fabric instead \(--gpu, --gpus-per-node"):
        estimate.fabric_of_type("xyz-9")
    assert estimate.accelerator_named("gb200") == "GB200" and estimate.accelerator_named("NVIDIA H100 80GB") == "H100"
    with pytest.raises(FabricCheckError, match=r"--gpu H10: unknown accelerator \(known: .*\); did you mean H100"):
        estimate.accelerator_named("H10")
    with pytest.raises(FabricCheckError, match=r"--gpu TPU v5p: a Cloud TPU, .* so a TPU is not estimated"):
        estimate.accelerator_named("TPU v5p")  # refused for what it is since main's 13babab, not as "unknown"


def test_a_small_multi_gpu_vm_is_priced_on_its_one_nic() -> None:
    """a3-highgpu-4g: 4 H100 on one physical NIC of 100 Gbps (Google Cloud, GPU machine types, 'Maximum network
    bandwidth'): a 70B job does not fit, so it is priced as the largest preset that does, over that NIC; a given
    --ethernet-gbps still replaces the figure."""
    report = estimate.run(estimate.fabric_of_type("a3-highgpu-4g"), 2, "tcp", FSDP)
    assert report.estimated and report.fabric.ethernet_gbps == 100
    assert report.reason is not None and "priced as llm-8b-fsdp" in report.reason
    assert report.scaling_efficiency is not None and report.scaling_efficiency.high < 1.0  # 8B from one node, not 70B
    slower = estimate.run(estimate.with_overrides(estimate.fabric_of_type("a3-highgpu-4g"), 25, False), 2, "tcp", FSDP)
    assert slower.healthy_step_seconds is not None and report.healthy_step_seconds is not None
    assert slower.healthy_step_seconds > report.healthy_step_seconds  # the given figure is the one priced


def test_g4dn_has_no_gpudirect_rdma_and_is_priced_host_staged() -> None:
    """2 x g4dn.metal over EFA: every channel 'via NET/AWS Libfabric/0' with no /GDRDMA (aws-ia/terraform-aws-eks-
    blueprints@a56919d examples/eks-efa/README.md, samples nccl/nccl-log/g4dnmetal-2node-ofi-efa-mpi.log). The
    catalog says so, and the healthy link is the host-staged path, not the NIC's 0.83 x 100 Gbps."""
    for size in ("g4dn.8xlarge", "g4dn.12xlarge", "g4dn.16xlarge", "g4dn.metal"):
        assert estimate.fabric_of_type(size).gpudirect_rdma is False
    metal = estimate.fabric_of_type("g4dn.metal")
    healthy = penalty.healthy_link(metal)
    assert healthy is not None and healthy.bandwidth / penalty.GB < 100 / 8 * 0.83 * 0.9


def test_an_a10_is_priced_with_its_a10g_figures() -> None:
    """AWS's A10G is the A10 (NVIDIA A10 datasheet: 24 GB GDDR6, PCIe Gen4, the BF16 peak accelerators.yaml cites
    for A10G): `--gpu A10` and an Azure NVadsA10 device name resolve to that row."""
    assert estimate.accelerator_named("A10") == "A10G" and estimate.accelerator_named("NVIDIA A10") == "A10G"


@pytest.mark.parametrize(
    ("typed", "name", "peak", "scale_up", "memory"),
    [
        ("L40", "L40", 181, 32, 48),  # NVIDIA L40 datasheet table (mullet.se): 181.05 BF16 dense, PCIe Gen4, 48 GB
        ("a40", "A40", 149.7, 32, 48),  # hmc-tech.com A40 figures; NVLink bridges pairs only: a ring crosses PCIe Gen4
        ("MI325X", "MI325X", 1307, 448, 256),  # awesomeagents.ai, wiaix.com: MI300X's compute and 7 IF links
        ("Gaudi 3", "Gaudi3", 1835, 525, 128),  # docs.habana.ai Network Configuration: 21 x 200 Gbps scale-up
        ("rtx pro 4500", "RTX PRO 4500", 109.9, 64, 32),  # hmc-tech.com tensor BF16 dense; PCIe 5.0; exxactcorp 32 GB
        # HLS-Gaudi2 datasheet via stas00/ml-engineering@d28da7a network/README.md: 21 x 100 GbE to the other cards
        ("Gaudi 2", "Gaudi2", 432, 262.5, 96),
        # Google Cloud GPU machine types: G4 mixed FP16/32 935.6 with sparsity (its H100/B200/L4 rows are too), halved
        ("RTX PRO 6000", "RTX PRO 6000", 467.8, 64, 96),
        ("nvidia-rtx-pro-6000", "RTX PRO 6000", 467.8, 64, 96),  # GCP's accelerator type name
    ],
)
def test_newly_sourced_accelerators_are_priced(
    typed: str, name: str, peak: float, scale_up: float, memory: float
) -> None:
    """Accelerators that had no row (issue 32 item 5) resolve under the names people type and get a step time, with
    the figure the source beside each value gives."""
    assert estimate.accelerator_named(typed) == name
    accel = catalog.accelerator(name)
    assert accel is not None and not accel.missing
    assert (accel.peak_tflops, accel.nvlink_gbytes, accel.memory_gbytes) == (peak, scale_up, memory)
    fabric = estimate.custom_fabric(name, 8, 4, 200, "roce", True, 100)
    found = penalty.estimate(fabric, 4, penalty.FabricState.tcp_fallback(), penalty.WORKLOADS["llm-8b-fsdp"])
    assert found.estimated and found.low > 1.0


@pytest.mark.parametrize("typed", ["MI355X", "amd instinct mi355x"])
def test_an_accelerator_without_a_published_figure_says_which_and_where_it_goes(typed: str) -> None:
    """MI355X (288 GB HBM3E, theregister.com) is known by name, but no stored source gives its dense BF16 peak or
    Infinity Fabric bandwidth: one line names exactly those two (its MFU prior is the MI300X assumption) and says
    where they go, not guessed."""
    name = estimate.accelerator_named(typed)
    line, _ = estimate.figure_lines(name)
    assert line == (
        "no sourced NVLink/PCIe bandwidth between the devices of a node or dense BF16/FP16 peak throughput for "
        "MI355X: no collectives and no step time (give them, with their source, in fabriccheck/data/accelerators.yaml)"
    )
    report = estimate.run(estimate.custom_fabric(name, 8, 8, 400, "roce", True, 100), 2, "tcp", FSDP)
    assert not report.estimated and report.reason == line


def test_every_priced_slowdown_says_the_mfu_prior_or_measured_step_it_rests_on() -> None:
    """Issue 32 item 6: the assumed MFU is printed beside the figure, in every report (penalty_line serves text,
    Markdown, HTML and JUnit; JSON carries `compute_prior`): published for H100, assumed for L4 (no published
    multi-node MFU), and the workload's own measured step when it gives one."""
    h100 = estimate.fabric_of_type("p5.48xlarge")
    found = penalty.penalty_of(penalty.estimate(h100, 4, penalty.FabricState.tcp_fallback(), FSDP), FSDP, 32, None)
    assert found.compute_prior == "compute at H100's MFU prior of 45% (published)"
    assert wording.penalty_line(found).endswith("; compute at H100's MFU prior of 45% (published)")
    l4 = estimate.fabric_of_type("g6.48xlarge")
    cheap = penalty.penalty_of(penalty.estimate(l4, 4, penalty.FabricState.tcp_fallback(), FSDP), FSDP, 32, None)
    assert cheap.compute_prior is not None and cheap.compute_prior.endswith("(assumed)")
    measured = FSDP.__class__(**{**FSDP.__dict__, "measured_step_seconds": 20.0, "measured_nodes": 4})
    own = penalty.estimate(h100, 4, penalty.FabricState.tcp_fallback(), measured)
    assert own.compute_prior == "compute from the measured step (20 s on 4)"
    healthy = penalty.penalty_of(penalty.estimate(h100, 4, penalty.FabricState.healthy(), FSDP), FSDP, 32, None)
    assert "MFU" not in wording.penalty_line(healthy)  # nothing lost: nothing rests on the prior


@pytest.mark.parametrize(
    ("option", "name"),
    [
        ("--gpu", "TPU v5p"),
        ("--instance-type", "ct5p-hightpu-4t"),
        ("--instance-type", "v5litepod-16"),
        ("--instance-type", "ct6e-standard-4t"),
    ],
)
def test_a_cloud_tpu_is_refused_with_why_not_as_unknown(option: str, name: str) -> None:
    """Issue 32 item 5: a TPU was told to "describe the fabric" (--gpu) it has none of. TPUs talk over ICI inside a
    slice and the data-center network between slices, in XLA's collectives, not NCCL ("Cloud TPU Multislice
    Overview"): one line says so, exit 2, no did-you-mean to a GPU type."""
    from fabriccheck.errors import FabricCheckError

    with pytest.raises(FabricCheckError) as refused:
        estimate.fabric_of_type(name) if option == "--instance-type" else estimate.accelerator_named(name)
    said = str(refused.value)
    assert f"{option} {name}: a Cloud TPU" in said and "not NCCL" in said and "did you mean" not in said
    result = cli_run.run("estimate", option, name, "--nodes", "2")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and f"{option} {name}: a Cloud TPU" in result.stderr


def test_no_gpu_type_or_accelerator_is_taken_for_a_tpu() -> None:
    types = estimate._catalog_types()
    assert len(types) > 100
    for name in [*types, *catalog.accelerators()]:
        estimate.not_nccl("--instance-type", name)  # raises for a TPU name only


def test_the_compute_prior_names_the_peak_as_16_bit_not_bf16_alone() -> None:
    """T4 and V100 have no BF16 (their peaks in data/accelerators.yaml are FP16 tensor figures): the prior line
    calls the peak dense BF16/FP16, true of every accelerator in the table."""
    [line] = estimate.prior_lines("T4", FSDP)
    assert "T4's 65 TFLOPS dense BF16/FP16 (assumed" in line


def test_a_test_job_that_cannot_run_counts_no_day_of_training_lost() -> None:
    """Issue 32 item 6: test jobs are not priced as 24-hour training, whether slow or unable to run. The demo's Slurm
    job 102 (named nccl-tests) spans two zones: it cannot run, and says so, but counts no GPU-hours a day lost (it
    was 384, ranked beside the training clusters); the partition of the same nodes still counts its loss."""
    from fabriccheck import flow
    from fabriccheck.providers.slurm.dump import load_dump as load_slurm

    report = flow.run(
        load_slurm(ROOT / "fixtures" / "demo" / "slurm", cloud_dump=ROOT / "fixtures" / "demo" / "aws"), flow.Options()
    )
    by_id = {c.id: c.penalty for c in report.clusters}
    job = by_id["slurm:llm:slurm:slurm-job/102"]
    assert job.cannot_run and job.lost_gpu_hours_per_day == penalty.Range(low=0.0, high=0.0)
    line = wording.penalty_line(job)
    assert line.startswith("cannot run: peers cannot reach each other") and "a test job (nccl-test)" in line
    assert "loses all" not in line and "every reserved GPU-hour is lost" not in line
    partition = by_id["slurm:llm:slurm:slurm-partition/spot"]
    assert partition.cannot_run and partition.lost_gpu_hours_per_day == penalty.Range(low=384.0, high=384.0)
    assert "loses all 384 of its GPU-hours a day" in wording.penalty_line(partition)


def test_every_scan_report_names_the_nccl_release_it_priced(tmp_path: Path) -> None:
    """The release decides the 2-node algorithm (penalty/releases.py); `estimate` named it, scans did not: the
    JSON workload says it, and the text and Markdown headers, the default named as one, a workload file's as its."""
    result = cli_run.run("demo", "-f", "json")
    said = json.loads(result.stdout)["workload"]["nccl"]
    assert said == "NCCL 2.27 (the default; a workload file's nccl_version sets it)"
    mine = tmp_path / "w.yaml"
    mine.write_text(
        "name: mine\nparameters: 8B\nlayers: 32\nhidden: 4096\nseq_len: 8192\ntokens_per_gpu: 16384\n"
        'parallelism: fsdp\nnccl_version: "2.17"\n'
    )
    text = " ".join(cli_run.run("demo", "--workload", str(mine)).stdout.split("\n\n")[0].split())
    assert "workload assumed: mine (fsdp workload from" in text
    assert "; NCCL 2.17 (the workload file's nccl_version)" in text
    assert "; NCCL 2.27 (the default;" in cli_run.run("demo", "-f", "markdown").stdout
