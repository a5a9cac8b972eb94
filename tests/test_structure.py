"""The package keeps to the house limits on size (DESIGN.md, "Simple and clear"): no module of fabriccheck/ over 600
lines and no function or method over 80, so that a reader sees one stage or one step whole. ruff checks the third
limit, complexity (pyproject.toml, [tool.ruff.lint.mccabe])."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULE_LINES = 600
FUNCTION_LINES = 80


def oversized(package: Path) -> list[str]:
    """Every module of `package` over MODULE_LINES lines and every function (a method, a nested function) over
    FUNCTION_LINES, from its `def` line to its last (decorators not counted), as `path: what, N lines`."""
    found = []
    for path in sorted(package.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        name = path.relative_to(package.parent)
        lines = len(source.splitlines())
        if lines > MODULE_LINES:
            found.append(f"{name}: module, {lines} lines")
        for node in ast.walk(ast.parse(source, filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES:
                    found.append(f"{name}:{node.lineno}: {node.name}, {length} lines")
    return found


def test_no_module_of_the_package_is_over_600_lines_and_no_function_over_80() -> None:
    assert oversized(ROOT / "fabriccheck") == []


def _function(name: str, body_lines: int, indent: str = "") -> str:
    return f"{indent}def {name}() -> None:\n" + f"{indent}    x = 1\n" * body_lines


def test_the_scan_finds_a_long_function_a_long_method_and_a_long_module(tmp_path: Path) -> None:
    """At the limit passes; one line past it is named, nested or not, and so is a module one line too long."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "fits.py").write_text(_function("at_the_limit", FUNCTION_LINES - 1))
    (package / "long.py").write_text(
        _function("one_over", FUNCTION_LINES) + "class Holder:\n" + _function("method", FUNCTION_LINES, "    ")
    )
    (package / "big.py").write_text("x = 1\n" * (MODULE_LINES + 1))
    (package / "short.py").write_text("x = 1\n" * MODULE_LINES)
    assert oversized(package) == [
        f"pkg/big.py: module, {MODULE_LINES + 1} lines",
        f"pkg/long.py:1: one_over, {FUNCTION_LINES + 1} lines",
        f"pkg/long.py:{FUNCTION_LINES + 3}: method, {FUNCTION_LINES + 1} lines",
    ]
