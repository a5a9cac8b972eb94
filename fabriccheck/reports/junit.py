"""JUnit XML for CI dashboards.

- One test case per finding (README: "a test case per finding"), named by rule and what it flags; every
  resource the finding names is listed in the case's body.
- A finding at or above `fail_on` (error | warning | info; `never`: none) is a `<failure>`. A finding below
  the threshold is a passing test case whose `<system-out>` carries the finding: it is reported, but it does
  not fail the gate (a `<skipped>` would read as "not checked", which it was).
- A finding's body names its cluster's penalty (what the cluster loses a day) and, for a rule that may be
  wrong here, its confidence.
- One passing test case per clean cluster, so a green run shows what was judged.
- A cluster that could not be fully judged (findings or not) is a `<skipped>` test case naming the rules
  not judged and why, and the run gets one `<error>` test case listing them: such a run cannot pass a gate.
- A run with collection errors (`report.errors`) adds one `<error>` test case listing every collection error,
  so the suite has errors="1" and never looks green.

Every value from the cloud goes through `safe.visible`: control characters would make the XML invalid.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from fabriccheck.findings import SEVERITY_RANK, Finding
from fabriccheck.report import Report, unjudged_rules
from fabriccheck.reports.outline import suppressed
from fabriccheck.reports.safe import visible
from fabriccheck.reports.wording import penalty_line

FAIL_ON = ("error", "warning", "info", "never")
NAMED = 3  # resources named in a test case's name; the body lists all


def fails(severity: str, fail_on: str) -> bool:
    if fail_on not in FAIL_ON:
        raise ValueError(f"fail_on must be one of {', '.join(FAIL_ON)}, not {fail_on!r}")
    return fail_on != "never" and SEVERITY_RANK[severity] >= SEVERITY_RANK[fail_on]


def _case_name(finding: Finding) -> str:
    resources = [visible(r) for r in finding.resources]
    named = ", ".join(resources[:NAMED]) + (f" (+{len(resources) - NAMED} more)" if len(resources) > NAMED else "")
    where = visible(finding.cluster) if finding.cluster else "launch template"
    return f"{visible(finding.rule)} {named} [{where}]"


def _body(finding: Finding, cost: str | None = None) -> str:
    lines = [
        f"[{finding.severity}] {visible(finding.rule)} {visible(finding.category)}: {visible(finding.title)}",
        *(
            ["confidence: possible (the rule may be wrong here; not counted in the headline cost)"]
            if finding.confidence == "possible"
            else []
        ),
        f"cluster: {visible(finding.cluster) if finding.cluster else '(launch template)'}",
        *([f"cluster penalty: {visible(cost)}"] if cost else []),
        f"account: {visible(finding.account)}",
        f"resources ({len(finding.resources)}):",
        *(f"  {visible(r)}" for r in finding.resources),
        "",
        visible(finding.message),
        "",
        "Fix: " + "\n".join(visible(line) for line in finding.remediation.splitlines()),
    ]
    return "\n".join(lines)


def render(report: Report, color: bool = False, fail_on: str = "error") -> str:
    fails("error", fail_on)  # an unknown threshold is an error even when nothing was found
    suite = ET.Element("testsuite", name="fabriccheck", timestamp=report.generated_at)
    tests = failures = errors = skipped = 0
    costs = {c.id: penalty_line(c.penalty) for c in report.clusters if c.evidence is None}  # a job is not priced
    for finding in report.findings:
        cost = costs.get(finding.cluster or "")
        tests += 1
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"fabriccheck.{visible(finding.provider)}.{visible(finding.rule)}",
            name=_case_name(finding),
        )
        if fails(finding.severity, fail_on) and finding.gates:
            failures += 1
            failure = ET.SubElement(
                case,
                "failure",
                type=visible(finding.category),
                message=f"[{finding.severity}] {visible(finding.title)}",
            )
            failure.text = _body(finding, cost)
        else:
            below = "not failing" if fail_on == "never" else f"below --fail-on {fail_on}"
            if not finding.gates:
                below = suppressed(finding) or below
            ET.SubElement(case, "system-out").text = f"({below})\n{_body(finding, cost)}"

    cases, skipped = _cluster_cases(suite, report)
    tests += cases

    if not report.collected():
        tests += 1
        errors += 1
        case = ET.SubElement(suite, "testcase", classname="fabriccheck.collection", name="collection complete")
        lines = [
            f"{visible(e.call)} in {visible(e.account)} {visible(e.region or '-')}: {visible(e.code)}: "
            f"{visible(e.message)}" + (f" (needs {visible(e.permission)})" if e.permission else "")
            for e in report.errors
        ]
        count = len(report.errors)
        error = ET.SubElement(
            case,
            "error",
            type="IncompleteCollection",
            message=f"run incomplete: {count} collection error{'s' if count != 1 else ''}; "
            "this result cannot pass a gate",
        )
        error.text = "\n".join(lines) or "some facts were not collected"
        ET.SubElement(case, "system-out").text = "incomplete run: " + (error.text or "")

    if _not_fully_judged(suite, report):
        tests += 1
        errors += 1

    counts = {"tests": str(tests), "failures": str(failures), "errors": str(errors), "skipped": str(skipped)}
    for key, value in counts.items():
        suite.set(key, value)
    root = ET.Element("testsuites", {"name": "fabriccheck"} | {k: v for k, v in counts.items() if k != "skipped"})
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _cluster_cases(suite: ET.Element, report: Report) -> tuple[int, int]:
    """A passing case per clean cluster, a skipped one per cluster not fully judged: (cases, skipped)."""
    tests = skipped = 0
    with_findings = {f.cluster for f in report.findings}
    for cluster in sorted(report.clusters, key=lambda c: c.id):
        if cluster.complete and (cluster.findings or cluster.id in with_findings):
            continue  # its findings are its test cases
        tests += 1
        classname = f"fabriccheck.{visible(cluster.provider)}.cluster"
        if cluster.complete:  # judged by every selected rule, and none fired (a deselected rule is not a gap)
            ET.SubElement(suite, "testcase", classname=classname, name=f"{visible(cluster.id)} clean")
            continue
        skipped += 1
        case = ET.SubElement(suite, "testcase", classname=classname, name=f"{visible(cluster.id)} not fully judged")
        reasons = [f"{visible(n.rule)}: {visible(n.reason)}" for n in unjudged_rules(cluster)]
        skip = ET.SubElement(case, "skipped", message="not fully judged: " + "; ".join(reasons[:5]))
        skip.text = "\n".join(reasons)
    return tests, skipped


def _not_fully_judged(suite: ET.Element, report: Report) -> bool:
    """Findings or not, a cluster with a selected rule not judged keeps the run from passing (exit 2): one error
    case lists them all. Whether there was one."""
    unjudged = [c for c in report.clusters if not c.complete]
    if not unjudged:
        return False
    case = ET.SubElement(suite, "testcase", classname="fabriccheck.judging", name="every selected rule judged")
    error = ET.SubElement(
        case,
        "error",
        type="NotFullyJudged",
        message=f"{len(unjudged)} cluster{'s' if len(unjudged) != 1 else ''} not fully judged; "
        "this result cannot pass a gate",
    )
    error.text = "\n".join(
        f"{visible(c.id)}: {visible(n.rule)}: {visible(n.reason)}" for c in unjudged for n in unjudged_rules(c)
    )
    return True
