"""The JSON files fabriccheck reads (dump files, inventories, plans, reports, evidence): parsed, or one line
naming the file; a dump folder's files only when they are regular files, nesting too deep refused by name.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from fabriccheck import pipes
from fabriccheck.errors import STDIN_NAME, FabricCheckError

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_a_file(path: Path, mode: int) -> FabricCheckError:
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return FabricCheckError(f"{path}: is {kind}, not a file: a dump folder holds the cloud CLI's JSON files")


def open_dump_file(path: Path) -> BinaryIO:
    """A file of a dump folder, opened to read, or one line naming it. Only a regular file (or a symlink to one) is
    read: a FIFO would block the run forever waiting for a writer, a device (/dev/zero, /dev/urandom) never ends.
    Every cloud's dump loader opens its files here (sources.stream.walk, sources.projected.read, read_json)."""
    try:
        mode = os.stat(path).st_mode  # before opening: opening a device can do something (a tape rewinds)
        if not stat.S_ISREG(mode):
            raise _not_a_file(path, mode)
        # Non-blocking, so that a FIFO put there since the stat cannot hold the open; checked again on the file.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise FabricCheckError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _not_a_file(path, mode)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def too_deep(where: Path | str) -> FabricCheckError:
    """Valid JSON nested deeper than the parsers go (Python's recursion limit, orjson's 1,024 levels): no cloud
    answer, plan, inventory or report is, so it is refused with that reason, never an internal error."""
    return FabricCheckError(f"{where}: nested too deeply to read (more than about 1,000 levels of lists or objects)")


@contextmanager
def reading(where: Path | str) -> Iterator[None]:
    """While the input `where` is read and normalized: a value nested too deeply for Python (even to quote it in
    an error) is one line naming that input."""
    try:
        yield
    except RecursionError:
        raise too_deep(where) from None


_BOMS = (b"\xff\xfe", b"\xfe\xff")  # UTF-16 (Windows PowerShell 5 writes `>` redirections so)


def read_json(path: Path, dump_file: bool = False) -> Any:
    """A JSON file, parsed; a bad file is one line naming it. A byte order mark at the start is accepted:
    UTF-8's (Windows tools write one) is skipped, and a UTF-16 file is read as such. `dump_file`: a file of a dump
    folder, which must be a regular file (open_dump_file); a file named on the command line may be a pipe
    (`fabriccheck check <(...)`), or `-`: standard input."""
    stdin = not dump_file and str(path) == "-"
    name = STDIN_NAME if stdin else str(path)
    try:
        if stdin:
            data = sys.stdin.buffer.read() if sys.stdin is not None else b""
        elif dump_file:
            with open_dump_file(path) as file:
                data = file.read()
        else:
            pipes.refuse_named_pipe(path)  # `<(cat FILE)` is read; a FIFO nobody may ever write to is not
            data = path.read_bytes()
    except OSError as exc:
        raise FabricCheckError(f"{name}: cannot read ({exc.strerror})") from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    elif data.startswith(_BOMS):
        try:
            data = data.decode("utf-16").encode()
        except UnicodeDecodeError as exc:
            raise FabricCheckError(f"{name}: not valid JSON (a UTF-16 byte order mark, then {exc.reason})") from None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "recursion" in str(exc).lower() or "depth" in str(exc).lower():
            raise too_deep(name) from None
        raise FabricCheckError(f"{name}: not valid JSON ({exc})") from None
