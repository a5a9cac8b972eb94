"""Text that fits the terminal's width (COLUMNS) outside the audit's own report: the evidence commands' text and
`fabriccheck rules`. The audit's text report lays itself out (reports.text); these outputs are plain lines, and
this room fits them: a line is wrapped under its own indent, a table's widest cells are cut with "…"."""

from __future__ import annotations

from collections.abc import Iterable

from fabriccheck.reports.text import terminal_width, wrap

ELLIPSIS = "…"
MIN_CELL = 4  # a text cell is never cut narrower than this ("al…" says nothing)


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
    floors = [
        max(len(h), MIN_CELL, *(len(r[i]) for r in rows if _numeric(r[i]))) for i, h in enumerate(heads)
    ]
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
