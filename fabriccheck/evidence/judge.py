"""NCCL logs -> `findings.Finding`s, with the facts behind them (per process, jobs.NcclProcess) and notes; what the
judging of one file found (`Evidence`), which evidence.reported makes the report of. nccl-tests tables are judged
in `bandwidth`.

The checks of the nccl-log rules (NCCL201-206, rules/evidence/) are here, one registered function per rule id
(`registry.evidence_check`), each reading what the checks of one log share (`LogRun`).

A finding's `provider` is the cloud the evidence points to: the instance type's, or the transport's (OFI on the
EFA provider: aws; gIB, FastSocket, GPUDirect-TCPX: gcp), or the `--provider` the user gave; otherwise `unknown`
(`Finding.provider` is free text; InfiniBand runs on Azure and on premises alike, so IB alone says nothing, and
aws-ofi-nccl also runs on HPE Slingshot (`cxi`) and on verbs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fabriccheck import catalog
from fabriccheck.baseline import BaselineSummary
from fabriccheck.evidence import registry
from fabriccheck.evidence.nccl_log import UNNAMED_HOST, Log, Process
from fabriccheck.evidence.nccl_messages import failure_cause
from fabriccheck.evidence.registry import Hit, evidence_check
from fabriccheck.findings import Finding
from fabriccheck.jobs import EvidenceKind, JobEvidence, LogFacts, NcclProcess
from fabriccheck.provider import transport_provider
from fabriccheck.rulebook import EvidenceRule
from fabriccheck.waivers import WaiverStatus

UNKNOWN_PROVIDER = "unknown"
AWS_OFI_NCCL = "aws-ofi-nccl"  # the NCCL plugin's name: OFI with no libfabric provider named is its own
FABRIC_FAMILIES = {"ib", "ofi", "gib", "tcpx"}
PLUGIN_FAMILIES = {"ofi", "gib", "tcpx", "fastsocket"}
# Interfaces no peer on another host can reach, or that are not the node's real network.
LOCAL_INTERFACES = ("lo", "docker", "virbr", "veth", "cni", "flannel", "cali", "br-")
# EFA types without GPUDirect RDMA, where aws-ofi-nccl stages through host memory by design: aws/aws-ofi-nccl
# src/platform-aws.cpp sets gdr_required false for p3dn.24xlarge and g5.48xlarge and lists no g type as needing it
# (fabriccheck/data/catalog.yaml carries gpudirect_rdma: false for the rows it knows).
EFA_WITHOUT_GDR = "p3dn, g5 and the other g types"
MAX_GPUS_PER_HOST = 16  # a2-megagpu-16g (16 x A100), DGX-2 / HGX-2 (16 x V100): no single host has more


@dataclass
class Evidence:
    """What the judging of one file found, before the gate's waivers and baseline; evidence.reported makes the
    report (report.Report) of it."""

    job: JobEvidence  # what the file shows: its processes or runs, typed
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Why something the user asked for could not be judged (each also a note), and the rules it kept from judging
    # (none named: every rule of the kind); any makes the report incomplete.
    not_judged: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    waivers: list[WaiverStatus] = field(default_factory=list)  # what each waiver did (gate.apply_to_evidence)
    baseline: BaselineSummary | None = None  # --baseline / --write-baseline, as a scan reports it

    @property
    def kind(self) -> EvidenceKind:
        return self.job.kind

    @property
    def source(self) -> str:
        return self.job.file

    @property
    def provider(self) -> str:
        return self.job.provider

    @property
    def complete(self) -> bool:
        """Everything asked for was judged: only then can the report pass a gate."""
        return not self.not_judged

    def cannot_judge(self, why: str, rules: tuple[str, ...] = ()) -> None:
        """Something asked for cannot be judged (by `rules`; none: by any rule of the kind): a note saying why, and
        the report is incomplete."""
        self.not_judged.append((why, rules))
        self.notes.append(why)


def new_evidence(kind: EvidenceKind, source: str, provider: str) -> Evidence:
    return Evidence(JobEvidence(kind=kind, file=source, provider=provider))


# ---------------------------------------------------------------------------------------------- logs


def _shown(items: list[str], limit: int = 4) -> str:
    return ", ".join(items[:limit]) + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


def p_hosts(procs: list[Process]) -> str:
    return _shown(sorted({p.host for p in procs}), 3)


def _plugin_asked(proc: Process) -> bool:
    """The process was asked for a plugin's network: NCCL_NET_PLUGIN, NCCL_NET naming a plugin's network, or NCCL
    saying the network it was asked for is not there (NCCL env docs: NCCL_NET "Forces NCCL to use a specific network",
    https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html)."""
    net = proc.env.get("NCCL_NET", "")
    return (
        "NCCL_NET_PLUGIN" in proc.env or (net != "" and net.lower() not in ("ib", "socket")) or bool(proc.net_not_found)
    )


def _plugin_wanted(proc: Process, log: Log) -> bool:
    return (
        _plugin_asked(proc)
        or bool(proc.plugin_loaded and proc.plugin_failures)
        or any("NET/OFI" in f for f in proc.plugin_failures)
        or bool(log.libfabric_failures)
    )


def _plugin_failure(proc: Process, log: Log) -> str | None:
    """The first failure of a plugin the process wanted, with its cause: `cause (the log says: ...)`."""
    if not _plugin_wanted(proc, log):
        return None
    # A process that only says its network is missing: the plugin that should have brought it failed to load in
    # another process of the host (the same container image), which printed why.
    same_host = [f for p in log.processes.values() if p.host == proc.host for f in p.plugin_failures]
    said = (proc.plugin_failures or log.libfabric_failures or same_host or [""])[0]
    if said:
        cause = f"{failure_cause(said)} (the log says: {said})"
        return f"network {proc.net_not_found} was asked for and not found: {cause}" if proc.net_not_found else cause
    return f"network {proc.net_not_found} was asked for and not found" if proc.net_not_found else None


def _socket_causes(proc: Process, log: Log) -> list[str]:
    causes = []
    if proc.env.get("NCCL_IB_DISABLE") == "1":
        causes.append("NCCL_IB_DISABLE=1")
    if proc.env.get("NCCL_NET", "").lower() == "socket":
        causes.append("NCCL_NET=Socket")
    if proc.env.get("NCCL_IBEXT_DISABLE") == "1":
        causes.append("NCCL_IBEXT_DISABLE=1")
    if proc.ofi_tcp:
        causes.append(f"the OFI plugin runs on libfabric's {proc.ofi_provider} provider, not a fabric's")
    plugin = _plugin_failure(proc, log)
    if plugin:
        # The plugin was the fabric's transport: that NCCL then found no IB device is its consequence.
        return [f"network plugin failed: {plugin}", *causes]
    if proc.no_verbs:
        causes.append("libibverbs not found")
    if proc.no_ib_device:
        causes.append("no InfiniBand/RDMA device found")
    return causes


def infer_provider(log: Log) -> str:
    """The cloud the log points to, by the transports and plugins its processes name that one provider's instances
    alone carry (provider.transport_provider): libfabric's EFA provider or aws-ofi-nccl's AWS configuration,
    Google's plugins; unknown otherwise."""
    procs = list(log.processes.values())
    for proc in procs:
        words = [(proc.ofi_provider or "").split(";")[0].lower(), proc.transport_family or ""]
        words += [AWS_OFI_NCCL] * proc.ofi_aws
        words += ["fastsocket" for p in proc.plugin_loaded if p.startswith("FastSocket")]
        found = next((owner for word in words if (owner := transport_provider(word)) is not None), None)
        if found is not None:
            return found
    if any(p.transport_family == "ofi" and not p.ofi_provider for p in procs) or log.libfabric_failures:
        return transport_provider(AWS_OFI_NCCL) or UNKNOWN_PROVIDER  # AWS's plugin with no provider named
    return UNKNOWN_PROVIDER


