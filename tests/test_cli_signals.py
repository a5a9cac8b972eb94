"""SIGTERM and Ctrl-C at any moment, start-up included: one line, exit 143 or 130, no traceback, nothing written
(issue 18, item 12).

A moment is held still by a `sitecustomize` module on PYTHONPATH (Python imports it at start-up, before the
console script runs): an import hook that, when a chosen module is first imported, leaves a marker file and
sleeps. The signal is sent once the marker is there, so it lands inside that import: `typer` (the CLI's first
library: start-up), or `fabriccheck.reports.machine` (imported to render the JSON report, after the inventory
was collected and staged and the findings judged: the report has not left yet)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEMO_AWS = ROOT / "fixtures" / "demo" / "aws"

HOOK = """
import importlib.abc, os, sys, time

class _Hold(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == os.environ["HOLD_AT"] and not os.path.exists(os.environ["HOLD_MARKER"]):
            open(os.environ["HOLD_MARKER"], "w").close()
            time.sleep(600)  # until the signal: the test ends the process long before
        return None

sys.meta_path.insert(0, _Hold())
"""
LINES: dict[int, tuple[int, str]] = {
    signal.SIGTERM: (143, "fabriccheck: terminated\n"),
    signal.SIGINT: (130, "fabriccheck: interrupted\n"),
}


def _held(tmp_path: Path, module: str, args: list[str], signum: int) -> subprocess.CompletedProcess[str]:
    """Run `fabriccheck ARGS`, held inside the first import of `module`; send `signum` there. The hold lasts ten
    minutes, so a process that ends inside the guard below was ended by the signal, at once, however busy the
    machine (the guard is no time limit on fabriccheck, only on a test that would otherwise hang)."""
    hook = tmp_path / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(HOOK)
    marker = tmp_path / "held"
    marker.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(hook), "HOLD_AT": module, "HOLD_MARKER": str(marker)}
    proc = subprocess.Popen(
        ["fabriccheck", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path
    )
    try:
        # A hang guard, not a speed check: only a run that never gets there in ten minutes fails it.
        deadline = time.monotonic() + 600
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "never reached the import"
            time.sleep(0.02)
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_the_cli_is_still_importing_is_one_line(tmp_path: Path, signum: int) -> None:
    result = _held(tmp_path, "typer", ["demo", "-f", "json"], signum)
    assert (result.returncode, result.stderr, result.stdout) == (*LINES[signum], "")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_after_the_inventory_was_made_and_before_the_report_leaves_neither(
    tmp_path: Path, signum: int
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    inventory, report = out / "inventory.json", out / "report.json"
    inventory.write_text("an older inventory, kept as it was\n")
    args = ["aws", "--from-dump", str(DEMO_AWS), "-f", "json", "-o", str(report), "--save-inventory", str(inventory)]
    result = _held(tmp_path, "fabriccheck.reports.machine", args, signum)
    assert (result.returncode, result.stderr, result.stdout) == (*LINES[signum], "")
    assert sorted(p.name for p in out.iterdir()) == ["inventory.json"]  # no report, no temporary file left
    assert inventory.read_text() == "an older inventory, kept as it was\n"


def test_sigterm_at_any_moment_of_a_run_is_never_a_traceback_or_a_gate_verdict(tmp_path: Path) -> None:
    """Signals spread over a whole run. Each lands (143 and its line) or the run had ended before it; only in the
    interpreter's own first milliseconds, before fabriccheck's first line, does the signal kill the process as it
    kills any (-15, nothing printed, which a shell reports as 143). Never exit 0, 1 or 2 with a partial report."""
    args = ["fabriccheck", "aws", "--from-dump", str(DEMO_AWS), "-f", "json", "-o", str(tmp_path / "report.json")]
    started = time.monotonic()
    assert subprocess.run(args, capture_output=True, timeout=120).returncode == 1
    whole = time.monotonic() - started
    landed = 0
    for step in range(12):
        (tmp_path / "report.json").unlink(missing_ok=True)
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(whole * step / 12)
        if proc.poll() is not None:  # done before the signal
            proc.communicate()
            continue
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=20)
        assert "Traceback" not in stderr
        if proc.returncode == -signal.SIGTERM:  # before the interpreter ran fabriccheck
            assert stderr == ""  # at any step: how far a busy machine gets in a fraction of a run varies
        elif proc.returncode == 143:
            assert stderr == "fabriccheck: terminated\n"
            assert not (tmp_path / "report.json").exists()
            landed += 1
        else:  # it finished as the signal came: a whole report, and its verdict
            assert proc.returncode == 1 and (tmp_path / "report.json").exists(), stderr
    assert landed >= 3


def test_a_signal_between_two_outputs_leaves_neither(tmp_path: Path) -> None:
    """Held while the markdown report is being made, after the JSON report was staged: SIGTERM leaves no output and
    no temporary file, and an older report is as it was (the outputs are put in place together or not at all)."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.json").write_text("last week's report\n")
    args = ["demo", "-o", str(out / "report.json"), "-o", str(out / "report.md"), "-o", str(out / "report.prom")]
    result = _held(tmp_path, "fabriccheck.reports.markdown", args, signal.SIGTERM)
    assert (result.returncode, result.stderr, result.stdout) == (*LINES[signal.SIGTERM], "")
    assert sorted(p.name for p in out.iterdir()) == ["report.json"]
    assert (out / "report.json").read_text() == "last week's report\n"
