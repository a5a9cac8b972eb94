"""Each gate setting is declared once (fabriccheck/settings.py: KEYS): its flag, variable and config key, its help
and its one validator. A bad value is refused in the same words whether it came from a config file, a FABRICCHECK_*
variable or a flag (only the frame naming the file, variable or flag differs); the CLI's flags and the docs' table
are made from the same table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from cli_run import one_clean_line, run

from fabriccheck import config, settings
from fabriccheck.cli import app
from fabriccheck.errors import FabricCheckError

ROOT = Path(__file__).resolve().parent.parent
DEFAULTS = {"fail-on": "error", "workload": "llm-70b-fsdp"}


def _refusal(cwd: Path, *, env: dict[str, str] | None = None, flags: dict[str, Any] | None = None) -> str:
    with pytest.raises(FabricCheckError) as caught:
        config.resolve(DEFAULTS, flags or {}, cwd=cwd, env=env or {})
    return str(caught.value)


@pytest.mark.parametrize(
    ("name", "toml", "text", "flag_value", "says"),
    [
        ("cluster-tag", '" "', " ", " ", "an empty tag key groups nothing (give the key, e.g. job)"),
        ("workload", '"gpt-9"', "gpt-9", "gpt-9", "unknown workload 'gpt-9' (choose from llm-175b-3d"),
        ("price-per-gpu-hour", "5000", "5000", 5000.0, "5000: not a price (dollars a GPU-hour, 0 to 1,000)"),
        ("price-per-gpu-hour", "-1", "-1", -1.0, "-1: not a price (dollars a GPU-hour, 0 to 1,000)"),
        ("fail-on", '"sometimes"', "sometimes", "sometimes", "'sometimes' is not one of 'error', 'warning', 'info'"),
    ],
)
def test_a_bad_value_is_refused_alike_from_file_variable_and_flag(
    tmp_path: Path, name: str, toml: str, text: str, flag_value: object, says: str
) -> None:
    key = settings.BY_NAME[name]
    (tmp_path / "fabriccheck.toml").write_text(f"{name} = {toml}\n")
    from_file = _refusal(tmp_path)
    (tmp_path / "fabriccheck.toml").unlink()
    from_env = _refusal(tmp_path, env={key.env: text})
    from_flag = _refusal(tmp_path, flags={name: flag_value})
    frames = (
        f"config file {tmp_path / 'fabriccheck.toml'}: {name}: ",
        f"environment variable {key.env}: {name}: ",
        f"flag {key.flag}: {name}: ",
    )
    layers = list(zip(frames, (from_file, from_env, from_flag), strict=True))
    for frame, line in layers:
        assert line.startswith(frame + says), line
    # One validator: the words after the frame are the same, whichever layer the value came from.
    assert len({line.removeprefix(frame) for frame, line in layers}) == 1


def test_the_cli_flags_are_the_settings_table() -> None:
    demo = typer.main.get_command(app).commands["demo"]  # type: ignore[attr-defined]
    params = {p.name: p for p in demo.params}
    for key in settings.KEYS:
        param = params[key.param]
        assert key.flag in param.opts, key.name
        assert (param.metavar, param.help) == (key.metavar, key.help), key.name


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--cluster-tag", " "], "Invalid value for '--cluster-tag': an empty tag key groups nothing (give the key"),
        (["--workload", "gpt5"], "Invalid value for '--workload': unknown workload 'gpt5' (choose from"),
        (["--price-per-gpu-hour", "inf"], "Invalid value for '--price-per-gpu-hour': inf: not a price"),
    ],
)
def test_a_bad_flag_is_one_line_exit_2_in_its_settings_words(args: list[str], says: str) -> None:
    result = run("demo", *args)
    assert result.returncode == 2
    assert says in one_clean_line(result)


def test_the_docs_table_of_settings_is_current() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text()
    block = page.split(settings.DOCS_BEGIN, 1)[1].split(settings.DOCS_END, 1)[0]
    assert block == "\n" + settings.markdown_table(), "stale: run python tools/build_config_docs.py"
    assert all(f"`{key.env}`" in block and f"`{key.name}`" in block for key in settings.KEYS)
