"""The effective settings of a scanning command, in layers, later wins: the command's defaults, a config file
(`fabriccheck.toml` in the working directory, else `[tool.fabriccheck]` of `pyproject.toml` there, else the same in
the closest folder above, up to the repository's root; or the file
`--config FILE` / `FABRICCHECK_CONFIG` names), `FABRICCHECK_*` environment variables, then the flags given.

Every value remembers where it came from, so `fabriccheck config` can say why the gate is what it is. A file or
variable that names an unknown key, or holds a value of the wrong kind, is an error naming the file (or
variable) and the key: a mistyped `fail-on` must not leave the gate at a setting nobody chose.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel

from fabriccheck import pipes, textfiles
from fabriccheck.errors import FabricCheckError
from fabriccheck.settings import BY_NAME, CONFIG_ENV, ENV_PREFIX, ISOLATED_ENV, KEYS, BadSetting, Key, Severity
from fabriccheck.sources.retries import RETRY_BASE_ENV

if TYPE_CHECKING:
    from fabriccheck.clusters import Cluster
    from fabriccheck.findings import Finding
    from fabriccheck.rulebook import RuleMeta

CONFIG_FILE = "fabriccheck.toml"
PYPROJECT = "pyproject.toml"
# Variables with that prefix that are not settings: the config file's own path, --isolated, the traceback switch
# (console.py, cli/entry.py), and the retry back-off's scale (sources.retries.retry_policy).
ENV_OTHER = frozenset({CONFIG_ENV, ISOLATED_ENV, "FABRICCHECK_DEBUG", RETRY_BASE_ENV})


@dataclass
class Setting:
    value: Any
    source: str  # "default", "fabriccheck.toml", "env FABRICCHECK_FAIL_ON", "flag --fail-on"


@dataclass
class Config:
    """The effective settings, each with where it came from."""

    settings: dict[str, Setting]  # by Key.name
    file: Path | None = None  # the config file read, if any
    notes: list[str] = field(default_factory=list)
    isolated: bool = False  # --isolated: no config file was looked for

    def value(self, name: str) -> Any:
        return self.settings[name].value

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": str(self.file) if self.file else None,
            "isolated": self.isolated,
            "settings": {name: {"value": _plain(s.value), "source": s.source} for name, s in self.settings.items()},
        }


class GateSetting(BaseModel):
    value: Any
    source: str  # "default", "flag --fail-on", "env FABRICCHECK_FAIL_ON", "fabriccheck.toml", ...


class Gate(BaseModel):
    """The gate a report was judged under (report `gate`), each setting with where it came from: a config file in
    the working directory (a pull request can add one) can set fail-on never, ignore every cluster or select one
    harmless rule, and the report says so. `settings` holds every config key, plus `allow-incomplete` and
    `baseline`."""

    config_file: str | None = None  # the config file read, if any
    isolated: bool = False  # --isolated / FABRICCHECK_ISOLATED=1: no config file read
    settings: dict[str, GateSetting]

    def setting(self, name: str) -> GateSetting:
        return self.settings.get(name) or GateSetting(value=None, source="default")

    @classmethod
    def of(cls, config: Config, extra: Mapping[str, tuple[Any, str]]) -> Gate:
        """The gate of `config`, with the command's own gate settings beside it (`extra`: name -> (value, source))."""
        settings = {name: GateSetting(value=_plain(s.value), source=s.source) for name, s in config.settings.items()}
        settings |= {name: GateSetting(value=_plain(value), source=source) for name, (value, source) in extra.items()}
        return cls(config_file=str(config.file) if config.file else None, isolated=config.isolated, settings=settings)


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _checked(key: Key, value: Any, where: str, key_prefix: str = "") -> Any:
    """`value` through the setting's one validator; a refusal is one line naming the file, variable or flag and
    the key (severity.AWS121 inside a map)."""
    try:
        return key.validate(value)
    except BadSetting as exc:
        inside = f"{key.name}.{exc.where}" if exc.where else key.name
        raise FabricCheckError(f"{where}: {key_prefix}{inside}: {exc.message}") from None


def _check_table(table: Mapping[str, Any], where: str, key_prefix: str) -> dict[str, Any]:
    """A config file's settings table, each value checked; an unknown key is named with the known ones."""
    checked: dict[str, Any] = {}
    for name, value in table.items():
        key = BY_NAME.get(name)
        if key is None:
            raise FabricCheckError(
                f"{where}: unknown key {key_prefix}{name!r} (known: {', '.join(k.name for k in KEYS)})"
            )
        checked[name] = _checked(key, value, where, key_prefix)
    return checked


