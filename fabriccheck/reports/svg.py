"""The HTML report's charts, drawn here as inline SVG: no script, no library, no request.

Each chart is one `<svg>` that scales to its container (viewBox, width 100%); colours come from the page's CSS
classes, so a dark scheme restyles them. Every label that may come from a cloud (a cluster's name) is made visible
(safe.visible) and escaped (markupsafe) before it is placed; the figures are written as attributes too
(`data-*`), so a reader's tools and the tests can take the numbers from the chart itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from fabriccheck.penalty.collectives import size_label
from fabriccheck.provider import clouds as declared_clouds
from fabriccheck.reports.busbw import Curves
from fabriccheck.reports.safe import visible

WIDTH = 440  # viewBox units: a laptop shows them at ~1.3 px, a phone at ~0.8
LABEL_ROOM = 18  # the label line above each bar
BAR = 12
ROW = LABEL_ROOM + BAR + 8
FIGURE_ROOM = 118  # after the longest bar: "1,234–5,678 (cannot run)" at 12px


def _text(value: object) -> Markup:
    return escape(visible(value))


def _n(value: float) -> str:
    """A coordinate, short: `12.5`, `0`."""
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _svg(name: str, title: str, height: float, body: list[Markup]) -> Markup:
    head = Markup(
        '<svg class="chart" id="{0}" viewBox="0 0 {1} {2}" role="img" aria-labelledby="{0}-title" '
        'xmlns="http://www.w3.org/2000/svg"><title id="{0}-title">{3}</title>'
    ).format(name, WIDTH, _n(height), _text(title))
    return head + Markup("").join(body) + Markup("</svg>")


@dataclass(frozen=True)
class Bar:
    label: str
    low: float
    high: float
    value: str  # the figure written beside the bar ("1,234–1,300")
    href: str = ""  # the cluster's section


def bars(name: str, title: str, rows: Sequence[Bar]) -> Markup:
    """Horizontal bars, one row per item, its label on a line above it and its figure after its end: the low end
    solid, up to the high end lighter."""
    top = max((r.high for r in rows), default=0.0) or 1.0
    room = WIDTH - FIGURE_ROOM
    body: list[Markup] = []
    for index, row in enumerate(rows):
        y = index * ROW
        low, high = room * row.low / top, room * row.high / top
        label = Markup('<text class="label" x="0" y="{}">{}</text>').format(_n(y + 13), _text(row.label))
        if row.href:
            label = Markup('<a href="{}">{}</a>').format(row.href, label)
        body.append(
            Markup('<g class="bar" data-label="{}" data-low="{}" data-high="{}">').format(
                visible(row.label), row.low, row.high
            )
            + label
            + Markup('<rect class="low" x="0" y="{}" width="{}" height="{}"/>').format(_n(y + LABEL_ROOM), _n(low), BAR)
            + Markup('<rect class="high" x="{}" y="{}" width="{}" height="{}"/>').format(
                _n(low), _n(y + LABEL_ROOM), _n(max(0.0, high - low)), BAR
            )
            + Markup('<text class="figure" x="{}" y="{}">{}</text>').format(
                _n(high + 5), _n(y + LABEL_ROOM + BAR - 1), row.value
            )
            + Markup("</g>")
        )
    return _svg(name, title, max(1, len(rows)) * ROW, body)


def stacked(name: str, title: str, counts: dict[str, dict[str, int]]) -> Markup:
    """One bar per category, a segment per cloud (`counts[category][cloud]`), with a legend of the clouds."""
    clouds: list[str] = [c.name for c in declared_clouds() if any(by.get(c.name) for by in counts.values())]
    clouds += sorted({c for by in counts.values() for c in by if by[c] and c not in clouds})
    top = max((sum(by.values()) for by in counts.values()), default=0) or 1
    body: list[Markup] = []
    x = 0.0
    for cloud in clouds:  # the legend, on the first line
        body.append(
            Markup(
                '<rect class="cloud-{0}" x="{1}" y="2" width="10" height="10"/>'
                '<text class="label" x="{2}" y="11">{3}</text>'
            ).format(cloud, _n(x), _n(x + 14), cloud)
        )
        x += 14 + 8 * len(cloud) + 16
    for index, (category, by) in enumerate(counts.items()):
        y = ROW * index + 22
        total = sum(by.values())
        row = [
            Markup('<text class="label" x="0" y="{}">{}</text>').format(_n(y + 13), _text(category)),
            Markup('<text class="figure" x="{}" y="{}" text-anchor="end">{}</text>').format(WIDTH, _n(y + 13), total),
        ]
        at = 0.0
        for cloud in clouds:
            count = by.get(cloud, 0)
            if not count:
                continue
            width = WIDTH * count / top
            row.append(
                Markup(
                    '<rect class="cloud-{}" x="{}" y="{}" width="{}" height="{}" data-cloud="{}" data-count="{}">'
                    "<title>{}: {} in {}</title></rect>"
                ).format(cloud, _n(at), _n(y + LABEL_ROOM), _n(width), BAR, cloud, count, cloud, count, _text(category))
            )
            at += width
        body.append(
            Markup('<g class="category" data-category="{}">').format(_text(category))
            + Markup("").join(row)
            + Markup("</g>")
        )
    return _svg(name, title, 22 + max(1, len(counts)) * ROW, body)


# ---------------------------------------------------------------------------------------------- busbw

PLOT = (46.0, 8.0, WIDTH - 8.0, 196.0)  # left, top, right, bottom of the plotting area
LEGEND_TOP = 244
HEIGHT = LEGEND_TOP + 2 * 14 + 8


def _figure(value: float) -> str:
    """A busbw tick: `0.001`, `1`, `100`."""
    return f"{value:g}" if value < 1 else f"{value:,.0f}"


def busbw(name: str, title: str, curves: Curves) -> Markup:
    """Log-log lines of busbw (GB/s) against message size: healthy, and the degraded state at both ends of its
    range (a band between them when they differ), with the values of each line as `data-busbw`."""
    left, top, right, bottom = PLOT
    values = [v for v in (*curves.healthy, *curves.best, *curves.worst) if v > 0]
    low_decade = math.floor(math.log10(min(values))) if values else -3
    high_decade = math.ceil(math.log10(max(values))) if values else 3
    high_decade = max(high_decade, low_decade + 1)
    first, last = math.log2(curves.sizes[0]), math.log2(curves.sizes[-1])

    def x(size: int) -> float:
        return left + (right - left) * (math.log2(size) - first) / ((last - first) or 1.0)

    def y(value: float) -> float:
        ratio = (math.log10(max(value, 10.0**low_decade)) - low_decade) / (high_decade - low_decade)
        return bottom - (bottom - top) * ratio

    body: list[Markup] = []
    for decade in range(low_decade, high_decade + 1):
        at = y(10.0**decade)
        body.append(
            Markup(
                '<line class="grid" x1="{0}" y1="{1}" x2="{2}" y2="{1}"/>'
                '<text class="tick" x="{3}" y="{4}" text-anchor="end">{5}</text>'
            ).format(_n(left), _n(at), _n(right), _n(left - 4), _n(at + 4), _figure(10.0**decade))
        )
    for index, size in enumerate(curves.sizes):
        if index % 3 == 0:
            body.append(
                Markup('<text class="tick" x="{}" y="{}" text-anchor="middle">{}</text>').format(
                    _n(x(size)), _n(bottom + 14), size_label(size)
                )
            )

    def points(series: Sequence[float], backwards: bool = False) -> str:
        pairs = list(zip(curves.sizes, series, strict=True))
        return " ".join(f"{_n(x(s))},{_n(y(v))}" for s, v in (reversed(pairs) if backwards else pairs))

    if curves.best != curves.worst:  # the state's range: between its best and worst ends
        band = points(curves.best) + " " + points(curves.worst, backwards=True)
        body.append(Markup('<polygon class="band" points="{}"/>').format(band))
    for series, label in ((curves.healthy, "healthy"), (curves.best, "best"), (curves.worst, "worst")):
        body.append(
            Markup('<polyline class="line {0}" data-series="{0}" data-busbw="{1}" points="{2}"/>').format(
                label, " ".join(f"{v:.6g}" for v in series), points(series)
            )
        )
    body.append(
        Markup(
            '<text class="tick" x="{}" y="{}" text-anchor="middle">message size (bytes, log scale); busbw GB/s</text>'
        ).format(_n((left + right) / 2), _n(bottom + 30))
    )
    legend = (("healthy", "healthy"), ("best", f"{curves.state}: best end"), ("worst", "worst end"))
    for index, (css, words) in enumerate(legend):  # a line each: a state's words may be long
        at = LEGEND_TOP + 14 * index
        body.append(
            Markup(
                '<line class="line {0}" x1="{1}" y1="{2}" x2="{3}" y2="{2}"/>'
                '<text class="label" x="{4}" y="{5}">{6}</text>'
            ).format(css, _n(left), _n(at - 4), _n(left + 18), _n(left + 24), _n(at), words)
        )
    return _svg(name, title, HEIGHT, body)
