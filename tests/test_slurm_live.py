"""`fabriccheck slurm` without --from-dump: the read-only commands run on a login node (providers/slurm/live.py).

The `scontrol` and `squeue` put first on PATH here print the files of fixtures/slurm/pcluster, which are Slurm's own
output shapes (fixtures/slurm/SOURCES.md: SchedMD/slurm src/plugins/data_parser/v0.0.43/parsers.c at 284c3b95), so
the reader under test is the real one; the text of `scontrol show topology` is topology_block.c's
`BlockName=%s BlockIndex=%u Nodes=%s BlockSize=%u`, and `scontrol show config` prints `SLURM_CONF = PATH`
(SchedMD/slurm src/api/config_info.c: the pair "SLURM_CONF", default_slurm_config_file). Each fake logs its argv,
so a test can check that nothing but the allowed read-only commands ever ran.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run

from fabriccheck.errors import FabricCheckError
from fabriccheck.providers.slurm import live

ROOT = Path(__file__).resolve().parents[1]
SLURM = ROOT / "fixtures" / "slurm" / "pcluster"
AWS = ROOT / "fixtures" / "demo" / "aws"

_FAKE = """#!/bin/sh
# A stand-in for {tool}: logs its argv, prints what {folder} holds for it.
echo "{tool} $*" >> "{log}"
case "$*" in
{cases}
  *) echo "{tool}: unexpected arguments: $*" >&2; exit 64 ;;
