"""Building model instances from values a normalizer has already checked, without pydantic validation.

Validating a node with its interfaces and placements costs about 10 µs, most of a normalizer's time per node on a
5,000-VM dump. A normalizer that has made every value itself (strings from `str()`, ids from its own parsing,
indexes it has bounded) can build the instance directly; when it cannot vouch for a value (a type from the
answer it did not convert, an index out of range, a NIC shape seen for the first time) it validates as before,
so a misshapen answer still fails with the same message.

`build` gives the same instance `Model.model_validate` would for such values: every field set in declaration
order (pydantic serializes in `__dict__` order), defaults filled in, each default factory called afresh.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_UNSET: Any = object()
_new = object.__new__
_set = object.__setattr__


class _Template:
    __slots__ = ("defaults", "factories", "fields", "required", "size")

    def __init__(self, cls: type[BaseModel]) -> None:
        self.defaults: dict[str, Any] = {}
        self.factories: list[tuple[str, Any]] = []
        self.required: list[str] = []
        for name, info in cls.model_fields.items():
            if info.default_factory is not None:
                self.defaults[name] = _UNSET
                self.factories.append((name, info.default_factory))
            elif info.is_required():
                self.defaults[name] = _UNSET
                self.required.append(name)
            else:
                self.defaults[name] = info.default
        self.fields = set(cls.model_fields)
        self.size = len(self.defaults)


_TEMPLATES: dict[type[BaseModel], _Template] = {}


def build(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of `cls` holding `values` (already of the fields' types and within their bounds)."""
    return make(cls, complete(cls, values))


def make(cls: type[M], fields: dict[str, Any]) -> M:
    """An instance of `cls` whose `__dict__` is `fields`: every field, in declaration order (from `complete`)."""
    instance = _new(cls)
    _set(instance, "__dict__", fields)
    _set(instance, "__pydantic_fields_set__", _template(cls).fields)
    _set(instance, "__pydantic_extra__", None)
    _set(instance, "__pydantic_private__", None)
    return instance


def maker(cls: type[M], field_set: set[str] | None = None) -> Callable[[dict[str, Any]], M]:
    """`make` for one class, for a loop that makes many of it (sharing `field_set`, a set naming every field, when
    given: see compact.compacted_maker)."""
    field_set = _template(cls).fields if field_set is None else field_set

    def make_one(fields: dict[str, Any]) -> M:
        instance = _new(cls)
        _set(instance, "__dict__", fields)
        _set(instance, "__pydantic_fields_set__", field_set)
        _set(instance, "__pydantic_extra__", None)
        _set(instance, "__pydantic_private__", None)
        return instance

    return make_one


def _template(cls: type[BaseModel]) -> _Template:
    template = _TEMPLATES.get(cls)
    if template is None:
        template = _TEMPLATES[cls] = _Template(cls)
    return template


def complete(cls: type[BaseModel], values: dict[str, Any]) -> dict[str, Any]:
    """`values` with the defaults of the fields they leave out, in declaration order."""
    template = _TEMPLATES.get(cls)
    if template is None:
        template = _TEMPLATES[cls] = _Template(cls)
    fields = template.defaults.copy()
    fields.update(values)
    if len(fields) != template.size:
        raise ValueError(f"{cls.__name__}: unknown field among {sorted(values)}")
    for name, factory in template.factories:
        if fields[name] is _UNSET:
            fields[name] = factory()
    for name in template.required:
        if fields[name] is _UNSET:
            raise ValueError(f"{cls.__name__}: a required field is missing from {sorted(values)}")
    return fields
