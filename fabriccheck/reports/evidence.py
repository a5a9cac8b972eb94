"""The evidence section of a report: what the job of an NCCL log or an nccl-tests file showed (a cluster's
`evidence`, jobs.JobEvidence), as the text, markdown and HTML reports render it under the job's cluster.

A log's section is its size, hosts and NCCL versions, then a row per NCCL process (ranks, transport, GPUDirect
RDMA, NICs, plugin); an nccl-tests file's is the fabric it was compared with, then a row per judged message size
(measured bus bandwidth, expected, TCP's, measured/expected). Plain text: each report escapes it its own way
(these values come from the file).
"""

from __future__ import annotations

from dataclasses import dataclass

from fabriccheck.jobs import BusbwComparison, JobEvidence, NcclProcess
from fabriccheck.reports.columns import table
from fabriccheck.reports.safe import visible

LOG_HEADS = ["process", "ranks", "NCCL", "transport", "GDR", "NICs", "plugin"]
TESTS_HEADS = ["run", "op", "bytes", "busbw GB/s", "expected", "TCP", "measured/expected"]
ROWS_SHOWN = 20  # text, without --verbose
ROWS_MAX = 50  # markdown and HTML; --format json has them all


@dataclass(frozen=True)
class Section:
    """A job's evidence as lines and a table, for any report."""

    lines: list[str]  # what the file is and what it was compared with
    heads: list[str]
    rows: list[list[str]]


def section(job: JobEvidence) -> Section:
    if job.kind == "nccl-log":
        return Section(_log_lines(job), LOG_HEADS, [_process_row(p) for p in job.log.processes] if job.log else [])
    rows = [_comparison_row(run.run, run.op, c) for run in job.runs for c in run.comparisons]
    return Section(_tests_lines(job), TESTS_HEADS, rows)


def _log_lines(job: JobEvidence) -> list[str]:
    log = job.log
    if log is None:
        return []
    versions = ", ".join(log.nccl_versions) or "not printed"
    return [
        f"{log.nccl_lines:,} NCCL lines of {log.lines:,}; {len(log.processes)} process(es) on {log.nodes} node(s); "
        f"NCCL {versions}; provider: {job.provider}"
    ]


def _tests_lines(job: JobEvidence) -> list[str]:
    out = []
    fabric = job.fabric
    if fabric is not None:
        name = fabric.instance_type or f"{fabric.gpus_per_node} x {fabric.accelerator}"
        rdma = "not known" if fabric.gpudirect_rdma is None else str(fabric.gpudirect_rdma)
        out.append(
            f"expected for {name}: {fabric.fabric} {fabric.nics} x {fabric.gbps_per_nic:g} Gbps, "
            f"GPUDirect RDMA {rdma}; provider: {job.provider}"
        )
    for run in job.runs:
        verdict = run.verdict or "not compared"
        nodes = f" on {run.nodes} node(s)" if run.nodes is not None else ""
        out.append(f"run {run.run}: {run.op or 'collective not named'}{nodes}, {run.rows} row(s): {verdict}")
    return out


def _process_row(p: NcclProcess) -> list[str]:
    gdr = {True: "on", False: "off", None: "?"}[p.gpudirect_rdma]
    nics = p.ib_nics or ([f"efa x{p.ofi_nics}"] if p.ofi_nics else []) or p.socket_interfaces
    plugin = ", ".join(p.plugins_loaded[:2]) or ("missing" if p.plugin_missing else "-")
    return [
        p.process,
        ",".join(str(r) for r in p.ranks[:4]) or "?",
        p.nccl_version or "?",
        p.transport or "?",
        gdr,
        (", ".join(nics[:3]) + (f" +{len(nics) - 3}" if len(nics) > 3 else "")) or "?",
        plugin,
    ]


def _comparison_row(run: int, op: str | None, c: BusbwComparison) -> list[str]:
    return [
        str(run),
        op or "?",
        f"{c.bytes:,}",
        f"{c.busbw_gbytes_per_s:.2f}",
        f"{c.expected_busbw_gbytes_per_s:.2f}",
        _tcp_cell(c),
        f"{c.ratio:.0%}",
    ]


def _tcp_cell(c: BusbwComparison) -> str:
    """The TCP busbw range, worst–best (one figure when they agree)."""
    best, worst = c.tcp_busbw_gbytes_per_s, c.tcp_busbw_worst_gbytes_per_s
    if best is None:
        return "-"
    return f"{best:.2f}" if worst is None or f"{worst:.2f}" == f"{best:.2f}" else f"{worst:.2f}–{best:.2f}"


def text_table(found: Section, width: int, verbose: bool) -> list[str]:
    """The section's table for the text report, every cell escaped (safe.visible), in columns that fit `width` (its
    first ROWS_SHOWN rows without --verbose)."""
    if not found.rows:
        return []
    shown = [[visible(cell) for cell in row] for row in (found.rows if verbose else found.rows[:ROWS_SHOWN])]
    out = table(found.heads, shown, width, indent="  ")
    if len(shown) < len(found.rows):
        out.append(f"  … and {len(found.rows) - len(shown)} more (use --verbose or --format json)")
    return out
