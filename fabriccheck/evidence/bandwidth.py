"""nccl-tests tables -> `findings.Finding`s: measured bus bandwidth against what the fabric should give.

Each run's large messages are compared with the penalty model's healthy busbw for the fabric (`expect`), and with
what TCP over the ordinary NIC would give. When the same file holds NCCL_DEBUG=INFO lines, they are judged too
(`judge.judge_log`) and say which transport carried the traffic: a run whose NCCL lines show the fabric in use is
never called a TCP fallback, however low its bandwidth, and one whose lines show sockets is, whatever the ratio.
The checks of the nccl-tests rules (NCCL210-212, rules/evidence/) are here, one registered function per rule id,
each reading one run (`RunCheck`).
Without such lines, "TCP fallback" needs the bandwidth at or below the TCP figure and that figure clearly below
the fabric's; where the ordinary NIC is about as fast as the fabric (p3dn, g4dn: 100 Gbps of each) low bandwidth
alone is "slower than expected".

Bandwidth no run can measure (nan, inf, negative, above twice what the node's links carry) is flagged as suspect
and makes the run incomplete: a damaged table never reads as healthy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fabriccheck import catalog, penalty
from fabriccheck.evidence import expect, registry
from fabriccheck.evidence.judge import Evidence, infer_provider, judge_log, new_evidence, transport_seen
from fabriccheck.evidence.nccl_log import Log
from fabriccheck.evidence.nccl_tests import Parsed, Row, Run
from fabriccheck.evidence.registry import Hit, evidence_check
from fabriccheck.jobs import BusbwComparison, ExpectedFabric, TestRun, TransportSeen, Verdict
from fabriccheck.penalty import releases
from fabriccheck.rulebook import EvidenceRule

# nccl-tests judging thresholds (measured / modelled healthy busbw at the largest bandwidth-bound size).
# TCP: on 2 x p4d all_reduce busbw falls from ~77 GB/s (4 EFA) to 4-8 GB/s over TCP (skypilot-org/skypilot
# examples/aws_efa/README.md, quoted in issue 9): 0.05-0.10 of healthy. PARTIAL: the model is within 25% of
# published healthy rows at 4+ nodes but overstates 2-node busbw up to 1.9x (issue 9, "What was measured on main");
# 0.5 keeps healthy 2-node runs clean.
TCP_RATIO = 0.25
PARTIAL_RATIO = 0.5
TCP_MARGIN = 1.5  # measured within 1.5x of the modelled TCP busbw counts as TCP level
# Below this message size a collective is latency-bound and says little about bandwidth (nccl-tests
# doc/PERFORMANCE.md: bandwidth is read at large sizes).
MIN_JUDGED_BYTES = 32 * 2**20
# A busbw no GPU reaches: ten times the fastest published per-GPU link, NVLink 5 at 900 GB/s one way (NVIDIA HGX
# B200/B300 and GB200 NVL72 specifications: 1.8 TB/s per GPU both ways). Used when no fabric is given.
PLAUSIBLE_MAX_GBYTES = 10_000.0
# With a fabric: busbw above twice the faster of the node's fabric line rate and its per-GPU NVLink/PCIe figure is
# not a measurement of it (2-node trees read up to 2(n-1)/n x the line rate, nccl-tests doc/PERFORMANCE.md).
SUSPECT_FACTOR = 2.0
# The rules a comparison with the fabric decides: a run that cannot be compared leaves them unjudged (NCCL212, the
# file's own count of wrong values, is judged all the same).
COMPARED = ("NCCL210", "NCCL211")


def ceiling(fabric: penalty.FabricDescription | None) -> tuple[float, str]:
    """The busbw (GB/s) above which a row is not a measurement of `fabric`, and how it was set."""
    if fabric is None:
        return PLAUSIBLE_MAX_GBYTES, "ten times the fastest per-GPU link any GPU has"
    line = max(fabric.fabric_gbps, fabric.ethernet_gbps or 0.0) / 8
    accel = catalog.accelerator(fabric.accelerator)
    nvlink = accel.nvlink_gbytes if accel is not None and accel.nvlink_gbytes else 0.0
    if not line and not nvlink:
        return PLAUSIBLE_MAX_GBYTES, "ten times the fastest per-GPU link any GPU has"
    top = max(line, nvlink)
    what = "its fabric line rate" if line >= nvlink else "its per-GPU NVLink/PCIe"
    return SUSPECT_FACTOR * top, f"twice {what}, {top:,.0f} GB/s"


@dataclass
class _Table:
    """What the runs of one file share: the options, the fabric, what the file's NCCL lines say."""

    parsed: Parsed
    fabric: penalty.FabricDescription | None
    nodes: int | None
    op: str | None
    ev: Evidence
    rules: Sequence[EvidenceRule] | None = None  # the rules chosen (None: every built-in one)
    fabric_seen: list[str] = field(default_factory=list)
    sockets_seen: list[str] = field(default_factory=list)
    nccl_version: tuple[int, int] | None = None  # the release the file's NCCL lines print (None: the default)


