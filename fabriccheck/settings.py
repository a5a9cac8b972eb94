"""The gate settings, each declared once: its key in a config file, its FABRICCHECK_* variable, its flag and the CLI
parameter that carries it, its kind, its help and its one validator. The flags (cli/options.py), the environment
and config file layers (config.py) and the docs' table of settings (docs/configuration.md, made by
tools/build_config_docs.py from `markdown_table`) are all read from KEYS, so a setting cannot be checked one way as
a flag and another in a file.

Imports nothing heavy at load (the CLI reads this table to build its options): pydantic only when a value is checked.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, get_args

ENV_PREFIX = "FABRICCHECK_"
# Variables with that prefix beside the settings' own: the config file's path (config.resolve) and --isolated's.
CONFIG_ENV = "FABRICCHECK_CONFIG"
ISOLATED_ENV = "FABRICCHECK_ISOLATED"

Severity = Literal["error", "warning", "info"]
Role = Literal["training", "inference", "ignore"]
Kind = Literal["text", "list", "map", "paths", "path", "number"]


class FailOn(StrEnum):
    """The severity at or above which a finding fails the run (never: no finding does)."""

    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


class BadSetting(ValueError):
    """A value a setting refuses: `where` inside it (a map's key: severity.AWS121), and why, in our words."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(message)
        self.where = where
        self.message = message


# ------------------------------------------------------------------------------------- the checks beyond the type


def _fail_on_type() -> Any:
    return Literal[tuple(level.value for level in FailOn)]  # the enum's values, in its order


def _non_empty_tag(value: str) -> str:
    if not value.strip():
        raise ValueError("an empty tag key groups nothing (give the key, e.g. job)")
    return value


def _known_workload(value: str) -> str:
    from fabriccheck.penalty import WORKLOADS, is_workload_file

    if value not in WORKLOADS and not is_workload_file(value):
        raise ValueError(
            f"unknown workload {value!r} (choose from {', '.join(sorted(WORKLOADS))}, or give a .yaml/.toml "
            "workload file)"
        )
    return value


def _price(value: float) -> float:
    from fabriccheck.bounds import MAX_PRICE_PER_GPU_HOUR

    if not (math.isfinite(value) and 0 <= value <= MAX_PRICE_PER_GPU_HOUR):
        raise ValueError(f"{value:g}: not a price (dollars a GPU-hour, 0 to {MAX_PRICE_PER_GPU_HOUR:,.0f})")
    return value


def _a_path(value: str) -> str:
    if not value.strip():
        raise ValueError("an empty path names no file")
    return value


@dataclass(frozen=True)
class Key:
    """One gate setting, as every layer reads it."""

    name: str  # in fabriccheck.toml: fail-on
    param: str  # the CLI parameter: fail_on
    flag: str  # --fail-on
    kind: Kind  # how a variable's text splits (list: commas, map: K=V commas, paths: os.pathsep)
    metavar: str  # the flag's placeholder in --help
    help: str  # the flag's help, and the docs' description
    value_type: Any  # what a file, variable or flag holds once parsed (a type pydantic checks)
    check: Callable[[Any], Any] | None = None  # the rest of the one validator: raises ValueError(why)

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper().replace("-", "_")

    def validate(self, value: Any) -> Any:
        """`value` (from a file, a variable or a flag) as this setting holds it, or BadSetting: the setting's one
        validator, whichever layer the value came from. None is unset."""
        from pydantic import ValidationError

        from fabriccheck.errors import in_our_words

        if value is None:
            return None
        try:
            value = _adapter(self.name).validate_python(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise BadSetting(".".join(str(p) for p in first["loc"]), in_our_words(first)) from None
        if self.check is not None:
            try:
                value = self.check(value)
            except ValueError as exc:
                raise BadSetting("", str(exc)) from None
        return value


@functools.cache
def _adapter(name: str) -> Any:
    from pydantic import ConfigDict, TypeAdapter

    return TypeAdapter(BY_NAME[name].value_type, config=ConfigDict(allow_inf_nan=True))


KEYS: tuple[Key, ...] = (
    Key(
        "fail-on", "fail_on", "--fail-on", "text", "SEVERITY",
        "Exit 1 when a finding is at or above this severity: error, warning, info or never.",
        _fail_on_type(),
    ),
    Key(
        "select", "select", "--select", "list", "RULE",
        "Run only these rule ids, id prefixes or categories (repeatable).", list[str],
    ),
    Key(
        "ignore", "ignore", "--ignore", "list", "RULE",
        "Skip these rule ids, id prefixes or categories (repeatable).", list[str],
    ),
    Key(
        "severity", "severity", "--severity", "map", "RULE=LEVEL",
        "Report a rule (or category) at error, warning or info (repeatable).", dict[str, Severity],
    ),
    Key(
        "cluster-tag", "cluster_tag", "--cluster-tag", "text", "KEY",
        "Group nodes that share this tag's value into a cluster.", str, _non_empty_tag,
    ),
    Key(
        "roles", "role", "--role", "map", "CLUSTER=ROLE",
        "Cluster id (glob) is training, inference or ignore (repeatable).", dict[str, Role],
    ),
    Key(
        "workload", "workload", "--workload", "text", "NAME|FILE",
        "Workload for the penalty: a preset (llm-70b-fsdp, llm-8b-fsdp, llm-8b-ddp, llm-1b-ddp, llm-175b-3d,"
        " moe-47b-fsdp) or your own in a .yaml/.toml file (the fields of estimate --workload-file).",
        str, _known_workload,
    ),
    Key(
        "price-per-gpu-hour", "price_per_gpu_hour", "--price-per-gpu-hour", "number", "N",
        "Dollars per GPU-hour, to price the GPU-hours the penalty loses.", float, _price,
    ),
    Key("rules-dir", "rules_dir", "--rules-dir", "paths", "DIR", "Add rules from DIR (repeatable).", list[str]),
    Key(
        "waivers", "waivers", "--waivers", "path", "FILE",
        "Waivers (YAML or TOML): findings reported as waived, not failing the gate.", str, _a_path,
    ),
)  # fmt: skip
BY_NAME = {k.name: k for k in KEYS}
BY_PARAM = {k.param: k for k in KEYS}

SEVERITIES: tuple[str, ...] = get_args(Severity)
ROLES: tuple[str, ...] = get_args(Role)

# How a variable's text is written, by kind (the docs' column).
_ENV_FORM = {
    "list": "comma-separated",
    "map": "`K=V,K=V`",
    "paths": "os.pathsep-separated",
}


DOCS_BEGIN = "<!-- settings table: generated by tools/build_config_docs.py from fabriccheck/settings.py -->"
DOCS_END = "<!-- end of the settings table -->"


def markdown_table() -> str:
    """The docs' table of settings (docs/configuration.md), made from KEYS."""
    rows = [
        "| config key | flag | variable | what it sets |",
        "|---|---|---|---|",
    ]
    for key in KEYS:
        form = _ENV_FORM.get(key.kind)
        env = f"`{key.env}`" + (f" ({form})" if form else "")
        flag = f"{key.flag} {key.metavar}".replace("|", "\\|")  # a bar would end the cell
        rows.append(f"| `{key.name}` | `{flag}` | {env} | {key.help} |")
    return "\n".join(rows) + "\n"
