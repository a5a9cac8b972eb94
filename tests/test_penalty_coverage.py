"""Every accelerator a user rents gets an estimate or one line saying what is missing and how to give it, and the
priors a figure rests on are printed beside it (issue 32, items 4-6)."""

from __future__ import annotations

import pytest

from fabriccheck import catalog, estimate, penalty

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


def test_a_type_without_an_ethernet_figure_says_which_option_gives_it() -> None:
    report = estimate.run(estimate.fabric_of_type("a3-edgegpu-8g"), 4, "tcp", FSDP)
    assert report.estimated is False
    assert report.reason is not None and report.reason.endswith(
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
