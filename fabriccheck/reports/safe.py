"""Cloud text made safe to show: tags, names, ids and messages come from whoever can tag a resource.

- `visible`: every control character (C0 including newline and tab, DEL, C1) and the invisible Unicode
  controls that reorder or hide text (bidi overrides and isolates, zero-width space, line and paragraph
  separators, BOM) are written as visible escapes (`\\x1b`, `\\u202e`). No cloud value can move the cursor,
  hide the rest of a line, start a new line or flip its direction (newline, return and tab as `\\n`, `\\r`,
  `\\t`), and the result is valid XML 1.0 text.
- `clipped`: every run of more than LONG_RUN characters without a space cut to its start and end, with its length
  said: a 100 MB value quoted in an error is one short line, not 100 MB on stderr.
- `md_text`: `visible`, then every character markdown gives a meaning to inline is backslash-escaped, so a
  value is never emphasis, a link, HTML, a table cell boundary or (with `line_start`) a heading or list item,
  and no `@name` in it notifies anyone.
- `md_code`: `visible`, as a code span whose fence is longer than any run of backticks inside it; in a table
  cell a `|` is escaped as GitHub's tables require even inside code spans.

Rich markup is a separate hazard: the text report only ever hands rich `Text` objects and turns markup and
emoji codes off, so `[bold]` or `:smile:` in a tag is printed as written.
"""

from __future__ import annotations

import re

_INVISIBLE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb]"
)


_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


LONG_RUN = 400  # characters without a space: longer than any path, resource id or URL a line names whole
_LONG = re.compile(rf"\S{{{LONG_RUN + 1},}}")


def _clip(match: re.Match[str]) -> str:
    run = match.group()
    return f"{run[:200]}…[{len(run) - 240:,} characters left out]…{run[-40:]}"


def clipped(text: str) -> str:
    """`text` with every run of more than LONG_RUN characters without a space cut to its first 200 and last 40."""
    return _LONG.sub(_clip, text)


def visible(value: object) -> str:
    """`value` as one line of plain text with every control character written out (ESC -> `\\x1b`)."""
    return _INVISIBLE.sub(_escape, str(value))


# Characters with an inline meaning in CommonMark / GitHub markdown: escapes, code, emphasis, strikethrough,
# links and images, raw HTML and autolinks, entities, table cells, math, headings and issue references.
_MD_INLINE = re.compile(r"([\\`*_~\[\]<>&|$#])")
# What a line may start with to become a block: list items, numbered items, setext underlines, thematic breaks.
_MD_LINE_START = re.compile(r"^(\s*)([-+=]|\d+[.)])")


def md_text(value: object, line_start: bool = False) -> str:
    """Cloud text for markdown prose or a table cell: one line, no markup of its own, and no @mention: GitHub
    notifies whoever `@name` names even after a backslash escape (mentions are found in the rendered text), so a
    zero-width space goes after each `@` as an entity, as Renovate's sanitizeMarkdown does (renovatebot/renovate
    lib/util/markdown.ts). Code spans (md_code) need none: no mention is made inside one."""
    text = _MD_INLINE.sub(r"\\\1", visible(value)).replace("@", "@&#8203;")
    if line_start:
        text = _MD_LINE_START.sub(lambda m: m.group(1) + m.group(2)[:-1] + "\\" + m.group(2)[-1], text, count=1)
    return text


def md_code(value: object, table: bool = False) -> str:
    """Cloud text as an inline code span (ids, instance types): literal, and never a mention or a link."""
    text = visible(value)
    if table:
        text = text.replace("|", "\\|")
    if not text:
        return "` `"
    run = max((len(r) for r in re.findall("`+", text)), default=0)
    fence = "`" * (run + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or (text.startswith(" ") and text.endswith(" ")) else ""
    return f"{fence}{pad}{text}{pad}{fence}"
