"""A streaming reader of NCCL_DEBUG=INFO logs: what each process (host, pid) used for the network.

Memory does not grow with the file: it reads one line at a time and keeps, per process, counters and a few
short strings (version, networks, NICs, the NCCL_* settings NCCL echoed), never the lines. A 1 GB log reads
in bounded memory (benchmarks/bench_nccl_log.py).

Lines it understands (NCCL 2.4 to 2.2x, aws-ofi-nccl, the HPC-X IBext plugin, Google's FastSocket; fixtures in
tests/fixtures/nccl/ name their public sources):
- `host:pid:tid [dev] NCCL INFO|WARN ...`, also behind launcher prefixes (`[1,0]<stdout>:`, `host: `,
  CloudWatch `| 2025-...-07:00 |`), and `[dev] NCCL INFO ...` with no host (a single process);
- `NCCL version 2.18.3+cuda12.2` (alone on a line in older versions, an INFO line in newer ones);
- `Using network IB|Socket|AWS Libfabric|Libfabric|IBext_v8|gIB|FastSocket|GPUDirectTCPX...`;
- `NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE ...` (also the nested `[0]={[0] mlx5_2:1/RoCE, ...}`),
  `NET/Socket : Using [0]eth0:10.0.0.1<0>`, `NET/OFI Selected Provider is efa (found 16 nics)`,
  `NET/IB : No device found.`, `Failed to open libibverbs.so[.1]`;
- plugin loading: `NET/Plugin: Loaded net plugin FastSocket (v6)`, `NET/OFI Using aws-ofi-nccl 1.3.0aws`,
  `P2P plugin IBext`, and the failures `Plugin load (libnccl-net.so) returned 2 : ...`,
  `Plugin load returned ...`, `dlerror=...`, `No plugin found`, `Unable to load ...`, plus the OFI and
  libfabric errors that mean no EFA device (`Could not find any optimal provider`, `provider efa output
  empty list`). A missing `libnccl-net.so` alone is harmless (NVIDIA/nccl#1231, #259): it matters only when
  a plugin was wanted (NCCL_NET_PLUGIN or NCCL_NET naming one, OFI lines) or the run then used sockets;
- GPUDirect RDMA: `GPU Direct RDMA Enabled|Disabled for ...`, `NET/OFI ... disabling GDR`, `/GDRDMA` on
  channel lines;
- settings echoed: `NCCL_IB_DISABLE set by environment to 1.`, `NCCL_SOCKET_IFNAME set to en`;
- channels: `Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA` (and the older `Channel 00 : ...`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fabriccheck.errors import unreadable
from fabriccheck.evidence.nccl_messages import (
    MAX_NICS,
    OFI_FAILURES,
    TCP_PROVIDERS,
    Event,
    failure_rank,
    family,
    parse,
)

# Before NCCL's level word: a source location on WARN lines (`misc/ibvwrap.cc:63 `, aws-ofi-nccl 1.x C builds
# `nccl_net_ofi_init:1155 `) or, from aws-ofi-nccl's C++ builds, the whole function signature
# (`int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):259 `). The lookahead keeps the common line
# (`[0] NCCL INFO`) from trying either.
_LOC = r"(?:(?!NCCL )(?:\S+:\d+ (?:\(\w+\) )?|(?:[\w:<>,*&~]+ )*[\w:<>~]+\([^()\n]*\)(?: const)?:\d+ ))?"
UNNAMED_HOST = "?"  # the host of lines without NCCL's `host:pid:tid` prefix: unknown, never one host

# NCCL 2.26+ puts a timestamp before WARN lines (`[2025-12-28 16:04:25] host:pid:tid [0] ...`).
_STAMP = r"(?:\[\d{4}-\d\d-\d\d[\d :.,]*\] )?"
# host:pid:tid [dev] [location] NCCL INFO|WARN message -- searched, not matched, so launcher prefixes do not matter.
_LINE = re.compile(
    r"(?:(?P<host>[^\s:|\[]+):(?P<pid>\d+):(?P<tid>\d+) )?\[(?P<dev>\d+)\] " + _LOC
    + r"NCCL (?P<level>INFO|WARN|TRACE) ?(?P<msg>.*)"
)  # fmt: skip
_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+[^\s|]*)")
_CLOUDWATCH = re.compile(r"^\s*\|\s*\d{4}-\d\d-\d\dT[\d:.+\-]+\s*\|?\s*")


@dataclass
class Process:
    """What one NCCL process (host, pid) said about its network."""

    host: str
    pid: str
    device_names: set[str] = field(default_factory=set)  # the [dev] of its lines, as printed
    ranks: set[int] = field(default_factory=set)
    nranks: int | None = None
    nnodes: int | None = None
    version: str | None = None
    networks: dict[str, None] = field(default_factory=dict)  # "Using network X", in order
    channels: Counter[str] = field(default_factory=Counter)  # inter-node channel transports: "IB", "Socket"
    channels_gdr: int = 0
    channels_net: int = 0
    gdr_enabled: int = 0
    gdr_disabled: int = 0
    ofi_gdr_off: bool = False
    plugin_loaded: dict[str, None] = field(default_factory=dict)
    plugin_missing: bool = False
    plugin_failures: list[str] = field(default_factory=list)  # at most a few messages
    net_not_found: str | None = None  # the network NCCL was asked for and did not find (`Error: network X not found`)
    ofi_provider: str | None = None
    ofi_nics: int | None = None
    ofi_platform: str | None = None  # the instance type (or family) aws-ofi-nccl says it runs on
    ofi_aws: bool = False  # aws-ofi-nccl configured AWS-specific options
    gdr_unsupported: bool = False  # the OFI provider says it has no GPUDirect RDMA here
    ib_nics: dict[str, None] = field(default_factory=dict)  # "mlx5_0:1/IB"
    socket_nics: dict[str, None] = field(default_factory=dict)
    bootstrap: str | None = None
    address: str | None = None  # the first IP address NCCL named for this process (bootstrap or socket)
    no_ib_device: bool = False
    no_verbs: bool = False
    env: dict[str, str] = field(default_factory=dict)
    warnings: int = 0

    @property
    def devices(self) -> set[int]:
        return {int(d) for d in self.device_names}

    @property
    def key(self) -> str:
        return f"{self.host}:{self.pid}"

    @property
    def transport(self) -> str | None:
        """The inter-node transport this process used: channels when the log has them, else `Using network`."""
        if self.channels:
            return self.channels.most_common(1)[0][0]
        if self.networks:
            return next(reversed(self.networks))
        return None

    @property
    def inferred_transport(self) -> str | None:
        """The transport, or for logs that never say `Using network` (NCCL 2.4) what the NIC lines imply."""
        said = self.transport
        if said is not None:
            return said
        if self.ofi_provider and not self.plugin_failures:
            return "OFI"  # NCCL 2.4 with aws-ofi-nccl prints its provider, never `Using network`
        if self.plugin_loaded:
            return None
        if self.ib_nics:
            return "IB"
        if self.socket_nics and (self.no_ib_device or self.no_verbs):
            return "Socket"
        return None

    @property
    def transport_family(self) -> str | None:
        """The family of the transport (`socket`, `ofi`, `ib` ...). A plugin on libfabric's own TCP provider is
        sockets, whatever the plugin's name."""
        name = self.inferred_transport
        if name is None:
            return None
        found = family(name)
        if found == "ofi" and self.ofi_tcp:
            return "socket"
        return found

    @property
    def ofi_tcp(self) -> bool:
        return (self.ofi_provider or "").split(";")[0].lower() in TCP_PROVIDERS

    @property
    def gdr(self) -> bool | None:
        """GPUDirect RDMA: True used, False off, None not said."""
        if self.channels_net:
            return self.channels_gdr > 0
        if self.ofi_gdr_off or (self.gdr_disabled and not self.gdr_enabled):
            return False
        if self.gdr_enabled:
            return True
        return None

    def note_failure(self, message: str) -> None:
        """Keep a few failure messages, the most specific (the root cause) first."""
        message = message[:300]
        if message in self.plugin_failures:
            return
        self.plugin_failures.append(message)
        self.plugin_failures.sort(key=failure_rank)
        del self.plugin_failures[3:]


