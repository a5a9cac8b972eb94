"""Typed reads of the values a capability is made from (issue 18, item 5).

A DescribeInstanceTypes item read loosely turns a value of another type into a verdict: `bool("yes")` and
`bool("false")` are EFA, a missing or odd `MaximumEfaInterfaces` is "takes 0 EFA interfaces", `int("4")` passes
for a count. Here each value must have the JSON type the EC2 API gives it (the CLI prints it so); anything else
is unreadable, and the type's capability unknown, never "no EFA". An absent optional value is None.
"""

from __future__ import annotations

import json
from typing import Any


class UnreadableValue(ValueError):
    """A value of the wrong type, named by its field (dotted, as the API names it)."""

    def __init__(self, field: str, value: Any, expected: str) -> None:
        self.field = field
        super().__init__(f"{field} is {'missing' if value is None else shown(value)}, not {expected}")


def shown(value: Any) -> str:
    """A value quoted for an error line: JSON, so control characters are escaped, and short."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def flag(container: dict[str, Any], key: str, field: str) -> bool | None:
    value = container.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise UnreadableValue(field, value, "true or false")


def count(container: dict[str, Any], key: str, field: str, required: bool = False) -> int | None:
    value = container.get(key)
    if (value is None and not required) or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise UnreadableValue(field, value, "a whole number")


def number(container: dict[str, Any], key: str, field: str) -> float | None:
    value = container.get(key)
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 and value != float("inf"):
        return float(value)
    raise UnreadableValue(field, value, "a number")
