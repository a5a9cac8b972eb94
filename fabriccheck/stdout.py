"""Writing a report to stdout, all of it or one line saying why not. Light on imports: `--version` and `--help`
use it before anything heavy is loaded."""

from __future__ import annotations

import os
import sys
from contextlib import suppress

from fabriccheck.errors import FabricCheckError


def write_stdout(text: str) -> None:
    """`text` on stdout, all of it, or one line saying why not: stdout closed (`>&-`), a full disk (`>/dev/full`),
    a reader that went away. After a failed write, stdout is pointed at /dev/null, so that the interpreter's own
    flush at exit has nothing left to fail on (it would print a traceback-like warning and exit 120)."""
    out = sys.stdout
    if out is None:
        raise FabricCheckError("stdout is closed: nowhere to print to (give --output FILE)")
    try:
        out.write(text)
        out.flush()
    except (OSError, ValueError) as exc:  # ValueError: a stdout closed under us
        with suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
        why = getattr(exc, "strerror", None) or str(exc)
        raise FabricCheckError(f"cannot write to stdout ({why}): give --output FILE") from None
