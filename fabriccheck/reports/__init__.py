"""Reports: text and HTML for people; JSON, SARIF, JUnit, markdown and Prometheus for machines and pull requests.

Each format's module is imported when that format is asked for: a JSON report of a large fleet does not
wait for the text report's terminal library (rich) to load."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fabriccheck.report import Report

# format -> (module under fabriccheck.reports, its render function)
FORMATS: dict[str, tuple[str, str]] = {
    "text": ("text", "render"),
    "json": ("machine", "render_json"),
    "sarif": ("machine", "render_sarif"),
    "junit": ("junit", "render"),
    "markdown": ("markdown", "render"),
    "prometheus": ("prometheus", "render"),
    "html": ("html", "render"),
}


def renderer(fmt: str) -> Callable[..., str]:
    module, function = FORMATS[fmt]
    found: Callable[..., str] = getattr(importlib.import_module(f"fabriccheck.reports.{module}"), function)
    return found


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
        return renderer(fmt)(report, color, verbose=verbose, width=width)
    if fmt == "junit":
        return renderer(fmt)(report, color, fail_on=fail_on)
    return renderer(fmt)(report, color)
