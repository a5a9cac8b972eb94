"""The logic of the evidence rules: one small Python check per rule id, registered here with `@evidence_check`.

An evidence rule's metadata (title, severity, category, effect, remediation, references, examples) lives in its
rule file (rules/evidence/, rulebook.EvidenceRule) like any other rule's; what it flags is decided by the function
registered under its id. A check takes what the judge of its evidence shares (judge.LogRun for `nccl-log` rules,
bandwidth.RunCheck for `nccl-tests` rules) and returns its hits: (the resources flagged, the message). Checks run
in the order they are registered, so findings keep the order they always had.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fabriccheck.errors import FabricCheckError
from fabriccheck.findings import Finding
from fabriccheck.model import UNKNOWN_ACCOUNT
from fabriccheck.rulebook import EvidenceRule, builtin_evidence_rules

Hit = tuple[list[str], str]  # (resources flagged, message)
Check = Callable[[Any], list[Hit]]

_CHECKS: dict[str, Check] = {}
# The modules whose checks are registered: imported before the registry is read.
_MODULES = ("fabriccheck.evidence.judge", "fabriccheck.evidence.bandwidth")


def evidence_check(rule_id: str) -> Callable[[Check], Check]:
    """Register `check` as the logic of the evidence rule `rule_id` (one function per id)."""

    def register(check: Check) -> Check:
        if rule_id in _CHECKS:
            raise ValueError(f"{rule_id}: two evidence checks registered")
        _CHECKS[rule_id] = check
        return check

    return register


def registered() -> dict[str, Check]:
    """Every registered check by rule id, in registration order."""
    for module in _MODULES:
        importlib.import_module(module)
    return dict(_CHECKS)


def chosen(evidence: str, rules: Sequence[EvidenceRule] | None) -> list[tuple[EvidenceRule, Check]]:
    """The rules of `evidence` (nccl-log, nccl-tests) among `rules` (None: every built-in one), each with its check,
    in the order the checks were registered. A rule with no registered check is an error naming its file."""
    checks = registered()
    wanted = [r for r in (builtin_evidence_rules() if rules is None else rules) if r.evidence == evidence]
    for rule in wanted:
        if rule.id not in checks:
            raise FabricCheckError(f"{rule.path}: evidence rule {rule.id}: no check is registered for it")
    order = {rule_id: index for index, rule_id in enumerate(checks)}
    return [(rule, checks[rule.id]) for rule in sorted(wanted, key=lambda r: order[r.id])]


def finding(rule: EvidenceRule, provider: str, cluster: str, resources: list[str], message: str) -> Finding:
    return Finding(
        rule=rule.id,
        title=rule.title,
        severity=rule.severity,
        category=rule.category,
        provider=provider,
        account=UNKNOWN_ACCOUNT,
        cluster=cluster,
        resources=resources,
        message=message,
        remediation=rule.remediation.as_text(),
        effect=rule.effect,
        references=list(rule.references),
        confidence=rule.confidence,
    )


def source_of(check: Check) -> str:
    """Where a check is defined, for `fabriccheck rules ID`: module.function."""
    module = Path(check.__code__.co_filename).stem
    return f"fabriccheck.evidence.{module}.{check.__name__}"
