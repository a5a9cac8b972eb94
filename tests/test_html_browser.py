"""The HTML report in a real browser: Debian's headless Chromium (which .ci/run installs) loads the demo's page from
a file:// URL with the network emulated offline and no name resolving, over its DevTools protocol (tests/browser.py).
It takes screenshots at a laptop's and a phone's width; the page makes no request but its own file, logs no console
error, shows the clusters in the report's ranked order and does not overflow a phone's width; and a page whose
cluster names hold markup (test_html_report.hostile_dump) runs none of it."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from browser import CHROMIUM, Browser, Page
from cli_run import run
from test_html_report import IMG, SCRIPT, hostile_dump

from fabriccheck.report import load_report
from fabriccheck.reports import busbw
from fabriccheck.reports.outline import needs_attention, ranked

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing (Debian's chromium package; .ci/run installs it)"
)


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _made(tmp_path: Path, *args: str) -> tuple[Path, Path]:
    """The same run's page and JSON report."""
    page, report = tmp_path / "report.html", tmp_path / "report.json"
    for fmt, out in (("html", page), ("json", report)):
        result = run(*args, "-f", fmt, "-o", str(out))
        assert result.returncode in (0, 1), result.stderr
    return page, report


def _clean(page: Page) -> None:
    assert page.requests == [page.url], page.requests  # the page's own file, nothing else
    assert page.errors == []


def test_the_demo_page_in_a_browser(tmp_path: Path) -> None:
    html, json_report = _made(tmp_path, "demo")
    report = load_report(json_report)
    expected = [c.id for c in ranked(report) if needs_attention(c)]
    with Browser() as browser:
        page = browser.open(html.as_uri())
        shown = page.evaluate("[...document.querySelectorAll('article.cluster')].map(a => a.dataset.cluster)")
        assert shown == expected
        ranks = page.evaluate("[...document.querySelectorAll('#ranking td a')].map(a => a.textContent)")
        assert len(ranks) == 10 and ranks[0] == "aws/111122223333/us-east-1/pcluster hpc-demo/gpu"
        charts = page.evaluate("document.querySelectorAll('svg.chart').length")
        assert charts == 2 + sum(1 for c in report.clusters if busbw.degraded(c))
        headline = page.evaluate("document.querySelector('.headline .big').textContent")
        # Issue 32's total, as test_html_report.test_the_headline_and_statuses has it (test jobs not counted lost).
        assert headline == "4,971–5,159 GPU-hours lost a day"

        laptop = page.screenshot(tmp_path / "laptop.png", 1280)
        assert _png_size(laptop)[0] == 1280 and _png_size(laptop)[1] > 3000
        assert page.evaluate("document.documentElement.scrollWidth") == 1280
        phone = page.screenshot(tmp_path / "phone.png", 390, mobile=True)
        assert _png_size(phone)[0] == 390
        # at a phone's width nothing is wider than the screen: the page scrolls down, never sideways
        assert page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]") == [390, 390]
        wide = page.evaluate(
            "[...document.querySelectorAll('main > section, article, figure, pre')]"
            ".filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).length"
        )
        assert wide == 0
        _clean(page)


def test_markup_in_cloud_names_does_not_run(tmp_path: Path) -> None:
    html, _ = _made(tmp_path, "aws", "--from-dump", str(hostile_dump(tmp_path / "aws")))
    with Browser() as browser:
        page = browser.open(html.as_uri())
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.evaluate("document.querySelectorAll('script, img, iframe, object, embed').length") == 0
        names = page.evaluate("[...document.querySelectorAll('article.cluster h3 .wrap')].map(e => e.textContent)")
        assert f"aws/111122223333/us-east-1/asg {SCRIPT}" in names  # shown as the text it is
        assert any(IMG in name for name in names)
        page.screenshot(tmp_path / "hostile.png", 1280)
        _clean(page)
