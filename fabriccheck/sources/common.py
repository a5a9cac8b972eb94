"""Plumbing every cloud's collector shares: progress, error records, retries, a bounded worker pool, reading
dump files, writing reports and snapshots atomically, typed access to parsed answers, and pausing the garbage
collector while parsing.

A collector is two halves: fetch (SDK calls, paging, retries) and normalize (answers to the model). The pieces
here serve both halves of every provider, so a denied call reads the same in an AWS, Azure or GCP report.
"""

from __future__ import annotations

import gc
import math
import os
import re
import secrets
import stat
import sys
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import orjson
from pydantic import ValidationError

from fabriccheck import pipes, stopping
from fabriccheck.errors import STDIN_NAME, DumpShapeError, FabricCheckError, in_our_words
from fabriccheck.model import UNKNOWN_ACCOUNT, CollectionError, Provider, ScopeStatus

T = TypeVar("T")
R = TypeVar("R")

# What went wrong, in words every report uses whatever the cloud (CollectionError.code).
ACCESS_DENIED = "AccessDenied"
THROTTLED = "Throttled"
UNREACHABLE = "Unreachable"
BAD_RESPONSE = "BadResponse"
MISSING_DUMP = "MissingDump"
TRUNCATED = "Truncated"  # an answer that ends with a paging token: the rest was never read


@dataclass
class Progress:
    """What the CLI shows while collecting; collectors only call it (scope: account, region or project)."""

    step: Callable[[str, str], None] = lambda scope, what: None
    # A fleet run: how many scopes there are, then each one as it finishes (model.ScopeStatus).
    planned: Callable[[int], None] = lambda scopes: None
    finished: Callable[[ScopeStatus], None] = lambda status: None