@dataclass
class Log:
    path: str
    processes: dict[tuple[str, str], Process]
    lines: int
    nccl_lines: int
    versions: list[str]  # versions on lines with no process prefix
    libfabric_failures: list[str]
    ends_mid_line: bool

    @property
    def hosts(self) -> list[str]:
        return list(dict.fromkeys(p.host for p in self.processes.values() if p.host != UNNAMED_HOST))

    @property
    def nodes(self) -> int:
        """Hosts the run spans: named hosts, distinct addresses (two machines may share a name such as
        `ubuntu`), or NCCL's own nNodes when it printed one."""
        said = max((p.nnodes or 0 for p in self.processes.values()), default=0)
        addresses = {p.address for p in self.processes.values() if p.address}
        return max(len(self.hosts), len(addresses), said)

    @property
    def nranks(self) -> int | None:
        return max((p.nranks for p in self.processes.values() if p.nranks), default=None)


# Launcher prefixes in front of NCCL's own `host:pid:tid [dev]`: Open MPI --tag-output `[1,0]<stdout>:`,
# pdsh / srun --label `host: `. Removed from whole blocks at once (C speed) and from single lines.
_LAUNCHER = re.compile(rb"^(?:\[\d+,\d+\]<std(?:out|err)>:|[\w.\-]+: )(?=[^\s:|\[]+:\d+:\d+ \[\d+\] )", re.MULTILINE)
_LAUNCHER_TEXT = re.compile(_LAUNCHER.pattern.decode(), re.MULTILINE)


