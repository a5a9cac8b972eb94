"""What NCCL and libfabric settings do to a node's fabric, read alike wherever they are set: a pod's env, an MPIJob
launcher's mpirun -x, a Slurm job script. A setting is (name, value, where it was set: words for the message)."""

from __future__ import annotations

from collections.abc import Iterable

from fabriccheck.model import FabricKind
from fabriccheck.values import Setting

# Settings that turn a fabric off, by the fabric they turn off (None: any). NCCL_IB_DISABLE turns off NCCL's own
# InfiniBand transport only: on EFA (aws-ofi-nccl) it is common and harmless.
FABRIC_OFF: tuple[tuple[str, frozenset[str], frozenset[FabricKind] | None], ...] = (
    ("NCCL_NET", frozenset({"socket"}), None),
    ("NCCL_IB_DISABLE", frozenset({"1", "true"}), frozenset({FabricKind.INFINIBAND})),
    ("FI_PROVIDER", frozenset({"tcp", "sockets", "tcp;ofi_rxm", "udp"}), frozenset({FabricKind.EFA})),
)


def fabric_off(settings: Iterable[Setting], fabric: FabricKind) -> str:
    """The first setting that turns `fabric` off (NCCL_NET=Socket, NCCL_IB_DISABLE=1 on InfiniBand, FI_PROVIDER=tcp
    on EFA), as `NAME=VALUE where`; "" when none does."""
    for name, value, where in settings:
        for setting, values, fabrics in FABRIC_OFF:
            if name == setting and value.strip().lower() in values and (fabrics is None or fabric in fabrics):
                return f"{name}={value}{where}"
    return ""


def local_socket_ifname(settings: Iterable[Setting]) -> str:
    """NCCL_SOCKET_IFNAME=lo, =docker0, lo,docker ...: every interface it lets NCCL use is the loopback or a Docker
    bridge. NCCL's bootstrap (and its socket transport) then listens on an address no other node reaches, whatever
    the fabric: a multi-node job cannot connect. An exclusion list (^...) is not judged: what it leaves depends on the
    interfaces the node has."""
    for name, value, where in settings:
        if name != "NCCL_SOCKET_IFNAME":
            continue
        wanted = value.strip()
        if wanted.startswith("^"):
            continue
        prefixes = [p.strip() for p in wanted.removeprefix("=").split(",") if p.strip()]
        if prefixes and all(p == "lo" or p.startswith("docker") for p in prefixes):
            return f"{name}={value}{where}"
    return ""