def process_summary(proc: Process) -> NcclProcess:
    return NcclProcess(
        process=proc.key,
        host=proc.host,
        pid=proc.pid,
        devices=sorted(proc.devices),
        ranks=sorted(proc.ranks),
        nranks=proc.nranks,
        nccl_version=proc.version,
        networks=list(proc.networks),
        transport=proc.inferred_transport,
        transport_family=proc.transport_family,
        channels=dict(proc.channels),
        gpudirect_rdma=proc.gdr,
        plugins_loaded=list(proc.plugin_loaded),
        plugin_missing=proc.plugin_missing,
        plugin_failures=list(proc.plugin_failures),
        ofi_provider=proc.ofi_provider,
        ofi_nics=proc.ofi_nics,
        ofi_platform=proc.ofi_platform,
        ib_nics=list(proc.ib_nics),
        socket_interfaces=list(proc.socket_nics),
        bootstrap_interface=proc.bootstrap,
        env=dict(proc.env),
        warnings=proc.warnings,
    )


def log_facts(log: Log) -> LogFacts:
    procs = list(log.processes.values())
    return LogFacts(
        lines=log.lines,
        nccl_lines=log.nccl_lines,
        hosts=log.hosts,
        nodes=log.nodes,
        nranks=log.nranks,
        nccl_versions=sorted({p.version for p in procs if p.version} | set(log.versions)),
        libfabric_failures=list(log.libfabric_failures),
        processes=[process_summary(p) for p in procs],
    )


