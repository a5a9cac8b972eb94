"""The GPU types Slurm gives a node: the `type` of its Gres= (`gpu:h100:8`) and gres.conf's `Type=`.

gres.conf(5) (SchedMD/slurm doc/man/man5/gres.conf.5, "Type"): a type is a free name an administrator gives, and
with `AutoDetect=nvml` it must "either exactly match or be a substring of the GPU name reported by slurmd via the
AutoDetect mechanism", that name with "all spaces replaced with underscores" (NVML's `NVIDIA H100 80GB HBM3` is
`nvidia_h100_80gb_hbm3`); "if the system-detected GPU differs from its matching GPU configuration, then the GPU is
omitted from the node with an error". Which GPU a type names is the accelerator table's call (catalog.accelerator:
h100, H100 SXM5, nvidia_h100_80gb_hbm3 are all H100); a name the table does not know (gp100, a site's own `big`)
names no GPU this tool can compare, and is left alone.
"""

from __future__ import annotations

import re
from pathlib import Path

from fabriccheck.errors import FabricCheckError
from fabriccheck.providers.slurm.hostlist import expand
from fabriccheck.textfiles import read_text

_SOCKETS = re.compile(r"\([^)]*\)")  # a Gres= socket binding: gpu:h100:8(S:0-1)


def gpu_types_of(gres: str) -> tuple[str, ...]:
    """The types a Gres= string names for `gpu` (`gpu:h100:8`, `gpu:nvidia_h100_80gb_hbm3:4,gpu:a100:4`); none for
    `gpu:8` or `gpu`."""
    found: list[str] = []
    for part in _SOCKETS.sub("", gres or "").split(","):
        words = part.strip().split(":")
        if words[0] == "gpu" and len(words) == 3 and words[1] and words[1] not in found:
            found.append(words[1])
    return tuple(found)


def gres_types(path: Path) -> dict[str, tuple[str, ...]]:
    """The GPU types gres.conf gives each node (Name=gpu lines with NodeName= and Type=)."""
    found: dict[str, tuple[str, ...]] = {}
    for number, raw in enumerate(read_text(path).splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        pairs = {k.lower(): v for k, v in re.findall(r"(\w+)=(\S+)", line)}
        if pairs.get("name") != "gpu" or "nodename" not in pairs or not pairs.get("type"):
            continue
        if not re.fullmatch(r"[\w.\-]+", pairs["type"]):
            raise FabricCheckError(f"{path}: line {number}: Type={pairs['type']} is not a GPU type name")
        for node in expand(pairs["nodename"], f"{path}: line {number}: NodeName="):
            if pairs["type"] not in found.get(node, ()):
                found[node] = (*found.get(node, ()), pairs["type"])
    return found
