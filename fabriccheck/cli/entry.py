"""The entry point: run the app, and turn every way a run can end into its exit code and at most one line on stderr."""

from __future__ import annotations

import os
import sys
from contextlib import suppress
from typing import Any

import typer

from fabriccheck.cli.app import app, say
from fabriccheck.stdout import write_stdout


def main(argv: list[str] | None = None) -> int:
    """Entry point (fabriccheck.console, argv None; tests and library callers pass argv): every failure is one line
    on stderr and exit code 2, never a traceback; SIGTERM and Ctrl-C at any moment are one line and exit 143 or 130
    (fabriccheck.stopping), with nothing written."""
    from fabriccheck import stopping

    previous = stopping.install()
    try:
        with stopping.running():
            code = _run(argv)
    except (stopping.Terminated, KeyboardInterrupt) as exc:  # raised by other means than our handlers (they exit)
        code = stopping.TERMINATED if isinstance(exc, stopping.Terminated) else stopping.INTERRUPTED
        say(stopping.LINES[code].strip())
    if argv is None:
        # The process itself: leave at once, whatever the verdict. Tearing down an interpreter that has loaded a
        # cloud SDK takes most of a second, a finished or stopped run has nothing left to do, and late in the
        # teardown Python puts the default signal handlers back, so a SIGTERM there would kill the process
        # silently (-15) after its report was written.
        with suppress(OSError, ValueError, AttributeError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    if argv is not None:
        stopping.restore(previous)  # a caller's own process: its handlers as they were
    return code


def _run(argv: list[str] | None) -> int:
    import importlib

    from fabriccheck.errors import FabricCheckError
    from fabriccheck.stopping import INTERRUPTED, TERMINATED, Terminated

    try:  # newer typer carries its own copy of click
        click_errors: Any = importlib.import_module("typer._click.exceptions")
    except ImportError:  # typer releases that use click itself
        click_errors = importlib.import_module("click.exceptions")
    try:
        command = typer.main.get_command(app)
        result = command.main(args=argv, prog_name="fabriccheck", standalone_mode=False)
        code = int(result) if isinstance(result, int) else 0
        if code == INTERRUPTED:  # typer answers Ctrl-C with Exit(130), which non-standalone mode returns
            say("fabriccheck: interrupted")
        return code
    except typer.Exit as exc:
        return int(exc.exit_code)
    except click_errors.NoArgsIsHelpError as exc:
        with suppress(FabricCheckError):  # nowhere to show the help: nothing more to say
            write_stdout(exc.ctx.get_help() + "\n")
        return 0
    except click_errors.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "fabriccheck"
        say(f"fabriccheck: error: {_usage_message(exc)} (see: {where} --help)")
        return 2
    except typer.Abort:
        say("fabriccheck: aborted")
        return 2
    except FabricCheckError as exc:
        say(f"fabriccheck: error: {exc}")
        return 2
    except KeyboardInterrupt:
        say("fabriccheck: interrupted")
        return INTERRUPTED
    except Terminated:
        say("fabriccheck: terminated")
        return TERMINATED
    except click_errors.ClickException as exc:  # click's other refusals (a file option it could not open)
        say(f"fabriccheck: error: {exc.format_message()}")
        return 2
    except (Exception, SystemExit) as exc:  # the promise is one line, never a traceback; FABRICCHECK_DEBUG=1 shows it
        # SystemExit: a library that called sys.exit() inside a command; its code is no verdict (1 would read as
        # findings), so it is an internal error like any other.
        if os.environ.get("FABRICCHECK_DEBUG"):
            # Masked as every error line is (redaction.redact): an SDK's error text can quote the header or
            # URL that carries a credential (http.client quotes a whole Authorization header it refuses).
            import traceback

            from fabriccheck.redaction import redact

            with suppress(OSError, ValueError):
                sys.stderr.write(redact("".join(traceback.format_exception(exc))))
            return 2
        say(f"fabriccheck: internal error: {type(exc).__name__}: {_message(exc)} (set FABRICCHECK_DEBUG=1 for details)")
        return 2


def _message(exc: BaseException) -> str:
    """What the error says, even when saying it fails (an exception whose __str__ raises)."""
    try:
        return str(exc)
    except Exception:
        return "(its message could not be shown)"


def _usage_message(exc: Any) -> str:
    """A usage error's message with none of the library's wording: typer converts options through pydantic, and
    words a failure in pydantic's words ("Value error, ", "Input should be")."""
    from fabriccheck.errors import in_our_words

    message = str(exc.format_message())
    errors = getattr(exc.__cause__, "errors", None)
    said = getattr(exc, "message", None)
    if not callable(errors) or not isinstance(said, str) or not said or said not in message:
        return message
    return message.replace(said, "; ".join(in_our_words(error) for error in errors()))
