"""Plumbing every cloud's collector shares: progress, error records, retries, a bounded worker pool, reading
dump files, typed access to parsed answers, and pausing the garbage collector while parsing.

A collector is two halves: fetch (SDK calls, paging, retries) and normalize (answers to the model). The pieces
here serve both halves of every provider, so a denied call reads the same in an AWS, Azure or GCP report.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson
from pydantic import ValidationError

from fabriccheck.errors import DumpShapeError, FabricCheckError
from fabriccheck.model import UNKNOWN_ACCOUNT, CollectionError, Provider

T = TypeVar("T")
R = TypeVar("R")

# What went wrong, in words every report uses whatever the cloud (CollectionError.code).
ACCESS_DENIED = "AccessDenied"
THROTTLED = "Throttled"
UNREACHABLE = "Unreachable"
BAD_RESPONSE = "BadResponse"
MISSING_DUMP = "MissingDump"


@dataclass
class Progress:
    """What the CLI shows while collecting; collectors only call it (scope: account, region or project)."""

    step: Callable[[str, str], None] = lambda scope, what: None


@dataclass(frozen=True)
class RetryPolicy:
    """How hard a collector retries throttled or failed calls before recording them. Each SDK's own retry
    machinery is configured from this (botocore: standard mode, exponential backoff with jitter)."""

    max_attempts: int = 8
    connect_timeout: float = 5.0
    read_timeout: float = 60.0


RETRIES = RetryPolicy()


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
            message=message,
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
    return text.splitlines()[0] if text else type(exc).__name__


def in_parallel(items: Iterable[T], work: Callable[[T], R], max_workers: int = 8) -> Iterator[R]:
    """`work` over `items` on a bounded pool of threads, results in the order of `items`."""
    items = list(items)
    if len(items) <= 1:
        yield from map(work, items)
        return
    with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(items)))) as pool:
        yield from pool.map(work, items)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Parsing a large answer and normalizing it builds hundreds of thousands of small objects beside the
    parsed document; the cyclic collector would rescan that document again and again (a 190 MB dump
    normalizes 2.5x slower with it). Pause it for that stretch only, then freeze what survived (the model)
    so that later collections do not rescan it either."""
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
                gc.freeze()
                if _resume:
                    gc.enable()


_pause_lock = threading.Lock()
_pauses = 0
_resume = True


def read_json(path: Path) -> Any:
    """A dump file, parsed; a bad file is one line naming it."""
    try:
        return orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise FabricCheckError(f"{path}: not valid JSON ({exc})") from None
    except OSError as exc:
        raise FabricCheckError(f"{path}: cannot read ({exc.strerror})") from None


class Shape:
    """Typed access to a parsed answer, with errors that name the file and field."""

    def __init__(self, where: str) -> None:
        self.where = where

    def items(self, obj: Any, key: str, path: str) -> list[Any]:
        value = obj.get(key) if isinstance(obj, dict) else None
        if value is None:
            if not isinstance(obj, dict):
                raise DumpShapeError(self.where, path, "an object")
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
        return f"field {'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    if isinstance(exc, KeyError):
        return f"missing field {exc}"
    return first_line(exc)
