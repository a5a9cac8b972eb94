"""PCIe ACS as a named state (penalty.PCIE_ACS), the way multi-node NVLink states are named: `--state pcie-acs`,
the `pcie-acs` modifier (`nics=1,pcie-acs`) and the rule effect `pcie-acs` all price the same link. Figures:
links.ACS_SHARE (NVIDIA/nccl-tests#112)."""

from __future__ import annotations

import pytest
from cli_run import one_clean_line, run

from fabriccheck import estimate, penalty
from fabriccheck.model import NetworkPath
from fabriccheck.penalty import links
from fabriccheck.penalty.members import node_state

# 2 x 8 A100 with 4 x 200 Gbps RoCE: the shape of NVIDIA/nccl-tests#112.
A100_ROCE = estimate.custom_fabric("A100", 8, 4, 200, "roce", True, None)
SIZE = 8 * 2**30


def _busbw(state: penalty.FabricState, worst: bool = False, fabric: penalty.FabricDescription = A100_ROCE) -> float:
    found = penalty.collective_bandwidth(fabric, 2, "all_reduce", SIZE, state, worst)
    assert found is not None
    return found[1]


def test_the_named_state_the_modifier_and_the_effect_agree() -> None:
    named = estimate.state_named("pcie-acs", A100_ROCE)
    assert named.name == penalty.PCIE_ACS == "pcie-acs"
    assert node_state({"pcie-acs"}, None, NetworkPath.HOST, 0) == named
    assert estimate.state_named("healthy,pcie-acs", A100_ROCE) == named
    partial = estimate.state_named("nics=1,pcie-acs", A100_ROCE)
    assert partial.pcie_acs and partial.nics_used == 1 and partial.name == "partial"


def test_acs_costs_the_gpudirect_path_its_share_at_each_end() -> None:
    healthy = _busbw(penalty.FabricState.healthy())
    acs = penalty.FabricState.pcie_acs_on()
    assert _busbw(acs) == pytest.approx(healthy * links.ACS_SHARE[0], rel=0.02)
    assert _busbw(acs, worst=True) == pytest.approx(healthy * links.ACS_SHARE[1], rel=0.02)
    assert _busbw(acs, worst=True) < _busbw(acs) < healthy


@pytest.mark.parametrize("base", ["tcp", "no-gdr"])
def test_acs_changes_nothing_where_no_gpu_nic_peer_traffic_runs(base: str) -> None:
    """Over sockets or with GPUDirect RDMA off every byte already goes through host memory: ACS adds nothing."""
    fabric = estimate.custom_fabric("A100", 8, 4, 200, "roce", True, 100)
    plain = estimate.state_named(base, fabric)
    with_acs = estimate.state_named(f"{base},pcie-acs", fabric)
    for worst in (False, True):
        assert _busbw(with_acs, worst, fabric) == _busbw(plain, worst, fabric)


def test_estimate_prices_the_state_and_a_bad_word_is_one_line() -> None:
    ok = run("estimate", "--instance-type", "p4d.24xlarge", "--nodes", "4", "--state", "pcie-acs")
    assert ok.returncode == 0, ok.stderr
    assert "pcie-acs" in ok.stdout
    assert "pcie-acs" in one_clean_line(
        run("estimate", "--instance-type", "p4d.24xlarge", "--nodes", "4", "--state", "acs")
    )
