"""A streaming parser of nccl-tests output (all_reduce_perf, all_gather_perf, reduce_scatter_perf,
alltoall_perf, broadcast_perf, reduce_perf, sendrecv_perf, ...).

What it accepts, from the formats nccl-tests has printed over its versions (fixtures: tests/fixtures/nccl/):
- the header `# nThread 1 nGpus 1 minBytes 8 maxBytes ...` and device lines, with and without `Group`
  (`#  Rank  0 Group  0 Pid 6899 on host device  0 [0000:04:00] NVIDIA H100 80GB HBM3`, older
  `#   Rank  0 Pid 1320 on host device  0 [0x00] Tesla V100-SXM2-16GB`);
- rows `size count type [redop] [root] time algbw busbw #wrong|error time algbw busbw #wrong|error`: the
  `root` column (nccl-tests 2.13+), no `root` (older), an empty `redop` cell (old alltoall), `N/A` cells;
- `# Out of bounds values : N OK|FAILED` and `# Avg bus bandwidth : X`;
- launcher prefixes (Open MPI `--tag-output` `[1,0]<stdout>:`, `[0]` rank tags glued inside a row, `host: `
  from pdsh/srun --label), several runs in one file (each `# nThread` header starts one), interleaved
  output of several processes, and files cut short (a partial last row is skipped and noted).
The collective is not printed by nccl-tests; it comes from a `*_perf` command echoed in the file, else from
the columns (count vs size, redop, root), else `op` given by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fabriccheck.errors import FabricCheckError

OPS = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "alltoall",
    "broadcast",
    "reduce",
    "sendrecv",
    "gather",
    "scatter",
    "hypercube",
)
TYPE_BYTES = {
    "int8": 1, "uint8": 1, "char": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "f8e4m3": 1, "f8e5m2": 1,
    "half": 2, "float16": 2, "bfloat16": 2, "bf16": 2, "fp16": 2,
    "int32": 4, "uint32": 4, "int": 4, "float": 4, "float32": 4,
    "int64": 8, "uint64": 8, "double": 8, "float64": 8,
}  # fmt: skip
REDOPS = {"sum", "prod", "max", "min", "avg", "mulsum", "none", "premulsum"}

# Launcher prefixes: Open MPI --tag-output "[1,0]<stdout>:", "[0]" rank tags, "host: " (pdsh, srun --label
# "0: "). Applied before the line is read, so a row keeps its columns.
_MPI_TAG = re.compile(r"\[\d+,\d+\]<std(?:out|err)>:")
_RANK_TAG = re.compile(r"\[\d+\]")
_HOST_PREFIX = re.compile(r"^\s*[\w.\-]+:\s+(?=[#\d])")
_HEADER = re.compile(r"#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)")
_DEVICE = re.compile(
    r"#\s+Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*?)\s*$"
)
_COMMAND = re.compile(r"\b(" + "|".join(OPS) + r")_perf(?:_mpi)?\b")
_OUT_OF_BOUNDS = re.compile(r"#\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)", re.IGNORECASE)
_AVG = re.compile(r"#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)")
_COLUMNS = re.compile(r"#\s+size\s+count\s+type")


@dataclass
class Device:
    rank: int
    host: str
    pid: int
    device: int
    bus_id: str
    name: str


@dataclass
class Row:
    size: int
    count: int
    dtype: str
    redop: str | None
    root: int | None
    time_us: float | None
    algbw: float | None
    busbw: float | None
    wrong: int | None  # None: the column is a max error (old versions) or N/A
    in_time_us: float | None
    in_algbw: float | None
    in_busbw: float | None
    in_wrong: int | None

    @property
    def best_busbw(self) -> float | None:
        values = [v for v in (self.busbw, self.in_busbw) if v is not None]
        return max(values) if values else None

    @property
    def best_algbw(self) -> float | None:
        values = [v for v in (self.algbw, self.in_algbw) if v is not None]
        return max(values) if values else None


@dataclass
class Run:
    """One nccl-tests run: a header, its devices, its rows."""

    op: str | None = None
    op_source: str | None = None  # "command", "columns", "option"
    threads: int | None = None
    gpus_per_thread: int | None = None
    devices: list[Device] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    error_column: str | None = None  # "#wrong" or "error"
    out_of_bounds: int | None = None
    out_of_bounds_failed: bool = False
    avg_busbw: float | None = None
    complete: bool = False  # the average line was seen
    duplicate_rank_zero: bool = False  # several processes each print Rank 0: a non-MPI build under mpirun

    @property
    def hosts(self) -> list[str]:
        return list(dict.fromkeys(d.host for d in self.devices))

    @property
    def ranks(self) -> int:
        return (
            len({(d.rank, d.host, d.pid) for d in self.devices})
            if self.duplicate_rank_zero
            else len({d.rank for d in self.devices})
        )

    @property
    def wrong(self) -> int:
        return sum((r.wrong or 0) + (r.in_wrong or 0) for r in self.rows)


@dataclass
class Parsed:
    path: str
    runs: list[Run]
    lines: int
    skipped_partial: int  # rows cut short (truncated file or excerpt)
    ends_mid_line: bool
    command_ops: list[str]


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def clean(line: str) -> str:
    """The line without launcher prefixes or rank tags."""
    line = _MPI_TAG.sub(" ", line)
    if "[" in line:
        line = _RANK_TAG.sub(" ", line)
    if line[:1] not in ("#", " ", "") and not line[:1].isdigit():
        line = _HOST_PREFIX.sub("", line)
    return line.strip()


def parse_row(tokens: list[str]) -> Row | None:
    """A table row, or None when the tokens are not one (a cut row, a line of other output)."""
    if len(tokens) < 11 or len(tokens) > 13:
        return None
    size, count = _int(tokens[0]), _int(tokens[1])
    if size is None or count is None or tokens[2].lower() not in TYPE_BYTES:
        return None
    middle, tail = tokens[3:-8], tokens[-8:]
    redop: str | None = None
    root: int | None = None
    for cell in middle:
        if cell.lower() in REDOPS:
            redop = cell.lower()
        elif _int(cell) is not None:
            root = _int(cell)
        else:
            return None
    numbers = [_number(t) for t in tail]
    if all(n is None for n in numbers[:3]) and all(n is None for n in numbers[4:7]):
        return None

    def wrong(cell: str) -> int | None:
        return int(cell) if cell.isdigit() else None

    return Row(
        size=size,
        count=count,
        dtype=tokens[2].lower(),
        redop=redop,
        root=root,
        time_us=numbers[0],
        algbw=numbers[1],
        busbw=numbers[2],
        wrong=wrong(tail[3]),
        in_time_us=numbers[4],
        in_algbw=numbers[5],
        in_busbw=numbers[6],
        in_wrong=wrong(tail[7]),
    )


def infer_op(run: Run) -> str | None:
    """The collective from the columns: count x type size against the size column, redop and root."""
    if not run.rows:
        return None
    row = max(run.rows, key=lambda r: r.size)
    element = TYPE_BYTES.get(row.dtype, 0)
    if not element or not row.count:
        return None
    ratio = row.size / (row.count * element)
    per_rank = abs(ratio - 1) < 1e-6
    reducing = row.redop not in (None, "none")
    rooted = row.root is not None and row.root >= 0
    if rooted:
        return "reduce" if reducing else "broadcast"
    if per_rank:
        return "all_reduce" if reducing else ("sendrecv" if row.redop == "none" else None)
    # size = count x type x ranks: reduce_scatter (reducing) or all_gather / alltoall (same busbw factor)
    return "reduce_scatter" if reducing else "all_gather"


def parse_lines(lines: Iterable[str], path: str = "<input>") -> Parsed:
    runs: list[Run] = []
    current: Run | None = None
    commands: list[str] = []
    partial = 0
    count = 0
    last = ""

    def run() -> Run:
        nonlocal current
        if current is None:
            current = Run()
            runs.append(current)
        return current

    for raw in lines:
        count += 1
        last = raw
        line = clean(raw)
        if not line:
            continue
        if line.startswith("#"):
            header = _HEADER.search(line)
            if header:
                if current is not None and (current.rows or current.devices):
                    current = None  # a new run (or another process's header, merged below)
                r = run()
                r.threads, r.gpus_per_thread = int(header.group(1)), int(header.group(2))
                continue
            device = _DEVICE.search(line)
            if device:
                r = run()
                dev = Device(
                    rank=int(device.group(1)),
                    host=device.group(4),
                    pid=int(device.group(3)),
                    device=int(device.group(5)),
                    bus_id=device.group(6),
                    name=device.group(7),
                )
                if any(d.rank == dev.rank and (d.host, d.pid) != (dev.host, dev.pid) for d in r.devices):
                    r.duplicate_rank_zero = True
                r.devices.append(dev)
                continue
            if _COLUMNS.search(line):
                r = run()
                if "#wrong" in line:
                    r.error_column = "#wrong"
                elif re.search(r"\berror\b", line):
                    r.error_column = "error"
                continue
            bounds = _OUT_OF_BOUNDS.search(line)
            if bounds:
                r = run()
                r.out_of_bounds = int(bounds.group(1))
                r.out_of_bounds_failed = bounds.group(2).upper() == "FAILED"
                continue
            avg = _AVG.search(line)
            if avg:
                r = run()
                r.avg_busbw = _number(avg.group(1))
                r.complete = True
                current = None  # the run is over; a following table is another run
            continue
        command = _COMMAND.search(line)
        if command and not line[:1].isdigit():
            commands.append(command.group(1))
            continue
        tokens = line.split()
        if not tokens or not tokens[0].isdigit():
            continue
        row = parse_row(tokens)
        if row is None:
            if len(tokens) < 11 and _int(tokens[0]) is not None and len(tokens) >= 2:
                partial += 1  # a row cut short
            continue
        r = run()
        r.rows.append(row)
    ends_mid_line = bool(last) and not last.endswith("\n")
    for index, r in enumerate(runs):
        if index < len(commands):
            r.op, r.op_source = commands[index], "command"
        elif len(commands) == 1:
            r.op, r.op_source = commands[0], "command"
        else:
            inferred = infer_op(r)
            if inferred:
                r.op, r.op_source = inferred, "columns"
    return Parsed(path, runs, count, partial, ends_mid_line, commands)


def _read_lines(path: Path) -> Iterator[str]:
    with path.open("r", encoding="utf-8", errors="replace", newline="") as handle:
        yield from handle


def parse_file(path: Path) -> Parsed:
    """Parse `path`; no table and no header in it is an error naming the file (exit 2)."""
    try:
        parsed = parse_lines(_read_lines(path), str(path))
    except OSError as exc:
        raise FabricCheckError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not any(r.rows for r in parsed.runs):
        what = "a header but no result rows" if parsed.runs else "no nccl-tests header or result rows"
        raise FabricCheckError(
            f"{path}: {what} (expected the table all_reduce_perf and friends print: size count type ... busbw)"
        )
    return parsed
