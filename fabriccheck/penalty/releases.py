"""NCCL releases: which one a job runs, and what each changed in the algorithm NCCL picks (penalty-model A.4)."""

from __future__ import annotations

import re

# What NCCL version a job runs decides which algorithm NCCL picks for a large all_reduce at 2 nodes (the one place
# where the choice moves the bandwidth: a 2-node tree sends each byte across once, a ring twice). The version is an
# input (estimate --nccl-version, a workload file's nccl_version); without one the model assumes this release,
# the one of the newest calibration rows (p5 NCCL 2.27, aws-samples/awsome-distributed-training), named in every
# estimate. Read from the NCCL source of each release (NVIDIA/nccl tags):
NcclVersion = tuple[int, int]  # (major, minor): 2.21.5-1 is (2, 21)
DEFAULT_NCCL_VERSION: NcclVersion = (2, 27)
# Trees first ship in 2.4 (v2.4.2-1 src/init.cu ncclTreeThreshold; v2.3.7-1 has no tree at all): older NCCL runs
# rings for every size and node count.
FIRST_TREE_NCCL: NcclVersion = (2, 4)
# NCCL 2.4 picks trees by a threshold, not a tuning model (v2.4.8-1 src/init.cc, ncclTreeThreshold): on NVLink
# nodes at 2 nodes a tree's bandwidth is counted as 2 x 3/4 of a ring's, above it, so trees run for every size
# wherever their latency (15 us + 4 us a GPU) is under the ring's (6 us a rank): from 3 GPUs a node.
LAST_THRESHOLD_NCCL: NcclVersion = (2, 4)
THRESHOLD_TREE_MIN_GPUS = 3
# NVLSTree, the 2-node tree of NVLS (NVLink SHARP) accelerators, first ships in 2.18 (v2.18.1-1
# src/include/devcomm.h: NCCL_ALGO_NVLS_TREE 5; absent from v2.17.1-1): older NCCL keeps rings there.
FIRST_NVLS_TREE_NCCL: NcclVersion = (2, 18)
_NCCL_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?(?:-\d+)?(?:\+\S*)?$")


def nccl_version_of(text: str) -> NcclVersion | None:
    """An NCCL release as people and logs write it (2.27, 2.21.5, v2.21.5-1, 2.29.2+cuda12.8), or None when the
    text is not one (NCCL 2.x only: there is no other major release)."""
    match = _NCCL_VERSION.match(text.strip())
    if match is None or int(match.group(1)) != 2:
        return None
    return (2, int(match.group(2)))


def version_label(version: NcclVersion) -> str:
    return f"{version[0]}.{version[1]}"
