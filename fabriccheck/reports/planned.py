"""Findings on what a Terraform plan would launch, as the text and markdown reports show them.

Each Terraform address is shown beside the file and line of its resource block (`plan --terraform-dir`; the JSON
report's `locations`), and the fix comes first in Terraform: the advice about running instances, the console and
the CLI are for resources that exist, and a plan's do not yet. A finding is on a plan's resource when the report
locates one of its resources (only planned nodes and templates have a source location).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from fabriccheck.findings import Finding
from fabriccheck.model import SourceLocation

# Remediation.as_text: the summary, then one part per label that is set, in this order.
_PART = re.compile(r"\n(Console|CLI|Terraform): ")
HCL_WIDTH = 100


@dataclass(frozen=True)
class Fix:
    """A finding's remediation as the reports show it: `steps` in order, `terraform` first for a plan."""

    steps: list[str]
    terraform: str | None  # set when the Terraform step leads (a finding on a plan's resource)


def where(locations: dict[str, SourceLocation], resource: str) -> str | None:
    """'modules/gpu/main.tf:12' for a planned resource located in the configuration, else None."""
    source = locations.get(resource)
    if source is None or not source.file:
        return None
    return f"{source.file}:{source.line}" if source.line else source.file


def named(resources: list[str], locations: dict[str, SourceLocation], show: Callable[[str], str] = str) -> list[str]:
    """Each resource as `show` writes it, with its block's file:line after the last of each run of resources in
    one block (a scaling group's nodes #0, #1 ... share their group's block)."""
    found = [where(locations, r) for r in resources]
    return [
        f"{show(r)} ({show(here)})" if here and (i + 1 == len(found) or found[i + 1] != here) else show(r)
        for i, (r, here) in enumerate(zip(resources, found, strict=True))
    ]


def planned(finding: Finding, locations: dict[str, SourceLocation]) -> bool:
    return any(r in locations for r in finding.resources)


def fix(finding: Finding, locations: dict[str, SourceLocation]) -> Fix:
    """The remediation's steps ("Console: ...", "CLI: ...", "Terraform: ..." after the summary). On a plan's
    resource, the Terraform step alone: the summary speaks of running instances (replace them, move them), the
    console and CLI steps change resources that exist."""
    pieces = _PART.split(finding.remediation.strip())
    summary, parts = pieces[0].strip(), dict(zip(pieces[1::2], (p.strip() for p in pieces[2::2]), strict=True))
    steps = [s for s in [summary, *(f"{label}: {text}" for label, text in parts.items())] if s]
    terraform = parts.get("Terraform")
    if not terraform or not planned(finding, locations):
        return Fix(steps, None)
    return Fix([f"Terraform: {terraform}"], terraform)


def hcl_lines(fix: Fix, resource: str, locations: dict[str, SourceLocation]) -> list[str]:
    """A fenced HCL block for markdown: the block to change (a group's, for its nodes #0, #1 ...) and where it
    is, then the change (wrapped: rule texts are one long line)."""
    source = locations.get(resource)
    block = source.address if source is not None else resource
    at = where(locations, resource)
    head = (f"# {block}" + (f" ({at})" if at else "")).replace("`", "'")  # nothing closes the fence
    body = textwrap.wrap(fix.terraform or "", HCL_WIDTH, break_long_words=False, break_on_hyphens=False)
    return ["```hcl", head, *body, "```"]
