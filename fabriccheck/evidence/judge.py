"""Evidence -> `engine.Finding`s, with the facts behind them (per process, per message size) and notes.

A finding's `provider` is the cloud the evidence points to: the instance type's, or the transport's (OFI /
EFA: aws; gIB, FastSocket, GPUDirect-TCPX: gcp), or the `--provider` the user gave; otherwise `unknown`
(`Finding.provider` is free text; InfiniBand runs on Azure and on premises alike, so IB alone says nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fabriccheck import penalty
from fabriccheck.engine import Finding
from fabriccheck.evidence import expect
from fabriccheck.evidence.checks import CHECKS
from fabriccheck.evidence.nccl_log import Log, Process
from fabriccheck.evidence.nccl_tests import Parsed, Run
from fabriccheck.model import UNKNOWN_ACCOUNT

UNKNOWN_PROVIDER = "unknown"
FAMILY_PROVIDER = {"ofi": "aws", "gib": "gcp", "tcpx": "gcp", "fastsocket": "gcp"}
FABRIC_FAMILIES = {"ib", "ofi", "gib", "tcpx"}
PLUGIN_FAMILIES = {"ofi", "gib", "tcpx", "fastsocket"}
# Interfaces no peer on another host can reach, or that are not the node's real network.
LOCAL_INTERFACES = ("lo", "docker", "virbr", "veth", "cni", "flannel", "cali", "br-")

# nccl-tests judging thresholds (measured / modelled healthy busbw at the largest bandwidth-bound size).
# TCP: on 2 x p4d all_reduce busbw falls from ~77 GB/s (4 EFA) to 4-8 GB/s over TCP (skypilot-org/skypilot
# examples/aws_efa/README.md, quoted in issue 9): 0.05-0.10 of healthy; 0.25 separates it from any partial
# state with a margin. PARTIAL: the model is within 25% of published healthy rows at 4+ nodes but overstates
# 2-node busbw up to 1.9x (issue 9, "What was measured on main"); 0.5 keeps healthy 2-node runs clean.
TCP_RATIO = 0.25
PARTIAL_RATIO = 0.5
TCP_MARGIN = 1.5  # measured within 1.5x of the modelled TCP busbw also counts as TCP
# Below this message size a collective is latency-bound and says little about bandwidth (nccl-tests
# doc/PERFORMANCE.md: bandwidth is read at large sizes).
MIN_JUDGED_BYTES = 32 * 2**20


def finding(check_id: str, provider: str, cluster: str, resources: list[str], message: str) -> Finding:
    check = CHECKS[check_id]
    return Finding(
        rule=check.id,
        title=check.title,
        severity=check.severity,
        category=check.category,
        provider=provider,
        account=UNKNOWN_ACCOUNT,
        cluster=cluster,
        resources=resources,
        message=message,
        remediation=check.remediation,
        effect=check.effect,
        references=list(check.references),
    )


@dataclass
class Evidence:
    kind: str  # "nccl-log" or "nccl-tests"
    source: str
    provider: str
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    complete: bool = True  # False: something the user asked for could not be judged
    details: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------- logs


def _shown(items: list[str], limit: int = 4) -> str:
    return ", ".join(items[:limit]) + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


def _socket_causes(proc: Process, log: Log) -> list[str]:
    causes = []
    if proc.env.get("NCCL_IB_DISABLE") == "1":
        causes.append("NCCL_IB_DISABLE=1")
    if proc.env.get("NCCL_NET", "").lower() == "socket":
        causes.append("NCCL_NET=Socket")
    if proc.env.get("NCCL_IBEXT_DISABLE") == "1":
        causes.append("NCCL_IBEXT_DISABLE=1")
    if proc.no_verbs:
        causes.append("libibverbs not found")
    if proc.no_ib_device:
        causes.append("no InfiniBand/RDMA device found")
    if proc.plugin_failures and _plugin_wanted(proc, log):
        causes.append("network plugin failed: " + proc.plugin_failures[0])
    return causes


def _plugin_wanted(proc: Process, log: Log) -> bool:
    net = proc.env.get("NCCL_NET", "")
    return (
        "NCCL_NET_PLUGIN" in proc.env
        or (net != "" and net.lower() not in ("ib", "socket"))
        or bool(proc.plugin_loaded and proc.plugin_failures)
        or any("NET/OFI" in f for f in proc.plugin_failures)
        or bool(log.libfabric_failures)
    )


def infer_provider(log: Log) -> str:
    for proc in log.processes.values():
        fam = proc.transport_family
        if fam in FAMILY_PROVIDER:
            return FAMILY_PROVIDER[fam]
        if proc.ofi_provider or any(p.startswith("aws-ofi-nccl") for p in proc.plugin_loaded):
            return "aws"
        if any(p.startswith("FastSocket") for p in proc.plugin_loaded):
            return "gcp"
    if log.libfabric_failures:
        return "aws"
    return UNKNOWN_PROVIDER


def process_summary(proc: Process) -> dict[str, Any]:
    return {
        "process": proc.key,
        "host": proc.host,
        "pid": proc.pid,
        "devices": sorted(proc.devices),
        "ranks": sorted(proc.ranks),
        "nranks": proc.nranks,
        "nccl_version": proc.version,
        "networks": list(proc.networks),
        "transport": proc.inferred_transport,
        "transport_family": proc.transport_family,
        "channels": dict(proc.channels),
        "gpudirect_rdma": proc.gdr,
        "plugins_loaded": list(proc.plugin_loaded),
        "plugin_missing": proc.plugin_missing,
        "plugin_failures": proc.plugin_failures,
        "ofi_provider": proc.ofi_provider,
        "ofi_nics": proc.ofi_nics,
        "ib_nics": list(proc.ib_nics),
        "socket_interfaces": list(proc.socket_nics),
        "bootstrap_interface": proc.bootstrap,
        "env": proc.env,
        "warnings": proc.warnings,
    }


def judge_log(log: Log, provider: str | None = None) -> Evidence:
    cluster = f"nccl-log:{Path(log.path).name}"
    chosen = provider or infer_provider(log)
    ev = Evidence("nccl-log", log.path, chosen)
    procs = list(log.processes.values())
    nodes = log.nodes
    multi = nodes > 1 or any(p.channels_net for p in procs)
    ev.details = {
        "lines": log.lines,
        "nccl_lines": log.nccl_lines,
        "hosts": log.hosts,
        "nodes": nodes,
        "nranks": log.nranks,
        "nccl_versions": sorted({p.version for p in procs if p.version} | set(log.versions)),
        "libfabric_failures": log.libfabric_failures,
        "processes": [process_summary(p) for p in procs],
    }
    if log.ends_mid_line:
        ev.notes.append("the log ends in the middle of a line: it was cut short; later lines are not judged")
    if not multi:
        ev.notes.append(
            "the log shows one host and no inter-node channel: there is no inter-node transport to judge "
            "(pass the log of a multi-node run)"
        )

    families = {p.transport_family for p in procs if p.transport_family is not None}
    if multi and len(families) > 1:
        by_family: dict[str, list[str]] = {}
        for p in procs:
            if p.transport_family:
                by_family.setdefault(p.transport_family, []).append(p.key)
        parts = [f"{fam}: {_shown(keys, 3)}" for fam, keys in sorted(by_family.items())]
        minority = min(by_family.values(), key=len)
        ev.findings.append(
            finding(
                "NCCL206",
                chosen,
                cluster,
                minority,
                "ranks of one run chose different networks (" + "; ".join(parts) + ")",
            )
        )

    socket = [p for p in procs if p.transport_family == "socket"]
    if multi and socket:
        causes = sorted({c for p in socket for c in _socket_causes(p, log)})
        why = f" Causes seen: {'; '.join(causes)}." if causes else " The log does not say why."
        hosts = sorted({p.host for p in socket})
        span = f"{nodes}-node" if nodes > 1 else "multi-node"
        ev.findings.append(
            finding(
                "NCCL201",
                chosen,
                cluster,
                [p.key for p in socket],
                f"{len(socket)} NCCL process(es) on {len(hosts)} host(s) ({_shown(hosts, 3)}) send inter-node "
                f"traffic over TCP sockets (NET/Socket) in a {span} run.{why}",
            )
        )

    failed = [p for p in procs if (p.plugin_failures or log.libfabric_failures) and _plugin_wanted(p, log)]
    failed = [p for p in failed if p.transport_family not in PLUGIN_FAMILIES]
    if failed:
        first = next((p.plugin_failures[0] for p in failed if p.plugin_failures), None) or log.libfabric_failures[0]
        ev.findings.append(
            finding(
                "NCCL202",
                chosen,
                cluster,
                [p.key for p in failed],
                f"{len(failed)} NCCL process(es) wanted a network plugin that did not start: {first}",
            )
        )

    disabled = [p for p in procs if p.env.get("NCCL_IB_DISABLE") == "1" and p.transport_family not in PLUGIN_FAMILIES]
    if multi and disabled:
        ev.findings.append(
            finding(
                "NCCL203",
                chosen,
                cluster,
                [p.key for p in disabled],
                f"NCCL_IB_DISABLE=1 is set for {len(disabled)} process(es) of a {nodes}-node run "
                f"({_shown([p.key for p in disabled], 3)}): NCCL's built-in transport then uses TCP sockets.",
            )
        )

    no_gdr = [p for p in procs if p.gdr is False and p.transport_family in FABRIC_FAMILIES]
    if multi and no_gdr:
        ev.findings.append(
            finding(
                "NCCL204",
                chosen,
                cluster,
                [p.key for p in no_gdr],
                f"GPUDirect RDMA is off for {len(no_gdr)} process(es) on {p_hosts(no_gdr)}: fabric traffic is "
                "staged through host memory (the log says `GPU Direct RDMA Disabled`, `disabling GDR`, or its "
                "network channels lack /GDRDMA).",
            )
        )

    local = []
    for p in procs:
        names = [n for n in (p.bootstrap, *p.socket_nics, p.env.get("NCCL_SOCKET_IFNAME")) if n]
        bad = sorted({n for n in names if n.lstrip("=").startswith(LOCAL_INTERFACES)})
        if bad:
            local.append((p, bad))
    if multi and local:
        names = sorted({n for _, bad in local for n in bad})
        ev.findings.append(
            finding(
                "NCCL205",
                chosen,
                cluster,
                [p.key for p, _ in local],
                f"NCCL sockets use {', '.join(names)} on {len(local)} process(es): peers on other hosts cannot "
                "reach such an interface.",
            )
        )
    return ev


def p_hosts(procs: list[Process]) -> str:
    return _shown(sorted({p.host for p in procs}), 3)


# ---------------------------------------------------------------------------------------------- nccl-tests


def _judge_run(
    run: Run,
    index: int,
    parsed: Parsed,
    fabric: penalty.FabricDescription | None,
    nodes_opt: int | None,
    op_opt: str | None,
    ev: Evidence,
) -> dict[str, Any]:
    cluster = f"nccl-tests:{Path(parsed.path).name}" + (f"#{index + 1}" if len(parsed.runs) > 1 else "")
    op = op_opt or run.op
    hosts = run.hosts
    detail: dict[str, Any] = {
        "run": index + 1,
        "op": op,
        "op_from": "option" if op_opt else run.op_source,
        "hosts": hosts,
        "ranks": run.ranks or None,
        "devices": [d.name for d in run.devices[:1]],
        "rows": len(run.rows),
        "avg_busbw_gbytes_per_s": run.avg_busbw,
        "complete": run.complete,
        "comparisons": [],
        "verdict": None,
    }
    label = f"run {index + 1}" if len(parsed.runs) > 1 else "the run"
    if not run.complete:
        ev.notes.append(f"{label}: no `# Avg bus bandwidth` line: the test did not finish or the file was cut short")
    if run.duplicate_rank_zero:
        ev.notes.append(
            f"{label}: several processes each call themselves Rank 0: nccl-tests was built without MPI=1 and "
            "started by mpirun, so each process tested alone and no inter-node traffic was measured"
        )
    # An integer cell is a count (#wrong); old versions print a max error as a float (5e-07), never counted.
    wrong = run.wrong if run.error_column != "error" else 0
    if wrong or run.out_of_bounds_failed:
        what = f"{wrong} wrong value(s)" if wrong else f"{run.out_of_bounds} out-of-bounds value(s) FAILED"
        ev.findings.append(finding("NCCL212", ev.provider, cluster, [cluster], f"{label} reported {what}."))
    if fabric is None:
        return detail
    nodes = nodes_opt if nodes_opt is not None else (len(hosts) if hosts and not run.duplicate_rank_zero else None)
    if nodes is None:
        ev.complete = False
        ev.notes.append(
            f"{label}: the file names no hosts (no `#  Rank .. on HOST` lines): give --nodes N to compare it"
        )
        return detail
    if nodes_opt is not None and hosts and len(hosts) != nodes_opt and not run.duplicate_rank_zero:
        ev.notes.append(f"{label}: --nodes {nodes_opt} but the file names {len(hosts)} host(s); judged as {nodes_opt}")
    detail["nodes"] = nodes
    if nodes < 2:
        ev.notes.append(f"{label}: one node: NVLink only, the inter-node fabric was not exercised")
        return detail
    if (
        run.ranks
        and not run.duplicate_rank_zero
        and run.ranks % nodes == 0
        and run.ranks // nodes != fabric.gpus_per_node
    ):
        ev.notes.append(
            f"{label}: {run.ranks // nodes} rank(s) per node, not the fabric's {fabric.gpus_per_node} GPUs: "
            "judged with the ranks the test used"
        )
        fabric = replace(fabric, gpus_per_node=run.ranks // nodes)
    if op is None or op not in expect.COMPARED_OPS:
        ev.complete = False
        ev.notes.append(
            f"{label}: {'the collective is unknown' if op is None else f'no bandwidth model for {op}'}: give --op "
            f"({', '.join(expect.COMPARED_OPS)}) or test one of those"
        )
        return detail
    judged = [r for r in run.rows if r.size >= MIN_JUDGED_BYTES and r.best_busbw is not None]
    # The verdict reads the two largest sizes: the most bandwidth-bound, and where a fallback shows (a run
    # can look healthy at 32 MiB and collapse above it, NVIDIA/nccl#1453). Every judged size is listed.
    top_sizes = sorted({r.size for r in judged})[-2:]
    if not judged:
        largest = max(r.size for r in run.rows)
        ev.complete = False
        ev.notes.append(
            f"{label}: largest message {largest:,} B is latency-bound; rerun with -e 1G or more (at least "
            f"{MIN_JUDGED_BYTES:,} B is judged)"
        )
        return detail
    worst_verdict = None
    best_row = None
    for row in judged:
        try:
            expected = expect.healthy_busbw(fabric, nodes, op, float(row.size))
        except ValueError as exc:
            ev.complete = False
            ev.notes.append(f"{label}: no healthy expectation: {exc}")
            return detail
        tcp = expect.tcp_busbw(fabric, nodes, op, float(row.size))
        measured = row.best_busbw or 0.0
        ratio = measured / expected if expected > 0 else 0.0
        detail["comparisons"].append(
            {
                "bytes": row.size,
                "busbw_gbytes_per_s": measured,
                "expected_busbw_gbytes_per_s": round(expected, 3),
                "tcp_busbw_gbytes_per_s": round(tcp, 3) if tcp is not None else None,
                "ratio": round(ratio, 3),
            }
        )
        if row.size in top_sizes and (best_row is None or measured > best_row[1]):
            best_row = (row.size, measured, expected, tcp, ratio)
    assert best_row is not None
    size, measured, expected, tcp, ratio = best_row
    two = (
        " (at 2 nodes nccl-tests' busbw formula overstates what the network carries; read algbw too)"
        if nodes == 2
        else ""
    )
    where = (
        f"{nodes} x {fabric.instance_type or f'{fabric.gpus_per_node} {fabric.accelerator}'} ({fabric.fabric.value})"
    )
    tcp_text = f"; TCP on the ordinary NIC would give about {tcp:.1f}" if tcp is not None else ""
    if ratio < TCP_RATIO or (tcp is not None and measured <= tcp * TCP_MARGIN):
        detail["verdict"] = worst_verdict = "tcp-fallback"
        ev.findings.append(
            finding(
                "NCCL210",
                ev.provider,
                cluster,
                [cluster],
                f"{op} busbw peaks at {measured:.1f} GB/s ({size:,} B) where {expected:.1f} GB/s is expected on "
                f"{where}{tcp_text}: the fabric is not used{two}.",
            )
        )
    elif ratio < PARTIAL_RATIO:
        detail["verdict"] = worst_verdict = "partial"
        ev.findings.append(
            finding(
                "NCCL211",
                ev.provider,
                cluster,
                [cluster],
                f"{op} busbw peaks at {measured:.1f} GB/s ({size:,} B), {ratio:.0%} of the {expected:.1f} GB/s "
                f"expected on {where}{tcp_text}{two}.",
            )
        )
    else:
        detail["verdict"] = worst_verdict or "healthy"
    return detail


def judge_tests(
    parsed: Parsed,
    fabric: penalty.FabricDescription | None,
    nodes: int | None,
    provider: str,
    op: str | None = None,
) -> Evidence:
    ev = Evidence("nccl-tests", parsed.path, provider)
    if parsed.skipped_partial:
        ev.notes.append(f"{parsed.skipped_partial} row(s) cut short were skipped (the file was truncated)")
    if fabric is None:
        ev.notes.append(
            "no fabric given (--instance-type T --nodes N, or --gpu ... --transport ...): bandwidth not compared"
        )
    runs = [r for r in parsed.runs if r.rows]
    ev.details = {
        "fabric": _fabric_dict(fabric),
        "runs": [_judge_run(r, i, parsed, fabric, nodes, op, ev) for i, r in enumerate(runs)],
    }
    return ev


def _fabric_dict(fabric: penalty.FabricDescription | None) -> dict[str, Any] | None:
    if fabric is None:
        return None
    return {
        "instance_type": fabric.instance_type,
        "accelerator": fabric.accelerator,
        "gpus_per_node": fabric.gpus_per_node,
        "fabric": fabric.fabric.value,
        "nics": fabric.nics,
        "gbps_per_nic": fabric.gbps_per_nic,
        "gpudirect_rdma": fabric.gpudirect_rdma,
        "ethernet_gbps": fabric.ethernet_gbps,
    }
