"""Reading a dump file's list of resources with only the fields the normalizer reads.

A cloud CLI prints every field of every resource: a GCP instance carries its disks, service accounts, metadata
and fingerprints; an Azure VM its OS profile, storage profile and diagnostics. The rules need a few of them.
Parsing the whole document builds a Python object for each of those fields (most of what `json.load` costs);
here msgspec parses the file against a projection (a TypedDict naming the fields the normalizer reads, nested
where it reads into an object) and skips the rest without building anything, about 2.5x faster than `json.load`.
The items come out as plain dicts holding those fields only, so the normalizer reads them as it reads a whole
parse.

The projection is a shortcut, never a judge of the file: anything it does not read as expected (a document
that is not a list, an item or nested field of another type, JSON msgspec declines, a file too large to hold
whole) makes `read` return None, and the caller reads the file as before (sources/stream.py), which names any
fault in the file as it always has. Tests check each projection against every field its normalizer reads.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import msgspec

from fabriccheck.errors import FabricCheckError
from fabriccheck.jsonfiles import open_dump_file

# Larger files are read as a stream (sources/stream.py), which holds a window of the file, not the whole of it.
WHOLE_FILE_LIMIT = 256 << 20
_LIST_START = re.compile(rb"[ \t\r\n]*\[")

_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}


def read(path: Path, item: Any) -> list[dict[str, Any]] | None:
    """The items of the JSON list in `path`, each holding only the fields `item` (a TypedDict) names, or None
    when the file is not read this way (the caller then reads it in full)."""
    try:
        with open_dump_file(path) as file:  # a regular file only: never a FIFO or a device
            if os.fstat(file.fileno()).st_size > WHOLE_FILE_LIMIT:
                return None
            data = file.read()
    except (OSError, FabricCheckError):
        return None  # the full reader says what is wrong with the file
    if not _LIST_START.match(data):
        return None  # an API answer ({"items": ...}), a byte order mark, an empty file ...
    decoder = _decoders.get(item)
    if decoder is None:
        decoder = _decoders[item] = msgspec.json.Decoder(list[item])
    try:
        items: list[dict[str, Any]] = decoder.decode(data)
    except (msgspec.DecodeError, RecursionError):  # ValidationError included; the full reader names the fault
        return None
    return items