def _strip(line: str) -> str:
    if line.startswith(" ") or line.startswith("\t"):
        line = _CLOUDWATCH.sub("", line)
    elif line[:1] == "[" or ": " in line[:64]:
        line = _LAUNCHER_TEXT.sub("", line, count=1)
    # CloudWatch exports repeat the message after " | "; the first copy is enough.
    if " | " in line:
        line = line.split(" | ", 1)[0]
    return line


# The common shape, matched at the start of the line (cheap); anything else goes through `_LINE.search`.
_FAST = re.compile(_STAMP + r"([^\s:|\[]+):(\d+):\d+ \[(\d+)\] " + _LOC + r"NCCL (INFO|WARN|TRACE) ?")
# Parsed messages, keyed by their text: NCCL repeats the same messages on every rank and at every
# communicator init, so most lines of a long log are parsed once. Bounded: cleared when full.
CACHE_SIZE = 1 << 16


class _Reader:
    """The reader's state. `line` takes one line; `chunk` takes a block of whole lines and, when every line
    with NCCL in it has the common shape, counts identical (process, message) pairs in C (`Counter` over
    `findall`) and applies each distinct pair once with its count: a long log is mostly the same messages."""

    def __init__(self) -> None:
        self.processes: dict[str, Process] = {}
        self.versions: list[str] = []
        self.libfabric: list[str] = []
        self.cache: dict[str, Event | None] = {}
        self.count = 0
        self.nccl = 0
        self.last = ""
        self.previous: Process | None = None

    def process(self, host: str, pid: str) -> Process:
        key = f"{host}:{pid}"
        proc = self.processes.get(key)
        if proc is None:
            proc = self.processes[key] = Process(host, pid)
        return proc

    def event(self, msg: str) -> Event | None:
        cache = self.cache
        if msg in cache:
            return cache[msg]
        event = parse(msg.rstrip("\r\n"))
        if len(cache) >= CACHE_SIZE:
            cache.clear()
        cache[msg] = event
        return event

    def other(self, raw: str) -> None:
        """A line without the common prefix (already counted)."""
        if "NCCL" not in raw:
            if "libfabric:" in raw and len(self.libfabric) < 3 and any(needle in raw for needle, _ in OFI_FAILURES):
                self.libfabric.append(_strip(raw).strip()[:300])
            return
        line = _strip(raw)
        fast = _FAST.match(line)
        if fast is not None:
            host, pid, dev, level = fast.group(1, 2, 3, 4)
            self.one(host, pid, dev, level, line[fast.end() :], 1)
            return
        slow = _LINE.search(line)
        if slow is None:
            version = _VERSION.search(line)
            if version:
                self.nccl += 1
                if version.group(1) not in self.versions and len(self.versions) < 16:
                    self.versions.append(version.group(1))
                # Older NCCL prints the version alone, right after the process that initialised it.
                if self.previous is not None and self.previous.version is None:
                    self.previous.version = version.group(1)
            return
        self.one(slow.group("host") or UNNAMED_HOST, slow.group("pid") or "?", slow.group("dev"), slow.group("level"),
                 slow.group("msg"), 1)  # fmt: skip

    def one(self, host: str, pid: str, dev: str, level: str, msg: str, times: int) -> None:
        self.nccl += times
        proc = self.process(host, pid)
        self.previous = proc
        proc.device_names.add(dev)
        if level == "WARN":
            proc.warnings += times
        event = self.event(msg)
        if event is not None:
            _apply(proc, event, times)

    def line(self, raw: str) -> None:
        self.count += 1
        self.last = raw
        match = _FAST.match(raw)
        if match is None:
            self.other(raw)
            return
        host, pid, dev, level = match.group(1, 2, 3, 4)
        self.one(host, pid, dev, level, raw[match.end() :], 1)

    def chunk(self, data: bytes) -> None:
        """`data`: whole lines, each ending in a newline. Bytes, so that only distinct pairs are decoded."""
        common = _COMMON.findall(data)
        lines = data.count(b"\n")
        if len(common) < lines and _LAUNCHER.search(data):  # launcher prefixes: drop them all, then count
            data = _LAUNCHER.sub(b"", data)
            common = _COMMON.findall(data)
        if len(common) < lines:  # some lines have another shape: look at them (one more scan)
            others = _OTHER.findall(data)
            if any(b"NCCL" in o for o in others):  # order matters (unprefixed version lines): line by line
                for raw in data.decode("utf-8", "replace").splitlines(keepends=True):
                    self.line(raw)
                return
            for raw in others:
                if raw:
                    self.other(raw.decode("utf-8", "replace"))
        self.count += lines
        self.last = "\n"
        for (who, rest), times in Counter(common).items():
            host, _, pid = who.decode("utf-8", "replace").rpartition(":")
            dev, _, after = rest.decode("utf-8", "replace").partition("] ")
            head = _LEVEL.match(after)
            if head is not None:
                self.one(host, pid, dev, head.group(1), after[head.end() :], times)

    def log(self, path: str) -> Log:
        ends_mid_line = bool(self.last) and not self.last.endswith("\n")
        procs = {(p.host, p.pid): p for p in self.processes.values()}
        return Log(path, procs, self.count, self.nccl, self.versions, self.libfabric, ends_mid_line)


