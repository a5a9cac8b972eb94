"""What an evidence command judged, as the report holds it: the job an NCCL log or an nccl-tests file shows.

`nccl-log` and `nccl-tests` report one cluster entry per file (report.ClusterReport with `evidence` set): its hosts,
ranks and accelerators, and here what the file says of them: each NCCL process's transport, GPUDirect RDMA, NICs
and plugins (a log), or each run's measured bus bandwidth against what the fabric should give (nccl-tests). Typed,
so that `fabriccheck schema` describes it and every format renders it. Nothing here judges (evidence/ does).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

EvidenceKind = Literal["nccl-log", "nccl-tests"]
# An nccl-tests run's verdict; suspect: rows no run can measure (a damaged table is never healthy).
Verdict = Literal["healthy", "slower-than-expected", "tcp-fallback", "suspect"]


class NcclProcess(BaseModel):
    """One NCCL process of a log (host:pid), as its lines describe it."""

    process: str  # host:pid
    host: str
    pid: str
    devices: list[int]  # the CUDA devices its lines name
    ranks: list[int]
    nranks: int | None  # ranks in its communicator, as NCCL printed it
    nccl_version: str | None
    networks: list[str]  # "Using network X", in order
    transport: str | None  # the inter-node transport it used: IB, OFI, Socket, ... (None: the log does not say)
    transport_family: str | None  # ib, ofi, gib, tcpx, fastsocket, socket
    channels: dict[str, int]  # inter-node channels by transport
    gpudirect_rdma: bool | None  # None: the log does not say
    plugins_loaded: list[str]
    plugin_missing: bool
    plugin_failures: list[str]
    ofi_provider: str | None  # libfabric's provider under aws-ofi-nccl: efa, tcp, ...
    ofi_nics: int | None
    ofi_platform: str | None  # the instance type aws-ofi-nccl says it runs on
    ib_nics: list[str]  # "mlx5_0:1/IB"
    socket_interfaces: list[str]
    bootstrap_interface: str | None
    env: dict[str, str]  # the NCCL_* / FI_* settings its lines print
    warnings: int  # NCCL WARN lines


class LogFacts(BaseModel):
    """An NCCL log (or the NCCL lines of an nccl-tests file) as read: its size, hosts, ranks and processes."""

    lines: int
    nccl_lines: int
    hosts: list[str]
    nodes: int  # hosts the run spans (named hosts, distinct addresses, or NCCL's own nNodes)
    nranks: int | None
    nccl_versions: list[str]
    libfabric_failures: list[str]
    processes: list[NcclProcess]


class ExpectedFabric(BaseModel):
    """The fabric an nccl-tests file is compared with (--instance-type, or described by hand)."""

    instance_type: str | None
    accelerator: str
    gpus_per_node: int
    fabric: str  # efa, ib, rdma-roce, tcpx, ...
    nics: int
    gbps_per_nic: float
    gpudirect_rdma: bool | None
    ethernet_gbps: float | None


class BusbwComparison(BaseModel):
    """One judged message size: measured busbw against the fabric's healthy figure and TCP's (GB/s)."""

    bytes: int
    busbw_gbytes_per_s: float
    expected_busbw_gbytes_per_s: float
    tcp_busbw_gbytes_per_s: float | None  # TCP on the ordinary NIC, best case
    tcp_busbw_worst_gbytes_per_s: float | None
    ratio: float  # measured / expected


class TestRun(BaseModel):
    """One nccl-tests run (one table) of a file."""

    __test__ = False  # not a pytest class, whatever its name

    run: int  # 1-based, in file order
    op: str | None  # all_reduce, all_gather, ...
    op_from: str | None  # where the op came from: option, command, header, columns
    op_candidates: list[str]  # the ops its columns fit, when nothing names it
    hosts: list[str]
    ranks: int | None
    devices: list[str]
    rows: int
    avg_busbw_gbytes_per_s: float | None  # nccl-tests' own `# Avg bus bandwidth`
    complete: bool  # the table ended with its `# Avg bus bandwidth` line
    nodes: int | None = None  # the nodes it was judged as (None: not compared)
    comparisons: list[BusbwComparison] = []
    verdict: Verdict | None = None  # None: not compared


class TransportSeen(BaseModel):
    """What the NCCL lines of an nccl-tests file say carried the traffic (a short quote per kind of evidence)."""

    processes: int
    fabric_seen: list[str]
    sockets_seen: list[str]
    findings: list[str]  # the rules the lines raised


class JobEvidence(BaseModel):
    """What an evidence file says of the job it shows: a log's processes, or an nccl-tests file's runs."""

    kind: EvidenceKind
    file: str  # as given on the command line (`-`: standard input)
    # The cloud the evidence points to (the instance type's, the transport's, or --provider), or unknown.
    provider: str
    log: LogFacts | None = None  # nccl-log: the log; nccl-tests: None (see nccl_lines)
    fabric: ExpectedFabric | None = None  # nccl-tests: the fabric compared with (None: none given)
    runs: list[TestRun] = []  # nccl-tests
    nccl_lines: TransportSeen | None = None  # nccl-tests: what the file's own NCCL lines say
