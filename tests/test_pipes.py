"""Named pipes (FIFOs) on either side of a run (issue 29, items 6 and 9; fabriccheck.pipes).

Every pipe here is a real FIFO made with os.mkfifo. The facts followed: opening a FIFO waits for its other end, and
with O_NONBLOCK an open for writing fails with ENXIO while nobody reads (fifo(7),
https://man7.org/linux/man-pages/man7/fifo.7.html); a pipe holds 65,536 bytes before a write waits (pipe(7),
"Pipe capacity"). No test asserts a time: a run that hung would be ended by the 60 s safety timeout and fail."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
from cli_run import one_clean_line, run

from fabriccheck import pipes

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo"
OLD = "last week's report\n"
REFUSED = (
    ": is a named pipe (FIFO), not a file: give the file itself (a pipe the shell makes, such as <(cat FILE), is read)"
)


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _untouched(folder: Path, kept: dict[str, str], fifos: list[str]) -> None:
    """Only the files that were there, as they were, and the FIFOs still FIFOs: nothing half-written left."""
    assert sorted(p.name for p in folder.iterdir()) == sorted([*kept, *fifos])
    for name, text in kept.items():
        assert (folder / name).read_text() == text
    for name in fifos:
        assert stat.S_ISFIFO((folder / name).stat().st_mode)


@contextmanager
def _reader(fifo: Path, read: bool = True) -> Iterator[list[bytes]]:
    """A reader on `fifo` in a thread: it opens the pipe and reads it to the end (or, `read` False, holds it open
    without reading until the block ends). What it read is in the list yielded."""
    got: list[bytes] = []
    done = threading.Event()

    def serve() -> None:
        with open(fifo, "rb") as pipe:  # waits for the writer, as any reader would
            if read:
                got.append(pipe.read())
            else:
                done.wait(60)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield got
    finally:
        done.set()
        # A hang guard, not a speed check: only a run that never gets there in ten minutes fails it.
        deadline = time.monotonic() + 600
        while thread.is_alive() and time.monotonic() < deadline:
            # Never opened by the run: open the other end, so that the reader's open returns.
            with suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            thread.join(0.1)


# ---------------------------------------------------------------------------------------------- outputs


def test_an_output_fifo_nobody_reads_is_one_line_after_its_bound_and_no_other_output_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29 item 6: `-o` onto a FIFO nobody reads waited for ever, with SIGTERM and Ctrl-C blocked."""
    monkeypatch.setattr(pipes, "WAIT_SECONDS", 1.0)
    fifo = _fifo(tmp_path / "pipe.json")
    (tmp_path / "report.md").write_text(OLD)
    line = one_clean_line(run("demo", "-o", str(fifo), "-o", str(tmp_path / "report.md")))
    assert line == (
        f"fabriccheck: error: --output {fifo}: is a named pipe (FIFO) that nobody opened to read within 1 s: start "
        "its reader first, or write to a file"
    )
    _untouched(tmp_path, {"report.md": OLD}, ["pipe.json"])


def test_an_output_fifo_whose_reader_comes_gets_the_whole_report(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path / "pipe.json")
    with _reader(fifo) as got:
        result = run("demo", "-o", str(fifo), "-o", str(tmp_path / "report.json"))
    assert result.returncode == 0, result.stderr
    assert got == [(tmp_path / "report.json").read_bytes()]
    assert len(json.loads(got[0])["findings"]) == 50


