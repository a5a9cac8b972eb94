"""Text that fits the terminal's width (COLUMNS): the width itself, lines wrapped under their own indent (a token
too long for a line folded after a separator), and tables whose widest cells are cut with "…". The text report
(reports.text) lays its blocks out with these; `fabriccheck rules` and the evidence tables are plain lines fitted
here."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterable

MIN_WIDTH = 60
DEFAULT_WIDTH = 100  # when the output is not a terminal and COLUMNS is not set
ELLIPSIS = "…"
MIN_CELL = 4  # a text cell is never cut narrower than this ("al…" says nothing)


def terminal_width() -> int:
    """COLUMNS if set, else the terminal's width when stdout is one, else 100; never below 60."""
    width: int | None = None
    env = os.environ.get("COLUMNS", "").strip()
    if env:
        try:
            width = int(env)
        except ValueError:
            width = None
    if width is None and sys.stdout is not None and sys.stdout.isatty():
        try:
            width = os.get_terminal_size(sys.stdout.fileno()).columns
        except (OSError, ValueError):
            width = None
    return max(MIN_WIDTH, width or DEFAULT_WIDTH)


def wrap(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """`text` in lines of at most `width`: broken at spaces, and a token longer than a line (an ARM id, a
    self-link) folded after a `/`, `:` or `,` where it can be (`fold`)."""
    lines = textwrap.wrap(
        text,
        width=width,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,  # folded below, at a separator rather than anywhere
        break_on_hyphens=False,
    )
    if not lines:
        return [first.rstrip()]
    out: list[str] = []
    for line in lines:
        if len(line) <= width:
            out.append(line)
            continue
        indent = first if not out else rest
        out += fold(line[len(indent) :], width, indent, rest)
    return out


FOLD_AFTER = "/:,"


def fold(token: str, width: int, first: str, rest: str) -> list[str]:
    """A token too long for a line, in pieces: each ends after the last separator that fits (or, with none,
    fills its line), the first after `first`, the others after `rest`."""
    pieces, indent = [], first
    while len(indent) + len(token) > width:
        room = max(1, width - len(indent))
        cut = max((token.rfind(sep, 0, room) for sep in FOLD_AFTER), default=-1) + 1
        cut = cut if cut > room // 3 else room  # a separator near the start would leave a stub
        pieces.append(indent + token[:cut])
        token, indent = token[cut:], rest
    return [*pieces, indent + token] if token else pieces


def fit(line: str, width: int, hang: str = "  ") -> list[str]:
    """`line` in lines of at most `width`, each continuation under the line's own indent plus `hang`."""
    if len(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip(" "))]
    rest = indent + hang if len(indent + hang) < width // 2 else indent
    return wrap(line.strip(), width, indent, rest)


def fit_all(lines: Iterable[str], width: int | None = None, hang: str = "  ") -> str:
    """The lines joined, each fitted to `width` (None: COLUMNS, else the terminal, else 100; never below 60)."""
    room = terminal_width() if width is None else width
    return "\n".join(piece for line in lines for piece in fit(line, room, hang)) + "\n"


def _cut(cell: str, room: int) -> str:
    return cell if len(cell) <= room else cell[: room - 1] + ELLIPSIS


def _numeric(cell: str) -> bool:
    """A figure (bytes, GB/s, a percentage, a range): cut, it would say a wrong number."""
    return bool(cell) and all(ch.isdigit() or ch in ".,%–-?" for ch in cell)


def table(heads: list[str], rows: list[list[str]], width: int, indent: str = "  ") -> list[str]:
    """Heads and rows in columns two spaces apart, the widest text cells cut (with "…") until a line fits `width`;
    heads and figures are never cut: when they alone cannot fit, each row as `head: cell` lines."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    floors = [max(len(h), MIN_CELL, *(len(r[i]) for r in rows if _numeric(r[i]))) for i, h in enumerate(heads)]
    budget = width - len(indent) - 2 * (len(heads) - 1)
    while sum(widths) > budget:
        cuttable = [i for i, w in enumerate(widths) if w > floors[i]]
        if not cuttable:
            return _records(heads, rows, width, indent)
        widest = max(cuttable, key=lambda i: widths[i])
        widths[widest] -= 1

    def line(cells: list[str]) -> str:
        return (indent + "  ".join(_cut(c, w).ljust(w) for c, w in zip(cells, widths, strict=True))).rstrip()

    return [line(heads), *(line(r) for r in rows)]


def _records(heads: list[str], rows: list[list[str]], width: int, indent: str) -> list[str]:
    out: list[str] = []
    for row in rows:
        for i, (head, cell) in enumerate(zip(heads, row, strict=True)):
            lead = indent + ("- " if i == 0 else "  ")
            out += fit(f"{lead}{head}: {cell}", width)
    return out