@dataclass(frozen=True)
class Comparison:
    """A run's best large-message row against the fabric, and the verdict it gives (NCCL210 and NCCL211 read it)."""

    table: _Table
    verdict: Verdict  # tcp-fallback, slower-than-expected, healthy
    against: str  # "all_reduce busbw peaks at ... where ... is expected on ..."
    tcp_text: str
    two: str  # the 2-node caveat, or ""
    ratio: float
    tcp: float | None
    tcp_level: bool


@dataclass(frozen=True)
class RunCheck:
    """What the checks of one nccl-tests run read."""

    run: Run
    label: str
    run_id: str  # the resource its findings name: nccl-tests:FILE, or nccl-tests:FILE#N of a file of several runs
    comparison: Comparison | None  # None: the bandwidth was not compared


def _suspect(run: Run, table: _Table, label: str) -> list[Row]:
    limit, why = ceiling(table.fabric)
    bad = [r for r in run.rows if r.suspect or (r.best_busbw or 0.0) > limit]
    if bad:
        first = bad[0]
        what = first.suspect or f"busbw {first.best_busbw:,.2f} GB/s"
        where = table.fabric.instance_type if table.fabric and table.fabric.instance_type else "this fabric"
        bound = f"above {limit:,.0f} GB/s ({why}) for {where}" if not first.suspect else "not a number a run measures"
        table.ev.cannot_judge(
            f"{label}: {len(bad)} row(s) are not measurements, e.g. {what} at {first.size:,} B ({bound}): a damaged "
            "file, or the wrong --instance-type; those rows are not judged and the run cannot pass",
            COMPARED,
        )
    return bad


def _nodes(run: Run, table: _Table, label: str) -> int | None:
    hosts = run.hosts
    nodes = table.nodes if table.nodes is not None else (len(hosts) if hosts and not run.duplicate_rank_zero else None)
    if nodes is None:
        table.ev.cannot_judge(
            f"{label}: the file names no hosts (no `#  Rank .. on HOST` lines): give --nodes N to compare it", COMPARED
        )
    elif table.nodes is not None and hosts and len(hosts) != table.nodes and not run.duplicate_rank_zero:
        table.ev.notes.append(
            f"{label}: --nodes {table.nodes} but the file names {len(hosts)} host(s); judged as {table.nodes}"
        )
    return nodes


def _op(run: Run, table: _Table, label: str) -> str | None:
    op = table.op or run.op
    if table.op and run.op and run.op_source == "command" and run.op != table.op:
        table.ev.notes.append(f"{label}: --op {table.op} overrides the {run.op} the file names")
    if op is not None and op in expect.COMPARED_OPS:
        return op
    if op is None:
        fits = f" (its columns fit {' or '.join(run.op_candidates)})" if run.op_candidates else ""
        table.ev.cannot_judge(
            f"{label}: the file does not name the collective (no `*_perf` command, no `# Collective test starting` "
            f"line){fits}: give --op ({', '.join(expect.COMPARED_OPS)})",
            COMPARED,
        )
    else:
        table.ev.cannot_judge(
            f"{label}: no bandwidth model for {op}: test one of {', '.join(expect.COMPARED_OPS)} to compare", COMPARED
        )
    return None


