"""trend.compare: findings new, fixed and unchanged by fingerprint, and the change in lost GPU-hours."""

from __future__ import annotations

from test_demo_snapshot import ROOT

from fabriccheck import flow, trend
from fabriccheck.providers.aws.dump import load_dump
from fabriccheck.report import Report


def _demo() -> Report:
    return flow.run(load_dump(ROOT / "fixtures" / "demo" / "aws"), flow.Options())


def test_a_dropped_finding_is_fixed_and_an_added_one_new() -> None:
    now, before = _demo(), _demo()
    gone = now.findings.pop(0)
    added = before.findings.pop(-1)
    found = trend.compare(before, now, "old.json")
    assert [f.fingerprint for f in found.fixed] == [gone.fingerprint]
    assert [f.fingerprint for f in found.new] == [added.fingerprint]
    assert len(found.unchanged) == len(now.findings) - 1
    assert found.lost_gpu_hours_per_day.change.low == 0.0  # the summaries are the same
    assert trend.fails(found, "info") is True and trend.fails(found, "never") is False


def test_the_same_report_changes_nothing() -> None:
    report = _demo()
    found = trend.compare(report, report, "old.json")
    assert not found.new and not found.fixed and not found.clusters
    assert len(found.unchanged) == len(report.findings)


def test_a_change_whose_ends_move_apart_reads_low_to_high() -> None:
    """A fix that narrows the estimate: the low end up 50, the high end down 140. The change is the range -140 to
    +50 in the report and in every text that words it (issue 30, item 8: it printed "+50 to -140")."""
    from fabriccheck.penalty import Range
    from fabriccheck.reports import changes

    before, now = _demo(), _demo()
    before.summary.lost_gpu_hours_per_day = Range(low=100.0, high=300.0)
    now.summary.lost_gpu_hours_per_day = Range(low=150.0, high=160.0)
    found = trend.compare(before, now, "old.json")
    change = found.lost_gpu_hours_per_day.change
    assert (change.low, change.high) == (-140.0, 50.0)
    assert "Lost GPU-hours a day: 100-300 -> 150-160 (-140 to +50)." in changes.lines(found)
