"""Reports: text for people; JSON, SARIF, JUnit, markdown and Prometheus for machines and pull requests."""

from __future__ import annotations

from collections.abc import Callable

from fabriccheck.flow import Report
from fabriccheck.reports import junit, machine, markdown, prometheus, text

FORMATS: dict[str, Callable[[Report, bool], str]] = {
    "text": text.render,
    "json": machine.render_json,
    "sarif": machine.render_sarif,
    "junit": junit.render,
    "markdown": markdown.render,
    "prometheus": prometheus.render,
}


def render(
    report: Report,
    fmt: str,
    color: bool = False,
    *,
    verbose: bool = False,
    fail_on: str = "error",
    width: int | None = None,
) -> str:
    """`verbose` and `width` shape the text report (width None: COLUMNS, else the terminal, else 100; at
    least 60); `fail_on` decides which findings are JUnit failures. Other formats ignore them."""
    if fmt == "text":
        return text.render(report, color, verbose=verbose, width=width)
    if fmt == "junit":
        return junit.render(report, color, fail_on=fail_on)
    return FORMATS[fmt](report, color)
