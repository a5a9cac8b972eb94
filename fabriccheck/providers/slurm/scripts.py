"""Job scripts (`fabriccheck slurm --scripts PATH ...`): what an sbatch script asks for and what it sets.

sbatch reads `#SBATCH` lines up to the first command (sbatch(1): "before any executable commands"); of them, the
partition (`-p` / `--partition`) and the node count (`-N` / `--nodes`, the minimum of a range) are kept. Every
NCCL_* and FI_* assignment the script makes is kept, however it is made (`export NAME=VALUE`, `NAME=VALUE srun ...`,
`srun --export=ALL,NAME=VALUE`, `mpirun -x NAME=VALUE`): each of them reaches the ranks it launches.
A script is judged as a spec node (origin template) of the partition it names, shaped as that partition's nodes.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from fabriccheck.errors import FabricCheckError
from fabriccheck.textfiles import read_text

_SBATCH = re.compile(r"^#SBATCH\s+(.*)$")
_OPTION = re.compile(r"(?:^|\s)(-p|--partition|-N|--nodes)(?:=|\s+)(\S+)")
_SETTING = re.compile(r"^(?:export\s+)?((?:NCCL|FI)_[A-Z0-9_]+)=(.*)$")


@dataclass(frozen=True)
class JobScript:
    path: str
    partition: str | None
    nodes: int
    env: tuple[tuple[str, str], ...]


def _nodes(value: str, path: Path) -> int:
    low = value.split("-", 1)[0].split(":", 1)[0]
    if not low.isdigit():
        raise FabricCheckError(f"{path}: #SBATCH --nodes={value} is not a node count")
    return int(low)


def _words(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=True)
    except ValueError:  # an unclosed quote: the words as written
        return line.split()


def settings(line: str) -> list[tuple[str, str]]:
    """The NCCL_* / FI_* settings a command line makes: `export NAME=VALUE`, `NAME=VALUE command`, `mpirun -x
    NAME=VALUE`, and srun's `--export=ALL,NAME=VALUE,...`, whose commas separate settings (srun(1)); elsewhere a
    comma is part of the value (NCCL_SOCKET_IFNAME=eth0,eth1)."""
    found = []
    for word in _words(line):
        items = word.removeprefix("--export=").split(",") if word.startswith("--export=") else [word]
        for item in items:
            match = _SETTING.match(item)
            if match:
                found.append((match.group(1), match.group(2)))
    return found


def read_script(path: Path) -> JobScript:
    text = read_text(path, "job script")
    partition: str | None = None
    nodes, env = 1, list[tuple[str, str]]()
    in_header = True
    for raw in text.splitlines():
        line = raw.strip()
        header = _SBATCH.match(line)
        if in_header and header:
            for flag, value in _OPTION.findall(header.group(1)):
                if flag in ("-p", "--partition"):
                    partition = value.split(",", 1)[0]
                else:
                    nodes = _nodes(value, path)
            continue
        if not line or line.startswith("#"):
            continue
        in_header = False
        env.extend(settings(line))
    if not text.startswith("#!") and not any(_SBATCH.match(line.strip()) for line in text.splitlines()):
        raise FabricCheckError(f"{path}: not a job script (no #! line and no #SBATCH line)")
    return JobScript(str(path), partition, nodes, tuple(env))
