"""Reports: text for people; JSON, SARIF, JUnit and markdown for machines and pull requests."""

from __future__ import annotations

from collections.abc import Callable

from fabriccheck.flow import Report
from fabriccheck.reports import junit, machine, markdown, text

FORMATS: dict[str, Callable[[Report, bool], str]] = {
    "text": text.render,
    "json": machine.render_json,
    "sarif": machine.render_sarif,
    "junit": junit.render,
    "markdown": markdown.render,
}


def render(report: Report, fmt: str, color: bool = False) -> str:
    return FORMATS[fmt](report, color)
