"""The `fabriccheck` command. Importing this module takes SIGTERM and Ctrl-C (fabriccheck.stopping) before the CLI
and its libraries (typer, rich, pydantic: a few tenths of a second) are imported, so that a signal at any moment
of start-up is one line and exit 143 or 130, never a traceback and exit 1 (which a gate would read as findings).
Only the console script and `python -m fabriccheck` import it; a library caller's process keeps its handlers.
(Before the interpreter reaches this module, about 20 ms, a signal does what it does to any Python process.)
"""

from __future__ import annotations

from fabriccheck import stopping

stopping.install()


def main(argv: list[str] | None = None) -> int:
    """The console script calls it without arguments (the command line is sys.argv); a caller in its own process
    (the tests) passes argv, and gets its signal handlers back when the command returns (fabriccheck.cli.main)."""
    try:
        from fabriccheck.cli import main as run
    except Exception as exc:  # a broken installation: still one line and exit 2, never a traceback and exit 1
        import os
        import sys

        if os.environ.get("FABRICCHECK_DEBUG"):
            raise
        sys.stderr.write(f"fabriccheck: internal error: {type(exc).__name__}: {exc} (set FABRICCHECK_DEBUG=1)\n")
        return 2
    return run(argv)
