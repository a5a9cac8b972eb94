"""Typed access to a parsed answer, and the normalizers' safety net: a misshapen answer is one line naming the
file and field, never a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import ValidationError

from fabriccheck.errors import DumpShapeError, FabricCheckError, in_our_words
from fabriccheck.redaction import first_line


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