def test_a_reader_that_stops_reading_ends_the_write_at_the_bound_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The HTML report is larger than a pipe holds: a reader that opens the pipe and never reads lets 65,536 bytes
    in, then the write waits until the bound."""
    monkeypatch.setattr(pipes, "WAIT_SECONDS", 1.0)
    fifo = _fifo(tmp_path / "pipe.html")
    (tmp_path / "report.json").write_text(OLD)
    with _reader(fifo, read=False):
        line = one_clean_line(run("demo", "-o", str(fifo), "-o", str(tmp_path / "report.json")))
    assert line.startswith(f"fabriccheck: error: --output {fifo}: the named pipe's reader took 65,536 of ")
    assert line.endswith(" bytes and no more within 1 s: the report is incomplete there")
    _untouched(tmp_path, {"report.json": OLD}, ["pipe.html"])


@pytest.mark.parametrize(
    ("signum", "code", "says"), [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")]
)
def test_a_signal_while_an_output_fifo_waits_for_its_reader_ends_the_run_and_writes_nothing(
    tmp_path: Path, signum: int, code: int, says: str
) -> None:
    """Issue 29 item 6: the FIFO's open was made inside the renames that hold signals off, so neither SIGTERM nor
    Ctrl-C could end the run. The other output's temporary file appears once the report is staged; the FIFO is
    written after it. Exit 143 or 130 with its line (docs/usage.md, "Exit codes"); the older report is as it was."""
    fifo = _fifo(tmp_path / "pipe.json")
    (tmp_path / "report.md").write_text(OLD)
    args = ["fabriccheck", "demo", "-o", str(fifo), "-o", str(tmp_path / "report.md")]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the report was never staged"
            time.sleep(0.02)
        time.sleep(0.5)  # from staging to the FIFO's wait: a few milliseconds
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=60)  # safety only: a run that cannot be stopped fails here
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert (proc.returncode, stderr, stdout) == (code, f"fabriccheck: {says}\n", "")
    _untouched(tmp_path, {"report.md": OLD}, ["pipe.json"])


# ---------------------------------------------------------------------------------------------- inputs


def _inputs(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    """Each input file a command reads, as a FIFO: (arguments, what the line names before the path)."""
    fifo = str(tmp_path / "in.fifo")
    report = str(tmp_path / "report.json")
    return {
        "check FILE": (["check", fifo], ""),
        "plan FILE": (["plan", fifo], ""),
        "merge FILE": (["merge", report, fifo], ""),
        "diff OLD": (["diff", fifo, report], ""),
        "diff NEW": (["diff", report, fifo], ""),
        "--previous": (["demo", "--previous", fifo], ""),
        "--config": (["demo", "--config", fifo], "config file "),
        "--waivers": (["demo", "--waivers", fifo], "waivers file "),
        "--baseline": (["demo", "--baseline", fifo], "baseline "),
    }


@pytest.mark.parametrize("case", sorted(_inputs(Path("/x"))))
def test_a_fifo_given_as_an_input_file_is_refused_at_once(tmp_path: Path, case: str) -> None:
    """Issue 29 item 9: reading a FIFO nobody writes to waits for ever; every input named on the command line is
    refused at once when it is one, in one line naming it."""
    assert run("demo", "-f", "json", "-o", str(tmp_path / "report.json")).returncode == 0
    args, what = _inputs(tmp_path)[case]
    fifo = _fifo(tmp_path / "in.fifo")
    line = one_clean_line(run(*args))
    assert line.endswith(f"{what}{fifo}{REFUSED}"), line
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_fifo_in_a_rules_folder_is_refused_at_once(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    fifo = _fifo(rules / "X1.yaml")
    line = one_clean_line(run("demo", "--rules-dir", str(rules)))
    assert line == f"fabriccheck: error: {fifo}{REFUSED}"


@pytest.mark.parametrize("command", ["nccl-log", "nccl-tests"])
def test_evidence_refuses_a_fifo_as_before(tmp_path: Path, command: str) -> None:
    """The evidence commands read a file, or `-`: standard input; anything else was refused already."""
    fifo = _fifo(tmp_path / "in.fifo")
    line = one_clean_line(run(command, str(fifo)))
    assert line == f"fabriccheck: error: unreadable input: {fifo}: not a regular file"


def test_a_pipe_the_shell_makes_is_still_read(tmp_path: Path) -> None:
    """Only a named pipe is refused: `plan <(cat PLAN)` reads the shell's anonymous pipe (it lives on pipefs, as
    the pipes of os.pipe() do), with the same verdict as the file."""
    plan = DEMO / "plans" / "aws-wrong.json"
    piped = subprocess.run(
        ["bash", "-c", f"fabriccheck plan <(cat {plan}) -f json"], capture_output=True, text=True, timeout=120
    )
    assert (piped.returncode, piped.stderr) == (1, "")
    direct = run("plan", str(plan), "-f", "json")
    assert json.loads(piped.stdout)["findings"] == json.loads(direct.stdout)["findings"] != []
    assert pipes.is_named_pipe(_fifo(tmp_path / "named")) and not pipes.is_named_pipe(plan)