@dataclass
class LogRun:
    """What the checks of one log share."""

    log: Log
    ev: Evidence
    cluster: str
    procs: list[Process]
    nodes: int
    multi: bool
    instance_type: str | None = None  # the type the nodes are, when the user says (nccl-tests)

    @property
    def joining(self) -> bool:
        """More than one host takes part, or will: the run spans hosts, or a communicator has more ranks than one
        host holds. NCCL puts no two ranks of a communicator on one GPU ("Duplicate GPU detected"), so ranks beyond
        the host's GPUs (the type's, when the user names it; else 16, the most any single host has: a2-megagpu-16g,
        DGX-2) are on other hosts, even when the log holds one host's lines only."""
        if self.multi:
            return True
        cap = catalog.catalog_entry(self.instance_type) if self.instance_type else None
        per_host = cap.accelerators if cap is not None and cap.accelerators > 0 else MAX_GPUS_PER_HOST
        return (self.log.nranks or 0) > per_host


@evidence_check("NCCL206")
def mixed_networks(run: LogRun) -> list[Hit]:
    families = {p.transport_family for p in run.procs if p.transport_family is not None}
    if not run.multi or len(families) < 2:
        return []
    by_family: dict[str, list[str]] = {}
    for p in run.procs:
        if p.transport_family:
            by_family.setdefault(p.transport_family, []).append(p.key)
    parts = [f"{fam}: {_shown(keys, 3)}" for fam, keys in sorted(by_family.items())]
    minority = min(by_family.values(), key=len)
    return [(minority, "ranks of one run chose different networks (" + "; ".join(parts) + ")")]


@evidence_check("NCCL201")
def sockets(run: LogRun) -> list[Hit]:
    socket = [p for p in run.procs if p.transport_family == "socket"]
    if not run.multi or not socket:
        return []
    causes = list(dict.fromkeys(c for p in socket for c in _socket_causes(p, run.log)))
    why = f" Causes seen: {'; '.join(causes)}." if causes else " The log does not say why."
    hosts = sorted({p.host for p in socket})
    span = f"{run.nodes}-node" if run.nodes > 1 else "multi-node"
    how = "libfabric's TCP provider" if all(p.ofi_tcp for p in socket) else "NET/Socket"
    return [
        (
            [p.key for p in socket],
            f"{len(socket)} NCCL process(es) on {len(hosts)} host(s) ({_shown(hosts, 3)}) send inter-node traffic over "
            f"TCP sockets ({how}) in a {span} run.{why}",
        )
    ]


