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

# Aliases share one parsed object, but whoever walks the result walks every alias again: nine levels of nine
# aliases ("billion laughs") are 387 million strings to a reader, CVE-2019-11253 in the Kubernetes API server's own
# YAML reader. As go-yaml v3 (decode.go, allowedAliasRatio) does, a document whose aliases expand it past a
# million nodes, and ten times its own size, is refused before any of it is built; so is an alias to itself.
MAX_EXPANDED = 1_000_000
ALIAS_RATIO = 10


def _expanded(root: yaml.Node) -> tuple[int, int]:
    """(nodes once every alias is expanded, distinct nodes), walking each distinct node once; raises
    ConstructorError for an alias inside itself."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise yaml.constructor.ConstructorError(None, None, "an alias refers to a node inside itself", None)
        open_nodes.add(key)
        stack.append((node, True))
        stack += [(child, False) for child in children if id(child) not in sizes]
    return sizes[id(root)], len(sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _construct_document(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    total, distinct = _expanded(node)
    if total > MAX_EXPANDED and total > ALIAS_RATIO * distinct:
        raise yaml.constructor.ConstructorError(
            None, None, f"its aliases expand to more than {MAX_EXPANDED:,} values (a billion laughs)", None
        )
    return yaml.constructor.SafeConstructor.construct_document(loader, node)


class _AliasedLoader(_Loader):
    """_Loader, for a text that may hold aliases (it has an `&`, without which YAML has no anchor to refer to): each
    document's expanded size is checked before it is built. A text without one skips the walk."""


_AliasedLoader.construct_document = _construct_document


def _loader(text: str) -> type[_Loader]:
    return _AliasedLoader if "&" in text else _Loader


def load_yaml(text: str) -> Any:
    """yaml.safe_load, where a date that does not exist, or nesting deeper than about 1,000 levels, is a
    yaml.YAMLError like any other fault in the text."""
    try:
        return yaml.load(text, Loader=_loader(text))  # a safe loader: _Loader is CSafeLoader's
    except RecursionError:
        raise yaml.YAMLError("nested too deeply (more than about 1,000 levels)") from None


def load_yaml_all(text: str) -> list[Any]:
    """Every document of a multi-document YAML text (`---`), as load_yaml reads one."""
    try:
        return list(yaml.load_all(text, Loader=_loader(text)))
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