def _comparison(table: _Table, best: dict[str, Any], op: str, nodes: int) -> Comparison:
    """The run's verdict from its best large-message row, with the words its finding (NCCL210 or NCCL211) uses."""
    fabric = table.fabric
    assert fabric is not None
    size, measured, expected, tcp = best["bytes"], best["measured"], best["expected"], best["tcp"]
    ratio = measured / expected if expected > 0 else 0.0
    two = " (at 2 nodes nccl-tests' busbw formula overstates what the network carries; read algbw too)"
    name = fabric.instance_type or f"{fabric.gpus_per_node} {fabric.accelerator}"
    where = f"{nodes} x {name} ({fabric.fabric.value})"
    tcp_text = f"; TCP on the ordinary NIC would give about {tcp:.1f}" if tcp is not None else ""
    against = f"{op} busbw peaks at {measured:.1f} GB/s ({size:,} B) where {expected:.1f} GB/s is expected on {where}"
    tcp_level = tcp is not None and measured <= tcp * TCP_MARGIN
    fabric_faster = tcp is not None and tcp * TCP_MARGIN <= expected * PARTIAL_RATIO
    said_sockets = bool(table.sockets_seen and not table.fabric_seen)
    verdict: Verdict
    if said_sockets or (not table.fabric_seen and tcp_level and fabric_faster):
        verdict = "tcp-fallback"
    else:
        verdict = "healthy" if ratio >= PARTIAL_RATIO else "slower-than-expected"
    return Comparison(table, verdict, against, tcp_text, two if nodes == 2 else "", ratio, tcp, tcp_level)


@evidence_check("NCCL212")
def wrong_results(check: RunCheck) -> list[Hit]:
    run = check.run
    # An integer cell is a count (#wrong); old versions print a max error as a float (5e-07), never counted.
    wrong = run.wrong if run.error_column != "error" else 0
    if not (wrong or run.out_of_bounds_failed):
        return []
    what = f"{wrong} wrong value(s)" if wrong else f"{run.out_of_bounds} out-of-bounds value(s) FAILED"
    return [([check.run_id], f"{check.label} reported {what}.")]


@evidence_check("NCCL210")
def tcp_fallback(check: RunCheck) -> list[Hit]:
    c = check.comparison
    if c is None or c.verdict != "tcp-fallback":
        return []
    table = c.table
    if table.sockets_seen and not table.fabric_seen:
        said = ", ".join(table.sockets_seen)
        message = f"{c.against}{c.tcp_text}: the NCCL lines in the file say {said}: the fabric is not used{c.two}."
    else:
        message = f"{c.against}{c.tcp_text}: the fabric is not used{c.two}."
    return [([check.run_id], message)]


@evidence_check("NCCL211")
def slower_than_expected(check: RunCheck) -> list[Hit]:
    c = check.comparison
    if c is None or c.verdict != "slower-than-expected":
        return []
    if c.table.fabric_seen:
        why = f", although the NCCL lines in the file show the fabric in use ({', '.join(c.table.fabric_seen)})"
    elif c.tcp_level or c.ratio < TCP_RATIO:
        unknown = (
            "TCP on the ordinary NIC would be about as fast here" if c.tcp is not None else "no ordinary-NIC figure"
        )
        why = (
            f": {unknown}, so the bandwidth alone cannot tell a TCP fallback; rerun with NCCL_DEBUG=INFO and read the "
            "log with `fabriccheck nccl-log`"
        )
    else:
        why = ""
    return [([check.run_id], f"{c.against} ({c.ratio:.0%} of it){c.tcp_text}{why}{c.two}.")]