@evidence_check("NCCL202")
def plugin_failed(run: LogRun) -> list[Hit]:
    failed = [p for p in run.procs if p.transport_family not in PLUGIN_FAMILIES and _plugin_failure(p, run.log)]
    # It matters where the plugin was the inter-node transport (a multi-node run) or a network asked for by name;
    # one host that asked for none runs on its NVLink/PCIe paths whatever the plugin did.
    mattered = [p for p in failed if run.multi or _plugin_asked(p)]
    if failed and not mattered:
        run.ev.notes.append(
            f"a network plugin did not start on {len(failed)} process(es) of one host, which asked for no network "
            "by name: no inter-node traffic depended on it, not a finding"
        )
    failed = mattered
    if not failed:
        return []
    first = next(f for p in failed if (f := _plugin_failure(p, run.log)))
    return [
        (
            [p.key for p in failed],
            f"{len(failed)} NCCL process(es) wanted a network plugin that did not start: {first}",
        )
    ]


@evidence_check("NCCL203")
def ib_disabled(run: LogRun) -> list[Hit]:
    disabled = [
        p for p in run.procs if p.env.get("NCCL_IB_DISABLE") == "1" and p.transport_family not in PLUGIN_FAMILIES
    ]
    if not run.multi or not disabled:
        return []
    return [
        (
            [p.key for p in disabled],
            f"NCCL_IB_DISABLE=1 is set for {len(disabled)} process(es) of a {run.nodes}-node run "
            f"({_shown([p.key for p in disabled], 3)}): NCCL's built-in transport then uses TCP sockets.",
        )
    ]


def _gdr_expected_off(proc: Process, instance_type: str | None) -> bool:
    """GPUDirect RDMA is off by design: the OFI provider says it has none here, or the instance type (the one
    aws-ofi-nccl names, else the one the user gave) is a type whose EFA has none."""
    if proc.gdr_unsupported:
        return True
    platform = proc.ofi_platform or instance_type
    cap = catalog.catalog_entry(platform) if platform else None
    return cap is not None and cap.gpudirect_rdma is False


@evidence_check("NCCL204")
def gdr_off(run: LogRun) -> list[Hit]:
    no_gdr = [p for p in run.procs if p.gdr is False and p.transport_family in FABRIC_FAMILIES]
    if not run.multi or not no_gdr:
        return []
    expected = [p for p in no_gdr if p.transport_family == "ofi" and _gdr_expected_off(p, run.instance_type)]
    if expected:
        platforms = sorted({t for p in expected if (t := p.ofi_platform or run.instance_type)})
        where = f" on {', '.join(platforms)}" if platforms else ""
        run.ev.notes.append(
            f"GPUDirect RDMA is off for {len(expected)} process(es){where}, as the EFA provider has none there "
            "(aws-ofi-nccl says `GDR not supported`, or the type's EFA has no RDMA): expected, not a finding"
        )
    judged = [p for p in no_gdr if p not in expected]
    if not judged:
        return []
    on_efa = any(p.transport_family == "ofi" for p in judged)
    ofi = f" EFA on {EFA_WITHOUT_GDR} has none: there this is expected." if on_efa else ""
    return [
        (
            [p.key for p in judged],
            f"GPUDirect RDMA is off for {len(judged)} process(es) on {p_hosts(judged)}: fabric traffic is staged "
            "through host memory (the log says `GPU Direct RDMA Disabled`, `disabling GDR`, or its network channels "
            f"lack /GDRDMA).{ofi}",
        )
    ]


