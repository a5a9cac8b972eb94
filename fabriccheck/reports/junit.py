"""JUnit XML: one test case per rule and resource, so CI dashboards show each finding by name."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from fabriccheck.flow import Report


def render(report: Report, color: bool = False) -> str:
    suite = ET.Element("testsuite", name="fabriccheck", timestamp=report.generated_at)
    failures = errors = tests = 0
    flagged = set()
    for finding in report.findings:
        flagged.add(finding.rule)
        for resource in finding.resources:
            tests += 1
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"fabriccheck.{finding.provider}.{finding.rule}",
                name=f"{finding.rule} {resource}",
            )
            if finding.severity == "info":
                ET.SubElement(case, "system-out").text = finding.message
                continue
            failures += 1
            failure = ET.SubElement(
                case, "failure", type=finding.category, message=f"[{finding.severity}] {finding.title}"
            )
            failure.text = f"{finding.message}\n\nFix: {finding.remediation}"
    for rule in report.rules:
        if rule not in flagged:
            tests += 1
            ET.SubElement(suite, "testcase", classname=f"fabriccheck.{rule}", name=f"{rule} (no findings)")
    for error in report.errors:
        tests += 1
        errors += 1
        case = ET.SubElement(
            suite,
            "testcase",
            classname="fabriccheck.collection",
            name=f"collect {error.call} {error.region or ''}".strip(),
        )
        ET.SubElement(case, "error", type=error.code, message=error.message)
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    root = ET.Element("testsuites", name="fabriccheck", tests=str(tests), failures=str(failures), errors=str(errors))
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