def _fabric_of_run(run: Run, table: _Table, label: str, nodes: int) -> penalty.FabricDescription:
    """The fabric, with the ranks per node the test used when they are not the fabric's GPUs."""
    fabric = table.fabric
    assert fabric is not None
    if (
        run.ranks
        and not run.duplicate_rank_zero
        and run.ranks % nodes == 0
        and run.ranks // nodes != fabric.gpus_per_node
    ):
        table.ev.notes.append(
            f"{label}: {run.ranks // nodes} rank(s) per node, not the fabric's {fabric.gpus_per_node} GPUs: judged "
            "with the ranks the test used"
        )
        fabric = replace(fabric, gpus_per_node=run.ranks // nodes)
    return fabric


def _compare(run: Run, table: _Table, label: str, detail: TestRun, bad: list[Row]) -> Comparison | None:
    """Compare each judged size; the verdict reads the two largest sizes: the most bandwidth-bound, and where a
    fallback shows (a run can look healthy at 32 MiB and collapse above it, NVIDIA/nccl#1453)."""
    nodes = _nodes(run, table, label)
    if nodes is None:
        return None
    detail.nodes = nodes
    if nodes < 2:
        table.ev.notes.append(f"{label}: one node: NVLink only, the inter-node fabric was not exercised")
        return None
    fabric = _fabric_of_run(run, table, label, nodes)
    op = _op(run, table, label)
    if op is None:
        return None
    judged = [r for r in run.rows if r.size >= MIN_JUDGED_BYTES and r.best_busbw is not None and r not in bad]
    if not judged:
        if not bad:
            table.ev.cannot_judge(
                f"{label}: largest message {max(r.size for r in run.rows):,} B is latency-bound; rerun with -e 1G or "
                f"more (at least {MIN_JUDGED_BYTES:,} B is judged)",
                COMPARED,
            )
        return None
    best = _best_row(judged, table, label, detail, fabric, nodes, op)
    if best is None:
        return None
    comparison = _comparison(replace(table, fabric=fabric), best, op, nodes)
    detail.verdict = "suspect" if bad else comparison.verdict  # a damaged table is never healthy
    return comparison


def _best_row(
    judged: list[Row],
    table: _Table,
    label: str,
    detail: TestRun,
    fabric: penalty.FabricDescription,
    nodes: int,
    op: str,
) -> dict[str, Any] | None:
    """Each judged size against the fabric (in `detail`); the best row of the two largest sizes, None when the
    fabric has no healthy expectation."""
    top_sizes = sorted({r.size for r in judged})[-2:]
    best: dict[str, Any] | None = None
    for row in judged:
        try:
            expected = expect.healthy_busbw(fabric, nodes, op, float(row.size), table.nccl_version)
        except ValueError as exc:
            ceiling = expect.line_rate_busbw(fabric)
            if ceiling is None:
                table.ev.cannot_judge(f"{label}: no healthy expectation: {exc}", COMPARED)
                return None
            expected = ceiling
            note = (
                f"{label}: judged against the fabric's published line rate alone ({fabric.fabric_gbps:g} Gbps: "
                f"{ceiling:.2f} GB/s busbw healthy), one GPU per node; {exc}"
            )
            if note not in table.ev.notes:
                table.ev.notes.append(note)
        tcp = expect.tcp_busbw(fabric, nodes, op, float(row.size))
        tcp_worst = expect.tcp_busbw_worst(fabric, nodes, op, float(row.size))
        measured = row.best_busbw or 0.0
        ratio = measured / expected if expected > 0 else 0.0
        detail.comparisons.append(
            BusbwComparison(
                bytes=row.size,
                busbw_gbytes_per_s=measured,
                expected_busbw_gbytes_per_s=round(expected, 3),
                tcp_busbw_gbytes_per_s=round(tcp, 3) if tcp is not None else None,
                tcp_busbw_worst_gbytes_per_s=round(tcp_worst, 3) if tcp_worst is not None else None,
                ratio=round(ratio, 3),
            )
        )
        if row.size in top_sizes and (best is None or measured > best["measured"]):
            best = {"bytes": row.size, "measured": measured, "expected": expected, "tcp": tcp}
    return best


def _judge_run(run: Run, index: int, table: _Table) -> TestRun:
    parsed = table.parsed
    run_id = file_cluster(parsed) + (f"#{index + 1}" if len(parsed.runs) > 1 else "")
    label = f"run {index + 1}" if len(parsed.runs) > 1 else "the run"
    detail = TestRun(
        run=index + 1,
        op=table.op or run.op,
        op_from="option" if table.op else run.op_source,
        op_candidates=list(run.op_candidates) if not (table.op or run.op) else [],
        hosts=run.hosts,
        ranks=run.ranks or None,
        devices=[d.name for d in run.devices[:1]],
        rows=len(run.rows),
        avg_busbw_gbytes_per_s=run.avg_busbw,
        complete=run.complete,
    )
    if not run.complete:
        table.ev.notes.append(
            f"{label}: no `# Avg bus bandwidth` line: the test did not finish or the file was cut short"
        )
    if run.duplicate_rank_zero:
        table.ev.notes.append(
            f"{label}: several processes each call themselves Rank 0: nccl-tests was built without MPI=1 and "
            "started by mpirun, so each process tested alone and no inter-node traffic was measured"
        )
    bad = _suspect(run, table, label)
    if bad:
        detail.verdict = "suspect"
    comparison = _compare(run, table, label, detail, bad) if table.fabric is not None else None
    check = RunCheck(run, label, run_id, comparison)
    cluster = file_cluster(parsed)  # the job the file shows; a run is a resource of it
    for rule, run_check in registry.chosen("nccl-tests", table.rules):
        found = run_check(check)
        table.ev.findings += [registry.finding(rule, table.ev.provider, cluster, r, m) for r, m in found]
    return detail


def file_cluster(parsed: Parsed) -> str:
    """The id of the job an nccl-tests file shows: its findings' cluster."""
    return f"nccl-tests:{Path(parsed.path).name}"


def _with_log(ev: Evidence, table: _Table, log: Log) -> None:
    """Judge the NCCL lines of the table's own file, and keep what they say about the transport."""
    instance_type = table.fabric.instance_type if table.fabric else None
    found = judge_log(log, ev.provider, file_cluster(table.parsed), instance_type, table.rules)
    ev.findings.extend(found.findings)
    table.fabric_seen, table.sockets_seen = transport_seen(log)
    ev.job.nccl_lines = TransportSeen(
        processes=len(log.processes),
        fabric_seen=table.fabric_seen,
        sockets_seen=table.sockets_seen,
        findings=[f.rule for f in found.findings],
    )
    seen = table.fabric_seen + table.sockets_seen
    if seen:
        ev.notes.append(f"the file's NCCL lines say which transport ran: {', '.join(seen)}")
    printed = [p.version for p in log.processes.values() if p.version] + log.versions
    versions = sorted({v for v in map(releases.nccl_version_of, printed) if v is not None})
    if versions:
        table.nccl_version = versions[0]  # mixed releases in one job: the oldest decides what all of them run
        ev.notes.append(
            f"judged as NCCL {releases.version_label(versions[0])}, the release the file's NCCL lines print (it "
            "decides the algorithm NCCL picks at 2 nodes)"
        )


def judge_tests(
    parsed: Parsed,
    fabric: penalty.FabricDescription | None,
    nodes: int | None,
    provider: str,
    op: str | None = None,
    log: Log | None = None,
    rules: Sequence[EvidenceRule] | None = None,
) -> Evidence:
    """Findings from an nccl-tests file: each run's bandwidth, and the NCCL lines of the same file (`log`), by the
    rules among `rules` (None: every built-in one)."""
    if log is not None and log.processes and provider == "unknown":
        provider = infer_provider(log)
    ev = new_evidence("nccl-tests", parsed.path, provider)
    table = _Table(parsed, fabric, nodes, op, ev, rules)
    if log is not None and log.processes:
        _with_log(ev, table, log)
    if parsed.skipped_partial:
        ev.notes.append(f"{parsed.skipped_partial} row(s) cut short were skipped (the file was truncated)")
    if fabric is None:
        ev.notes.append(
            "no fabric given (--instance-type T --nodes N, or --gpu ... --transport ...): bandwidth not compared"
        )
    runs = [r for r in parsed.runs if r.rows]
    ev.job.fabric = _fabric_of(fabric)
    ev.job.runs = [_judge_run(r, i, table) for i, r in enumerate(runs)]
    return ev


def _fabric_of(fabric: penalty.FabricDescription | None) -> ExpectedFabric | None:
    if fabric is None:
        return None
    return ExpectedFabric(
        instance_type=fabric.instance_type,
        accelerator=fabric.accelerator,
        gpus_per_node=fabric.gpus_per_node,
        fabric=fabric.fabric.value,
        nics=fabric.nics,
        gbps_per_nic=fabric.gbps_per_nic,
        gpudirect_rdma=fabric.gpudirect_rdma,
        ethernet_gbps=fabric.ethernet_gbps,
    )
