"""The report of an evidence command: what `nccl-log` or `nccl-tests` judged (judge.Evidence), as the one report
every command writes (report.Report), so that every format, `--previous`, `merge` and `fabriccheck schema` serve it.

The job the file shows is the report's one cluster: its id is the findings' cluster (`nccl-log:FILE`,
`nccl-tests:FILE`), its nodes the hosts the file names, its GPUs the ranks, its instance type the one given (or the
one aws-ofi-nccl names), and `evidence` holds what the file says (jobs.JobEvidence). It is measured, not priced: its
penalty is not estimated and its GPUs are in no cost figure. What could not be judged is the cluster's not_judged,
one entry per rule run, and makes the report incomplete (exit 2), as an audit's cluster is.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from fabriccheck import config, errors, penalty
from fabriccheck.errors import FabricCheckError
from fabriccheck.evidence.judge import Evidence
from fabriccheck.jobs import EvidenceKind, JobEvidence
from fabriccheck.model import UNKNOWN_ACCOUNT, CollectionError
from fabriccheck.report import ClusterReport, NotJudged, Report, Summary, tally
from fabriccheck.version import __version__

UNPRICED = "measured, not priced: `fabriccheck estimate` prices a fabric state"
GROUPED_BY = {"nccl-log": "the hosts the NCCL log names", "nccl-tests": "the hosts the nccl-tests file names"}


def report_of(ev: Evidence, rules: list[str], gate: config.Gate | None = None) -> Report:
    """The report of judged evidence, by the rules `rules` (their ids), under `gate` (the CLI's settled gate)."""
    cluster = job_cluster(ev, rules)
    return Report(
        tool={"name": "fabriccheck", "version": __version__},
        source=ev.source,
        generated_at=_now(),
        complete=ev.complete,
        errors=[],
        workload={},
        rules=sorted(rules),
        findings=ev.findings,
        clusters=[cluster],
        summary=Summary(
            nodes=_nodes(ev.job, cluster),
            nodes_not_in_reported_clusters=0,
            unknown_instance_types=[],
            **tally(ev.findings, [cluster], []),
        ),
        notes=ev.notes,
        waivers=ev.waivers,
        baseline=ev.baseline,
        gate=gate,
        evidence=ev.kind,
    )


def job_cluster(ev: Evidence, rules: list[str]) -> ClusterReport:
    """The job the file shows, as a report cluster."""
    job = ev.job
    mine = [f for f in ev.findings if f.cluster == cluster_id(job)]
    return ClusterReport(
        id=cluster_id(job),
        provider=job.provider,
        account=UNKNOWN_ACCOUNT,
        grouped_by=GROUPED_BY[job.kind],
        nodes=_hosts(job),
        instance_types=_types(job),
        gpus=_gpus(job),
        findings=len(mine),
        status="findings" if mine else ("clean" if ev.complete else "incomplete"),
        complete=ev.complete,
        not_judged=_not_judged(ev, rules),
        penalty=penalty.Penalty(workload="", estimated=False, reason=UNPRICED),
        evidence=job,
    )


def _not_judged(ev: Evidence, rules: list[str]) -> list[NotJudged]:
    """What could not be judged, by the rules run that it kept from judging (a reason naming none of them: every
    rule run, as the report stays incomplete all the same)."""
    out = []
    for why, kept in ev.not_judged:
        named = [rule for rule in sorted(rules) if rule in kept] or sorted(rules)
        out += [NotJudged(rule=rule, reason=why) for rule in named]
    return out


def cluster_id(job: JobEvidence) -> str:
    """`nccl-log:FILE` or `nccl-tests:FILE`: the cluster its findings name (the file's name, as the judges give it)."""
    return f"{job.kind}:{Path(job.file).name}"


def _hosts(job: JobEvidence) -> list[str]:
    if job.log is not None:
        return list(job.log.hosts)
    return list(dict.fromkeys(host for run in job.runs for host in run.hosts))


def _nodes(job: JobEvidence, cluster: ClusterReport) -> int:
    """The nodes the job ran on: the hosts the file names, or as many as it was judged as (--nodes, NCCL's nNodes)."""
    judged = [run.nodes for run in job.runs if run.nodes is not None] + ([job.log.nodes] if job.log else [])
    return max([len(cluster.nodes), *judged])


def _types(job: JobEvidence) -> list[str]:
    if job.fabric is not None and job.fabric.instance_type:
        return [job.fabric.instance_type]
    processes = job.log.processes if job.log is not None else []
    return sorted({p.ofi_platform for p in processes if p.ofi_platform})


def _gpus(job: JobEvidence) -> int:
    """The GPUs the job ran on: its ranks (NCCL puts no two ranks of a communicator on one GPU)."""
    if job.log is not None:
        seen = {r for p in job.log.processes for r in p.ranks}
        return max(job.log.nranks or 0, len(seen))
    return max((run.ranks or 0 for run in job.runs), default=0)


def failed(kind: EvidenceKind, path: Path, error: FabricCheckError) -> Report:
    """The report of a command that could not run (bad usage, unreadable input): incomplete, the failure in
    `errors[]` (its code: usage, unknown-model, unreadable-input)."""
    entry = errors.error_entry(error)
    return Report(
        tool={"name": "fabriccheck", "version": __version__},
        source=str(path),
        generated_at=_now(),
        complete=False,
        errors=[CollectionError(provider=kind, call=kind, code=entry["code"], message=entry["message"])],
        workload={},
        rules=[],
        findings=[],
        clusters=[],
        summary=Summary(nodes=0, nodes_not_in_reported_clusters=0, unknown_instance_types=[], **tally([], [], [])),
        notes=[],
        evidence=kind,
    )


def _now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