_BLOCK_LOC = _LOC.encode()
_COMMON = re.compile(
    rb"^" + _STAMP.encode() + rb"([^\s:|\[]+:\d+):\d+ \[(\d+\] " + _BLOCK_LOC + rb"NCCL (?:INFO|WARN|TRACE)[^\n]*)",
    re.MULTILINE,
)  # fmt: skip
_LEVEL = re.compile(_LOC + r"NCCL (INFO|WARN|TRACE) ?")
_OTHER = re.compile(
    rb"^(?!" + _STAMP.encode() + rb"[^\s:|\[]+:\d+:\d+ \[\d+\] " + _BLOCK_LOC + rb"NCCL (?:INFO|WARN|TRACE)).*$",
    re.MULTILINE,
)  # fmt: skip


def read_lines(lines: Iterable[str], path: str = "<input>") -> Log:
    reader = _Reader()
    for raw in lines:
        reader.line(raw)
    return reader.log(path)


def read_chunks(chunks: Iterable[bytes | str], path: str = "<input>") -> Log:
    """Read blocks of any size (a block may end mid-line; the rest joins the next block)."""
    reader = _Reader()
    rest = b""
    for block in chunks:
        data = rest + (block.encode("utf-8", "surrogateescape") if isinstance(block, str) else block)
        cut = data.rfind(b"\n") + 1
        rest = data[cut:]
        if cut:
            reader.chunk(data[:cut])
    if rest:
        reader.line(rest.decode("utf-8", "replace"))  # the file ends mid-line
    return reader.log(path)


def _channel(proc: Process, event: Event, times: int) -> None:
    proc.channels[event[1]] += times
    proc.channels_net += times
    if event[2]:
        proc.channels_gdr += times


def _env(proc: Process, event: Event, times: int) -> None:
    proc.env[event[1]] = event[2]


def _network(proc: Process, event: Event, times: int) -> None:
    proc.networks[event[1]] = None


def _version(proc: Process, event: Event, times: int) -> None:
    proc.version = event[1]


def _rank(proc: Process, event: Event, times: int) -> None:
    proc.ranks.add(event[1])
    proc.nranks = event[2]
    if event[3] is not None:
        proc.nnodes = event[3]


