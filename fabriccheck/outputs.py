"""The files a run writes (reports, snapshots, baselines), written as one step each: staged in full beside their
target and renamed over it, so that nothing half-written is ever left.
"""

from __future__ import annotations

import os
import secrets
import stat
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from fabriccheck import pipes, stopping
from fabriccheck.errors import FabricCheckError


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (an output over an input); by their resolved names when one does not exist
    (yet)."""
    try:
        return a.samefile(b)
    except OSError:
        return a.resolve() == b.resolve()


def write_atomic(path: Path, data: bytes, option: str) -> None:
    """Write `data` to `path` as one step: into a temporary file in the same folder, flushed to disk, then
    renamed over `path`. On any failure (a full disk, a folder that is not writable, Ctrl-C) the temporary file
    is removed and `path` is left as it was: never a half-written report or snapshot. `option` names the
    option in the one-line error (`--output`). A path that is not a regular file (/dev/stdout, a pipe) cannot
    be replaced, so it is written directly; a symlink is followed and its target replaced."""
    stage(path, data, option).commit()


@dataclass
class Staged:
    """A file written in full beside its target (`temporary`), put in place by commit() or dropped by discard().
    A target that is not a regular file (/dev/stdout, a pipe) cannot be replaced: its data is written at commit."""

    path: Path
    option: str
    temporary: Path | None = None
    mode: int | None = None  # the target's, when it exists
    data: bytes | None = None  # for a target written directly

    def commit(self) -> None:
        if self.temporary is None:
            if pipes.is_named_pipe(self.path):  # its reader may never come: a bounded wait (fabriccheck.pipes)
                pipes.write(self.path, self.data or b"", self.option)
                return
            try:
                with self.path.open("wb") as out:
                    out.write(self.data or b"")
            except OSError as exc:
                raise FabricCheckError(f"{self.option} {self.path}: cannot write ({exc.strerror})") from None
            return
        try:
            if self.mode is not None and stat.S_ISREG(self.mode):
                os.chmod(self.temporary, stat.S_IMODE(self.mode))  # replacing a file keeps its permissions
            os.replace(self.temporary, Path(os.path.realpath(self.path)))
            stopping.untrack(str(self.temporary))
        except BaseException as exc:
            self.discard()
            if isinstance(exc, OSError):
                raise FabricCheckError(f"{self.option} {self.path}: cannot write ({exc.strerror or exc})") from None
            raise
        self.temporary = None

    def discard(self) -> None:
        if self.temporary is not None:
            with suppress(OSError):
                os.unlink(self.temporary)
            stopping.untrack(str(self.temporary))
            self.temporary = None


def stage(path: Path, data: bytes, option: str) -> Staged:
    """`data` written in full into a temporary file beside `path` (through a symlink: beside its target), flushed
    to disk; nothing at `path` changes until the Staged is committed. On a failure (a full disk, a folder that is
    not writable, Ctrl-C) the temporary file is removed and the error is one line naming `option` and `path`."""
    try:
        mode: int | None = path.stat().st_mode  # through symlinks: /dev/stdout is a pipe or a terminal
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        return Staged(path, option, data=data)
    target = Path(os.path.realpath(path))
    temporary = target.with_name(f".{target.name[:200]}.{secrets.token_hex(4)}.tmp")  # within NAME_MAX
    stopping.track(str(temporary))  # before it exists: a signal from here on removes it
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as for open()
    except OSError as exc:
        stopping.untrack(str(temporary))
        raise FabricCheckError(f"{option} {path}: cannot write ({exc.strerror})") from None
    staged = Staged(path, option, temporary, mode)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if mode is not None and stat.S_ISDIR(mode):  # as the rename would refuse it, but before anything else
            raise IsADirectoryError(21, "Is a directory")
    except BaseException as exc:
        staged.discard()
        if isinstance(exc, OSError):
            raise FabricCheckError(f"{option} {path}: cannot write ({exc.strerror or exc})") from None
        raise
    return staged


class Outputs:
    """The files one run writes (report, saved inventory, baseline), staged as they are made and put in place
    together at the end, with SIGTERM and Ctrl-C held off for those renames (stopping.held). A run stopped
    before then (a signal, an error) leaves none of them: discard() drops what was staged, and every file it
    would have replaced is as it was."""

    def __init__(self) -> None:
        self._staged: list[Staged] = []

    def add(self, path: Path, data: bytes, option: str) -> None:
        self._staged.append(stage(path, data, option))

    def commit(self) -> None:
        # Devices and pipes (/dev/stdout, a FIFO) first: they are written, not renamed, and may fail (/dev/full) or
        # wait for their reader; no file has been replaced yet when one does. They are written with SIGTERM and
        # Ctrl-C live (a signal then leaves every file as it was): only the renames hold signals off.
        self._staged.sort(key=lambda staged: staged.temporary is not None)
        try:
            while self._staged and self._staged[0].temporary is None:
                self._staged[0].commit()
                self._staged.pop(0)
            with stopping.held():
                while self._staged:
                    self._staged[0].commit()
                    self._staged.pop(0)
                stopping.settle()  # all in place: a signal from now on lets the run end with its verdict
        finally:
            self.discard()

    def discard(self) -> None:
        while self._staged:
            self._staged.pop().discard()
