"""Waivers: accepted exceptions, written down with a reason and (best) an expiry date.

A waiver names a rule id (or a category), the resources it covers (exact ids or globs over node ids, cluster ids
or Terraform addresses; `*` and `?` are the only wildcards, so `aws_instance.worker[3]` means itself) and why.
A waived finding stays in every report, marked with the reason, and does not fail the gate. A waiver past its
expiry date waives nothing and the report says so; one that matches nothing is reported as stale, so the list
does not silently outlive what it was written for.

    waivers:                                   # YAML; in TOML: [[waivers]] tables with the same keys
      - rule: AWS121
        resources: ["aws:111122223333:us-east-1:placement-group/canary-*"]
        reason: "inference canary, spread on purpose (JIRA-123)"
        expires: 2027-03-31
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import tomllib
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from fabriccheck import textfiles
from fabriccheck.errors import FabricCheckError, in_our_words
from fabriccheck.findings import Category, Finding, Waived


class Waiver(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rule: str | None = Field(None, pattern=r"^[A-Za-z]+[0-9]{3}$")
    category: Category | None = None
    resources: list[str] = Field(min_length=1)
    reason: str
    expires: dt.date | None = None

    @field_validator("reason")
    @classmethod
    def _reason(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a waiver needs a reason")
        return value.strip()

    @field_validator("resources")
    @classmethod
    def _resources(cls, values: list[str]) -> list[str]:
        if any(not v.strip() for v in values):
            raise ValueError("an empty resource pattern matches nothing")
        return values

    @model_validator(mode="after")
    def _one_target(self) -> Waiver:
        if (self.rule is None) == (self.category is None):
            raise ValueError("give exactly one of rule or category")
        return self

    @property
    def target(self) -> str:
        return self.rule.upper() if self.rule else f"category {self.category}"

    def covers_rule(self, finding: Finding) -> bool:
        if self.rule is not None:
            return finding.rule == self.rule.upper()
        return finding.category == self.category

    def covers_resources(self, finding: Finding) -> bool:
        """The finding's cluster is covered, or every resource it names is."""
        return Matcher(self.resources).covers(finding)

    def expired(self, today: dt.date) -> bool:
        return self.expires is not None and today > self.expires


class Matcher:
    """A waiver's resource globs: exact ids as a set, the rest as one expression."""

    def __init__(self, globs: list[str]) -> None:
        self.exact = frozenset(g for g in globs if "*" not in g and "?" not in g)
        wild = [g for g in globs if g not in self.exact]
        self.wild = re.compile("|".join(f"(?:{glob_pattern(g).pattern})" for g in wild), re.DOTALL) if wild else None

    def hit(self, value: str) -> bool:
        return value in self.exact or (self.wild is not None and self.wild.fullmatch(value) is not None)

    def covers(self, finding: Finding) -> bool:
        """The finding's cluster is covered, or every resource it names is: a waiver for one node of a
        cluster-wide finding does not hide the other nodes."""
        return bool(self.covered({finding.cluster: [finding]}))

    def covered(self, by_cluster: dict[str | None, list[Finding]]) -> list[Finding]:
        """The findings covered, of findings grouped by cluster: a covered cluster covers them all at one match.
        This runs for every waiver over every finding of its rule, so it stays plain: one node's finding (the
        common case) is one lookup."""
        hit = self.hit
        out: list[Finding] = []
        for cluster, findings in by_cluster.items():
            if cluster is not None and hit(cluster):
                out += findings
                continue
            for finding in findings:
                resources = finding.resources
                if len(resources) == 1:
                    if hit(resources[0]):
                        out.append(finding)
                elif resources and all(hit(r) for r in resources):
                    out.append(finding)
        return out


class WaiversFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    waivers: list[Waiver]


class WaiverStatus(BaseModel):
    """What one waiver did in this run (report `waivers[]`)."""

    number: int  # its place in the file, from 1
    source: str
    rule: str | None
    category: str | None
    resources: list[str]
    reason: str
    expires: str | None
    # active: waives what it matches; expired: past its date, waives nothing; stale: matches no finding;
    # not-run: its rule did not run here (another cloud's rule, or deselected)
    status: Literal["active", "expired", "stale", "not-run"]
    matched: int  # findings it matches (for an expired one: those it would have waived)


@functools.cache
def glob_pattern(glob: str) -> re.Pattern[str]:
    """`*` any run of characters, `?` one; everything else literal (brackets in addresses included)."""
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in glob), re.DOTALL)