@evidence_check("NCCL205")
def local_interfaces(run: LogRun) -> list[Hit]:
    local = []
    for p in run.procs:
        names = [n for n in (p.bootstrap, *p.socket_nics, p.env.get("NCCL_SOCKET_IFNAME")) if n]
        bad = sorted({n for n in names if n.lstrip("=").startswith(LOCAL_INTERFACES)})
        if bad:
            local.append((p, bad))
    if not run.joining or not local:
        return []
    names = sorted({n for _, bad in local for n in bad})
    return [
        (
            [p.key for p, _ in local],
            f"NCCL sockets use {', '.join(names)} on {len(local)} process(es): peers on other hosts cannot reach such "
            "an interface.",
        )
    ]


def judge_log(
    log: Log,
    provider: str | None = None,
    cluster: str | None = None,
    instance_type: str | None = None,
    rules: Sequence[EvidenceRule] | None = None,
) -> Evidence:
    """Findings from a log, by the nccl-log rules among `rules` (None: every built-in one). A multi-node log that
    never says which network NCCL used between nodes is not judged (incomplete, exit 2): a cut log must not read as
    "no findings"."""
    chosen = provider if provider and provider != UNKNOWN_PROVIDER else infer_provider(log)
    ev = new_evidence("nccl-log", log.path, chosen)
    procs = list(log.processes.values())
    nodes = log.nodes
    multi = nodes > 1 or any(p.channels_net for p in procs)
    ev.job.log = log_facts(log)
    if log.ends_mid_line:
        # Cut short: the lines that were not kept may name more hosts, and ranks on sockets. What is judged is
        # reported, but a cut log cannot pass a gate.
        ev.cannot_judge(
            "the log ends in the middle of a line: it was cut short; later lines are not judged (and may hold more "
            "hosts, or ranks on sockets)"
        )
    if not multi and any(p.host == UNNAMED_HOST for p in procs):
        # NCCL names every line's host (`host:pid:tid [dev] NCCL INFO`, github.com/NVIDIA/nccl src/debug.cc,
        # ncclDebugLog); lines without it were stripped of it, and
        # may come from any number of hosts: the run is not taken for a one-host run that passes.
        ev.cannot_judge(
            "lines of the log name no host (`[0] NCCL INFO ...`, without NCCL's `host:pid:tid` prefix): how many "
            "hosts the run spans is unknown, so the inter-node transport is not judged (pass the log as NCCL "
            "wrote it)"
        )
    elif not multi:
        ev.notes.append(
            "the log shows one host and no inter-node channel: there is no inter-node transport to judge "
            "(pass the log of a multi-node run)"
        )
    elif not any(p.transport_family for p in procs):
        ev.cannot_judge(
            f"the log shows a {nodes}-node run but not which network NCCL used between the nodes (no `Using "
            "network` line, no `Channel ... via NET/` line, no OFI provider): it was cut short, or NCCL_DEBUG_SUBSYS "
            "left out INIT and NET; the transport is not judged"
        )
    run = LogRun(log, ev, cluster or f"nccl-log:{Path(log.path).name}", procs, nodes, multi, instance_type)
    for rule, check in registry.chosen("nccl-log", rules):
        ev.findings += [registry.finding(rule, ev.provider, run.cluster, res, message) for res, message in check(run)]
    return ev


def transport_seen(log: Log) -> tuple[list[str], list[str]]:
    """(what says the fabric carried inter-node traffic, what says TCP sockets did), each a short quote per kind
    of evidence, for a table judged with the NCCL lines of its own file."""
    fabric: dict[str, None] = {}
    sockets: dict[str, None] = {}
    for p in log.processes.values():
        fam = p.transport_family
        name = p.inferred_transport or ""
        if fam == "socket":
            sockets[f"`Using network {name}`" if not p.ofi_tcp else f"OFI on libfabric's {p.ofi_provider}"] = None
        elif fam in FABRIC_FAMILIES:
            said = f"`Selected Provider is {p.ofi_provider}`" if name == "OFI" else f"`Using network {name}`"
            if p.channels_gdr:
                said = f"channels `via NET/{name}/.../GDRDMA`"
            fabric[said] = None
    return list(fabric), list(sockets)
