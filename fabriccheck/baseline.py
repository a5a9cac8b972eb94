"""Baselines: adopt the gate on an estate that already has findings, and fail only on new ones.

`--write-baseline FILE` records today's findings; `--baseline FILE` marks each finding `existing` (recorded) or
`new`, and only new ones fail the gate. A finding is the same finding when its rule and the identity of what it
flags are the same, never by its message (messages carry numbers that change: node counts, bandwidths). The same
identity gives SARIF's `partialFingerprints`, so code scanning tracks a finding across runs too.

Identity: a finding about a whole cluster (it names several nodes) is the cluster's id, so a cluster that grows
keeps its finding; a finding about one node, template or Terraform address is that resource, with its provider
and account (ids are unique only within an account).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import reprlib
from collections.abc import Callable, Iterable
from pathlib import Path

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from fabriccheck import pipes
from fabriccheck.errors import FabricCheckError, in_our_words
from fabriccheck.findings import Finding
from fabriccheck.version import __version__

BASELINE_VERSION = 1


def identity(finding: Finding) -> str:
    if finding.cluster and len(finding.resources) > 1:
        return finding.cluster
    resource = finding.resources[0] if finding.resources else ""
    return f"{finding.provider}:{finding.account}:{resource}"


def fingerprint(finding: Finding) -> str:
    """Rule + resource identity, hashed: stable across runs, messages and severity overrides."""
    return _digest(finding.rule, identity(finding))


def _digest(rule: str, identity_: str) -> str:
    return hashlib.sha256(f"{rule}\x00{identity_}".encode()).hexdigest()[:32]


class Entry(BaseModel):
    model_config = ConfigDict(extra="ignore")  # later versions may record more about each finding

    rule: str
    identity: str
    fingerprint: str
    severity: str = ""
    message: str = ""  # for people reading the file; never matched on


class Baseline(BaseModel):
    model_config = ConfigDict(extra="ignore")

    baseline_version: int
    tool: dict[str, str] = {}
    generated_at: str = ""
    findings: list[Entry]


class BaselineSummary(BaseModel):
    """What the baseline did in this run (report `baseline`)."""

    file: str
    recorded: int  # findings in the file
    existing: int  # findings of this run that the file holds
    new: int  # findings of this run that it does not
    fixed: int  # findings in the file that this run no longer has


def build(findings: Iterable[Finding]) -> Baseline:
    entries = {
        fingerprint(f): Entry(
            rule=f.rule, identity=identity(f), fingerprint=fingerprint(f), severity=f.severity, message=f.message
        )
        for f in findings
    }
    return Baseline(
        baseline_version=BASELINE_VERSION,
        tool={"name": "fabriccheck", "version": __version__},
        generated_at=dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        findings=sorted(entries.values(), key=lambda e: (e.rule, e.identity)),
    )


def dump(findings: Iterable[Finding]) -> bytes:
    """The baseline file of `findings`, as --write-baseline writes it."""
    return orjson.dumps(build(findings).model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n"


def write(findings: Iterable[Finding], path: Path) -> None:
    from fabriccheck.outputs import write_atomic

    write_atomic(path, dump(findings), "--write-baseline")


def load(path: Path) -> Baseline:
    """A baseline written by --write-baseline; a missing or malformed one is one line naming the file."""
    pipes.refuse_named_pipe(path, "baseline")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FabricCheckError(f"baseline {path}: no such file (write one with --write-baseline {path})") from None
    except OSError as exc:
        raise FabricCheckError(f"baseline {path}: cannot read ({exc.strerror})") from None
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise FabricCheckError(f"baseline {path}: not valid JSON ({exc})") from None
    if not isinstance(parsed, dict) or "baseline_version" not in parsed:
        raise FabricCheckError(f"baseline {path}: not a fabriccheck baseline (no baseline_version)")
    if parsed["baseline_version"] != BASELINE_VERSION:
        raise FabricCheckError(
            f"baseline {path}: baseline_version {reprlib.repr(parsed['baseline_version'])} is not supported "
            f"(this fabriccheck reads {BASELINE_VERSION})"
        )
    try:
        return Baseline.model_validate(parsed)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise FabricCheckError(f"baseline {path}: field {where}: {in_our_words(first)}") from None


# A cluster id an earlier version gave -> the id it has now, or None (clusters.current_id).
Renamed = Callable[[str], str | None]


def apply(
    findings: Iterable[Finding], baseline: Baseline, source: str, renamed: Renamed | None = None
) -> BaselineSummary:
    """Mark each finding `existing` or `new`. A recorded cluster id that `renamed` maps to a new id is read as the
    new one (renamed_notes says so)."""
    # Not the stored hash: files get edited.
    recorded = {_digest(e.rule, _current(e.identity, renamed)) for e in baseline.findings}
    seen: set[str] = set()
    existing = new = 0
    for finding in findings:
        print_ = fingerprint(finding)
        if print_ in recorded:
            finding.baseline = "existing"
            existing += 1
            seen.add(print_)
        else:
            finding.baseline = "new"
            new += 1
    return BaselineSummary(file=source, recorded=len(recorded), existing=existing, new=new, fixed=len(recorded - seen))


def _current(identity_: str, renamed: Renamed | None) -> str:
    new = renamed(identity_) if renamed is not None else None
    return new if new is not None else identity_


def renamed_notes(baseline: Baseline, source: str, renamed: Renamed) -> list[str]:
    """One note per recorded cluster id that is a former id: its findings still match, under the new id."""
    pairs = {(e.identity, new) for e in baseline.findings if (new := renamed(e.identity)) is not None}
    return [
        f"baseline {source} records cluster {old}, now {new}: its findings still match; "
        "write the baseline again (--write-baseline) to record the new id"
        for old, new in sorted(pairs)
    ]
