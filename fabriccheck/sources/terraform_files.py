"""`fabriccheck plan --terraform-dir DIR`: where each resource block is declared, from the `.tf` files.

The root module's files are parsed with python-hcl2 (the `plan` extra); a `module` block whose source is a local
folder ("./gpu", "../modules/gpu") is followed, so `module.gpu.aws_instance.worker` finds its block in that
folder. Modules from a registry or git are not on disk here: their resources keep their address only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabriccheck import pipes
from fabriccheck.errors import FabricCheckError

_KEY = re.compile(r'\[(?:"(?:[^"\\]|\\.)*"|\d+)\]')


@dataclass(frozen=True)
class Location:
    """Where a resource is declared: its `.tf` file (as given under --terraform-dir) and line."""

    file: str
    line: int


def config_address(address: str) -> str:
    """'module.gpu[0].aws_instance.worker[3]' -> 'module.gpu.aws_instance.worker': the block's address."""
    return _KEY.sub("", address)


def _hcl() -> Any:
    """python-hcl2 (and lark, which it parses with), or the one line that says how to install them."""
    try:
        import hcl2
        import lark  # noqa: F401  (python-hcl2's own parser; the trees read below are lark's)
    except ModuleNotFoundError:
        raise FabricCheckError(
            "--terraform-dir needs the plan extra (python-hcl2): pip install 'fabriccheck[plan]'"
        ) from None
    return hcl2


def _text(node: Any) -> str:
    """The literal text of a label or string node ('"aws_instance"' -> 'aws_instance')."""
    from lark import Token, Tree

    if isinstance(node, Token):
        return str(node).strip('"')
    if isinstance(node, Tree):
        return "".join(_text(c) for c in node.children if not (isinstance(c, Token) and str(c) == '"'))
    return ""


def _blocks(path: Path) -> list[tuple[str, list[str], int, dict[str, str]]]:
    """(block type, labels, line, string attributes) of each top-level block of one file."""
    hcl2 = _hcl()
    from lark import Tree

    pipes.refuse_named_pipe(path, "--terraform-dir:")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise FabricCheckError(f"--terraform-dir: {path}: cannot read ({exc})") from None
    try:
        tree = hcl2.parses_to_tree(text)
    except Exception as exc:  # the parser raises lark's many error types
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise FabricCheckError(f"--terraform-dir: {path}: not valid HCL ({first})") from None
    found = []
    body = next((c for c in tree.children if isinstance(c, Tree) and c.data == "body"), None)
    for block in body.children if body is not None else ():
        if not (isinstance(block, Tree) and block.data == "block"):
            continue
        parts = [c for c in block.children if isinstance(c, Tree)]
        if not parts:
            continue
        kind = _text(parts[0])
        labels = [_text(p) for p in parts[1:] if p.data in ("string", "identifier", "string_lit")]
        attributes: dict[str, str] = {}
        inner = next((p for p in parts if p.data == "body"), None)
        for attribute in inner.children if inner is not None else ():
            if isinstance(attribute, Tree) and attribute.data == "attribute":
                trees = [c for c in attribute.children if isinstance(c, Tree)]
                if len(trees) >= 2:
                    strings = list(trees[1].find_data("string"))
                    if strings:
                        attributes[_text(trees[0])] = _text(strings[0])
        line = block.meta.line if not block.meta.empty else 1
        found.append((kind, labels, int(line), attributes))
    return found


def block_locations(directory: Path, display: str | None = None) -> dict[str, Location]:
    """Block address -> its file and line, for the module in `directory` and the local modules it calls."""
    if not directory.is_dir():
        raise FabricCheckError(f"--terraform-dir {directory}: not a folder")
    _hcl()  # said before any file is read, even in a folder without .tf files
    return _module(directory, display if display is not None else str(directory), "", 0)


def _module(directory: Path, display: str, prefix: str, depth: int) -> dict[str, Location]:
    found: dict[str, Location] = {}
    if depth > 32:
        return found
    for path in sorted(directory.glob("*.tf")):
        shown = f"{display.rstrip('/')}/{path.name}" if display not in ("", ".") else path.name
        for kind, labels, line, attributes in _blocks(path):
            if kind == "resource" and len(labels) == 2:
                found.setdefault(f"{prefix}{labels[0]}.{labels[1]}", Location(shown, line))
            elif kind == "module" and len(labels) == 1:
                source = attributes.get("source", "")
                if source.startswith(("./", "../")) and (directory / source).is_dir():
                    child = directory / source
                    child_display = f"{display.rstrip('/')}/{source}" if display not in ("", ".") else source
                    found.update(_module(child, _normal(child_display), f"{prefix}module.{labels[0]}.", depth + 1))
    return found


def _normal(path: str) -> str:
    """'infra/./gpu' -> 'infra/gpu', 'infra/env/../modules/gpu' -> 'infra/modules/gpu' (SARIF wants clean URIs)."""
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == ".." and parts and parts[-1] != "..":
            parts.pop()
        else:
            parts.append(part)
    return ("/" if path.startswith("/") else "") + "/".join(parts)
