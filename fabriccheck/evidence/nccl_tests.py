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
The collective comes from the file when it names it (a `*_perf` command echoed before the table, the header
newer nccl-tests print, `# Collective test starting: all_reduce_perf`), else from the columns when they allow
one collective only (`infer_op`), else it is unknown (the caller's `op` overrides all of these).
Bandwidth cells that are not numbers a run can measure (`nan`, `inf`, negative) mark their row as suspect.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fabriccheck.errors import unreadable

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

# Launcher prefixes: Open MPI --tag-output "[1,0]<stdout>:", "[0]" rank tags, "host: " (pdsh), Slurm's task
# labels (`srun -l` / `--label`: "0: ", " 3: ", "12: "). Applied before the line is read, so a row keeps its
# columns; a row itself never holds a colon.
_MPI_TAG = re.compile(r"\[\d+,\d+\]<std(?:out|err)>:")
_RANK_TAG = re.compile(r"\[\d+\]")
_HOST_PREFIX = re.compile(r"^\s*([\w.\-]+):\s+(?=[#\d])")
_HEADER = re.compile(r"#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)")
_DEVICE = re.compile(
    r"#\s+Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*?)\s*$"
)
_COMMAND = re.compile(r"\b(" + "|".join(OPS) + r")_perf(?:_mpi)?\b")
# Cells that no run measures: not-a-number, infinite (nccl-tests prints C's "nan" and "inf"), negative.
_NOT_MEASURED = ("nan", "inf", "-inf", "+inf", "infinity", "-nan")
_OUT_OF_BOUNDS = re.compile(r"#\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)", re.IGNORECASE)
_AVG = re.compile(r"#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)")
_COLUMNS = re.compile(r"#\s+size\s+count\s+type")
_UNMARKED_SUMMARY = ("Avg bus bandwidth", "Out of bounds values")


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
    suspect: str | None = None  # why a bandwidth or time cell is not a measurement ("busbw nan")

    @property
    def best_busbw(self) -> float | None:
        values = [v for v in (self.busbw, self.in_busbw) if v is not None]
        return max(values) if values else None


@dataclass
class Run:
    """One nccl-tests run: a header, its devices, its rows."""

    op: str | None = None
    op_source: str | None = None  # "command" (named in the file), "columns"
    op_candidates: tuple[str, ...] = ()  # what the columns allow when they do not settle it
    label: str | None = None  # the Slurm task label or launcher host that printed it
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
    return value if math.isfinite(value) else None


def _not_measured(text: str) -> bool:
    """A cell that parses as a number no run measures: nan, inf, a float that overflows, a negative value."""
    if text.lower() in _NOT_MEASURED:
        return True
    try:
        value = float(text)
    except ValueError:
        return False
    return not math.isfinite(value) or value < 0


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def labelled(line: str) -> tuple[str | None, str]:
    """(the launcher label, the line without launcher prefixes or rank tags)."""
    line = _MPI_TAG.sub(" ", line)
    if "[" in line:
        line = _RANK_TAG.sub(" ", line)
    label = None
    if ":" in line[:80] and not line.lstrip().startswith("#"):
        prefix = _HOST_PREFIX.match(line)
        if prefix is not None:
            label, line = prefix.group(1), line[prefix.end() :]
    return label, line.strip()


def clean(line: str) -> str:
    """The line without launcher prefixes or rank tags."""
    return labelled(line)[1]


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
    measured = (0, 1, 2, 4, 5, 6)
    if all(numbers[i] is None for i in measured) and not any(_not_measured(tail[i]) for i in measured):
        return None
    names = ("time", "algbw", "busbw", "", "time", "algbw", "busbw")
    bad = next((f"{names[i]} {tail[i]}" for i in (2, 6, 1, 5, 0, 4) if _not_measured(tail[i])), None)

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
        suspect=bad,
    )


# busbw / algbw as nccl-tests computes it (doc/PERFORMANCE.md): 2(n-1)/n for all_reduce, (n-1)/n for
# reduce_scatter, all_gather and alltoall, 1 for broadcast, reduce and sendrecv. Read on the row with the largest
# algbw; cells print two decimals, so a ratio counts only where algbw is at least 1 GB/s, with 5% of slack.
RATIO_MIN_ALGBW = 1.0
RATIO_SLACK = 0.05


def _bus_ratio(run: Run) -> float | None:
    rows = [r for r in run.rows if r.algbw is not None and r.busbw is not None and r.algbw >= RATIO_MIN_ALGBW]
    if not rows:
        return None
    row = max(rows, key=lambda r: r.algbw or 0.0)
    return (row.busbw or 0.0) / (row.algbw or 1.0)


