"""What one NCCL_DEBUG=INFO message says, as a small event tuple (`parse`), and the vocabularies behind it:
transport families, plugin failures and what causes them.

Kept apart from the streaming reader (`nccl_log`) so each stays small; the reader caches `parse` by message
text, so a message NCCL repeats on every rank is parsed once. Line shapes come from public logs named in
tests/fixtures/nccl/SOURCES.md.
"""

from __future__ import annotations

import re
from typing import Any

Event = tuple[Any, ...]

_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+[^\s|]*)")
# "Using network IB" (NCCL 2.4+), "Using internal Network IB" (NCCL 2.3, NVIDIA/nccl#179).
_NETWORK = re.compile(r"^Using (?:internal )?[Nn]etwork (.+?)\s*$")
_SET = re.compile(r"\b(NCCL_[A-Z0-9_]+) set (?:by environment )?to (.*?)\.?\s*$")
_IB_NIC = re.compile(r"([\w.\-]+):(\d+)/(IB|RoCE)\b")
_SOCKET_NIC = re.compile(r"\[\d+\]\s*([\w.\-]+):([\d.:a-fA-F%]+)<\d+>")
_BOOTSTRAP = re.compile(r"Bootstrap ?: Using (?:\[\d+\])?([\w.\-]+):([\d.:a-fA-F%]+)<")
# "Selected Provider is efa (found 16 nics)" (aws-ofi-nccl 1.x), "Selected provider is efa, fabric is efa (found
# 1 nics)" (newer), "Selected Provider is verbs;ofi_rxm (found 58 nics)" (libfabric's verbs on RoCE).
_OFI_PROVIDER = re.compile(r"Selected [Pp]rovider is ([\w;\-]+)(?:, fabric is [^\s(]+)?(?: \(found (\d+) nics\))?")
_OFI_VERSION = re.compile(r"(?:Using|Initializing) aws-ofi-nccl (\S+)")
# aws-ofi-nccl names the instance type it tuned for: "NCCL_OFI_TUNER is not available for platform : g6e.8xlarge",
# "Running on p4d.24xlarge platform" (older builds name a family: "Running on P4d platform").
_OFI_PLATFORM = re.compile(r"platform : ([\w.\-]+)|Running on ([\w.\-]+) platform")
_LOADED = re.compile(r"Loaded (?:net|collnet) plugin (.+?) \(v\d+\)|Loaded (?:net|collnet) plugin (\S+)")
_P2P_PLUGIN = re.compile(r"P2P plugin (\S+)")
# `via NET/<name>/<dev>[/GDRDMA][/Shared]`: the name may hold a space ("AWS Libfabric"). Channel lines since NCCL
# 2.5 ("Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA"), ring lines in 2.4 ("Ring 00 : 6 -> 2 [send] via
# NET/IB/0", Mellanox/nv_peer_memory#56; "Ring 00 : 43 -> 44 [receive] via NET/Socket/0", NVIDIA/nccl#226).
_VIA_NET = re.compile(r" via NET/([^/\n]+)((?:/\S*)?)")
_RANK = re.compile(r"\brank (\d+) nranks (\d+)\b|\brank (\d+) nRanks (\d+) nNodes (\d+)")
_GDR = re.compile(r"GPU Direct RDMA (Enabled|Disabled)")
# NCCL asked for a network (NCCL_NET) that no plugin nor its own transports provide: net.cc prints `NCCL WARN Error:
# network gIB not found.` and the communicator fails (AI-Hypercomputer/gpu-recipes#5: gIB's plugin failed to load).
_NET_NOT_FOUND = re.compile(r"Error: network (.+?)\.? not found")

PLUGIN_MISSING = (
    "No plugin found",
    "Plugin load returned",
    "Plugin load (",
    "dlerror=",
    "Unable to load",
    "Using internal network plugin",
    "using internal implementation",
)
# What aws-ofi-nccl (and libfabric) print when the plugin loaded but could not start, each with its cause, most
# specific first: the judge names the first cause a process printed. Messages from aws-ofi-nccl 1.x-1.16
# (src/nccl_ofi_net.cpp nccl_net_ofi_create_plugin; issues #161, #889) and the g6e log in SOURCES.md.
NO_PROVIDER = (
    "no usable libfabric provider: no EFA device is visible to the process (EFA interfaces not attached to the "
    "instance, or /dev/infiniband/uverbs* not passed into the container)"
)
NO_PROTOCOL = "aws-ofi-nccl could start neither of its protocols (RDMA, SENDRECV): no usable provider or device"
INIT_FAILED = "the aws-ofi-nccl plugin failed to initialize"
OFI_FAILURES = (
    ("No eligible providers were found", NO_PROVIDER),
    ("Could not find any optimal provider", NO_PROVIDER),
    ("Couldn't find any optimal provider", NO_PROVIDER),
    ("provider efa output empty list", NO_PROVIDER),
    ("No EFA devices", NO_PROVIDER),
    ("Unable to find a suitable provider", NO_PROVIDER),
    ("Unable to find a protocol that worked", NO_PROTOCOL),
    ("Failed to initialize", NO_PROTOCOL),
    ("initialization failed", INIT_FAILED),
    ("Initializing plugin failed", INIT_FAILED),
    ("OFI plugin initNet() failed", INIT_FAILED),
)
PLUGIN_LOAD_FAILED = "the network plugin library could not be loaded"
# libfabric's own providers that are TCP or UDP sockets: a plugin running on one of them is not a fabric.
TCP_PROVIDERS = frozenset({"tcp", "sockets", "udp", "net"})

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


