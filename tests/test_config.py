"""Settings in layers (defaults, config file, FABRICCHECK_* variables, flags; later wins), each with its source;
unknown keys and bad values are one line naming the file (or variable) and the key."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_run import one_clean_line, run

from fabriccheck import config
from fabriccheck.errors import FabricCheckError

DEFAULTS = {"fail-on": "error", "workload": "llm-70b-fsdp"}


def resolve(cwd: Path, env: dict[str, str] | None = None, **flags: object) -> config.Config:
    return config.resolve(DEFAULTS, {k.replace("_", "-"): v for k, v in flags.items()}, cwd=cwd, env=env or {})


def test_layers_later_wins_and_each_value_says_where_it_came_from(tmp_path: Path) -> None:
    (tmp_path / "fabriccheck.toml").write_text(
        'fail-on = "warning"\nselect = ["AWS1"]\nworkload = "llm-8b-ddp"\nrules-dir = ["my-rules"]\n'
        'waivers = "waivers.yaml"\n[severity]\nAWS121 = "info"\n[roles]\n"*canary*" = "ignore"\n'
    )
    effective = resolve(
        tmp_path, {"FABRICCHECK_SELECT": "AWS110, AWS111", "FABRICCHECK_FAIL_ON": "info"}, fail_on="never"
    )
    settings = effective.settings
    assert (settings["fail-on"].value, settings["fail-on"].source) == ("never", "flag --fail-on")
    assert (settings["select"].value, settings["select"].source) == (["AWS110", "AWS111"], "env FABRICCHECK_SELECT")
    assert (settings["workload"].value, settings["workload"].source) == ("llm-8b-ddp", "fabriccheck.toml")
    assert settings["severity"].value == {"AWS121": "info"}
    assert settings["roles"].value == {"*canary*": "ignore"}
    # Paths in a file are relative to the file, not to wherever the command runs.
    assert settings["rules-dir"].value == [tmp_path / "my-rules"]
    assert settings["waivers"].value == tmp_path / "waivers.yaml"
    assert (settings["ignore"].value, settings["ignore"].source) == ([], "default")
    assert effective.file == tmp_path / "fabriccheck.toml"


def test_pyproject_table_is_read_and_fabriccheck_toml_wins(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.fabriccheck]\nfail-on = "info"\n')
    effective = resolve(tmp_path)
    assert effective.value("fail-on") == "info"
    assert effective.settings["fail-on"].source == "pyproject.toml [tool.fabriccheck]"
    (tmp_path / "fabriccheck.toml").write_text('fail-on = "warning"\n')
    assert resolve(tmp_path).value("fail-on") == "warning"


def test_pyproject_without_the_table_is_no_config(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    effective = resolve(tmp_path)
    assert effective.file is None and effective.value("fail-on") == "error"


def test_env_lists_maps_and_numbers(tmp_path: Path) -> None:
    env = {
        "FABRICCHECK_SEVERITY": "AWS121=info,placement=error",
        "FABRICCHECK_ROLES": "aws:*:bert-*=inference",
        "FABRICCHECK_PRICE_PER_GPU_HOUR": "2.5",
        "FABRICCHECK_RULES_DIR": os.pathsep.join(["a", "b"]),
        "FABRICCHECK_DEBUG": "1",  # not a setting, and allowed
    }
    effective = resolve(tmp_path, env)
    assert effective.value("severity") == {"AWS121": "info", "placement": "error"}
    assert effective.value("roles") == {"aws:*:bert-*": "inference"}
    assert effective.value("price-per-gpu-hour") == 2.5
    assert effective.value("rules-dir") == [Path("a"), Path("b")]


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('fail_on = "error"\n', "unknown key 'fail_on'"),
        ('fail-on = "sometimes"\n', "fail-on: 'sometimes' is not one of 'error', 'warning', 'info' or 'never'"),
        ('workload = "gpt-9"\n', "workload: unknown workload 'gpt-9'"),
        ("price-per-gpu-hour = -1\n", "price-per-gpu-hour: -1: not a price (dollars a GPU-hour, 0 to 1,000)"),
        ('[severity]\nAWS121 = "critical"\n', "severity.AWS121"),
        ('[roles]\n"x" = "batch"\n', "roles.x"),
        ('select = "AWS1"\n', "select: 'AWS1': not a list"),
        ("fail-on = \n", "not valid TOML"),
    ],
)
def test_bad_file_names_file_and_key(tmp_path: Path, content: str, needle: str) -> None:
    (tmp_path / "fabriccheck.toml").write_text(content)
    with pytest.raises(FabricCheckError) as caught:
        resolve(tmp_path)
    assert f"config file {tmp_path / 'fabriccheck.toml'}: " in str(caught.value) and needle in str(caught.value)


def test_unknown_key_in_pyproject_names_the_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.fabriccheck]\nfailon = 1\n")
    with pytest.raises(FabricCheckError, match=r"pyproject.toml: unknown key \[tool.fabriccheck\] 'failon'"):
        resolve(tmp_path)


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"FABRICCHECK_FAILON": "x"}, "environment variable FABRICCHECK_FAILON: unknown setting"),
        ({"FABRICCHECK_FAIL_ON": "x"}, "environment variable FABRICCHECK_FAIL_ON: fail-on"),
        ({"FABRICCHECK_PRICE_PER_GPU_HOUR": "cheap"}, "FABRICCHECK_PRICE_PER_GPU_HOUR: 'cheap' is not a number"),
        ({"FABRICCHECK_SEVERITY": "AWS121"}, "FABRICCHECK_SEVERITY: 'AWS121': expected KEY=VALUE"),
        ({"FABRICCHECK_CONFIG": "/nonexistent/fc.toml"}, "config file /nonexistent/fc.toml: no such file"),
    ],
)
def test_bad_environment(tmp_path: Path, env: dict[str, str], needle: str) -> None:
    with pytest.raises(FabricCheckError, match=needle.replace("(", r"\(")):
        resolve(tmp_path, env)


def test_map_flags_are_checked_like_the_file(tmp_path: Path) -> None:
    assert resolve(tmp_path, roles=["*bert*=ignore"]).value("roles") == {"*bert*": "ignore"}
    with pytest.raises(FabricCheckError, match=r"flag --severity: severity\.AWS101"):
        resolve(tmp_path, severity=["AWS101=fatal"])
    with pytest.raises(FabricCheckError, match="--role 'bert': expected KEY=VALUE"):
        resolve(tmp_path, roles=["bert"])


# ---------------------------------------------------------------------------------------------- the command


def env_without_settings() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("FABRICCHECK_")}


def test_config_command_prints_values_and_sources(tmp_path: Path) -> None:
    (tmp_path / "fabriccheck.toml").write_text('fail-on = "warning"\nselect = ["AWS1"]\n')
    env = env_without_settings() | {"FABRICCHECK_WORKLOAD": "llm-8b-ddp"}
    result = run("config", "--ignore", "AWS121", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    lines = {line.split()[0]: line for line in result.stdout.splitlines()}
    assert lines["fail-on"].split("=")[1].split()[0] == "warning" and lines["fail-on"].endswith("(fabriccheck.toml)")
    assert lines["workload"].endswith("(env FABRICCHECK_WORKLOAD)") and "llm-8b-ddp" in lines["workload"]
    assert lines["ignore"].endswith("(flag --ignore)") and "AWS121" in lines["ignore"]
    assert lines["cluster-tag"].endswith("(default)")
    shown = json.loads(run("config", "-f", "json", cwd=tmp_path, env=env).stdout)
    assert shown["settings"]["select"] == {"value": ["AWS1"], "source": "fabriccheck.toml"}


def test_config_drives_the_scan(tmp_path: Path) -> None:
    env = env_without_settings()
    base = ["demo", "--select", "AWS110", "-f", "json"]
    (tmp_path / "fabriccheck.toml").write_text('fail-on = "error"\n')
    assert run(*base, cwd=tmp_path, env=env).returncode == 1  # demo never fails by default; the file says error
    assert run(*base, "--fail-on", "never", cwd=tmp_path, env=env).returncode == 0  # the flag wins
    (tmp_path / "fabriccheck.toml").write_text('fail-on = "error"\n[roles]\n"*/bert-ft" = "ignore"\n')
    result = run(*base, cwd=tmp_path, env=env)
    report = json.loads(result.stdout)
    assert result.returncode == 0 and not report["findings"]
    assert [s["role"] for s in report["skipped_clusters"]] == ["ignore"]
    (tmp_path / "fabriccheck.toml").write_text('fail-on = "error"\n[severity]\nAWS110 = "warning"\n')
    result = run(*base, cwd=tmp_path, env=env)
    assert result.returncode == 0 and {f["severity"] for f in json.loads(result.stdout)["findings"]} == {"warning"}


def test_cli_errors_are_one_line_exit_2(tmp_path: Path) -> None:
    env = env_without_settings()
    (tmp_path / "fabriccheck.toml").write_text('fail-onn = "error"\n')
    line = one_clean_line(run("demo", cwd=tmp_path, env=env))
    assert "fabriccheck.toml: unknown key 'fail-onn'" in line
    line = one_clean_line(run("config", cwd=tmp_path, env=env))
    assert "unknown key 'fail-onn'" in line
    line = one_clean_line(run("demo", "--config", str(tmp_path / "missing.toml"), env=env))
    assert "missing.toml: no such file" in line
    line = one_clean_line(run("demo", "--severity", "AWS999=info", env=env))
    assert "severity override AWS999: no rule or category" in line
    line = one_clean_line(run("demo", env=env | {"FABRICCHECK_FAIL_ONN": "x"}))
    assert "FABRICCHECK_FAIL_ONN: unknown setting" in line
    # Rule names set in a file or a variable: the error says where they were set.
    (tmp_path / "fabriccheck.toml").write_text('select = ["AWS9"]\n')
    line = one_clean_line(run("demo", cwd=tmp_path, env=env))
    assert "AWS9" in line and line.endswith("(set by fabriccheck.toml)")
    (tmp_path / "fabriccheck.toml").unlink()
    line = one_clean_line(run("config", cwd=tmp_path, env=env | {"FABRICCHECK_SEVERITY": "nosuch=info"}))
    assert "severity override nosuch" in line and line.endswith("(set by env FABRICCHECK_SEVERITY)")


def test_config_roles_name_templates_too(tmp_path: Path) -> None:
    """A launch template (a spec) named by [roles] is skipped like a running cluster, and listed as skipped."""
    env = env_without_settings()
    base = ["demo", "--select", "AWS140", "-f", "json"]
    before = json.loads(run(*base, cwd=tmp_path, env=env).stdout)
    assert [f["resources"] for f in before["findings"]] == [["lt-0000000000000a002:1"]]
    (tmp_path / "fabriccheck.toml").write_text('[roles]\n"*lt-0000000000000a002*" = "inference"\n')
    after = json.loads(run(*base, cwd=tmp_path, env=env).stdout)
    assert after["findings"] == []
    skipped = [s for s in after["skipped_clusters"] if "lt-0000000000000a002" in s["id"]]
    assert sorted((s["role"], *s["nodes"]) for s in skipped) == [  # both versions of the template
        ("inference", "lt-0000000000000a002:1"),
        ("inference", "lt-0000000000000a002:2"),
    ]
