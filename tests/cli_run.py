"""Running the `fabriccheck` command for the CLI tests: in this process (`run`), or as the installed console script
in a fresh process (`run_installed`).

`run` calls the console script's own entry point, `fabriccheck.console.main(argv)`, with what a process started by
the installed script would have and give back:
- the environment it is given (os.environ for the call), the working folder (`/` unless told), `sys.argv`;
- stdin /dev/null (what a pytest run hands its subprocesses); stdout and stderr captured at both levels, the
  `sys` streams (non-terminal, with the child's encodings and error handlers) and file descriptors 1 and 2 (so that
  what a library or a child process such as the fake `az` writes there is caught too);
- library warnings and log records as a fresh process shows them: on stderr (pytest would otherwise catch them);
- the exit code the console script would exit with (`sys.exit(main())`; a traceback and 1 for an uncaught error;
  the code given to `os._exit`).
The click command typer builds from the app is built once and invoked for every call (typer.main.get_command
memoized during calls), as click's own test runner invokes one command object again and again.
Process-global state is put back after each call: environment, working folder, streams, descriptors, signal
handlers (importing fabriccheck.console takes SIGTERM and Ctrl-C), logging, warnings, and the cyclic collector
(the command pauses and freezes it: gcpause.paused_gc, sources.fleet.settle_gc).

A run that needs a fresh interpreter goes through `run_installed`: an environment that changes what happens at
interpreter start-up or at the first import of a library (PYTHONPATH, PYTHON*, and the few variables typer, rich
and google-auth read once at import) is sent there by `run` itself, so that it is never silently ignored. Tests of
signals, start-up imports and the installed package itself call `run_installed` directly.
"""

from __future__ import annotations

import contextlib
import gc
import locale
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn, TextIO

import typer
import typer.main

from fabriccheck.sources.progress import API_CALLS

# Read by a library once, when it is first imported (or by the interpreter at start-up): a call whose environment
# sets them otherwise than this process does needs a fresh process.
IMPORT_TIME = frozenset(
    {
        "TERMINAL_WIDTH",  # typer.rich_utils
        "_TYPER_FORCE_DISABLE_TERMINAL",
        "GITHUB_ACTIONS",
        "FORCE_COLOR",
        "PY_COLORS",
        "GCE_METADATA_HOST",  # google.auth.compute_engine._metadata
        "GCE_METADATA_ROOT",
        "GCE_METADATA_TIMEOUT",
        "GCE_METADATA_DETECT_RETRIES",
        "NO_GCE_CHECK",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
    }
)


def _needs_fresh_process(env: dict[str, str]) -> bool:
    names = {n for n in {*env, *os.environ} if n.startswith("PYTHON") or n in IMPORT_TIME}
    return any(env.get(n) != os.environ.get(n) for n in names)


