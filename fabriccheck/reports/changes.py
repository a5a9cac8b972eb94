"""What changed since an earlier report (trend.compare), for people: `fabriccheck diff`, and the section a scan's
text, markdown and HTML reports add under --previous."""

from __future__ import annotations

from fabriccheck.penalty import Range
from fabriccheck.report import Trend, TrendFinding
from fabriccheck.reports.safe import md_text, visible


def span_text(r: Range | None) -> str:
    if r is None:
        return "not estimated"
    return f"{r.low:,.0f}" if round(r.low) == round(r.high) else f"{r.low:,.0f}-{r.high:,.0f}"


def signed(r: Range) -> str:
    low, high = f"{r.low:+,.0f}", f"{r.high:+,.0f}"
    return low if low == high else f"{low} to {high}"


def finding_line(f: TrendFinding) -> str:
    where = f.cluster or f.account
    waived = "" if f.gates else " (waived or in the baseline)"
    return f"{f.severity} {f.rule} {where}: {f.title}{waived} [{', '.join(f.resources[:3])}]"


def render(trend: Trend, current: str, markdown: bool = False) -> str:
    """The trend for people: counts, the change in cost, then the new and fixed findings (new first)."""
    show = md_text if markdown else visible
    head = ("# " if markdown else "") + (
        f"fabriccheck diff: {show(trend.previous)} ({show(trend.previous_generated_at)}) -> {show(current)}"
    )
    return "\n".join([head, "", *lines(trend, markdown)]) + "\n"


def lines(trend: Trend, markdown: bool = False) -> list[str]:
    """The trend's body (render's, and the text report's section under --previous): every value from a report
    escaped for plain text, or for markdown."""

    def show(text: str) -> str:
        return md_text(text) if markdown else visible(text)

    lost = trend.lost_gpu_hours_per_day
    out = [
        f"{len(trend.new)} new, {len(trend.fixed)} fixed, {len(trend.unchanged)} unchanged findings.",
        f"Lost GPU-hours a day: {span_text(lost.previous)} -> {span_text(lost.current)} ({signed(lost.change)}).",
    ]
    if trend.lost_dollars_per_day is not None:
        d = trend.lost_dollars_per_day
        out.append(f"Lost dollars a day: {span_text(d.previous)} -> {span_text(d.current)} ({signed(d.change)}).")
    out += [f"Note: {show(n)}" for n in trend.notes]
    bullet = "- " if markdown else "  "
    for title, found in (("New findings", trend.new), ("Fixed findings", trend.fixed)):
        if found:
            out += ["", ("## " if markdown else "") + f"{title} ({len(found)})"]
            out += [bullet + show(finding_line(f)) for f in found]
    if trend.clusters:
        out += ["", ("## " if markdown else "") + "Clusters whose lost GPU-hours changed"]
        for c in trend.clusters:
            out.append(f"{bullet}{show(c.id)}: {signed(c.lost_gpu_hours_per_day.change)} a day")
    return out
