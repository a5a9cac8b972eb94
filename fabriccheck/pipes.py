"""Named pipes (FIFOs) on either side of a run: never read as an input, written as an output within a bound.

A FIFO is a name on a file system whose open() waits for the other end (fifo(7), "Opening the FIFO blocks until
the other end is opened also"; https://man7.org/linux/man-pages/man7/fifo.7.html). As an input nobody writes to,
it held a run forever; as an output nobody reads (`-o report.json` where report.json is a FIFO), the open waited
inside the few renames that hold SIGTERM and Ctrl-C off, so the run could not even be stopped. So:
- an input named on the command line (an inventory, a plan, a config, waivers, rules, evidence) that is a named
  pipe is refused at once, with one line naming it (is_named_pipe). A pipe the shell made and already writes to
  (`fabriccheck check <(cat inventory.json)`, `/dev/stdin`) is anonymous: it lives on pipefs, not on a file
  system of names, and is read as before;
- an output that is a named pipe is written with a total deadline (write): its reader has WAIT_SECONDS to come
  and take all of the report, or the run says so in one line (exit 2). Opening with O_NONBLOCK fails at once
  with ENXIO while no reader has it open (fifo(7): "opening for write-only will fail with ENXIO (no such device
  or address) unless the other end has already been opened"), so the wait is a poll the run's signal handlers
  interrupt like any other (fabriccheck.stopping).
Only the standard library is imported here.
"""

from __future__ import annotations

import errno
import functools
import os
import select
import stat
import time
from pathlib import Path

from fabriccheck.errors import FabricCheckError

WAIT_SECONDS = 30.0  # for a reader to open the pipe and take the whole report: the --pushgateway push's bound
_CHUNK = 65_536  # Linux's default pipe capacity (pipe(7), "Pipe capacity": 16 pages)


@functools.cache
def _pipefs() -> int:
    """The device of anonymous pipes (pipefs): a pipe made here shares it with every pipe the shell makes."""
    read_end, write_end = os.pipe()
    try:
        return os.fstat(read_end).st_dev
    finally:
        os.close(read_end)
        os.close(write_end)


def is_named_pipe(path: Path | str) -> bool:
    """`path` (through symlinks) is a FIFO with a name on a file system, not a pipe the shell made for the run."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(info.st_mode) and info.st_dev != _pipefs()


def refusal(where: object) -> str:
    """The words refusing the named pipe `where`."""
    return (
        f"{where}: is a named pipe (FIFO), not a file: give the file itself (a pipe the shell makes, such as "
        "<(cat FILE), is read)"
    )


def refuse_named_pipe(path: Path | str, what: str = "") -> None:
    """One line naming `path` (after `what`: "waivers file") when it is a named pipe: reading it would wait for a
    writer that may never come."""
    if is_named_pipe(path):
        raise FabricCheckError(refusal(f"{what} {path}" if what else path))


def write(path: Path, data: bytes, option: str) -> None:
    """`data` written into the named pipe `path` within WAIT_SECONDS in all (for its reader to open it and take
    everything), or one line naming `option` and `path`."""
    deadline = time.monotonic() + WAIT_SECONDS
    fd = _opened(path, option, deadline)
    try:
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                raise FabricCheckError(
                    f"{option} {path}: the named pipe's reader took {len(data) - len(view):,} of {len(data):,} "
                    f"bytes and no more within {WAIT_SECONDS:g} s: the report is incomplete there"
                )
            select.select([], [fd], [], min(left, 1.0))
            try:
                view = view[os.write(fd, view[:_CHUNK]) :]
            except BlockingIOError:
                continue  # full: wait again
            except BrokenPipeError:
                raise FabricCheckError(
                    f"{option} {path}: the named pipe's reader went away after {len(data) - len(view):,} of "
                    f"{len(data):,} bytes"
                ) from None
    except OSError as exc:
        raise FabricCheckError(f"{option} {path}: cannot write ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def _opened(path: Path, option: str, deadline: float) -> int:
    """The pipe opened to write, once a reader has it open (a poll: the open itself never blocks)."""
    while True:
        try:
            return os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise FabricCheckError(f"{option} {path}: cannot write ({exc.strerror or exc})") from None
        if time.monotonic() >= deadline:
            raise FabricCheckError(
                f"{option} {path}: is a named pipe (FIFO) that nobody opened to read within {WAIT_SECONDS:g} s: "
                "start its reader first, or write to a file"
            )
        time.sleep(0.05)
