"""What a finding is: the schema every stage after judging reads (reports, merge, waivers, baselines).

Severities, the stable category vocabulary (DESIGN.md: dashboards and waivers key on it), what a finding does to
the fabric (the penalty model reads it), and the finding itself. Nothing here judges: renderers import this
module, never the rule book or the judge.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

Severity = Literal["error", "warning", "info"]
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
# The stable category vocabulary (DESIGN.md): dashboards and waivers key on it.
Category = Literal[
    "fabric-missing",
    "fabric-partial",
    "fabric-isolated",
    "placement",
    "instance-choice",
    "network-config",
    "software",
]
# What a finding does to the cluster's fabric; the penalty model reads this, never a number in the rule.
# split-nvlink-domain, nvlink-down and pcie-acs are penalty.NVLINK_SPLIT, penalty.NVLINK_DOWN and penalty.PCIE_ACS.
# gpudirect-off is said by evidence only (NCCL204, penalty.FabricState's word): no inventory shows it.
Effect = Literal[
    "tcp-fallback",
    "partial-fabric",
    "unreachable",
    "loose-placement",
    "weaker-fabric",
    "split-nvlink-domain",
    "nvlink-down",
    "pcie-acs",
    "gpudirect-off",
    "none",
]
# certain: the facts decide the finding; possible: the rule says it may be wrong (a custom image may carry its own
# drivers), so its cost is counted apart from the headline.
Confidence = Literal["certain", "possible"]


class Waived(BaseModel):
    """Why a finding is waived (waivers.py): reported as it is, but it does not fail the gate."""

    reason: str
    expires: str | None = None
    source: str  # the waivers file and the waiver's number in it


class Finding(BaseModel):
    rule: str
    title: str
    severity: Severity
    category: str
    provider: str
    account: str
    cluster: str | None
    resources: list[str]
    message: str
    remediation: str
    effect: str
    references: list[str]
    confidence: Confidence = "certain"
    # Set after judging (flow.py): rule + resource identity (baseline.py), the waiver that covers the finding,
    # and whether a --baseline holds it. A waived or existing finding is reported but does not fail the gate.
    fingerprint: str = ""
    waiver: Waived | None = None
    baseline: Literal["new", "existing"] | None = None

    @property
    def gates(self) -> bool:
        return self.waiver is None and self.baseline != "existing"


def sort_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (-SEVERITY_RANK[f.severity], f.rule, f.account, f.cluster or "", f.resources))