def _gdr(proc: Process, event: Event, times: int) -> None:
    if event[1]:
        proc.gdr_enabled += times
    else:
        proc.gdr_disabled += times


def _no_ib_device(proc: Process, event: Event, times: int) -> None:
    proc.no_ib_device = True


def _ib_nics(proc: Process, event: Event, times: int) -> None:
    for nic in event[1]:
        if len(proc.ib_nics) < MAX_NICS:
            proc.ib_nics[nic] = None


def _socket_nics(proc: Process, event: Event, times: int) -> None:
    for name, address in event[1]:
        if len(proc.socket_nics) < MAX_NICS:
            proc.socket_nics[name] = None
        if proc.address is None:
            proc.address = address


def _bootstrap(proc: Process, event: Event, times: int) -> None:
    proc.bootstrap = event[1]
    proc.address = proc.address or event[2]


def _ofi(proc: Process, event: Event, times: int) -> None:
    _, provider, nics, version, gdr_off, failure, platform, unsupported, aws = event
    if provider:
        proc.ofi_provider = provider
    if nics is not None:
        proc.ofi_nics = nics
    if version:
        proc.plugin_loaded[f"aws-ofi-nccl {version}"] = None
    if gdr_off:
        proc.ofi_gdr_off = True
    if failure:
        proc.note_failure(failure)
    proc.ofi_platform = platform or proc.ofi_platform
    proc.gdr_unsupported = proc.gdr_unsupported or unsupported
    proc.ofi_aws = proc.ofi_aws or aws


def _plugin(proc: Process, event: Event, times: int) -> None:
    proc.plugin_loaded[event[1]] = None


def _plugin_missing(proc: Process, event: Event, times: int) -> None:
    proc.plugin_missing = True
    if event[1]:
        proc.note_failure(event[1])


def _net_not_found(proc: Process, event: Event, times: int) -> None:
    proc.net_not_found = event[1]


def _no_verbs(proc: Process, event: Event, times: int) -> None:
    proc.no_verbs = True


# What each kind of event does to its process's record; `times`: how many alike lines the event stands for.
_EVENTS: dict[str, Callable[[Process, Event, int], None]] = {
    "channel": _channel,
    "env": _env,
    "network": _network,
    "version": _version,
    "rank": _rank,
    "gdr": _gdr,
    "no-ib-device": _no_ib_device,
    "ib-nics": _ib_nics,
    "socket-nics": _socket_nics,
    "bootstrap": _bootstrap,
    "ofi": _ofi,
    "plugin": _plugin,
    "plugin-missing": _plugin_missing,
    "no-verbs": _no_verbs,
    "net-not-found": _net_not_found,
}


def _apply(proc: Process, event: Event, times: int = 1) -> None:
    handler = _EVENTS.get(event[0])
    if handler is not None:
        handler(proc, event, times)


BLOCK = 2 << 20  # bytes per block read (2 MiB measured faster than 8: the block stays in cache)


def _blocks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        while block := handle.read(BLOCK):
            yield block


def read_file(path: Path, required: bool = True) -> Log:
    """Read `path`; a file with no NCCL line is an error naming the file (exit 2) when `required`."""
    try:
        log = read_chunks(_blocks(path), str(path))
    except OSError as exc:
        raise unreadable(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not log.processes and required:
        raise unreadable(
            f"{path}: no NCCL log lines (`host:pid:tid [dev] NCCL INFO ...`); run the job with NCCL_DEBUG=INFO"
        )
    _check_numbers(path, log)
    return log


_NCCL_INT = 1 << 31  # NCCL prints device indexes, ranks and counts as 32-bit ints


def _check_numbers(path: Path, log: Log) -> None:
    """A device index, rank or count NCCL could not have printed (2^64) is one line naming the file: no report
    format could carry it, and no verdict on it would mean anything."""
    for proc in log.processes.values():
        numbers: dict[str, set[int | None]] = {"device": {*proc.devices}, "rank": {*proc.ranks}}
        numbers |= {"nranks": {proc.nranks}, "nNodes": {proc.nnodes}, "nics": {proc.ofi_nics}}
        for what, values in numbers.items():
            big = max((v for v in values if v is not None), default=0)
            if big >= _NCCL_INT:
                raise unreadable(f"{path}: {what} {big} of {proc.key} is not a number NCCL prints (32-bit)")