class CallCounter:
    """Cloud API requests sent in this process, for the report (`api_calls`) and the Prometheus metrics. Each
    collector counts where its SDK lets it see a request: AWS and Azure each request sent (retries included),
    GCP each page read."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0

    def add(self, *_: object, **__: object) -> None:  # a hook of any SDK; returns None so as not to alter the call
        with self._lock:
            self.value += 1


API_CALLS = CallCounter()


@dataclass(frozen=True)
class RetryPolicy:
    """How hard a collector retries throttled or failed calls before recording them. Each SDK's own retry
    machinery is configured from this (botocore: standard mode, exponential backoff with jitter).

    `backoff_base` is the back-off's time scale in seconds: at 1.0 (the default) every SDK waits as it does by
    default (botocore up to 1 s before a throttled call's first retry and 50 ms before another's, doubling to
    20 s; Azure 0.8 s doubling; GCP 1 s doubling to 16 s within a 60 s budget); each of those times is scaled
    by it. The test suite sets FABRICCHECK_RETRY_BASE=0.01 so that its fault scenarios do not sleep through
    the production waits; the attempts made are the same."""

    max_attempts: int = 8
    connect_timeout: float = 5.0
    read_timeout: float = 60.0
    backoff_base: float = 1.0

    def backoff(self, seconds: float) -> float:
        """One of an SDK's default back-off times (in seconds), on this policy's scale."""
        return seconds * self.backoff_base


RETRIES = RetryPolicy()
RETRY_BASE_ENV = "FABRICCHECK_RETRY_BASE"


def retry_policy(env: Mapping[str, str] | None = None) -> RetryPolicy:
    """The run's retry policy: the defaults, with the back-off scaled by FABRICCHECK_RETRY_BASE when it is set.
    A value that is not a number of seconds is one line naming the variable."""
    text = (os.environ if env is None else env).get(RETRY_BASE_ENV, "").strip()
    if not text:
        return RETRIES
    try:
        base = float(text)
    except ValueError:
        base = math.nan
    if not (math.isfinite(base) and 0.001 <= base <= 60):
        raise FabricCheckError(
            f"environment variable {RETRY_BASE_ENV}: {text!r} is not a back-off base in seconds "
            "(0.001 to 60; the default is 1)"
        )
    return replace(RETRIES, backoff_base=base)


@dataclass(frozen=True)
class Scope:
    """Where a call was made: provider, account (or subscription, project) and region."""

    provider: Provider
    account: str = UNKNOWN_ACCOUNT
    region: str | None = None

    def error(self, call: str, code: str, message: str, permission: str | None = None) -> CollectionError:
        return CollectionError(
            provider=self.provider,
            account=self.account,
            region=self.region,
            call=call,
            code=code,
            message=redact(message),
            permission=permission,
        )

    def denied(self, call: str, detail: str, permission: str) -> CollectionError:
        return self.error(call, ACCESS_DENIED, detail, permission)

    def throttled(self, call: str, detail: str) -> CollectionError:
        return self.error(call, THROTTLED, f"{detail}: still throttled after retries with backoff")

    def unreachable(self, call: str, exc: BaseException) -> CollectionError:
        return self.error(call, UNREACHABLE, first_line(exc))

    def missing_dump(self, path: Path, what: str, how: str) -> CollectionError:
        return self.error(
            path.name, MISSING_DUMP, f"{path} is missing, so {what} were not collected (make it with: {how})"
        )


def first_line(exc: BaseException) -> str:
    text = str(exc)
    return redact(text.splitlines()[0]) if text else type(exc).__name__


# What may ride along in an SDK's error text and must never reach a report, log or error line: the password of
# a URL (https://user:PASSWORD@host), the signing and token parameters of presigned / SAS / signed URLs (S3
# X-Amz-*, Azure SAS sig=, GCS X-Goog-*), bearer tokens, AWS access key ids, PEM private keys and JWTs.
_SECRETS = (
    (re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+@"), "***@"),
    (
        re.compile(
            r"(?i)([?&](?:x-amz-(?:signature|credential|security-token)|x-goog-(?:signature|credential)|sig|"
            r"signature|access_token|token|code|key|client_secret|password)=)[^&\s#\"']+"
        ),
        r"\1***",
    ),
    (re.compile(r"(?i)\b(bearer|basic)\s+[\w\-.~+/]+=*"), r"\1 ***"),
    (re.compile(r"\b(?:AKIA|ASIA|AROA|AIDA)[A-Z0-9]{12,}\b"), "AWS-KEY-***"),
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S), "***"),
    (re.compile(r"\beyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]*"), "***"),
)


def redact(text: str) -> str:
    """`text` with anything credential-like masked (see _SECRETS); applied to every error that leaves a
    collector and every line the CLI prints about a failure."""
    for pattern, masked in _SECRETS:
        text = pattern.sub(masked, text)
    return text


def in_parallel(items: Iterable[T], work: Callable[[T], R], max_workers: int = 8) -> Generator[R, None, None]:
    """`work` over `items` on a bounded pool of threads, results in the order of `items`.

    When the caller stops early (Ctrl-C in the main thread, an error, or it simply stops reading), the items not
    started yet are cancelled and nothing waits for the calls under way: the workers are daemon threads, so the
    command ends at once rather than after the slowest network timeout. (ThreadPoolExecutor would join its
    workers when the interpreter exits, even after `shutdown(wait=False, cancel_futures=True)`.)
    """
    items = list(items)
    if len(items) <= 1:
        yield from map(work, items)
        return
    futures: list[Future[R] | None] = [Future() for _ in items]
    pending = iter(range(len(items)))
    take = threading.Lock()

    def worker() -> None:
        while True:
            with take:
                index = next(pending, None)
            if index is None:
                return
            future = futures[index]
            if future is None or not future.set_running_or_notify_cancel():
                continue  # cancelled: the caller has stopped
            try:
                result = work(items[index])
            except BaseException as exc:  # handed to the caller, who raises it in its own thread
                future.set_exception(exc)
            else:
                future.set_result(result)

    for number in range(max(1, min(max_workers, len(items)))):
        threading.Thread(target=worker, name=f"fabriccheck-worker-{number}", daemon=True).start()
    try:
        for index, future in enumerate(futures):
            assert future is not None
            result = future.result()
            # Handed over: let go of it here, so a caller that consumes results one by one (a fleet's raw
            # answers, normalized as they arrive) never holds them all at once.
            futures[index] = future = None
            yield result
    finally:
        for pending_future in futures:
            if pending_future is not None:
                pending_future.cancel()  # a no-op on the ones running or done


@contextmanager
def paused_gc(freeze: bool = True) -> Iterator[None]:
    """Parsing a large answer and normalizing it builds hundreds of thousands of small objects beside the
    parsed document; the cyclic collector would rescan that document again and again (a 190 MB dump
    normalizes 2.5x slower with it). Pause it for that stretch only, then freeze what survived (the model)
    so that later collections do not rescan it either. A live collection of many scopes passes freeze=False:
    freezing there would also pin the SDK clients other scopes still hold (and any garbage), so memory would
    grow with the estate; it settles once at the end instead (sources.fleet.settle_gc). Judging (flow.run)
    passes freeze=False too: a freeze is the whole process's, and a library caller's garbage is not ours to pin."""
    global _pauses, _resume
    with _pause_lock:  # collectors parse in several threads; the collector comes back after the last one
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0:
                if freeze:
                    gc.freeze()
                if _resume:
                    gc.enable()


_pause_lock = threading.Lock()
_pauses = 0
_resume = True


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


class Shape:
    """Typed access to a parsed answer, with errors that name the file and field."""

    def __init__(self, where: str) -> None:
        self.where = where

    def items(self, obj: Any, key: str, path: str, required: str = "") -> list[Any]:
        """The list under `key` ([] when absent, unless `required`: then why it must be there, for the error)."""
        value = obj.get(key) if isinstance(obj, dict) else None
        if value is None:
            if not isinstance(obj, dict):
                raise DumpShapeError(self.where, path, "an object")
            if required:
                raise DumpShapeError(self.where, f"{path}.{key}" if path else key, f"a list ({required})")
            return []
        if not isinstance(value, list):
            raise DumpShapeError(self.where, f"{path}.{key}" if path else key, "a list")
        return value

    def obj(self, value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise DumpShapeError(self.where, path, "an object")
        return value


def describe(exc: Exception) -> str:
    """A normalize failure in a few words: the field and what was wrong."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        # A model's own check (no field: one id per interface) says it in its own words, not pydantic's.
        message = in_our_words(first)
        return f"field {where}: {message}" if where else message
    if isinstance(exc, KeyError):
        return f"missing field {exc}"
    return first_line(exc)


# What a misshapen answer raises inside a normalizer that Shape does not catch field by field.
SHAPE_ERRORS = (KeyError, TypeError, AttributeError, ValueError, ValidationError)


@contextmanager
def unexpected_shape(where: str) -> Iterator[None]:
    """The normalizers' safety net: a misshapen answer is one line naming where it came from, never a traceback."""
    try:
        yield
    except FabricCheckError:
        raise
    except SHAPE_ERRORS as exc:
        raise FabricCheckError(f"{where}: unexpected shape: {describe(exc)}") from None
