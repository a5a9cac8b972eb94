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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fabriccheck.errors import FabricCheckError

# host:pid:tid [dev] [file.cc:line [(function)]] NCCL INFO|WARN message -- searched, not matched, so launcher
# prefixes do not matter. WARN lines name the source location (`misc/ibvwrap.cc:63`).
_LINE = re.compile(
    r"(?:(?P<host>[^\s:|]+):(?P<pid>\d+):(?P<tid>\d+) )?\[(?P<dev>\d+)\] (?:\S+:\d+ (?:\(\w+\) )?)?"
    r"NCCL (?P<level>INFO|WARN|TRACE) ?(?P<msg>.*)"
)
_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+[^\s|]*)")
_NETWORK = re.compile(r"Using network (.+?)\s*$")
_SET = re.compile(r"\b(NCCL_[A-Z0-9_]+) set (?:by environment )?to (.*?)\.?\s*$")
_IB_NIC = re.compile(r"([\w.\-]+):(\d+)/(IB|RoCE)\b")
_SOCKET_NIC = re.compile(r"\[\d+\]\s*([\w.\-]+):([\d.:a-fA-F%]+)<\d+>")
_BOOTSTRAP = re.compile(r"Bootstrap ?: Using (?:\[\d+\])?([\w.\-]+):([\d.:a-fA-F%]+)<")
_OFI_PROVIDER = re.compile(r"Selected Provider is (\w+)(?: \(found (\d+) nics\))?")
_OFI_VERSION = re.compile(r"Using aws-ofi-nccl (\S+)")
_LOADED = re.compile(r"Loaded (?:net|collnet) plugin (\S+)")
_P2P_PLUGIN = re.compile(r"P2P plugin (\S+)")
_CHANNEL = re.compile(r"Channel \d+(?:/\d+)? : .*? via (NET/[^\s]+|P2P/\S+|SHM/\S+|\S+)")
_RANK = re.compile(r"\brank (\d+) nranks (\d+)\b|\brank (\d+) nRanks (\d+) nNodes (\d+)")
_GDR = re.compile(r"GPU Direct RDMA (Enabled|Disabled)")
_CLOUDWATCH = re.compile(r"^\s*\|\s*\d{4}-\d\d-\d\dT[\d:.+\-]+\s*\|?\s*")

PLUGIN_MISSING = (
    "No plugin found",
    "Plugin load returned",
    "Plugin load (",
    "dlerror=",
    "Unable to load",
    "Using internal network plugin",
    "using internal implementation",
)
# Messages that mean the OFI plugin (EFA) could not start: it loaded, but found no usable provider.
OFI_FAILURES = (
    "Could not find any optimal provider",
    "provider efa output empty list",
    "No EFA devices",
    "Unable to find a suitable provider",
    "OFI plugin initNet() failed",
)
# Networks NCCL names after "Using network": the built-in ones, the rest are plugins.
BUILTIN_NETWORKS = {"IB", "Socket"}
# Transport family of a network or channel name, for findings and provider inference.
FAMILIES = (
    ("socket", ("Socket",)),
    ("ofi", ("AWS Libfabric", "Libfabric", "OFI", "AWS_Libfabric")),
    ("ib", ("IBext", "IB")),
    ("gib", ("gIB",)),
    ("tcpx", ("GPUDirectTCPX", "TCPX", "FasTrak", "TCPXO")),
    ("fastsocket", ("FastSocket",)),
)
MAX_NICS = 64  # per process; more would be a corrupt line, not a machine


def family(name: str) -> str:
    for fam, prefixes in FAMILIES:
        if any(name.startswith(p) for p in prefixes):
            return fam
    return "other"


@dataclass
class Process:
    """What one NCCL process (host, pid) said about its network."""

    host: str
    pid: str
    devices: set[int] = field(default_factory=set)
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
    ofi_provider: str | None = None
    ofi_nics: int | None = None
    ib_nics: dict[str, None] = field(default_factory=dict)  # "mlx5_0:1/IB"
    socket_nics: dict[str, None] = field(default_factory=dict)
    bootstrap: str | None = None
    address: str | None = None  # the first IP address NCCL named for this process (bootstrap or socket)
    no_ib_device: bool = False
    no_verbs: bool = False
    env: dict[str, str] = field(default_factory=dict)
    warnings: int = 0

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
        if self.plugin_loaded:
            return None
        if self.ib_nics:
            return "IB"
        if self.socket_nics and (self.no_ib_device or self.no_verbs):
            return "Socket"
        return None

    @property
    def transport_family(self) -> str | None:
        name = self.inferred_transport
        return family(name) if name else None

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
        if len(self.plugin_failures) < 3 and message not in self.plugin_failures:
            self.plugin_failures.append(message[:300])


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
        return list(dict.fromkeys(p.host for p in self.processes.values() if p.host != "?"))

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


def _strip(line: str) -> str:
    if line.startswith(" ") or line.startswith("\t"):
        line = _CLOUDWATCH.sub("", line)
    # CloudWatch exports repeat the message after " | "; the first copy is enough.
    if " | " in line:
        line = line.split(" | ", 1)[0]
    return line


