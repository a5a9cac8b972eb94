"""How text and markdown show a plan's findings (issue 17, item 18): each Terraform address beside the file:line of
its block when --terraform-dir is given, the Terraform fix first (a fenced HCL block in markdown) rather than the
advice about running instances, and `--terraform-dir` without the plan extra is one line saying how to install it.

The plan is the demo's aws-wrong plan (tools/build_demo_plans.py, written as `terraform show -json` writes it) with
the configuration it was planned from (fixtures/demo/plans/aws-wrong: a root module and a local module)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from cli_run import one_clean_line, run, run_installed

ROOT = Path(__file__).resolve().parent.parent
PLANS = ROOT / "fixtures" / "demo" / "plans"
PLAN = PLANS / "aws-wrong.json"
CONFIG = PLANS / "aws-wrong"

# The rules' own texts: AWS101's summary is about running instances, its Terraform step is the plan's fix.
RUNNING_ADVICE = "EFA interfaces cannot be attached to a running instance"
TERRAFORM_FIX = "In aws_launch_template add one network_interfaces block per network card"
WIDE = {**os.environ, "COLUMNS": "250"}  # one finding's resources on one line


def _block_line(path: Path, header: str) -> int:
    lines = path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith(header))


def test_text_names_file_and_line_and_gives_the_terraform_fix() -> None:
    result = run("plan", str(PLAN), "--terraform-dir", str(CONFIG), env=WIDE)
    assert result.returncode == 1, result.stderr
    group = _block_line(CONFIG / "main.tf", 'resource "aws_autoscaling_group" "vision_train"')
    worker = _block_line(CONFIG / "modules" / "gpu" / "main.tf", 'resource "aws_instance" "worker"')
    out = result.stdout
    # A scaling group's nodes are its one Terraform address, named once with its block (issue 28, item 10).
    assert f"on aws_autoscaling_group.vision_train ({CONFIG}/main.tf:{group})" in out
    assert "vision_train#" not in out
    assert f"module.gpu.aws_instance.worker[1] ({CONFIG}/modules/gpu/main.tf:{worker})" in out
    assert f"fix (Terraform): {TERRAFORM_FIX}" in out
    assert RUNNING_ADVICE not in out


def test_text_without_terraform_dir_still_leads_with_terraform() -> None:
    out = run("plan", str(PLAN), env=WIDE).stdout
    assert f"fix (Terraform): {TERRAFORM_FIX}" in out
    assert "main.tf:" not in out  # no configuration read: no file to name


def test_markdown_fix_is_a_fenced_hcl_block_at_the_block_to_change() -> None:
    result = run("plan", str(PLAN), "--terraform-dir", str(CONFIG), "-f", "markdown")
    assert result.returncode == 1, result.stderr
    group = _block_line(CONFIG / "main.tf", 'resource "aws_autoscaling_group" "vision_train"')
    out = result.stdout
    assert (
        f"- **Resources:** `aws_autoscaling_group.vision_train` (`{CONFIG}/main.tf:{group}`)"
    ) in out
    blocks = re.findall(r"```hcl\n(.*?)```", out, flags=re.S)
    # The group's block (not its node #0) and where it is, then the rule's Terraform change.
    first = next(b for b in blocks if TERRAFORM_FIX in b.replace("\n", " "))
    assert first.startswith(f"# aws_autoscaling_group.vision_train ({CONFIG}/main.tf:{group})\n")
    assert RUNNING_ADVICE not in out and "**Fix:** " not in out
    assert "Console: " not in out and "CLI: " not in out


def test_live_findings_keep_every_step() -> None:
    """A running cluster's fix is unchanged: the summary first, then console, CLI and Terraform."""
    out = run("demo", "-f", "markdown").stdout
    assert f"**Fix:** {RUNNING_ADVICE}" in out and "CLI: `aws ec2" in out
    assert "```hcl" not in out


def test_terraform_dir_without_the_plan_extra_says_how_to_install_it(tmp_path: Path) -> None:
    """python-hcl2 (and lark, its parser) not installed: one line, exit 2, no traceback."""
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n\n\n"
        "class _NoPlanExtra:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.partition('.')[0] in ('hcl2', 'lark'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "        return None\n\n\n"
        "sys.meta_path.insert(0, _NoPlanExtra())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}  # sitecustomize runs at start-up: a fresh process
    line = one_clean_line(run_installed("plan", str(PLAN), "--terraform-dir", str(CONFIG), env=env))
    assert line == (
        "fabriccheck: error: --terraform-dir needs the plan extra (python-hcl2): pip install 'fabriccheck[plan]'"
    )
    # Without --terraform-dir the plan extra is not needed.
    assert run_installed("plan", str(PLAN), env=env).returncode == 1