def load(path: Path) -> list[Waiver]:
    """Waivers from a YAML or TOML file (TOML by a .toml suffix); any problem is one line naming the file."""
    if not path.exists():
        raise FabricCheckError(f"waivers file {path}: no such file")
    text = textfiles.read_text(path, "waivers file")
    parsed: Any
    try:
        parsed = textfiles.load_toml(text) if path.suffix.lower() == ".toml" else textfiles.load_yaml(text)
    except tomllib.TOMLDecodeError as exc:
        raise FabricCheckError(f"waivers file {path}: not valid TOML ({exc})") from None
    except yaml.YAMLError as exc:
        raise FabricCheckError(f"waivers file {path}: not valid YAML ({_first_line(exc)})") from None
    if not isinstance(parsed, dict):
        raise FabricCheckError(f"waivers file {path}: expected a table with a `waivers` list")
    try:
        return WaiversFile.model_validate(parsed).waivers
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = list(first["loc"])
        where = "".join(f"[{p + 1}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
        if first["type"] == "extra_forbidden":
            raise FabricCheckError(f"waivers file {path}: unknown key {where}") from None
        if first["type"] == "missing":
            raise FabricCheckError(f"waivers file {path}: {where}: required") from None
        raise FabricCheckError(f"waivers file {path}: {where}: {in_our_words(first)}") from None


def check_rules(waivers: list[Waiver], known: Collection[str], path: Path) -> None:
    """A waiver naming a rule that no rule defines (built-in or from --rules-dir) is an error, as an unknown
    --select is: a mistyped id waives nothing and would only ever read as stale. A rule that exists but does
    not run here (another cloud's, deselected) is fine: the report calls that waiver not-run."""
    ids = {i.upper() for i in known}
    for number, waiver in enumerate(waivers, 1):
        if waiver.rule is not None and waiver.rule.upper() not in ids:
            raise FabricCheckError(
                f"waivers file {path}: waivers[{number}].rule: no rule {waiver.rule.upper()} (see: fabriccheck rules)"
            )


def _first_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


# An id (or glob over ids) an earlier version gave a cluster -> the id it has now, or None (clusters.current_id).
Renamed = Callable[[str], str | None]


def apply(
    findings: Iterable[Finding],
    waivers: list[Waiver],
    source: str,
    today: dt.date,
    ran: Iterable[str],
    renamed: Renamed | None = None,
) -> list[WaiverStatus]:
    """Mark the findings the waivers cover (the first waiver that covers one wins) and say what each waiver did.
    `ran` are the finding ids of the rules that ran, to tell a stale waiver from another cloud's. A resource that
    names a cluster by an id `renamed` maps to a new one covers the cluster under either (renamed_notes says so)."""
    # Findings by rule and by category, each grouped by cluster (in report order): a waiver looks only at its own.
    groups: dict[str, dict[str | None, list[Finding]]] = {}
    for finding in findings:
        for key in (f"rule {finding.rule}", f"category {finding.category}"):
            groups.setdefault(key, {}).setdefault(finding.cluster, []).append(finding)
    ran_ids = {r.upper() for r in ran}
    statuses = []
    for number, waiver in enumerate(waivers, 1):
        key = f"rule {waiver.rule.upper()}" if waiver.rule else f"category {waiver.category}"
        matched = Matcher(_with_current(waiver.resources, renamed)).covered(groups.get(key, {}))
        expired = waiver.expired(today)
        if not expired:
            for finding in matched:
                if finding.waiver is None:
                    finding.waiver = Waived(
                        reason=waiver.reason,
                        expires=waiver.expires.isoformat() if waiver.expires else None,
                        source=f"{source} #{number}",
                    )
        if expired:
            status: Literal["active", "expired", "stale", "not-run"] = "expired"
        elif matched:
            status = "active"
        elif waiver.rule is not None and waiver.rule.upper() not in ran_ids:
            status = "not-run"
        else:
            status = "stale"
        statuses.append(
            WaiverStatus(
                number=number,
                source=source,
                rule=waiver.rule.upper() if waiver.rule else None,
                category=waiver.category,
                resources=waiver.resources,
                reason=waiver.reason,
                expires=waiver.expires.isoformat() if waiver.expires else None,
                status=status,
                matched=len(matched),
            )
        )
    return statuses


def _with_current(resources: list[str], renamed: Renamed | None) -> list[str]:
    """The resources, and the current id of each that names a cluster by a former id."""
    if renamed is None:
        return resources
    return resources + [new for r in resources if (new := renamed(r)) is not None]


def renamed_notes(waivers: list[Waiver], source: str, renamed: Renamed) -> list[str]:
    """One note per waiver resource that names a cluster by a former id: it still matches, under its new id."""
    return [
        f"waiver {number} in {source} names cluster {old}, which is now {new}: read as both; write the new id there"
        for number, waiver in enumerate(waivers, 1)
        for old in waiver.resources
        if (new := renamed(old)) is not None
    ]


def notes(statuses: list[WaiverStatus]) -> list[str]:
    """The report's words for waivers that need attention: expired and stale ones."""
    out = []
    for s in statuses:
        target = s.rule or f"category {s.category}"
        what = f"waiver {s.number} in {s.source} ({target} on {', '.join(s.resources)})"
        if s.status == "expired":
            counted = f"its {s.matched} finding(s) count again" if s.matched else "it matched nothing anyway"
            out.append(f"{what} expired on {s.expires}: it waives nothing now, {counted}")
        elif s.status == "stale":
            out.append(f"{what} is stale: it matches no finding (remove it, or fix its rule or resources)")
    return out
