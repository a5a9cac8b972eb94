"""What an Azure VM size's name alone says about its fabric, for sizes that neither the Resource SKUs answer nor
the shipped catalog holds (a dump made without vm-list-skus.json, a plan, a saved inventory).

Sources (MicrosoftDocs/azure-compute-docs):
- Sizes overview, articles/virtual-machines/sizes/overview.md @02773904e1bc237bc0c6251323af05c0dc7f5c3b, and the
  naming conventions, articles/virtual-machines/vm-naming-conventions.md @eba18e57f661fbd430c3d3b05a28b063be02d35a:
  a size name is [family][vCPUs][-constrained vCPUs][features][_accelerator][_version]; the general-purpose (A, B,
  D, DC), compute-optimized (F, FX), memory-optimized (E, EB, EC, M), storage-optimized (L) and FPGA (NP) families
  carry no GPU, and only the HPC (H, HB, HC, HX) and GPU (N*) families list InfiniBand.
- Set up InfiniBand, articles/virtual-machines/sizes/high-performance-compute/setup-infiniband.md (AZ-SETUP-IB):
  "Selected N-series sizes designated with 'r' are also RDMA-capable", so an N-series size without an 'r' among
  its features has no InfiniBand; the retired compute-intensive A8 and A9 had RDMA before that convention.
- The GPU counts and front-end bandwidth of the N-series sizes without 'r' below come from their size pages:
  gpu-accelerated/ncast4v3-series.md and nvadsa10v5-series.md @2bc777fdc35cfa8d7819d78bc493e8a43af77955,
  nccadsh100v5-series.md @05e75b148472c25ac534a9957b0af264acab5f6b. A GPU size without 'r' that is not listed
  has an unknown GPU count, so its capability stays unknown (not judged) rather than invented.
"""

from __future__ import annotations

import functools
import re

from fabriccheck.model import Capability, FabricKind

AS_OF = "2026-12-01"
NAMING_SOURCE = (
    "Azure VM size naming: a family without GPUs or InfiniBand (azure-compute-docs sizes/overview.md, "
    "vm-naming-conventions.md)"
)
N_SERIES_SOURCE = (
    "Azure VM size naming: an N-series size without 'r' has no InfiniBand (azure-compute-docs setup-infiniband.md); "
    "GPUs and bandwidth from its size page (azure-compute-docs sizes/gpu-accelerated)"
)

# Families (the size name's leading letters, lower-cased) without GPUs or InfiniBand. DS, GS and the older L
# sizes are the previous generations' names of D, G and L.
CPU_FAMILIES = frozenset({"a", "b", "d", "dc", "ds", "e", "eb", "ec", "f", "fs", "fx", "g", "gs", "l", "ls", "m", "np"})
# The retired compute-intensive sizes Standard_A8 to A11 (A8 and A9 with RDMA): never answered from the name.
COMPUTE_INTENSIVE_A = re.compile(r"^(?:standard_|basic_)?a(?:8|9|10|11)$")

# N-series sizes without 'r': (GPUs, GPU name, front-end Gbps). A size with a fraction of one GPU (NV6ads_A10_v5:
# 1/6) counts 0 GPUs: it cannot be an NCCL peer of its own.
N_SERIES_WITHOUT_RDMA: dict[str, tuple[int, str, float]] = {
    "standard_nc4as_t4_v3": (1, "T4", 8.0),
    "standard_nc8as_t4_v3": (1, "T4", 8.0),
    "standard_nc16as_t4_v3": (1, "T4", 8.0),
    "standard_nc64as_t4_v3": (4, "T4", 32.0),
    "standard_nv6ads_a10_v5": (0, "A10", 5.0),
    "standard_nv12ads_a10_v5": (0, "A10", 10.0),
    "standard_nv18ads_a10_v5": (0, "A10", 20.0),
    "standard_nv36ads_a10_v5": (1, "A10", 40.0),
    "standard_nv36adms_a10_v5": (1, "A10", 80.0),
    "standard_nv72ads_a10_v5": (2, "A10", 80.0),
    "standard_ncc40ads_h100_v5": (1, "H100", 40.0),
}

# [Standard_|Basic_] family vCPUs [-constrained] features [_anything]: the parts this module reads (support.py
# parses the rest of the name).
_NAME = re.compile(r"^(?:standard_|basic_)?(?P<family>[a-z]+)\d+(?:-\d+)?(?P<features>[a-z]*)(?:_[a-z0-9_]+)?$")


@functools.cache
def capability_from_name(size: str) -> Capability | None:
    """No fabric (and the GPUs of the size page) for a size whose name says so; None when the name does not."""
    lowered = size.strip().lower()
    match = _NAME.match(lowered)
    if match is None or COMPUTE_INTENSIVE_A.match(lowered):
        return None
    family, features = match["family"], match["features"]
    if family in CPU_FAMILIES and "r" not in features:
        return Capability(
            instance_type=size, provider="azure", fabric=FabricKind.NONE, source=NAMING_SOURCE, as_of=AS_OF
        )
    known = N_SERIES_WITHOUT_RDMA.get(lowered)
    if known is None or "r" in features:
        return None
    gpus, name, gbps = known
    return Capability(
        instance_type=size,
        provider="azure",
        fabric=FabricKind.NONE,
        ethernet_gbps=gbps,
        accelerators=gpus,
        accelerator_name=name,
        source=N_SERIES_SOURCE,
        as_of=AS_OF,
    )
