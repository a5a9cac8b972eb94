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
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
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
    text = _STRING.sub('""', condition)
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
