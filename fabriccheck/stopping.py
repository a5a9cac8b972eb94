"""SIGTERM and Ctrl-C at any moment: one line on stderr, exit 143 or 130, nothing written, never a traceback.

A scheduler's stop (`timeout`, Kubernetes, systemd) sends SIGTERM; a person presses Ctrl-C. Either may come
while the command is still importing its libraries, parsing options, collecting, judging or writing. The
handlers are installed by the entry point (fabriccheck.console) before anything else is imported:
- while the command starts (imports, before the CLI runs it) and once it is finishing, a signal ends the
  process at once, with its line: there is nothing to undo;
- while the command runs (`running()`), the first signal raises (Terminated, or KeyboardInterrupt for Ctrl-C)
  in the main thread, so that what is under way unwinds: a file being written is removed, staged outputs are
  dropped (sources.common.Outputs), and the CLI prints the line;
- a second signal, or one while that unwinding is under way, ends the process at once.
Worker threads are daemons: they end with the process. Only the standard library is imported here.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from types import FrameType
from typing import NoReturn

INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT, as shells report it
TERMINATED = 143  # SIGTERM: 128 + 15
LINES = {INTERRUPTED: "fabriccheck: interrupted\n", TERMINATED: "fabriccheck: terminated\n"}


class Terminated(BaseException):
    """SIGTERM, raised in the main thread like KeyboardInterrupt for Ctrl-C."""


_running = False  # a first signal raises (inside running())
_raised = False  # it has: the next one ends the process


def code_of(signum: int) -> int:
    return TERMINATED if signum == signal.SIGTERM else INTERRUPTED


def exit_now(code: int) -> NoReturn:
    """Say so and end the process: no interpreter teardown (with a cloud SDK loaded it takes most of a second), no
    flush of a half-written report: what was staged is never put in place."""
    with suppress(OSError):
        os.write(2, LINES[code].encode())
    os._exit(code)


def _handler(signum: int, frame: FrameType | None) -> None:
    global _raised
    if _running and not _raised:
        _raised = True
        if signum == signal.SIGTERM:
            raise Terminated
        raise KeyboardInterrupt
    exit_now(code_of(signum))


def install() -> dict[int, object]:
    """Handle SIGTERM and SIGINT from here on (main thread only); the handlers they replace, to restore them."""
    previous: dict[int, object] = {}
    for signum in (signal.SIGTERM, signal.SIGINT):
        try:
            previous[signum] = signal.signal(signum, _handler)
        except ValueError:  # not the main thread: signals are the main thread's business
            break
    return previous


def restore(previous: dict[int, object]) -> None:
    for signum, handler in previous.items():
        with suppress(ValueError, TypeError):
            signal.signal(signum, handler)  # type: ignore[arg-type]  # what signal.signal returned


@contextmanager
def running() -> Iterator[None]:
    """The stretch where a first signal raises, to unwind what is under way (see the module's docstring)."""
    global _running, _raised
    _running, _raised = True, False
    try:
        yield
    finally:
        _running = False


@contextmanager
def held() -> Iterator[None]:
    """Signals wait (blocked, then delivered) for the few renames that put a run's outputs in place, so that a
    stop lands before all of them or after all of them."""
    signals = {signal.SIGTERM, signal.SIGINT}
    try:
        before = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    except (AttributeError, ValueError, OSError):  # no pthread_sigmask here
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
