"""The text files people write for fabriccheck (rules, waivers, config, workloads): read as UTF-8 and parsed as
YAML or TOML, so that anything else is one line naming the file, never an internal error.

What the parsers let through on their own: bytes that are not UTF-8 (`Path.read_text` raises
UnicodeDecodeError, a ValueError), a YAML date that does not exist (`2027-02-30` has a timestamp's form, so
PyYAML's constructor calls `datetime.date` and raises ValueError), and nesting deeper than Python's recursion
limit (PyYAML's constructor and tomllib recurse: RecursionError). Here each becomes the parser's own error
type (yaml.YAMLError naming the line, tomllib.TOMLDecodeError), which every reader already turns into one line.
"""

from __future__ import annotations

import datetime as dt
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml

from fabriccheck import pipes
from fabriccheck.errors import STDIN_NAME, FabricCheckError


def read_text(path: Path, what: str = "", stdin: bool = False) -> str:
    """The file's text (UTF-8; a byte order mark is skipped), or one line naming it (after `what`, which says
    which file it is: "waivers file"). With `stdin`, `-` is standard input (`helm template ... | fabriccheck k8s
    --manifests -`)."""
    if stdin and str(path) == "-":
        path = Path(STDIN_NAME)
        where = f"{what} {path}" if what else str(path)
        data = sys.stdin.buffer.read() if sys.stdin is not None else b""
        return _decoded(data, where)
    where = f"{what} {path}" if what else str(path)
    pipes.refuse_named_pipe(path, what)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FabricCheckError(f"{where}: cannot read ({exc.strerror or exc})") from None
    return _decoded(data, where)


def _decoded(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FabricCheckError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


class _Loader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """yaml.safe_load's loader, with timestamps that name their line when they are not a date."""


def _timestamp(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> dt.date | dt.datetime:
    try:
        value: dt.date | dt.datetime = yaml.SafeLoader.construct_yaml_timestamp(loader, node)
    except ValueError as exc:  # 2027-02-30: the form of a date, not a day of the calendar
        raise yaml.constructor.ConstructorError(
            None, None, f"{node.value!r} is not a date ({exc})", node.start_mark
        ) from None
    return value


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)


def load_yaml(text: str) -> Any:
    """yaml.safe_load, where a date that does not exist, or nesting deeper than about 1,000 levels, is a
    yaml.YAMLError like any other fault in the text."""
    try:
        return yaml.load(text, Loader=_Loader)  # a safe loader: _Loader is CSafeLoader's
    except RecursionError:
        raise yaml.YAMLError("nested too deeply (more than about 1,000 levels)") from None


def load_yaml_all(text: str) -> list[Any]:
    """Every document of a multi-document YAML text (`---`), as load_yaml reads one."""
    try:
        return list(yaml.load_all(text, Loader=_Loader))
    except RecursionError:
        raise yaml.YAMLError("nested too deeply (more than about 1,000 levels)") from None


def yaml_error(where: object, exc: yaml.YAMLError) -> FabricCheckError:
    """A YAML fault as one line naming the file and, where the parser knows it, the line."""
    mark = getattr(exc, "problem_mark", None)
    line = f"line {mark.line + 1}: " if mark else ""
    return FabricCheckError(f"{where}: {line}not valid YAML ({getattr(exc, 'problem', exc)})")


def load_toml(text: str) -> dict[str, Any]:
    """tomllib.loads, where nesting deeper than about 1,000 levels is a TOMLDecodeError like any other fault."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise tomllib.TOMLDecodeError("nested too deeply (more than about 1,000 levels)") from None
