"""SIGTERM and Ctrl-C at any moment: one line on stderr, exit 143 or 130, nothing written, never a traceback.

A scheduler's stop (`timeout`, Kubernetes, systemd) sends SIGTERM; a person presses Ctrl-C. Either may come
while the command is still importing its libraries, parsing options, collecting, judging or writing. The
handlers are installed by the entry point (fabriccheck.console) before anything else is imported, and they never
raise into the code they interrupt: an exception thrown from a signal handler lands in whatever bytecode runs at
that moment, and library code does not expect it there (pydantic-core building a validator turned it into a
SchemaError, an "internal error" and exit 2; a C extension may even crash). Instead the handler
- removes every file this run has staged and not yet put in place (track(), from outputs.stage), so
  that nothing half-written is left and every file an output would replace is as it was;
- writes its line and ends the process at once (os._exit: no interpreter teardown, which with a cloud SDK
  loaded takes most of a second, and no flush of a half-written report).
Once a run's outputs are all in place (settle(), under held() with the renames), the run has its verdict: a
signal from then on lets it end with that verdict (a few milliseconds later) instead of claiming that nothing
was written. Worker threads are daemons: they end with the process. Only the standard library is imported here.
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
    """SIGTERM, for code that wants to stop a run as the handler would (the handler itself never raises)."""


_temporaries: set[str] = set()  # staged files not yet put in place: removed when a signal ends the run
_settled = False  # the run's outputs are in place: a signal lets it end with its verdict
_pending: list[int] = []  # signals that came after that


def code_of(signum: int) -> int:
    return TERMINATED if signum == signal.SIGTERM else INTERRUPTED


def exit_now(code: int) -> NoReturn:
    """Drop what was staged, say so and end the process: nothing half-written is ever put in place."""
    for temporary in list(_temporaries):
        with suppress(OSError):
            os.unlink(temporary)
    _temporaries.clear()
    with suppress(OSError):
        os.write(2, LINES[code].encode())
    os._exit(code)


def _handler(signum: int, frame: FrameType | None) -> None:
    if _settled:
        _pending.append(signum)
        return
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


def track(temporary: str) -> None:
    """`temporary` is about to be created: a signal from now on removes it."""
    _temporaries.add(temporary)


def untrack(temporary: str) -> None:
    """`temporary` was renamed into place or removed."""
    _temporaries.discard(temporary)


def settle() -> None:
    """The run's outputs are in place (called under held()): a later signal no longer stops it."""
    global _settled
    _settled = True


@contextmanager
def running() -> Iterator[None]:
    """One run of the command: it starts unsettled, with nothing staged."""
    global _settled
    _settled = False
    _pending.clear()
    yield  # still settled afterwards: the process (or the caller) ends with the verdict the run earned


@contextmanager
def live() -> Iterator[None]:
    """A wait after the run's outputs are in place (the --pushgateway push): a signal ends the run at once with its
    code, as before settle(); one that came since settle() ends it here, before the wait starts."""
    global _settled
    was = _settled
    if _pending:
        exit_now(code_of(_pending[0]))
    _settled = False
    try:
        yield
    finally:
        _settled = was


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