esac
"""


def _tools(tmp_path: Path, etc: Path, fail: dict[str, str] | None = None) -> tuple[dict[str, str], Path]:
    """A PATH whose scontrol and squeue print the fixture files; `fail` maps an argument string to an error."""
    bin_dir, log = tmp_path / "bin", tmp_path / "argv.log"
    bin_dir.mkdir()
    topology = tmp_path / "topology.txt"
    topology.write_text(
        "BlockName=block1 BlockIndex=0 Nodes=train-st-p5-[1-4] BlockSize=2\n"
        "BlockName=block2 BlockIndex=1 Nodes=spot-dy-p5-[1-2] BlockSize=2\n"
    )
    outputs = {
        "scontrol": {
            "show nodes --json": f'cat "{SLURM / "nodes.json"}"',
            "show partitions --json": f'cat "{SLURM / "partitions.json"}"',
            "show topology": f'cat "{topology}"',
            "show config": f'echo "Configuration data as of 2026-12-04T22:00:00"; echo "SLURM_CONF              = '
            f'{etc / "slurm.conf"}"; echo "SLURM_VERSION           = 25.05.3"',
        },
        "squeue": {"--json": f'cat "{SLURM / "jobs.json"}"'},
    }
    for tool, answers in outputs.items():
        cases = []
        for args, command in answers.items():
            if fail and args in fail:
                command = f'echo "{fail[args]}" >&2; exit 1'
            cases.append(f'  "{args}") {command} ;;')
        script = bin_dir / tool
        script.write_text(_FAKE.format(tool=tool, folder=SLURM, log=log, cases="\n".join(cases)))
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return env, log


def _etc(tmp_path: Path) -> Path:
    etc = tmp_path / "etc-slurm"
    etc.mkdir()
    for name in ("slurm.conf", "topology.conf", "gres.conf"):
        shutil.copy(SLURM / name, etc / name)
    return etc


def _report(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    result = run("slurm", *args, "-f", "json", env=env)
    assert result.returncode in (0, 1, 2) and result.stdout, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return result.returncode, report


def _findings(report: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(f["rule"], f["cluster"], r) for f in report["findings"] for r in f["resources"]}


def test_live_run_judges_what_the_dump_of_the_same_commands_judges(tmp_path: Path) -> None:
    """The same cluster read live (the commands run here) and from its dump gives the same findings, complete."""
    env, _ = _tools(tmp_path, _etc(tmp_path))
    code, report = _report(env, "--cloud-dump", str(AWS))
    dump = tmp_path / "dump"
    shutil.copytree(SLURM, dump)
    (dump / "topology.txt").write_text((tmp_path / "topology.txt").read_text())
    dump_code, from_dump = _report(dict(os.environ), "--from-dump", str(dump), "--cloud-dump", str(AWS))
    assert _findings(report) == _findings(from_dump)
    # The cluster's name is slurm.conf's ClusterName, read from where `scontrol show config` says.
    assert ("SLURM121", "slurm:llm:slurm:slurm-partition/train", "train-st-p5-1") in _findings(report)
    assert (code, report["complete"]) == (dump_code, True)
    assert report["source"].startswith("slurm live + aws dump")
    assert "fabriccheck-slurm-" not in json.dumps(report)  # the private folder is nowhere in the report


def test_only_the_allowed_read_only_commands_ever_run(tmp_path: Path) -> None:
    """Every argv the live run starts is one of live.ALLOWED, each once; none of them writes (no `update`)."""
    env, log = _tools(tmp_path, _etc(tmp_path))
    _report(env)
    ran = log.read_text().splitlines()
    allowed = {" ".join(argv) for argv in live.ALLOWED}
    assert sorted(ran) == sorted(allowed)
    assert not any(word in line.split() for line in ran for word in ("update", "create", "delete", "reconfigure"))


def test_run_refuses_any_argv_outside_the_allow_list() -> None:
    """live.run never starts a command that is not one of the documented read-only ones."""
    with pytest.raises(FabricCheckError, match="refused to run `scontrol update"):
        live.run(("scontrol", "update", "NodeName=x", "State=DRAIN"))


def test_a_failing_nodes_command_is_one_line_naming_it(tmp_path: Path) -> None:
    """nodes.json is required: `scontrol show nodes --json` failing stops the run with one line, exit 2."""
    env, _ = _tools(tmp_path, _etc(tmp_path), fail={"show nodes --json": "slurm_load_node error: Unable to contact"})
    line = one_clean_line(run("slurm", env=env))
    assert "`scontrol show nodes --json` failed (exit 1): slurm_load_node error: Unable to contact" in line


def test_missing_scontrol_is_one_line(tmp_path: Path) -> None:
    """Off a login node (no scontrol on PATH): one line saying so, exit 2."""
    empty = tmp_path / "bin"
    empty.mkdir()
    line = one_clean_line(run("slurm", env=dict(os.environ, PATH=str(empty))))
    assert "scontrol is not on PATH: run on a login node, or give --from-dump DIR" in line


def test_a_failing_optional_command_leaves_the_run_incomplete(tmp_path: Path) -> None:
    """squeue failing: the job rules judge nothing, so the run is incomplete and exits 2 (it never passes)."""
    env, _ = _tools(tmp_path, _etc(tmp_path), fail={"--json": "squeue: error: Invalid user"})
    code, report = _report(env, "--cloud-dump", str(AWS))
    assert (code, report["complete"]) == (2, False)
    assert any(
        e["call"] == "squeue --json" and "Invalid user" in e["message"] for e in report["errors"]
    ), report["errors"]


def test_missing_slurm_conf_leaves_the_run_incomplete(tmp_path: Path) -> None:
    """`scontrol show config` names a slurm.conf that is not there: a collection error, not a pass."""
    env, _ = _tools(tmp_path, tmp_path / "nowhere")
    code, report = _report(env, "--cloud-dump", str(AWS))
    assert (code, report["complete"]) == (2, False)
    assert any("slurm.conf" in e["message"] for e in report["errors"])


def test_damaged_output_names_the_command_not_a_private_folder(tmp_path: Path) -> None:
    """A damaged answer is one line naming the command that gave it."""
    env, _ = _tools(tmp_path, _etc(tmp_path))
    bad = tmp_path / "bin" / "squeue"
    bad.write_text('#!/bin/sh\necho \'{"jobs": [{"partition": "train"}]}\'\n')
    line = one_clean_line(run("slurm", env=env))
    assert line.endswith("`squeue --json`: jobs[0] has no job_id"), line
