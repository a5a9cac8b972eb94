"""Inputs that are no mistake of fabriccheck's and must not look like one (issue 29 item 9): a rules folder that is
no rules folder (`/proc`, an empty one), and a config value of many megabytes, each one short line and exit 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_run import one_clean_line, run

from fabriccheck import rulebook
from fabriccheck.errors import FabricCheckError

ROOT = Path(__file__).resolve().parent.parent
AWS121 = ROOT / "rules" / "aws" / "AWS121-spread-placement-group.yaml"


def test_proc_as_a_rules_folder_in_the_config_file_is_one_line(tmp_path: Path) -> None:
    """`rules-dir = ["/proc"]`: entries vanish while /proc is walked (a process ends), which was an internal error
    (FileNotFoundError), or, when none vanished, a gate that ran with no rule added. Either way one line now: /proc
    cannot be read whole (some entries are not readable, others vanish), and holds no rule file if it could."""
    (tmp_path / "fabriccheck.toml").write_text('rules-dir = ["/proc"]\n')
    line = one_clean_line(run("demo", "-f", "json", cwd=tmp_path))
    assert line.startswith("fabriccheck: error: --rules-dir /proc: ")
    assert "internal error" not in line
    assert list(tmp_path.iterdir()) == [tmp_path / "fabriccheck.toml"]


def test_a_rules_folder_with_no_rule_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "README.md").write_text("my rules go here\n")
    line = one_clean_line(run("demo", "--rules-dir", str(tmp_path / "rules")))
    assert line == f"fabriccheck: error: --rules-dir {tmp_path / 'rules'}: holds no rule file (*.yaml or *.yml)"


def test_a_rules_folder_is_walked_in_the_order_rglob_gave(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every *.yaml (sorted), then every *.yml, sub-folders included, symlinked folders not followed (as
    Path.rglob did in Python 3.11); a folder too large to be a rules folder is refused."""
    (tmp_path / "b").mkdir()
    for name in ("b/z.yaml", "a.yml", "c.yaml", "notes.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / "elsewhere").symlink_to(ROOT / "rules", target_is_directory=True)
    assert rulebook.rule_files(tmp_path) == [tmp_path / "b/z.yaml", tmp_path / "c.yaml", tmp_path / "a.yml"]
    monkeypatch.setattr(rulebook, "MAX_ENTRIES", 4)  # 100,000 unless told: `/` is no rules folder
    with pytest.raises(FabricCheckError, match=r"--rules-dir .*: more than 4 files and folders under it"):
        rulebook.rule_files(tmp_path)


def test_a_user_rule_in_a_sub_folder_still_runs(tmp_path: Path) -> None:
    (tmp_path / "rules" / "team").mkdir(parents=True)
    text = AWS121.read_text().replace("id: AWS121", "id: X921")
    (tmp_path / "rules" / "team" / "X921.yaml").write_text(text)
    result = run("demo", "-f", "json", "--rules-dir", str(tmp_path / "rules"), "--select", "AWS121,X921")
    assert result.returncode == 0, result.stderr
    flagged = {f["rule"]: f["resources"] for f in json.loads(result.stdout)["findings"]}
    assert flagged["X921"] == flagged["AWS121"] != []


@pytest.mark.parametrize("key", ["workload", "cluster-tag", "select"])
def test_a_config_value_of_megabytes_is_one_short_line(tmp_path: Path, key: str) -> None:
    """10 MB here (100 MB reads the same, in more time): the line quotes the value's start and end and its length,
    never the value whole. cluster-tag is no error: its warning line is cut the same way."""
    value = "y" * 10_000_000
    written = f'{key} = ["{value}"]\n' if key == "select" else f'{key} = "{value}"\n'
    (tmp_path / "fabriccheck.toml").write_text(written)
    result = run("demo", "-f", "json", cwd=tmp_path)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and len(lines[0]) < 1_000, lines[0][:300]
    assert re.search(r"…\[9,999,7\d\d characters left out\]…", lines[0]), lines[0]
    assert result.returncode == (0 if key == "cluster-tag" else 2)