def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`fabriccheck ARGS` as a user runs it, from a folder outside the source tree unless told otherwise."""
    if env is not None and _needs_fresh_process(env):
        return run_installed(*args, cwd=cwd, env=env)
    return _in_process(list(args), cwd or Path("/"), os.environ.copy() if env is None else dict(env))


def run_installed(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The installed console script in a fresh process: for what only a process shows (signals, start-up, imports
    made before the CLI runs, the installed package's files and entry point)."""
    return subprocess.run(
        ["fabriccheck", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd or Path("/"),
        env=env or os.environ.copy(),
    )


def one_clean_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a failed command printed: exit 2, no traceback, exactly one line on stderr."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# ---- in this process ----------------------------------------------------------------------------------------------

_ENCODING = locale.getpreferredencoding(False)  # the child's stdio encoding, and what subprocess decodes with


class _Exited(BaseException):
    """os._exit(code) inside the command: the process would have ended there."""

    def __init__(self, code: int) -> None:
        self.code = code


def _entry_point() -> Callable[[list[str]], int]:
    """fabriccheck.console.main, imported without keeping the handlers its import installs (pytest's own stay)."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        from fabriccheck import console
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
    main: Callable[[list[str]], int] = console.main
    return main


_real_get_command = typer.main.get_command
_commands: dict[int, tuple[typer.Typer, Any]] = {}


def _get_command(typer_instance: typer.Typer) -> Any:
    """typer.main.get_command, built once per app: a process builds it once, at start-up (about 80 ms of typing
    introspection); click invokes a command object any number of times, each with a context of its own (as
    click's own CliRunner does)."""
    built = _commands.get(id(typer_instance))
    if built is None or built[0] is not typer_instance:
        built = _commands[id(typer_instance)] = (typer_instance, _real_get_command(typer_instance))
    return built[1]


def _show_warning(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """What a fresh process does with a warning: formatted, on (the command's) stderr."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


@contextlib.contextmanager
def _fresh_process_warnings() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.resetwarnings()  # Python's default filters, as a process started without -W has them
        warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
        for quiet in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.simplefilter("ignore", quiet, append=True)
        warnings.showwarning = _show_warning
        yield


@contextlib.contextmanager
def _fresh_process_logging() -> Iterator[None]:
    """No handler on the root logger (pytest's capturing ones set aside), level WARNING: a library's record goes to
    stderr through logging's last resort, as in a fresh process."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers.clear()
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


@contextlib.contextmanager
def _environment(env: dict[str, str], cwd: Path, argv: list[str]) -> Iterator[None]:
    saved_env, saved_cwd, saved_argv = os.environ.copy(), os.getcwd(), sys.argv
    os.environ.clear()
    os.environ.update(env)
    sys.argv = [shutil.which("fabriccheck", path=env.get("PATH")) or "fabriccheck", *argv]
    try:
        os.chdir(cwd)
        yield
    finally:
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_env)


class _Drain:
    """The read end of a pipe, read to its end in a thread (as subprocess.run(capture_output=True) does), so that
    a command writing more than a pipe holds never blocks."""

    def __init__(self) -> None:
        self.read_end, self.write_end = os.pipe()
        self.data = bytearray()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while chunk := os.read(self.read_end, 1 << 16):
            self.data += chunk

    def close_write_end(self) -> None:
        if self.write_end >= 0:
            os.close(self.write_end)
            self.write_end = -1

    def text(self) -> str:
        """All that was written, as subprocess.run(text=True) gives it: decoded, universal newlines."""
        self.close_write_end()
        self.thread.join()
        os.close(self.read_end)
        text = self.data.decode(_ENCODING)
        return text.replace("\r\n", "\n").replace("\r", "\n")


def _dup(fd: int) -> int | None:
    try:
        return os.dup(fd)
    except OSError:  # not open
        return None


@contextlib.contextmanager
def _captured(out: _Drain, err: _Drain) -> Iterator[None]:
    """Descriptors 0, 1, 2 and sys.stdin/stdout/stderr pointed at /dev/null and the two pipes for the call: stdout
    is a pipe as in a subprocess (isatty false, /dev/stdout a FIFO written directly, never a file to replace)."""
    streams = sys.stdin, sys.stdout, sys.stderr
    saved = [_dup(fd) for fd in (0, 1, 2)]
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        for source, fd in ((null, 0), (out.write_end, 1), (err.write_end, 2)):
            os.dup2(source, fd)
        # As the interpreter makes them for pipes: stdout block-buffered and strict, stderr line-buffered with
        # backslashreplace. closefd=False: the descriptors are put back below.
        sys.stdin = open(0, encoding=_ENCODING, closefd=False)  # noqa: SIM115  # closed in finally
        sys.stdout = open(1, "w", encoding=_ENCODING, errors="strict", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, encoding=_ENCODING, errors="backslashreplace", closefd=False)  # noqa: SIM115
        yield
    finally:
        for stream in (sys.stdout, sys.stderr, sys.stdin):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
            with contextlib.suppress(OSError, ValueError):
                stream.close()
        sys.stdin, sys.stdout, sys.stderr = streams
        for fd, copy in enumerate(saved):
            if copy is None:  # closed before the call (pytest -s with stdin closed): closed again
                os.close(fd)
            else:
                os.dup2(copy, fd)
                os.close(copy)
        os.close(null)
        out.close_write_end()
        err.close_write_end()


def _exit_now(status: int) -> NoReturn:
    raise _Exited(status)


def _exit_code(exc: SystemExit) -> int:
    """What the interpreter exits with for `raise SystemExit(code)`."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    with contextlib.suppress(OSError, ValueError):
        print(exc.code, file=sys.stderr)
    return 1


def _call(main: Callable[[list[str]], int], argv: list[str]) -> int:
    """`sys.exit(main())` as the console script does it, and what the interpreter makes of how it ended."""
    real_exit = os._exit
    os._exit = _exit_now
    typer.main.get_command = _get_command
    try:
        try:
            raise SystemExit(main(argv))
        except SystemExit as exc:
            return _exit_code(exc)
        except _Exited as exc:
            return exc.code & 0xFF
        except Exception:
            exc_type, exc_value, tb = sys.exc_info()
            _print_traceback(exc_type, exc_value, tb)
            return 1
        finally:
            for stream in (sys.stdout, sys.stderr):  # the interpreter's flush at exit
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
    finally:
        os._exit = real_exit
        typer.main.get_command = _real_get_command


def _print_traceback(exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
    with contextlib.suppress(OSError, ValueError):
        traceback.print_exception(exc_type, exc, tb, file=sys.stderr)


def _in_process(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    main = _entry_point()
    API_CALLS.value = 0  # "requests sent in this process" (the report's api_calls): a fresh process starts at 0
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    gc_was_enabled = gc.isenabled()
    out, err = _Drain(), _Drain()
    try:
        with (
            _environment(env, cwd, argv),
            _fresh_process_logging(),
            _fresh_process_warnings(),
            _captured(out, err),
        ):
            code = _call(main, argv)
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        gc.unfreeze()  # what the command froze (paused_gc, settle_gc) is this process's to collect again
        if gc_was_enabled:
            gc.enable()
        stdout, stderr = out.text(), err.text()
    return subprocess.CompletedProcess(["fabriccheck", *argv], code, stdout, stderr)