def read_toml(path: Path, what: str) -> dict[str, Any]:
    pipes.refuse_named_pipe(path, what)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FabricCheckError(f"{what} {path}: cannot read ({exc.strerror})") from None
    try:
        return textfiles.load_toml(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise FabricCheckError(f"{what} {path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise FabricCheckError(f"{what} {path}: not valid TOML ({exc})") from None


def find_file(cwd: Path, explicit: Path | None) -> tuple[Path, dict[str, Any], str] | None:
    """The config file and its settings table: the one named, else fabriccheck.toml in `cwd`, else
    pyproject.toml there when it has [tool.fabriccheck], else the same in the folder above, and so on up to the
    repository's root. A file named but missing is an error."""
    if explicit is not None:
        pipes.refuse_named_pipe(explicit, "config file")  # not "no such file": it is there, and is no file
        if not explicit.is_file():
            raise FabricCheckError(f"config file {explicit}: no such file")
        data = read_toml(explicit, "config file")
        if explicit.name == PYPROJECT:
            section = data.get("tool", {}).get("fabriccheck")
            if not isinstance(section, dict):
                raise FabricCheckError(f"config file {explicit}: has no [tool.fabriccheck] table")
            return explicit, section, "[tool.fabriccheck] "
        return explicit, data, ""
    # The closest one from the working folder up, as ruff finds its own (docs/configuration.md, "Config file
    # discovery": the closest file, a pyproject.toml without the tool's table skipped), but not above the
    # repository's root (the folder holding .git: a folder or, in a worktree, a file).
    for folder in (cwd, *cwd.parents):
        found = _in_folder(folder)
        if found is not None:
            return found
        if (folder / ".git").exists():
            break
    return None


def _in_folder(folder: Path) -> tuple[Path, dict[str, Any], str] | None:
    """fabriccheck.toml in `folder`, else pyproject.toml there when it has [tool.fabriccheck]."""
    own = folder / CONFIG_FILE
    if own.is_file():
        return own, read_toml(own, "config file"), ""
    pyproject = folder / PYPROJECT
    if pyproject.is_file():
        tool = read_toml(pyproject, "config file").get("tool", {})
        section = tool.get("fabriccheck") if isinstance(tool, dict) else None
        if section is not None:
            if not isinstance(section, dict):
                raise FabricCheckError(f"config file {pyproject}: tool.fabriccheck must be a table")
            return pyproject, section, "[tool.fabriccheck] "
    return None


def _split(text: str, sep: str = ",") -> list[str]:
    return [part.strip() for part in text.split(sep) if part.strip()]


def parse_pairs(items: list[str], what: str) -> dict[str, str]:
    """`KEY=VALUE` items (flags, or a variable's comma-separated list) as a mapping; a malformed one is an error."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise FabricCheckError(f"{what} {item!r}: expected KEY=VALUE")
        pairs[key.strip()] = value.strip()
    return pairs


def _from_env(env: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    """Settings from FABRICCHECK_* variables: lists comma-separated, maps `K=V,K=V`, folders os.pathsep-separated."""
    known = {k.env: k for k in KEYS}
    found: dict[str, tuple[Any, str]] = {}
    for variable, text in sorted(env.items()):
        if not variable.startswith(ENV_PREFIX) or variable in ENV_OTHER:
            continue
        key = known.get(variable)
        if key is None:
            raise FabricCheckError(
                f"environment variable {variable}: unknown setting (known: {', '.join(sorted(known))})"
            )
        value: Any = text
        if key.kind == "list":
            value = _split(text)
        elif key.kind == "map":
            value = parse_pairs(_split(text), f"environment variable {variable}:")
        elif key.kind == "paths":
            value = _split(text, os.pathsep)
        elif key.kind == "number":
            try:
                value = float(text)
            except ValueError:
                raise FabricCheckError(f"environment variable {variable}: {text!r} is not a number") from None
        found[key.name] = (_checked(key, value, f"environment variable {variable}"), f"env {variable}")
    return found


def _as_paths(key: Key, value: Any, folder: Path | None = None) -> Any:
    """A path setting's checked text as paths; one from a config file is relative to that file's folder."""
    if key.kind == "paths":
        return [folder / p if folder else Path(p) for p in value]
    if key.kind == "path":
        return folder / value if folder else Path(value)
    return value


def resolve(
    defaults: Mapping[str, Any],
    flags: Mapping[str, Any],
    *,
    cwd: Path,
    env: Mapping[str, str],
    config_file: Path | None = None,
    isolated: bool = False,
) -> Config:
    """The effective settings. `defaults` are the command's own (by Key.name), `flags` those given on the command
    line (by Key.name); `config_file` is --config FILE (else FABRICCHECK_CONFIG, else the working directory's).
    `isolated` (--isolated, as ruff has it) reads no config file: the defaults, variables and flags only; naming a
    config file beside it is a contradiction, so an error. Every value, whichever layer it comes from, goes
    through its setting's one validator (settings.Key.validate)."""
    settings = {k.name: Setting(_default(k, defaults), "default") for k in KEYS}
    explicit = config_file
    if explicit is None and env.get(CONFIG_ENV):
        explicit = Path(env[CONFIG_ENV])
        if isolated:
            raise FabricCheckError(
                "--isolated and FABRICCHECK_CONFIG cannot be used together (--isolated reads no config file)"
            )
    if isolated and explicit is not None:
        raise FabricCheckError("--isolated and --config cannot be used together (--isolated reads no config file)")
    found = None if isolated else find_file(cwd, explicit)
    file: Path | None = None
    if found is not None:
        file, table, prefix = found
        where = f"{file.name} {prefix.strip()}".strip()
        for name, value in _check_table(table, f"config file {file}", prefix).items():
            if value is not None:  # relative to the file, not to wherever the command runs
                settings[name] = Setting(_as_paths(BY_NAME[name], value, file.parent), where)
    for name, (value, source) in _from_env(env).items():
        settings[name] = Setting(_as_paths(BY_NAME[name], value), source)
    for name, value in flags.items():
        key = BY_NAME[name]
        if key.kind == "map" and isinstance(value, list):  # --severity RULE=LEVEL, --role CLUSTER=ROLE
            value = parse_pairs(value, key.flag)
        elif key.kind in ("path", "paths") and value is not None:  # the CLI hands paths; checked as text
            value = [str(p) for p in value] if key.kind == "paths" else str(value)
        value = _checked(key, value, f"flag {key.flag}")
        settings[name] = Setting(_as_paths(key, value) if value is not None else None, f"flag {key.flag}")
    return Config(settings=settings, file=file, isolated=isolated)


def _default(key: Key, defaults: Mapping[str, Any]) -> Any:
    if key.name in defaults:
        return defaults[key.name]
    return {"list": [], "map": {}, "paths": []}.get(key.kind)


def render_text(config: Config) -> str:
    """`fabriccheck config`: each setting, its value and where it came from."""
    none = "(none: --isolated)" if config.isolated else "(none: no fabriccheck.toml or [tool.fabriccheck])"
    lines = [f"config file: {config.file if config.file else none}"]
    width = max(len(k.name) for k in KEYS)
    for key in KEYS:
        setting = config.settings[key.name]
        lines.append(f"{key.name:<{width}} = {_shown(setting.value):<30} ({setting.source})")
    return "\n".join(lines) + "\n"


def _shown(value: Any) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "(none)"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "(none)"
    return str(value)


def assign_roles(clusters: list[Cluster], roles: Mapping[str, str]) -> None:
    """`roles`: cluster id globs (`*`, `?`) to a role; the first pattern that matches a cluster wins over its tags
    and type (the config names the cluster outright)."""
    from fabriccheck.waivers import glob_pattern

    for cluster in clusters:
        for pattern, role in roles.items():
            if glob_pattern(pattern).fullmatch(cluster.id):
                cluster.role = role
                cluster.role_reason = "" if role == "training" else f"role {role} for {pattern} in the config"
                break


def override_severity(findings: list[Finding], overrides: Mapping[str, str], rules: Sequence[RuleMeta]) -> None:
    """Severity overrides by finding id (AWS101, or the id a template finding carries) or category. A name that
    is no rule's or category's is an error, as in --select: an override that silently does nothing hides a gate
    setting nobody chose."""
    from typing import get_args

    from fabriccheck.findings import Category, sort_findings

    ids = {finding_id for rule in rules for finding_id in rule.finding_ids()}
    categories = set(get_args(Category))
    by_id: dict[str, str] = {}
    by_category: dict[str, str] = {}
    for name, severity in overrides.items():
        if name.upper() in ids:
            by_id[name.upper()] = severity
        elif name.lower() in categories:
            by_category[name.lower()] = severity
        else:
            raise FabricCheckError(
                f"severity override {name}: no rule or category of that name (see: fabriccheck rules)"
            )
    for finding in findings:
        override = by_id.get(finding.rule) or by_category.get(finding.category)
        if override is not None:
            finding.severity = cast(Severity, override)  # checked by the setting's validator
    findings[:] = sort_findings(findings)  # worst first, as the engine orders them


def check_rule_names(config: Config, rules: Sequence[RuleMeta]) -> None:
    """The rule names in --select, --ignore and --severity, from wherever they were set, before anything is
    collected: a name no rule or category has is an error, so a typo fails in a second, not after a long scan.
    One set in a file or a variable says where (a flag's own error names the flag)."""
    from fabriccheck.rulebook import select_rules

    for name in ("select", "ignore", "severity"):
        setting = config.settings[name]
        if not setting.value:
            continue
        try:
            if name == "severity":
                override_severity([], setting.value, rules)
            else:
                select_rules(
                    rules, setting.value if name == "select" else [], setting.value if name == "ignore" else []
                )
        except FabricCheckError as exc:
            if setting.source.startswith("flag"):
                raise
            raise FabricCheckError(f"{exc} (set by {setting.source})") from None
