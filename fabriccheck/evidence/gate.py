"""The gate on evidence: a scan's selection, severity overrides, waivers and baselines, applied to the findings of
`nccl-log` and `nccl-tests`.

The settings are settled as a scan's are (gate.settle: flags, FABRICCHECK_* variables, the config file; the waivers
and baseline read and their rule names checked against the whole rule book), so one config file and one waivers
file serve the cloud audit and the evidence from the same cluster. A token may name any rule (a selection shared
with scans); the rules of this command are those it leaves on, and a selection that leaves none is an error: a
gate that runs no rule must not pass.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

from fabriccheck import baseline, config, errors, rulebook, waivers
from fabriccheck.rulebook import EvidenceRule, RuleMeta

if TYPE_CHECKING:
    from fabriccheck.evidence.judge import Evidence
    from fabriccheck.flow import Options


def _book() -> list[RuleMeta]:
    return [*rulebook.builtin_rules(), *rulebook.builtin_evidence_rules()]


def rules_for(kind: str, options: Options) -> list[EvidenceRule]:
    """The evidence rules of `kind` (nccl-log, nccl-tests) that --select / --ignore leave on."""
    own = [r for r in rulebook.builtin_evidence_rules() if r.evidence == kind]
    if not options.select and not options.ignore:
        return own
    chosen = rulebook.select_rules(_book(), options.select, options.ignore)
    left = [r for r in chosen if isinstance(r, EvidenceRule) and r.evidence == kind]
    if not left:
        raise errors.usage(f"--select / --ignore leave no {kind} rule to run (see: fabriccheck rules)")
    return left


def apply(ev: Evidence, options: Options, write_baseline: Path | None, ran: list[EvidenceRule]) -> bytes | None:
    """Severity overrides, waivers and the baseline on `ev`'s findings, as a scan applies them; the baseline to
    write (--write-baseline), which the caller writes beside the report. Without --baseline, a run that writes
    one is judged against what it writes."""
    if options.severity:
        config.override_severity(ev.findings, options.severity, _book())
    if options.waivers:
        today = options.today or dt.datetime.now(dt.UTC).date()
        ids = rulebook.active_ids(ran)
        ev.waivers = waivers.apply(ev.findings, options.waivers, options.waivers_file, today, ids)
        ev.notes += waivers.notes(ev.waivers)
    written = baseline.dump(ev.findings) if write_baseline is not None else None
    if options.baseline is not None:
        ev.baseline = baseline.apply(ev.findings, options.baseline, options.baseline_file)
    elif write_baseline is not None:
        ev.baseline = baseline.apply(ev.findings, baseline.build(ev.findings), str(write_baseline))
    return written
