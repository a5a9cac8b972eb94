"""One resource of a Terraform plan and its values: what `after` knows, what `after_unknown` says waits for apply,
and how a value that cannot be resolved is written (an unknown value naming what it waits for, which no fact can
match). The plan that resolves them is sources/terraform.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeAlias

# A value whose reference cannot be followed (a data source, a local, a module output): it names what it
# waits for, so a fact built on it is reported as unknown with that name rather than matched against anything.
UNKNOWN_PREFIX = "(known after apply"


def unknown_value(what: str) -> str:
    return f"{UNKNOWN_PREFIX}: {what})" if what else f"{UNKNOWN_PREFIX})"


def is_unknown(value: str | None) -> bool:
    return isinstance(value, str) and value.startswith(UNKNOWN_PREFIX)


def waiting_for(value: str) -> str:
    """What a value waits for: '(known after apply: data.x.y.id)' -> 'data.x.y.id'; a known value is itself."""
    return value[len(UNKNOWN_PREFIX) :].removeprefix(":").removesuffix(")").strip() if is_unknown(value) else value


@dataclass
class PlanResource:
    """One resource instance the plan would leave in place or create (destroyed ones are dropped)."""

    address: str  # module.gpu.aws_instance.worker[3]
    base: str  # module.gpu.aws_instance.worker (the block's address: instances of count/for_each share it)
    module: str  # module.gpu ('' at the root), with instance keys
    type: str
    name: str
    index: int | str | None
    provider: str  # aws, azurerm, google, ... (the provider's type)
    values: dict[str, Any]
    unknown: Any  # after_unknown: True or a tree of the same shape as values
    action: str  # create, update, replace, no-op, read
    config: dict[str, Any] = field(default_factory=dict)  # the block's configuration (expressions ...)
    provider_config_key: str = ""

    def known(self, *path: str | int) -> Any:
        """The value at `path`, or None when unset or unknown until apply."""
        value: Any = self.values
        for step in path:
            if isinstance(step, int):
                value = value[step] if isinstance(value, list) and -len(value) <= step < len(value) else None
            else:
                value = value.get(step) if isinstance(value, dict) else None
            if value is None:
                return None
        return value

    def unknown_flag(self, *path: str | int) -> Any:
        """The after_unknown flag at `path`: True, False, or a tree of flags for a value known in part."""
        flag: Any = self.unknown
        for step in path:
            if flag is True:
                return True
            if isinstance(step, int):
                flag = flag[step] if isinstance(flag, list) and -len(flag) <= step < len(flag) else None
            else:
                flag = flag.get(step) if isinstance(flag, dict) else None
            if flag is None or flag is False:
                return False
        return flag

    def unknown_at(self, *path: str | int) -> bool:
        """Whether the value at `path` (or any part of it) is unknown until apply."""
        return any_true(self.unknown_flag(*path))

    def cloud_id(self) -> str | None:
        """The cloud's own id, when the resource exists already (an update or no-op knows it)."""
        value = self.values.get("id")
        return value if isinstance(value, str) and value else None


# What a value resolves to: a known value (a string), or a resource of this plan that it names.
Resolved: TypeAlias = "PlanResource | str"


def any_true(flag: Any) -> bool:
    if flag is True:
        return True
    if isinstance(flag, dict):
        return any(any_true(v) for v in flag.values())
    if isinstance(flag, list):
        return any(any_true(v) for v in flag)
    return False


def texts(value: Any) -> list[Resolved]:
    """A known value as strings: a string as one, a list's strings; nothing else names a resource."""
    items = value if isinstance(value, list) else [value]
    return [v for v in items if isinstance(v, str) and v != ""]


def distinct(found: list[Resolved]) -> list[Resolved]:
    """`found` without repeats (one resource named through `.id` and `.arn`), in order."""
    seen: set[str] = set()
    kept: list[Resolved] = []
    for item in found:
        key = f"resource {item.address}" if isinstance(item, PlanResource) else item
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


def dotted(address: str, path: tuple[str | int, ...]) -> str:
    """'aws_instance.x', ('network_interface', 0, 'subnet_id') -> 'aws_instance.x.network_interface[0].subnet_id'."""
    return address + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
