"""Reports for evidence: the same five formats as the audit (text, json, sarif, junit, markdown), shaped for
findings that belong to a file rather than to a cluster of cloud resources.

JSON (`schema_version` 1): `kind` (nccl-log | nccl-tests), `source`, `complete`, `errors` (`{code, message}`
when the command could not run: `usage`, `unknown-model` or `unreadable-input`; empty otherwise), `provider`,
`findings[]` with the audit's finding fields (`waiver`, `baseline` as in a scan), `evidence` (per process for a
log; per run and per message size for nccl-tests), `waivers` (what each waiver did), `baseline` (its summary, or
null), `summary`, `notes`. A waived finding, or one the baseline holds, is reported but does not fail the gate.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import orjson

from fabriccheck.evidence.judge import Evidence
from fabriccheck.findings import SEVERITY_RANK
from fabriccheck.reports.columns import fit, fit_all, table
from fabriccheck.reports.machine import sarif_document, tracking
from fabriccheck.reports.outline import suppressed
from fabriccheck.reports.safe import visible
from fabriccheck.reports.text import MIN_WIDTH, terminal_width
from fabriccheck.rulebook import builtin_evidence_rules
from fabriccheck.version import __version__

SCHEMA_VERSION = 1
SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def as_dict(ev: Evidence) -> dict[str, Any]:
    findings = [f.model_dump(mode="json") for f in ev.findings]
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "fabriccheck", "version": __version__},
        "kind": ev.kind,
        "source": ev.source,
        "generated_at": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "complete": ev.complete,
        "errors": ev.errors,
        "provider": ev.provider,
        "findings": findings,
        "evidence": ev.details,
        "waivers": [w.model_dump(mode="json") for w in ev.waivers],
        "baseline": ev.baseline.model_dump(mode="json") if ev.baseline is not None else None,
        "summary": {
            "findings": {s: sum(1 for f in ev.findings if f.severity == s) for s in ("error", "warning", "info")},
            "by_category": dict(sorted(Counter(f.category for f in ev.findings).items())),
            "by_rule": dict(sorted(Counter(f.rule for f in ev.findings).items())),
        },
        "notes": ev.notes,
    }


def render_json(ev: Evidence) -> str:
    return orjson.dumps(as_dict(ev), option=orjson.OPT_INDENT_2).decode() + "\n"


def render_sarif(ev: Evidence) -> str:
    used = sorted({f.rule for f in ev.findings})
    known = {r.id: r for r in builtin_evidence_rules()}
    rules = [
        {
            "id": rule,
            "name": known[rule].title,
            "shortDescription": {"text": known[rule].title},
            "fullDescription": {"text": known[rule].remediation.as_text()},
            "helpUri": known[rule].references[0],
            "help": {"text": known[rule].remediation.as_text()},
            "defaultConfiguration": {"level": SARIF_LEVEL[known[rule].severity]},
            "properties": {"category": known[rule].category},
        }
        for rule in used
    ]
    index = {r: i for i, r in enumerate(used)}
    results = [
        {
            "ruleId": f.rule,
            "ruleIndex": index[f.rule],
            "level": SARIF_LEVEL[f.severity],
            "message": {"text": f.message},
            # The evidence file is the location; the processes or runs it names are logical locations.
            "locations": [
                {
                    "physicalLocation": {"artifactLocation": {"uri": ev.source}},
                    "logicalLocations": [{"name": r, "kind": "resource"} for r in f.resources],
                }
            ],
            "properties": {"category": f.category, "cluster": f.cluster, "remediation": f.remediation},
            **tracking(f),
        }
        for f in ev.findings
    ]
    notifications = [
        {"level": "error", "message": {"text": f"{e['code']}: {e['message']}"}, "descriptor": {"id": e["code"]}}
        for e in ev.errors
    ]
    sarif = sarif_document(rules, results, ev.complete, notifications)
    return orjson.dumps(sarif, option=orjson.OPT_INDENT_2).decode() + "\n"


def _fails(severity: str, fail_on: str) -> bool:
    return fail_on != "never" and SEVERITY_RANK[severity] >= SEVERITY_RANK[fail_on]


def render_junit(ev: Evidence, fail_on: str = "error") -> str:
    cases = []
    failures = 0
    for f in ev.findings:
        name = quoteattr(f"{f.rule} {visible(', '.join(f.resources[:3]))}")
        body = escape(f"{f.message}\nfix: {f.remediation}")
        if f.gates and _fails(f.severity, fail_on):
            failures += 1
            inner = f'<failure message={quoteattr(visible(f.message))} type="{f.severity}">{body}</failure>'
        else:
            inner = f"<system-out>{body}</system-out>"
        cases.append(f'    <testcase classname="fabriccheck.{ev.kind}.{f.category}" name={name}>{inner}</testcase>')
    errors = 0
    if not ev.findings:
        cases.append(f'    <testcase classname="fabriccheck.{ev.kind}" name={quoteattr(ev.source + " clean")}/>')
    if not ev.complete:
        errors = 1
        notes = escape("\n".join(ev.notes))
        cases.append(
            f'    <testcase classname="fabriccheck.{ev.kind}" name={quoteattr(ev.source + " not fully judged")}>'
            f'<error message="not fully judged">{notes}</error></testcase>'
        )
    head = (
        f'<testsuite name={quoteattr("fabriccheck " + ev.kind)} tests="{len(cases)}" failures="{failures}" '
        f'errors="{errors}">'
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n  '
        + head
        + "\n"
        + "\n".join(cases)
        + "\n  </testsuite>\n</testsuites>\n"
    )


def _log_rows(ev: Evidence) -> list[list[str]]:
    rows = []
    for p in ev.details.get("processes", []):
        gdr = {True: "on", False: "off", None: "?"}[p["gpudirect_rdma"]]
        nics = p["ib_nics"] or ([f"efa x{p['ofi_nics']}"] if p["ofi_nics"] else []) or p["socket_interfaces"]
        rows.append(
            [
                visible(p["process"]),
                ",".join(str(r) for r in p["ranks"][:4]) or "?",
                visible(p["nccl_version"] or "?"),
                visible(p["transport"] or "?"),
                gdr,
                visible(", ".join(nics[:3]) + (f" +{len(nics) - 3}" if len(nics) > 3 else "")) or "?",
                visible(", ".join(p["plugins_loaded"][:2]) or ("missing" if p["plugin_missing"] else "-")),
            ]
        )
    return rows


def _tests_rows(ev: Evidence) -> list[list[str]]:
    rows = []
    for run in ev.details.get("runs", []):
        for c in run["comparisons"]:
            rows.append(
                [
                    str(run["run"]),
                    visible(str(run["op"])),
                    f"{c['bytes']:,}",
                    f"{c['busbw_gbytes_per_s']:.2f}",
                    f"{c['expected_busbw_gbytes_per_s']:.2f}",
                    _tcp_cell(c),
                    f"{c['ratio']:.0%}",
                ]
            )
    return rows


def _tcp_cell(comparison: dict[str, Any]) -> str:
    """The TCP busbw range, worst–best (one figure when they agree)."""
    best, worst = comparison["tcp_busbw_gbytes_per_s"], comparison.get("tcp_busbw_worst_gbytes_per_s")
    if best is None:
        return "-"
    return f"{best:.2f}" if worst is None or f"{worst:.2f}" == f"{best:.2f}" else f"{worst:.2f}–{best:.2f}"


LOG_HEADS = ["process", "ranks", "NCCL", "transport", "GDR", "NICs", "plugin"]
TESTS_HEADS = ["run", "op", "bytes", "busbw GB/s", "expected", "TCP", "measured/expected"]


def _table_for(ev: Evidence) -> tuple[list[str], list[list[str]]]:
    return (LOG_HEADS, _log_rows(ev)) if ev.kind == "nccl-log" else (TESTS_HEADS, _tests_rows(ev))


def render_text(ev: Evidence, verbose: bool = False, width: int | None = None) -> str:
    """The text report, every line within `width` (None: COLUMNS, else the terminal, else 100)."""
    room = terminal_width() if width is None else max(MIN_WIDTH, width)
    out = [f"fabriccheck {__version__} · {ev.kind} · {visible(ev.source)}"]
    if ev.kind == "nccl-log":
        d = ev.details
        versions = ", ".join(d["nccl_versions"]) or "not printed"
        out.append(
            f"{d['nccl_lines']:,} NCCL lines of {d['lines']:,}; {len(d['processes'])} process(es) on "
            f"{d['nodes']} node(s); NCCL {visible(versions)}; provider: {ev.provider}"
        )
    else:
        fabric = ev.details.get("fabric")
        if fabric:
            name = fabric["instance_type"] or f"{fabric['gpus_per_node']} x {fabric['accelerator']}"
            out.append(
                f"expected for {visible(name)}: {fabric['fabric']} {fabric['nics']} x {fabric['gbps_per_nic']:g} Gbps, "
                f"GPUDirect RDMA {_said(fabric['gpudirect_rdma'])}; provider: {ev.provider}"
            )
    heads, rows = _table_for(ev)
    if rows:
        shown = rows if verbose else rows[:20]
        out += ["", *table(heads, shown, room)]
        if len(shown) < len(rows):
            out.append(f"  … and {len(rows) - len(shown)} more (use --verbose or --format json)")
    out.append("")
    for f in ev.findings:
        res = ", ".join(visible(r) for r in f.resources[:6]) + (
            f" (+{len(f.resources) - 6} more)" if len(f.resources) > 6 else ""
        )
        out += [
            *fit(f"  {f.severity:<7} {f.rule} {f.category}: {f.title}", room, hang=" " * 8),
            f"          on {res}",
            f"          {visible(f.message)}",
            f"          fix: {f.remediation}",
        ]
        if (why := suppressed(f)) is not None:
            out.append(f"          {visible(why)}")
    if not ev.findings:
        # An incomplete run never reads as "no findings": what was not judged may hold them.
        out.append("  no findings" if ev.complete else "  no findings in what could be judged: see the notes")
    counts = Counter(f.severity for f in ev.findings)
    out += ["", f"Summary: {counts['error']} error, {counts['warning']} warning, {counts['info']} info."]
    for error in ev.errors:
        out.append(f"error ({error['code']}): {visible(error['message'])}")
    if not ev.complete:
        out.append(
            "INCOMPLETE: something asked for could not be judged (see the notes); this result cannot pass a gate."
        )
    out += [f"note: {visible(n)}" for n in ev.notes]
    return fit_all(out, room, hang="")


def verdict_line(ev: Evidence) -> str:
    """The evidence report in one line (--quiet): its findings by severity, and whether it can pass a gate."""
    counts = Counter(f.severity for f in ev.findings)
    line = f"fabriccheck {ev.kind}: {counts['error']} error, {counts['warning']} warning, {counts['info']} info"
    return line + ("" if ev.complete else "; INCOMPLETE: this result cannot pass a gate")


def render_markdown(ev: Evidence) -> str:
    out = [f"## fabriccheck {ev.kind}: `{visible(ev.source)}`", ""]
    counts = Counter(f.severity for f in ev.findings)
    out.append(
        f"**{counts['error']} error, {counts['warning']} warning, {counts['info']} info** · provider: {ev.provider}"
    )
    heads, rows = _table_for(ev)
    if rows:
        out += ["", "| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows[:50]]
        if len(rows) > 50:
            out.append(f"\n… and {len(rows) - 50} more rows (see `--format json`)")
    for f in ev.findings:
        out += ["", f"### {f.severity}: {f.rule} {f.title}", "", visible(f.message), "", f"**Fix:** {f.remediation}"]
        if (why := suppressed(f)) is not None:
            out += ["", f"_{visible(why)}_"]
        out.append("References: " + ", ".join(f.references))
    if not ev.complete:
        out += ["", "**Incomplete:** something asked for could not be judged."]
    if ev.notes:
        out += ["", "Notes:", *[f"- {visible(n)}" for n in ev.notes]]
    return "\n".join(out)[:65_000] + "\n"


def render(ev: Evidence, fmt: str, fail_on: str = "error", verbose: bool = False, width: int | None = None) -> str:
    if fmt == "json":
        return render_json(ev)
    if fmt == "sarif":
        return render_sarif(ev)
    if fmt == "junit":
        return render_junit(ev, fail_on)
    if fmt == "markdown":
        return render_markdown(ev)
    return render_text(ev, verbose, width)


def exit_code(ev: Evidence, fail_on: str) -> int:
    if not ev.complete:
        return 2
    worst = max((SEVERITY_RANK[f.severity] for f in ev.findings if f.gates), default=None)
    if fail_on != "never" and worst is not None and worst >= SEVERITY_RANK[fail_on]:
        return 1
    return 0


def _said(value: object) -> str:
    """A fabric fact as a person reads it: None is a figure the tables do not hold, not the word None."""
    return "not known" if value is None else str(value)