def read_lines(lines: Iterable[str], path: str = "<input>") -> Log:
    processes: dict[tuple[str, str], Process] = {}
    versions: list[str] = []
    libfabric: list[str] = []
    count = nccl = 0
    last = ""
    previous: Process | None = None
    for raw in lines:
        count += 1
        last = raw
        if "NCCL" not in raw:
            if "libfabric:" in raw and any(f in raw for f in OFI_FAILURES) and len(libfabric) < 3:
                libfabric.append(_strip(raw).strip()[:300])
            continue
        line = _strip(raw)
        match = _LINE.search(line)
        if match is None:
            version = _VERSION.search(line)
            if version:
                nccl += 1
                if version.group(1) not in versions and len(versions) < 16:
                    versions.append(version.group(1))
                # Older NCCL prints the version alone, right after the process that initialised it.
                if previous is not None and previous.version is None:
                    previous.version = version.group(1)
            continue
        nccl += 1
        host, pid = match.group("host") or "?", match.group("pid") or "?"
        proc = processes.get((host, pid))
        if proc is None:
            proc = processes[(host, pid)] = Process(host, pid)
        previous = proc
        proc.devices.add(int(match.group("dev")))
        msg = match.group("msg")
        if match.group("level") == "WARN":
            proc.warnings += 1
        _read_message(proc, msg)
    ends_mid_line = bool(last) and not last.endswith("\n")
    return Log(path, processes, count, nccl, versions, libfabric, ends_mid_line)


def _read_message(proc: Process, msg: str) -> None:
    if msg.startswith("Channel "):
        channel = _CHANNEL.search(msg)
        if channel:
            via = channel.group(1)
            if via.startswith("NET/"):
                parts = via.split("/")
                proc.channels[parts[1]] += 1
                proc.channels_net += 1
                if "GDRDMA" in parts[2:]:
                    proc.channels_gdr += 1
        return
    if "set by environment to" in msg or " set to " in msg:
        setting = _SET.search(msg)
        if setting:
            proc.env[setting.group(1)] = setting.group(2).strip()
            return
    if msg.startswith("Using network "):
        network = _NETWORK.search(msg)
        if network:
            proc.networks[network.group(1)] = None
        return
    if "NCCL version" in msg:
        version = _VERSION.search(msg)
        if version:
            proc.version = version.group(1)
        return
    rank = _RANK.search(msg)
    if rank:
        if rank.group(1) is not None:
            proc.ranks.add(int(rank.group(1)))
            proc.nranks = int(rank.group(2))
        else:
            proc.ranks.add(int(rank.group(3)))
            proc.nranks, proc.nnodes = int(rank.group(4)), int(rank.group(5))
        return
    gdr = _GDR.search(msg)
    if gdr:
        if gdr.group(1) == "Enabled":
            proc.gdr_enabled += 1
        else:
            proc.gdr_disabled += 1
        return
    if msg.startswith("NET/IB") or msg.startswith("NET/IBext"):
        if "No device found" in msg:
            proc.no_ib_device = True
        elif "Using" in msg:
            for nic in _IB_NIC.finditer(msg):
                if len(proc.ib_nics) < MAX_NICS:
                    proc.ib_nics[f"{nic.group(1)}:{nic.group(2)}/{nic.group(3)}"] = None
        return
    if msg.startswith("NET/Socket") or msg.startswith("NET/FastSocket"):
        if "Using" in msg:
            for nic in _SOCKET_NIC.finditer(msg):
                if len(proc.socket_nics) < MAX_NICS:
                    proc.socket_nics[nic.group(1)] = None
                if proc.address is None:
                    proc.address = nic.group(2)
        return
    if msg.startswith("Bootstrap"):
        boot = _BOOTSTRAP.search(msg)
        if boot:
            proc.bootstrap = boot.group(1)
            proc.address = proc.address or boot.group(2)
        return
    if "NET/OFI" in msg:
        provider = _OFI_PROVIDER.search(msg)
        if provider:
            proc.ofi_provider = provider.group(1)
            if provider.group(2):
                proc.ofi_nics = int(provider.group(2))
        ofi = _OFI_VERSION.search(msg)
        if ofi:
            proc.plugin_loaded[f"aws-ofi-nccl {ofi.group(1)}"] = None
        if "disabling GDR" in msg or "GDR disabled" in msg:
            proc.ofi_gdr_off = True
        if any(f in msg for f in OFI_FAILURES):
            proc.note_failure(msg.strip())
        return
    if "NET/Plugin" in msg or "Plugin Path" in msg or "P2P plugin" in msg or "Unable to load" in msg:
        loaded = _LOADED.search(msg) or _P2P_PLUGIN.search(msg)
        if loaded:
            proc.plugin_loaded[loaded.group(1)] = None
        elif any(m in msg for m in PLUGIN_MISSING):
            proc.plugin_missing = True
            if "returned" in msg or "dlerror" in msg or "Unable to load" in msg:
                proc.note_failure(msg.strip())
        return
    if "libibverbs" in msg and "Failed to open" in msg:
        proc.no_verbs = True


def _lines(path: Path) -> Iterator[str]:
    # newline="" keeps "\r\n" and lets us see whether the last line was cut; 1 MiB buffer for speed.
    with path.open("r", encoding="utf-8", errors="replace", newline="", buffering=1 << 20) as handle:
        yield from handle


def read_file(path: Path) -> Log:
    """Read `path`; a file with no NCCL line is an error naming the file (exit 2)."""
    try:
        log = read_lines(_lines(path), str(path))
    except OSError as exc:
        raise FabricCheckError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not log.processes:
        raise FabricCheckError(
            f"{path}: no NCCL log lines (`host:pid:tid [dev] NCCL INFO ...`); run the job with NCCL_DEBUG=INFO"
        )
    return log
