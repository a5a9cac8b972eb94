"""The gate a run was judged under is in every report, config files can be ignored, every rule a waiver or a
setting names exists, and no output overwrites an input (issue 18, items 6, 7 and 15).

The runs read the demo's AWS account (fixtures/demo/aws, made by tools/build_demo.py) from its dump files, in a
working directory that holds the config file a pull request could add."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run
from loopback import closing_endpoint

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo" / "aws"
# A pull request's config: nothing fails, every cluster is ignored, one harmless rule is run.
HOSTILE = '[tool.fabriccheck]\nfail-on = "never"\nselect = ["AWS150"]\n[tool.fabriccheck.roles]\n"*" = "ignore"\n'


def _env(**extra: str) -> dict[str, str]:
    """The environment without FABRICCHECK_* settings (the back-off scale kept), plus `extra`."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith("FABRICCHECK_") or k == "FABRICCHECK_RETRY_BASE"}
    return kept | extra


def _json(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "infra"\n' + HOSTILE)
    return tmp_path


# ---------------------------------------------------------------------------------------------- item 6


def test_a_config_file_that_turns_the_gate_off_is_in_every_report(repo: Path) -> None:
    scan = ["aws", "--from-dump", str(DEMO), "--severity", "AWS150=info"]
    result = run(*scan, "-f", "json", cwd=repo, env=_env())
    assert result.returncode == 0, result.stderr  # the config's doing: and the report says so
    gate = _json(result)["gate"]
    assert gate["config_file"] == str(repo / "pyproject.toml") and gate["isolated"] is False
    settings = gate["settings"]
    source = "pyproject.toml [tool.fabriccheck]"
    assert settings["fail-on"] == {"value": "never", "source": source}
    assert settings["select"] == {"value": ["AWS150"], "source": source}
    assert settings["roles"] == {"value": {"*": "ignore"}, "source": source}
    assert settings["severity"] == {"value": {"AWS150": "info"}, "source": "flag --severity"}
    assert settings["waivers"] == {"value": None, "source": "default"}
    assert settings["allow-incomplete"] == {"value": False, "source": "default"}
    sarif = _json(run(*scan, "-f", "sarif", cwd=repo, env=_env()))
    assert sarif["runs"][0]["properties"]["gate"] == gate
    # Wide enough that no word is broken: the config file's path (a worker's tmp_path under pytest-xdist) is one.
    text = run(*scan, cwd=repo, env=_env(COLUMNS="400")).stdout
    header = " ".join(text.split("Clusters")[0].split())  # the header, unwrapped
    assert f"gate: fail-on never ({source}); select AWS150 ({source}); ignore none;" in header
    assert "severity AWS150=info (flag --severity); roles *=ignore" in header
    assert f"config file {repo / 'pyproject.toml'}" in header


def test_isolated_reads_no_config_file(repo: Path) -> None:
    for how in (["--isolated"], []):
        env = _env() if how else _env(FABRICCHECK_ISOLATED="1")
        result = run("aws", "--from-dump", str(DEMO), *how, "-f", "json", cwd=repo, env=env)
        assert result.returncode == 1, result.stderr  # the demo's errors fail the gate again
        gate = _json(result)["gate"]
        assert gate["isolated"] is True and gate["config_file"] is None
        assert gate["settings"]["fail-on"] == {"value": "error", "source": "default"}
    assert "config file: (none: --isolated)" in run("config", "--isolated", cwd=repo, env=_env()).stdout
    line = one_clean_line(run("demo", "--isolated", "--config", str(repo / "pyproject.toml"), env=_env()))
    assert "--isolated and --config cannot be used together" in line
    conflicting = _env(FABRICCHECK_ISOLATED="1", FABRICCHECK_CONFIG=str(repo / "pyproject.toml"))
    assert "FABRICCHECK_CONFIG" in one_clean_line(run("demo", env=conflicting))


def test_a_merge_says_what_its_parts_were_judged_under(tmp_path: Path) -> None:
    parts = []
    for cloud, select in (("aws", "AWS1"), ("gcp", "GCP1")):
        path = tmp_path / f"{cloud}.json"
        dump = ROOT / "fixtures" / "demo" / cloud
        run(cloud, "--from-dump", str(dump), "--select", select, "-f", "json", "-o", str(path), env=_env())
        parts.append(path)
    result = run("merge", *map(str, parts), "--fail-on", "never", "-f", "json", env=_env())
    assert result.returncode == 0, result.stderr
    gate = _json(result)["gate"]
    assert gate["settings"]["fail-on"] == {"value": "never", "source": "flag --fail-on"}
    assert gate["settings"]["select"]["source"] == "the parts differ (value by part)"
    assert sorted(gate["settings"]["select"]["value"].values()) == [["AWS1"], ["GCP1"]]
    assert gate["settings"]["roles"] == {"value": {}, "source": "every part"}


# ---------------------------------------------------------------------------------------------- item 7


def test_a_waiver_of_a_rule_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text(
        'waivers:\n  - rule: AWS110\n    resources: ["*"]\n    reason: "r"\n'
        '  - rule: aws199\n    resources: ["*"]\n    reason: "typo of AWS119?"\n'
    )
    line = one_clean_line(run("aws", "--from-dump", str(DEMO), "--waivers", str(waivers), env=_env()))
    assert line.endswith(f"waivers file {waivers}: waivers[2].rule: no rule AWS199 (see: fabriccheck rules)")
    assert "no rule AWS199" in one_clean_line(run("config", "--waivers", str(waivers), env=_env()))
    config = tmp_path / "fabriccheck.toml"
    config.write_text('waivers = "waivers.yaml"\n')
    assert "no rule AWS199" in one_clean_line(run("aws", "--from-dump", str(DEMO), cwd=tmp_path, env=_env()))
    # Another cloud's rule exists: the waiver is fine, and reported as not run here.
    waivers.write_text('waivers:\n  - rule: AZ110\n    resources: ["*"]\n    reason: "the Azure side"\n')
    report = _json(run("aws", "--from-dump", str(DEMO), "--waivers", str(waivers), "-f", "json", env=_env()))
    assert [w["status"] for w in report["waivers"]] == ["not-run"]


def test_unknown_rule_names_fail_before_anything_is_collected() -> None:
    """A live run: the typo is found before the scan, which the endpoint shows by never being called."""
    for flags, needle in (
        (["--severity", "AWS999=info"], "severity override AWS999: no rule or category"),
        (["--select", "AWS999"], "--select AWS999: no rule or category matches"),
    ):
        with closing_endpoint() as (url, called):
            line = one_clean_line(run("aws", "-r", "us-east-1", "--endpoint-url", url, *flags, env=_env()))
        assert needle in line and not called.is_set()


# ---------------------------------------------------------------------------------------------- item 15


def test_no_output_overwrites_an_input(tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    shutil.copytree(DEMO, dump)
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text('waivers:\n  - rule: AWS110\n    resources: ["*"]\n    reason: "r"\n')
    baseline = tmp_path / "baseline.json"
    assert run("aws", "--from-dump", str(dump), "--write-baseline", str(baseline), env=_env()).returncode == 0
    config = tmp_path / "fabriccheck.toml"
    config.write_text('fail-on = "warning"\n')
    inputs = {p: p.read_bytes() for p in [*dump.iterdir(), waivers, baseline, config]}
    scan = ["aws", "--from-dump", str(dump)]
    for option, target, what in (
        ("-o", dump / "describe-instances.json", "is a file in the dump folder being read (--from-dump)"),
        ("--save-inventory", dump / "describe-subnets.json", "is a file in the dump folder being read"),
        ("--write-baseline", dump / "describe-subnets.json", "is a file in the dump folder being read"),
        ("-o", waivers, "is the waivers file being read (--waivers)"),
        ("-o", baseline, "is the baseline being read (--baseline)"),
        ("-o", Path("fabriccheck.toml"), "is the config file in use"),
    ):
        result = run(*scan, "--waivers", str(waivers), "--baseline", str(baseline), option, str(target), cwd=tmp_path)
        assert what in one_clean_line(result), (option, target)
    assert {p: p.read_bytes() for p in inputs} == inputs  # every input as it was
    # A new file beside the dump's files is no input; reading a baseline and writing its successor is allowed.
    assert run(*scan, "-o", str(dump / "report.txt"), "--fail-on", "never", env=_env()).returncode == 0
    again = run(*scan, "--baseline", str(baseline), "--write-baseline", str(baseline), env=_env())
    assert again.returncode == 0, again.stderr


def test_the_baseline_is_never_written_over_the_inventory_or_plan_being_checked(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.json"
    assert run("aws", "--from-dump", str(DEMO), "--save-inventory", str(inventory), env=_env()).returncode == 1
    before = inventory.read_bytes()
    line = one_clean_line(run("check", str(inventory), "--write-baseline", str(inventory), env=_env()))
    assert "--write-baseline" in line and "is the inventory being checked" in line
    assert inventory.read_bytes() == before
    plan = ROOT / "fixtures" / "demo" / "plans" / "aws-wrong.json"
    copy = tmp_path / "plan.json"
    copy.write_bytes(plan.read_bytes())
    line = one_clean_line(run("plan", str(copy), "--write-baseline", str(copy), env=_env()))
    assert "is the plan being checked" in line and copy.read_bytes() == plan.read_bytes()
