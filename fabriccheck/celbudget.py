"""A cost budget for each evaluation of a rule's CEL condition.

The CEL library (common-expression-language 0.10) has no cost limit, and it holds the interpreter while it
evaluates: a user's condition of three nested `all()` over a literal list of a thousand numbers took 10 s per
evaluation, and Ctrl-C waited for it. CEL has no loops beyond its comprehension macros (`all`, `exists`,
`exists_one`, `map`, `filter`), and each iterates a list (or map) it is given, so the work of one evaluation is
bounded by

    steps <= n ** depth

where `depth` is how deep those macros nest in the condition (a macro over another's result counts once more:
`l.map(x, l).all(y, y.all(...))` is 2 deep) and `n` bounds the length of a list one macro can iterate: every
element written in the condition itself, plus the longest list (or map) in the facts handed to the evaluation,
once for each list that `+` could join to it. `depth`, the written elements and the joins are read once from the
condition's text when the rule is loaded; a condition whose own lists already exceed the budget is refused there,
before anything is evaluated. The facts' longest list is measured before each evaluation of a condition that has
a macro (the built-in rules have none, and cost nothing here), and an evaluation over budget is not started: the
rule is an error naming its file. At BUDGET steps (about 0.1 s here) a signal is seen between evaluations well
within a second.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from fabriccheck.errors import FabricCheckError

BUDGET = 100_000  # comprehension steps per evaluation: ~1 us each on this machine's class
# A string or bytes literal, or a comment, as CEL's lexis has them (github.com/google/cel-spec doc/langdef.md,
# "Syntax" and "String and Bytes Values"): an optional b/B, then an optional r/R (raw: a backslash escapes
# nothing), then one or three quotes of either kind; a triple-quoted literal may hold newlines and single quotes.
# A comment runs from `//` to the end of the line. Both are blanked before the condition's text is read, so that
# nothing they hold is counted and nothing outside them is hidden (a regex that took `\"` for an escape in the raw
# `r"\"` ran to the next quote and hid a comprehension over a thousand elements from the budget: 167 s).
_PREFIX = re.compile(r"(?:(?<![_a-zA-Z0-9])[bB]?[rR]?)?(?='|\")")  # b, r: a prefix only where a token starts
_MACRO = re.compile(r"\.\s*(?:all|exists_one|exists|map|filter)\s*\(")
_OPEN = {"(": ")", "[": "]", "{": "}"}


@dataclass(frozen=True)
class Cost:
    """What one condition can cost: the nesting depth of its macros, the list elements written in it, and how many
    lists `+` could join into one."""

    depth: int
    written: int
    joins: int = 1

    def longest(self, facts: Any) -> int:
        """The longest list one of its macros can iterate over these facts (the variables handed to CEL)."""
        return self.written + self.joins * longest(facts)

    def steps(self, facts: Any) -> int:
        """The most steps one evaluation can take over these facts."""
        steps: int = self.longest(facts) ** self.depth
        return steps


class _Frame:
    __slots__ = ("chain", "commas", "inner", "last", "macro", "opener", "values")

    def __init__(self, opener: str, macro: bool = False, chain: int = 0) -> None:
        self.opener = opener
        self.macro = macro
        self.chain = chain  # the depth of the macro whose result this one iterates (x.map(...).all(...))
        self.inner = 0  # the deepest macro inside
        self.last = 0  # the depth of what just closed here, if the next thing applies a macro to it
        self.commas = 0
        self.values = False  # something other than space inside (a list literal with elements)


def cost_of(condition: str) -> Cost | None:
    """The condition's Cost, or None when it has no comprehension macro (nothing in it iterates)."""
    text = blanked(condition)
    if not _MACRO.search(text):
        return None
    stack = [_Frame("")]
    written = 0
    at = 0
    while at < len(text):
        macro = _MACRO.match(text, at)
        if macro:
            stack.append(_Frame("(", macro=True, chain=stack[-1].last))
            at = macro.end()
            continue
        char = text[at]
        at += 1
        top = stack[-1]
        if char in _OPEN:
            top.values = True
            stack.append(_Frame(char))
        elif char in ")]}" and len(stack) > 1:
            frame = stack.pop()
            if frame.opener in "[{" and frame.values:
                written += frame.commas + 1  # a list or map literal (an index [0] counts one: an overcount)
            depth = 1 + max(frame.inner, frame.chain) if frame.macro else max(frame.inner, frame.chain)
            stack[-1].inner = max(stack[-1].inner, depth)
            stack[-1].last = depth
        elif char == ",":
            top.commas += 1
            top.last = 0
        elif not char.isspace():
            top.values = True
            if char != ".":  # `).all(`: the macro applies to what just closed
                top.last = 0
    return Cost(depth=max(1, stack[0].inner), written=written, joins=1 + text.count("+"))


def blanked(condition: str) -> str:
    """`condition` with every string or bytes literal written `""` and every comment dropped."""
    out: list[str] = []
    at = 0
    while at < len(condition):
        if condition.startswith("//", at):
            end = condition.find("\n", at)
            at = len(condition) if end < 0 else end
            continue
        prefix = _PREFIX.match(condition, at)
        if prefix is None:
            out.append(condition[at])
            at += 1
            continue
        out.append('""')
        at = _string_end(condition, prefix.end(), raw="r" in prefix.group().lower())
    return "".join(out)


def _string_end(text: str, start: int, raw: bool) -> int:
    """Where the literal whose quotes open at `start` ends (past its closing quotes; the text's end if it never
    closes: CEL then refuses the condition itself)."""
    quote = text[start] * 3 if text.startswith(text[start] * 3, start) else text[start]
    at = start + len(quote)
    while at < len(text):
        if text.startswith(quote, at):
            return at + len(quote)
        if text[at] in "\r\n" and len(quote) == 1:
            return at  # a one-quote literal ends at the line's end: CEL refuses it
        at += 2 if text[at] == "\\" and not raw else 1
    return at


def longest(value: Any) -> int:
    """The length of the longest list or map in `value`, nested ones included (a fact's own dict of facts too)."""
    inner: Iterable[Any]
    if isinstance(value, dict):
        inner = value.values()
    elif isinstance(value, list):
        inner = value
    else:
        return 0
    return max(len(value), max((longest(v) for v in inner if isinstance(v, dict | list)), default=0))


def check(cost: Cost | None, variables: Any, where: str) -> None:
    """Refuse an evaluation over budget before it starts: one line naming `where` (the rule file and rule).
    `variables` are the facts handed to CEL: a dict, or a cel.Context (whose `variables` are a dict)."""
    if cost is None:
        return
    facts = variables if isinstance(variables, dict) else getattr(variables, "variables", {})
    steps = cost.steps(facts)
    if steps > BUDGET:
        raise FabricCheckError(
            f"{where}: condition over its evaluation budget: {cost.depth} nested comprehension(s) over lists of up "
            f"to {cost.longest(facts):,} elements make up to {steps:,} steps (budget {BUDGET:,} per evaluation); "
            "iterate shorter lists or nest fewer all/exists/map/filter"
        )
