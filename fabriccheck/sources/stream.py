"""Reading a large dump file as a stream: the items of its big list one at a time, never the whole document.

A 100,000-instance `aws ec2 describe-instances` answer is about 2 GB of JSON; parsed whole it takes several
times that in memory before a single node is built. Here only the top levels of the document are walked (in
Python, a handful of steps per item), and the items of the list are parsed a few at a time from a window of the
file (by orjson where the file is laid out as the cloud CLIs write it, else one by one by the standard library's
C scanner, `JSONDecoder.raw_decode`), then handed to the normalizer and dropped. The members beside the list
(`NextToken`, `nextLink`) are read as well, so a truncated answer is still noticed.

`walk(path, descend)` yields `(path, value)` for every value the walk does not descend into: `descend(path,
opener)` says whether to step into the object (`{`) or list (`[`) at `path` (a tuple of keys and indexes)
instead of parsing it whole. It must answer alike for every index of a list. With `projection` (a type msgspec
decodes, e.g. a TypedDict naming the fields a normalizer reads), the values of the list are parsed with those
fields only, skipping the rest in C; a batch msgspec does not read as that is parsed whole instead.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
import orjson

from fabriccheck.errors import FabricCheckError
from fabriccheck.jsonfiles import open_dump_file, too_deep

Path_ = tuple[str | int, ...]
Descend = Callable[[Path_, str], bool]

_CHUNK = 1 << 24  # bytes read at a time: many items of a large answer (an item cut at the end is parsed again)
# A parse that fails this close to the end of what has been read may only lack the rest of the file. Farther
# back, the JSON itself is wrong, and the window is not grown to the end of the file to find that out, unless
# what fails is a string that has not ended yet (a string may be longer than a window).
_TAIL = 1 << 20
_BATCH = 1 << 21  # characters of a list's values parsed at once by batch(): their objects, not the file, in memory
_INDENT = 4096  # characters before a value kept when the window moves on: its line's indent
_SPACE = re.compile(r"[ \t\n\r]*")
_BOMS = {b"\xef\xbb\xbf": "utf-8", b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}


class _Window:
    """The part of the file not yet parsed, as text, refilled from the file as parsing needs."""

    def __init__(self, path: Path, file: BinaryIO, projection: Any = None) -> None:
        self.path = path
        self.file = file
        self.projected = msgspec.json.Decoder(list[projection]) if projection is not None else None
        head = file.read(_CHUNK)
        encoding = "utf-8"
        for mark, name in _BOMS.items():  # Windows tools write a byte order mark; PowerShell 5 writes UTF-16
            if head.startswith(mark):
                head, encoding = head[len(mark) :], name
                break
        self.decoder = codecs.getincrementaldecoder(encoding)()
        self.eof = False
        self.text = ""
        self.at = 0
        self.dropped = 0  # characters parsed and dropped before the window
        self.fast = True  # batch() may parse with orjson
        self._append(head, final=False)
        self.raw_decode = json.JSONDecoder().raw_decode

    def _append(self, data: bytes, final: bool) -> None:
        try:
            self.text += self.decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            raise self.invalid(f"{exc.reason} at byte {exc.start}") from None
        self.eof = final

    def more(self) -> bool:
        """Read the next chunk, dropping what has been parsed; False at the end of the file."""
        if self.eof:
            return False
        data = self.file.read(_CHUNK)
        # The line the next value starts on is kept (batch() reads its indent), unless it is long: minified JSON.
        line = self.text.rfind("\n", max(0, self.at - _INDENT), self.at)
        keep = line + 1 if line >= 0 else self.at
        self.text = self.text[keep:]
        self.dropped += keep
        self.at -= keep
        self._append(data, final=not data)
        return True

    def invalid(self, why: str) -> FabricCheckError:
        return FabricCheckError(f"{self.path}: not valid JSON ({why})")

    def peek(self) -> str:
        """The next character after white space, or "" at the end of the file."""
        while True:
            self.at = _SPACE.match(self.text, self.at).end()  # type: ignore[union-attr]  # always matches
            if self.at < len(self.text):
                return self.text[self.at]
            if not self.more():
                return ""

    def take(self, expected: str) -> None:
        found = self.peek()
        if found != expected:
            where = f"'{found}'" if found else "the end of the file"
            raise self.invalid(f"expected '{expected}' but found {where}")
        self.at += 1

    def ahead(self, wanted: int) -> None:
        """Read on while fewer than `wanted` characters are left in the window. A value cut by the window's end
        costs a failed parse, and the standard library's error counts the lines of the whole window (about 9 ms
        for 16 MiB): reading ahead first keeps that to the rare value longer than `wanted`."""
        wanted = min(wanted, _CHUNK)  # a window holds what one read adds, and no more: a 2 GB file is not read whole
        while len(self.text) - self.at < wanted and self.more():
            pass

    def value(self) -> Any:
        """One whole JSON value, parsed by the C scanner, growing the window until it holds the value."""
        self.peek()
        self.ahead(_TAIL)
        while True:
            try:
                value, end = self.raw_decode(self.text, self.at)
            except RecursionError:  # valid JSON, but deeper than the C scanner's recursion goes
                raise too_deep(self.path) from None
            except json.JSONDecodeError as exc:
                # A string may run past the window (valid JSON: a 17 MiB tag value): the scanner names where it
                # starts, so the window grows until it ends or the file does.
                longer = exc.msg.startswith("Unterminated string")
                if (exc.pos < len(self.text) - _TAIL and not longer) or not self.more():
                    raise self.invalid(f"{exc.msg} at character {self.dropped + exc.pos}") from None
                continue
            if end == len(self.text) and self.more():
                continue  # a number may go on in the next chunk
            self.at = end
            return value

    def batch(self) -> list[Any]:
        """The values of the list from here up to about _BATCH characters, parsed together by orjson (about
        twice as fast as the C scanner), when the file is laid out as the cloud CLIs write it: each value's
        closing bracket on its own line, indented as its opening line. Empty when it is not (the caller then
        parses one value at a time). The search only finds where to cut; a cut is right when orjson parses it,
        because a JSON value parsed from its first character ends where it ends whatever follows."""
        self.ahead(_BATCH)
        text, start = self.text, self.at
        line = text.rfind("\n", 0, start) + 1
        indent = text[line:start]
        if not self.fast or indent.strip(" \t") or text[start] not in "{[":
            return []
        closer = "\n" + indent + ("}" if text[start] == "{" else "]")
        end = text.rfind(closer, start, start + _BATCH)
        if end < 0:
            end = text.rfind(closer, start)  # one value longer than a batch
        if end < 0:
            return []
        end += len(closer)
        batch = "[" + text[start:end] + "]"
        values: list[Any]
        if self.projected is not None:
            try:
                values = self.projected.decode(batch)
            except (msgspec.DecodeError, RecursionError):  # not of the projection's types, or not JSON: read whole
                pass
            else:
                self.at = end
                return values
        try:
            values = orjson.loads(batch)
        except orjson.JSONDecodeError:
            # Valid JSON orjson declines (a lone surrogate escape, an integer past 64 bits) or bad JSON: the
            # C scanner reads the rest, value by value, and names the error if there is one.
            self.fast = False
            return []
        self.at = end
        return values


def walk(path: Path, descend: Descend, projection: Any = None) -> Iterator[tuple[Path_, Any]]:
    """The values of a JSON file, descending where `descend` says; one clear line for a bad file."""
    try:
        with open_dump_file(path) as file:  # a regular file only: never a FIFO or a device
            window = _Window(path, file, projection)
            if not window.peek():
                raise window.invalid("the file is empty")
            yield from _walk(window, (), descend)
            if window.peek():
                raise window.invalid("extra data after the document")
    except OSError as exc:
        raise FabricCheckError(f"{path}: cannot read ({exc.strerror})") from None


def _walk(window: _Window, at: Path_, descend: Descend) -> Iterator[tuple[Path_, Any]]:
    opener = window.peek()
    if opener not in ("{", "[") or not descend(at, opener):
        yield at, window.value()
        return
    window.at += 1
    closer = "}" if opener == "{" else "]"
    if window.peek() == closer:
        window.at += 1
        return
    index = 0
    while True:
        if opener == "{":
            key = window.value()
            if not isinstance(key, str):
                raise window.invalid("an object key that is not a string")
            window.take(":")
            yield from _walk(window, (*at, key), descend)
        else:
            first = window.peek()
            values = window.batch() if first in ("{", "[") and not descend((*at, index), first) else []
            for value in values:  # whole values, none of which the walk descends into
                yield (*at, index), value
                index += 1
            if not values:
                yield from _walk(window, (*at, index), descend)
                index += 1
        if window.peek() == ",":
            window.at += 1
            continue
        window.take(closer)
        return