def failure_cause(message: str) -> str:
    """What a plugin failure message means, in the report's words."""
    for needle, cause in OFI_FAILURES:
        if needle in message:
            return cause
    return PLUGIN_LOAD_FAILED


def failure_rank(message: str) -> int:
    """How specific a failure message is (lower is more specific): the root cause before its consequences."""
    for index, (needle, _) in enumerate(OFI_FAILURES):
        if needle in message:
            return index
    return len(OFI_FAILURES)


def _channel(msg: str) -> Event | None:
    via = _VIA_NET.search(msg)
    if via is None:
        return None
    return ("channel", via.group(1).strip(), "/GDRDMA" in via.group(2))


def _ofi(msg: str) -> Event | None:
    provider = _OFI_PROVIDER.search(msg)
    ofi = _OFI_VERSION.search(msg)
    platform = _OFI_PLATFORM.search(msg)
    gdr_off = "disabling GDR" in msg or "GDR disabled" in msg
    # "Need to force simple protocol: GDR not supported": the provider has no GPUDirect RDMA on this platform.
    unsupported = "GDR not supported" in msg
    failure = msg.strip() if any(needle in msg for needle, _ in OFI_FAILURES) else None
    aws = "Configuring AWS-specific options" in msg
    if not (provider or ofi or platform or gdr_off or unsupported or failure or aws):
        return None
    return (
        "ofi",
        provider.group(1) if provider else None,
        int(provider.group(2)) if provider and provider.group(2) else None,
        ofi.group(1) if ofi else None,
        gdr_off or unsupported,
        failure,
        (platform.group(1) or platform.group(2)) if platform else None,
        unsupported,
        aws,
    )


def _plugin(msg: str) -> Event | None:
    loaded = _LOADED.search(msg)
    if loaded:
        return ("plugin", (loaded.group(1) or loaded.group(2)).strip())
    p2p = _P2P_PLUGIN.search(msg)
    if p2p:
        return ("plugin", p2p.group(1))
    if any(m in msg for m in PLUGIN_MISSING):
        failed = "returned" in msg or "dlerror" in msg or "Unable to load" in msg
        return ("plugin-missing", msg.strip() if failed else None)
    return None


def parse(msg: str) -> Event | None:
    """What one message says, as an event; None when it says nothing the reader keeps."""
    if msg.startswith("Channel ") or msg.startswith("Ring "):
        return _channel(msg)
    if "set by environment to" in msg or " set to " in msg:
        setting = _SET.search(msg)
        if setting:
            return ("env", setting.group(1), setting.group(2).strip())
    if msg.startswith("Using network ") or msg.startswith("Using internal Network "):
        network = _NETWORK.search(msg)
        return ("network", network.group(1)) if network else None
    if "NCCL version" in msg:
        version = _VERSION.search(msg)
        return ("version", version.group(1)) if version else None
    if "nranks" in msg or "nRanks" in msg:
        rank = _RANK.search(msg)
        if rank:
            if rank.group(1) is not None:
                return ("rank", int(rank.group(1)), int(rank.group(2)), None)
            return ("rank", int(rank.group(3)), int(rank.group(4)), int(rank.group(5)))
    if "GPU Direct RDMA" in msg:
        gdr = _GDR.search(msg)
        if gdr:
            return ("gdr", gdr.group(1) == "Enabled")
    if msg.startswith("NET/IB"):
        if "No device found" in msg:
            return ("no-ib-device",)
        if "Using" in msg:
            nics = [f"{n.group(1)}:{n.group(2)}/{n.group(3)}" for n in _IB_NIC.finditer(msg)]
            return ("ib-nics", tuple(nics[:MAX_NICS]))
        return None
    if msg.startswith("NET/Socket") or msg.startswith("NET/FastSocket"):
        if "Using" in msg:
            return ("socket-nics", tuple((n.group(1), n.group(2)) for n in _SOCKET_NIC.finditer(msg))[:MAX_NICS])
        return None
    if msg.startswith("Bootstrap"):
        boot = _BOOTSTRAP.search(msg)
        return ("bootstrap", boot.group(1), boot.group(2)) if boot else None
    if "NET/OFI" in msg:
        return _ofi(msg)
    if "NET/Plugin" in msg or "Plugin Path" in msg or "P2P plugin" in msg or "Unable to load" in msg:
        return _plugin(msg)
    if "libibverbs" in msg and "Failed to open" in msg:
        return ("no-verbs",)
    return _network_not_found(msg)


def _network_not_found(msg: str) -> Event | None:
    missing = _NET_NOT_FOUND.search(msg) if "Error: network " in msg else None
    return ("net-not-found", missing.group(1).strip()) if missing else None
