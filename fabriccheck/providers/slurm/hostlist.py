"""Slurm host lists: `node[01-04,07],login1` is node01, node02, node03, node04, node07 and login1.

The syntax is Slurm's own (hostlist expressions, src/common/hostlist.c in SchedMD/slurm; the topology.conf and
topology.yaml man pages write `Nodes=tux[0-3,12,18-20]`): comma-separated names, each with bracketed ranges of
numbers, zero-padded to the width of the range's first number. Several bracket groups in one name expand in turn.
"""

from __future__ import annotations

import re

from fabriccheck.errors import FabricCheckError

_GROUP = re.compile(r"\[([^\[\]]*)\]")
MAX_HOSTS = 1_000_000  # a bound no cluster comes near: a typo like node[1-999999999] is an error, not a hang


def _split(expression: str) -> list[str]:
    """The comma-separated names of an expression, commas inside brackets kept."""
    names, depth, start = [], 0, 0
    for index, char in enumerate(expression):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "," and depth == 0:
            names.append(expression[start:index])
            start = index + 1
    names.append(expression[start:])
    return [name.strip() for name in names if name.strip()]


def _numbers(ranges: str, expression: str) -> list[str]:
    found: list[str] = []
    for part in ranges.split(","):
        low, _, high = part.strip().partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise FabricCheckError(f"host list {expression!r}: {part!r} is not a number or a range")
        first, last = int(low), int(high or low)
        if last < first or last - first > MAX_HOSTS:
            raise FabricCheckError(f"host list {expression!r}: range {part!r} is empty or too large")
        found.extend(str(n).zfill(len(low)) for n in range(first, last + 1))
    return found


def expand(expression: str, where: str = "") -> list[str]:
    """Every host name of a Slurm host list, in order; a malformed one is one line naming it, after `where` (the
    file and line or field it was read from)."""
    try:
        return _expand(expression)
    except FabricCheckError as exc:
        if not where:
            raise
        raise FabricCheckError(f"{where}: {exc}") from None


def _expand(expression: str) -> list[str]:
    hosts: list[str] = []
    for name in _split(expression or ""):
        if name.count("[") != name.count("]"):
            raise FabricCheckError(f"host list {expression!r}: unbalanced brackets in {name!r}")
        pending = [name]
        while pending and _GROUP.search(pending[0]):
            expanded: list[str] = []
            for partial in pending:
                match = _GROUP.search(partial)
                assert match is not None  # every partial has as many groups as the first
                head, tail = partial[: match.start()], partial[match.end() :]
                expanded.extend(f"{head}{number}{tail}" for number in _numbers(match.group(1), expression))
            pending = expanded
            if len(pending) > MAX_HOSTS:
                raise FabricCheckError(f"host list {expression!r}: more than {MAX_HOSTS:,} hosts")
        hosts.extend(pending)
    return hosts