def infer_op(run: Run) -> tuple[str | None, tuple[str, ...]]:
    """(the collective, or None) and the collectives the columns allow, from the largest row: size against count x
    type (n for the ops that split a buffer over n ranks, 1 otherwise), root, redop, and busbw/algbw. Where the
    columns allow more than one (all_gather and alltoall print alike; so do sendrecv and a 2-rank all_reduce),
    the op is None and the candidates say which."""
    if not run.rows:
        return None, ()
    row = max(run.rows, key=lambda r: r.size)
    element = TYPE_BYTES.get(row.dtype, 0)
    if not element or not row.count:
        return None, ()
    split = row.size / (row.count * element)
    whole = abs(split - 1) < 1e-6
    reducing = row.redop not in (None, "none")
    if row.root is not None and row.root >= 0:
        if whole:
            return ("reduce" if reducing else "broadcast"), ()
        return None, ("gather", "scatter")
    if not whole:
        return ("reduce_scatter", ()) if reducing else (None, ("all_gather", "alltoall"))
    if not reducing:
        return "sendrecv", ()
    ratio = _bus_ratio(run)
    if ratio is not None and ratio > 1 + RATIO_SLACK:
        return "all_reduce", ()  # only all_reduce's factor exceeds 1
    if ratio is not None and run.ranks > 2 and abs(ratio - 1) <= RATIO_SLACK:
        return "sendrecv", ()  # all_reduce on 3+ ranks reads 4/3 or more
    return None, ("all_reduce", "sendrecv")


class _Tables:
    """Runs being read, one current run per launcher label: with `srun -l` or pdsh each task's lines carry its
    label, and a build without MPI prints one table per task, interleaved."""

    def __init__(self) -> None:
        self.runs: list[Run] = []
        self.current: dict[str | None, Run] = {}
        self.pending: str | None = None  # a collective named before its run's first line
        self.commands: list[str] = []
        self.partial = 0

    def run(self, label: str | None) -> Run:
        found = self.current.get(label)
        if found is None:
            found = self.current[label] = Run(label=label)
            self.runs.append(found)
            if self.pending is not None:
                found.op, found.op_source, self.pending = self.pending, "command", None
        return found

    def end(self, label: str | None) -> None:
        self.current.pop(label, None)

    def named(self, op: str, label: str | None) -> None:
        """A collective named in the file: the current run's, if it has no rows yet, else the next run's."""
        self.commands.append(op)
        found = self.current.get(label)
        if found is not None and not found.rows and found.op is None:
            found.op, found.op_source = op, "command"
        else:
            self.pending = op

    def header(self, line: str, label: str | None) -> None:
        header = _HEADER.search(line)
        if header:
            found = self.current.get(label)
            if found is not None and (found.rows or found.devices):
                self.end(label)  # a new run (or another process's header, merged below)
            r = self.run(label)
            r.threads, r.gpus_per_thread = int(header.group(1)), int(header.group(2))
            return
        device = _DEVICE.search(line)
        if device:
            r = self.run(label)
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
            return
        command = _COMMAND.search(line)
        if command:  # "# Collective test starting: all_reduce_perf"
            self.named(command.group(1), label)
            return
        if _COLUMNS.search(line):
            r = self.run(label)
            if "#wrong" in line:
                r.error_column = "#wrong"
            elif re.search(r"\berror\b", line):
                r.error_column = "error"
            return
        bounds = _OUT_OF_BOUNDS.search(line)
        if bounds:
            r = self.run(label)
            r.out_of_bounds = int(bounds.group(1))
            r.out_of_bounds_failed = bounds.group(2).upper() == "FAILED"
            return
        avg = _AVG.search(line)
        if avg:
            r = self.run(label)
            r.avg_busbw = _number(avg.group(1))
            r.complete = True
            self.end(label)  # the run is over; a following table is another run

    def line(self, raw: str) -> None:
        label, line = labelled(raw)
        if not line:
            return
        if line.startswith("#"):
            self.header(line, label)
            return
        if line.lstrip().startswith(_UNMARKED_SUMMARY):
            # dstack prints the summary without nccl-tests' `#` (dstackai/dstack mkdocs/docs/examples/clusters/gcp.md:
            # "    Avg bus bandwidth    : 165.789"): the same lines.
            self.header("# " + line.lstrip(), label)
            return
        command = _COMMAND.search(line)
        if command and not line[:1].isdigit():
            self.named(command.group(1), label)
            return
        tokens = line.split()
        if not tokens or not tokens[0].isdigit():
            return
        row = parse_row(tokens)
        if row is None:
            if len(tokens) < 11 and _int(tokens[0]) is not None and len(tokens) >= 2:
                self.partial += 1  # a row cut short
            return
        self.run(label).rows.append(row)


def parse_lines(lines: Iterable[str], path: str = "<input>") -> Parsed:
    tables = _Tables()
    count = 0
    last = ""
    for raw in lines:
        count += 1
        last = raw
        tables.line(raw)
    runs = tables.runs
    for r in runs:
        if r.op is None and len(set(tables.commands)) == 1:
            r.op, r.op_source = tables.commands[0], "command"  # one collective named anywhere in the file
        if r.op is None:
            inferred, r.op_candidates = infer_op(r)
            if inferred:
                r.op, r.op_source = inferred, "columns"
    ends_mid_line = bool(last) and not last.endswith("\n")
    return Parsed(path, runs, count, tables.partial, ends_mid_line, tables.commands)


def _read_lines(path: Path) -> Iterator[str]:
    with path.open("r", encoding="utf-8", errors="replace", newline="") as handle:
        yield from handle


def parse_file(path: Path) -> Parsed:
    """Parse `path`; no table and no header in it is an error naming the file (exit 2)."""
    try:
        parsed = parse_lines(_read_lines(path), str(path))
    except OSError as exc:
        raise unreadable(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not any(r.rows for r in parsed.runs):
        what = "a header but no result rows" if parsed.runs else "no nccl-tests header or result rows"
        raise unreadable(
            f"{path}: {what} (expected the table all_reduce_perf and friends print: size count type ... busbw)"
        )
    return parsed
