"""The command as a gate: options that conflict, a missing extra, files written whole or not at all, Ctrl-C,
plain help, and saved inventories that cannot vouch for what they hold. Each runs the installed console script
from outside the source tree, as a user (or a CI job) runs it."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run, run_installed
from loopback import silent_endpoint

from fabriccheck.sources.retries import RETRIES

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo" / "aws"
AWS121 = ROOT / "rules" / "aws" / "AWS121-spread-placement-group.yaml"


def report(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def leftovers(folder: Path) -> list[str]:
    """Temporary files a write left behind (they start with a dot and end in .tmp)."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The demo's inventory, as --save-inventory writes it."""
    path = tmp_path_factory.mktemp("saved") / "inventory.json"
    result = run("demo", "-f", "json", "--save-inventory", str(path))
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(path.read_text())
    return data


# ------------------------------------------------------------------------------------------ 14: --cluster-tag


def test_a_cluster_tag_no_node_carries_is_a_warning_and_the_usual_grouping() -> None:
    usual = run("demo", "-f", "json")
    result = run("demo", "-f", "json", "--cluster-tag", "no-such-tag")
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        "fabriccheck: warning: no node carries the tag no-such-tag; grouping by the usual signals\n"
    )
    assert [c["id"] for c in report(result)["clusters"]] == [c["id"] for c in report(usual)["clusters"]]
    # A tag some node carries groups by it, without a warning (tag keys are case-sensitive, as on AWS).
    carried = run("demo", "-f", "json", "--cluster-tag", "Name")
    assert carried.returncode == 0 and carried.stderr == ""
    assert any("tag/Name=" in c["id"] for c in report(carried)["clusters"])
    assert "no node carries the tag name;" in run("demo", "-f", "json", "--cluster-tag", "name").stderr


def test_an_empty_cluster_tag_is_bad_usage_not_ignored() -> None:
    assert "--cluster-tag" in one_clean_line(run("demo", "--cluster-tag", " "))


# ---------------------------------------------------------------------------------------- 15: conflicts


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--profile", "audit"], "--profile"),
        (["--endpoint-url", "http://127.0.0.1:9"], "--endpoint-url"),
        (["--all-regions"], "--all-regions"),
        (["--topology"], "--topology"),
    ],
)
def test_from_dump_with_a_live_only_option_is_an_error_naming_both(extra: list[str], named: str) -> None:
    line = one_clean_line(run("aws", "--from-dump", str(DEMO), *extra))
    assert "--from-dump" in line and named in line and "cannot be used together" in line


def test_from_dump_honours_one_region_and_rejects_several() -> None:
    hinted = run("aws", "--from-dump", str(DEMO), "--region", "us-east-1", "-f", "json", "--fail-on", "never")
    assert hinted.returncode == 0, hinted.stderr
    line = one_clean_line(run("aws", "--from-dump", str(DEMO), "-r", "us-east-1", "-r", "eu-west-1"))
    assert "--from-dump takes one --region" in line


def test_check_refuses_to_write_its_report_over_the_inventory_it_reads(tmp_path: Path, saved: dict[str, Any]) -> None:
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(saved))
    before = path.read_bytes()
    for output in (str(path), "./inventory.json"):  # the same file, however it is spelt
        line = one_clean_line(run("check", "inventory.json", "--output", output, cwd=tmp_path))
        assert "--output" in line and "is the inventory being checked" in line
    (tmp_path / "link.json").symlink_to(path)
    assert "is the inventory being checked" in one_clean_line(
        run("check", str(path), "-o", str(tmp_path / "link.json"))
    )
    assert path.read_bytes() == before
    assert run("check", str(path), "-o", str(tmp_path / "report.txt"), "--fail-on", "never").returncode == 0


def test_output_and_save_inventory_on_one_file_is_an_error(tmp_path: Path) -> None:
    target = tmp_path / "both.json"
    line = one_clean_line(run("demo", "-o", str(target), "--save-inventory", str(target)))
    assert "--output" in line and "--save-inventory" in line and "same file" in line
    assert not target.exists()


def test_print_iam_policy_writes_to_output(tmp_path: Path) -> None:
    target = tmp_path / "policy.json"
    result = run("aws", "--print-iam-policy", "--output", str(target))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert json.loads(target.read_text()) == json.loads(run("aws", "--print-iam-policy").stdout)
    assert leftovers(tmp_path) == []
    # Anything else beside it would be ignored, so it is an error instead.
    line = one_clean_line(run("aws", "--print-iam-policy", "--region", "eu-west-1"))
    assert "--print-iam-policy and --region cannot be used together" in line


# ------------------------------------------------------------------------------------- 16: the AWS extra

AWS_EXTRA = "fabriccheck: error: fabriccheck aws needs the AWS extra: pip install 'fabriccheck[aws]'"


@pytest.mark.parametrize("absent", [["botocore"], ["boto3", "botocore"]])
def test_a_live_run_without_the_aws_extra_says_how_to_install_it(absent: list[str]) -> None:
    # A None entry in sys.modules makes `import botocore` raise ModuleNotFoundError, as when it is not installed.
    code = (
        "import sys\n"
        f"for name in {absent!r}: sys.modules[name] = None\n"
        "from fabriccheck.cli import main\n"
        "sys.exit(main(['aws', '--region', 'us-east-1', '--endpoint-url', 'http://127.0.0.1:9']))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd="/")
    assert one_clean_line(result) == AWS_EXTRA


def test_what_calls_no_cloud_needs_no_sdk(tmp_path: Path) -> None:
    """A dump, the demo, a saved inventory and the IAM policy are read or printed without boto3."""
    saved = tmp_path / "inventory.json"
    code = (
        "import sys\n"
        "sys.modules['boto3'] = sys.modules['botocore'] = None\n"
        "from fabriccheck.cli import main\n"
        f"codes = [main(['aws', '--from-dump', {str(DEMO)!r}, '-f', 'json', '--fail-on', 'never']),\n"
        f"         main(['demo', '-f', 'json', '--save-inventory', {str(saved)!r}]),\n"
        f"         main(['check', {str(saved)!r}, '-f', 'json', '--fail-on', 'never']),\n"
        "         main(['aws', '--print-iam-policy'])]\n"
        "sys.stderr.write(repr(codes))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd="/")
    assert result.stderr == "[0, 0, 0, 0]", result.stderr


# ------------------------------------------------------------------------------------ 21: atomic writes


def test_a_folder_that_cannot_take_the_file_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    for option in ("--output", "--save-inventory"):
        for target in (a_file / "report.json", tmp_path / "missing" / "report.json"):
            line = one_clean_line(run("demo", "-f", "json", option, str(target)))
            assert line.startswith(f"fabriccheck: error: {option} {target}: cannot write (")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-folder"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder anyway")
def test_a_read_only_folder_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        line = one_clean_line(run("demo", "-o", str(folder / "report.txt")))
        assert "cannot write (Permission denied)" in line
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o755)


def _limit_file_size() -> None:
    # Files may not grow past 4 KiB: a full disk, as the writing process sees it (Python ignores SIGXFSZ, so a
    # write past the limit fails with EFBIG rather than killing the process).
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def test_a_write_that_fails_midway_leaves_the_old_file_whole(tmp_path: Path) -> None:
    old_report, old_inventory = tmp_path / "report.json", tmp_path / "inventory.json"
    old_report.write_text("the previous report\n")
    old_inventory.write_text("the previous inventory\n")
    for args in (["-o", str(old_report)], ["--save-inventory", str(old_inventory)]):
        result = subprocess.run(
            ["fabriccheck", "demo", "-f", "json", *args],
            capture_output=True,
            text=True,
            timeout=120,
            cwd="/",
            preexec_fn=_limit_file_size,
        )
        assert "cannot write (File too large)" in one_clean_line(result)
    assert old_report.read_text() == "the previous report\n"
    assert old_inventory.read_text() == "the previous inventory\n"
    assert leftovers(tmp_path) == []
    # Without the limit the same command replaces both files whole.
    assert run("demo", "-f", "json", "-o", str(old_report), "--save-inventory", str(old_inventory)).returncode == 0
    assert json.loads(old_report.read_text())["complete"] is True
    assert json.loads(old_inventory.read_text())["schema_version"] == 3
    assert leftovers(tmp_path) == []


def test_devices_are_written_directly() -> None:
    """/dev/stdout (a pipe here) and /dev/full cannot be replaced by a rename: they are written as they are."""
    piped = run("demo", "-f", "json", "-o", "/dev/stdout")
    assert piped.returncode == 0, piped.stderr
    assert report(piped)["complete"] is True
    if not Path("/dev/full").exists():
        return
    assert "--output /dev/full: cannot write (No space left on device)" in one_clean_line(
        run("demo", "-o", "/dev/full")
    )


# --------------------------------------------------------------------------------------------- 22: Ctrl-C


# More regions than the collector's 8 workers: some calls run, the rest wait in the pool.
REGIONS = ["us-east-1", "us-east-2", "us-west-1", "us-west-2", "eu-west-1", "eu-west-2", "eu-central-1"]
REGIONS += ["ap-south-1", "ap-northeast-1", "sa-east-1"]


@pytest.mark.parametrize("regions", [REGIONS[:1], REGIONS], ids=["one-region", "ten-regions"])
def test_ctrl_c_during_collection_stops_at_once_and_writes_nothing(tmp_path: Path, regions: list[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with silent_endpoint() as (url, connected):
        args = ["fabriccheck", "aws", "--endpoint-url", url, "-f", "json", "-o", str(out / "report.json")]
        args += ["--save-inventory", str(out / "inventory.json")]
        for region in regions:
            args += ["--region", region]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/")
        try:
            assert connected.wait(30), "the collector never called the endpoint"
            time.sleep(1.0)
            assert proc.poll() is None, proc.communicate()
            proc.send_signal(signal.SIGINT)
            # The endpoint never answers: a process that waited for its calls would wait out their read timeout;
            # ending inside half of it is stopping at once, however busy the machine.
            stdout, stderr = proc.communicate(timeout=RETRIES.read_timeout / 2)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 130, stderr
    assert stderr == "fabriccheck: interrupted\n"
    assert stdout == ""
    assert list(out.iterdir()) == []


# ---------------------------------------------------------------------------------------- 23: version, help


def test_version() -> None:
    """The installed package's console script and the version its metadata gives."""
    result = run_installed("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"fabriccheck {importlib.metadata.version('fabriccheck')}\n"


@pytest.mark.parametrize("command", [[], ["aws"], ["demo"], ["check"], ["rules"]])
def test_help_shows_plain_metavars(command: list[str]) -> None:
    result = run(*command, "--help")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert not re.search(r"<[a-z][^>]*>", text), text  # no <list[str]>, <path>, <float range>
    assert "{" not in text and "[[" not in text, text
    assert "--no-topology" not in text


def test_help_names_what_each_option_takes() -> None:
    aws, check, rules = run("aws", "--help").stdout, run("check", "--help").stdout, run("rules", "--help").stdout
    for shown in (
        "-r, --region REGION",
        "--profile PROFILE",
        "--endpoint-url URL",
        "--from-dump DIR",
        "--cluster-tag KEY",
        "-f, --format FORMAT",
        "-o, --output FILE",
        "--fail-on SEVERITY",
        "--workload NAME",
        "--price-per-gpu-hour N",
        "--rules-dir DIR",
        "--select RULE",
        "--ignore RULE",
        "--save-inventory FILE",
    ):
        assert shown in aws, shown
    assert "Usage: fabriccheck check [OPTIONS] FILE\n" in check and "\n  FILE  Inventory saved" in check
    assert "Usage: fabriccheck rules [OPTIONS] [ID]\n" in rules and "\n  ID  Explain one rule." in rules


def test_demo_takes_rules_dir_as_readme_says(tmp_path: Path) -> None:
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "X921-spread.yaml").write_text(AWS121.read_text().replace("id: AWS121", "id: X921"))
    result = run("demo", "-f", "json", "--rules-dir", str(folder))
    assert result.returncode == 0, result.stderr
    found = report(result)
    assert "X921" in found["rules"]
    flagged = {tuple(f["resources"]) for f in found["findings"] if f["rule"] == "X921"}
    assert flagged and flagged == {tuple(f["resources"]) for f in found["findings"] if f["rule"] == "AWS121"}
    assert "--rules-dir /nonexistent: not a folder" in one_clean_line(run("demo", "--rules-dir", "/nonexistent"))


# Lines that show other tools' commands: the AWS, Azure and Google Cloud CLIs', kubectl, helm, docker, curl,
# Terraform, pip, mkdocs, mypy, and the options of the project's own scripts (benchmarks, tools).
OTHER_TOOLS = (
    *("aws ec2", "az ", "gcloud", "kubectl", "helm ", "docker ", "curl ", "terraform ", "tofu "),
    *("pip ", "mkdocs", "mypy", "benchmarks/", "tools/", "jq "),
    *("sbatch", "srun ", "scontrol ", "squeue ", "sinfo "),  # Slurm's own commands (docs/slurm.md)
)
# Options documented ahead of the branches that add them (repeatable outputs and the Pushgateway; the k8s
# command). Each is exempt only while no --help shows it: once merged it is checked like any other, and this set
# should then be emptied.
DOCUMENTED_AHEAD: set[str] = set()


def _commands() -> list[list[str]]:
    """Every command `fabriccheck --help` lists, and the top level itself."""
    listing = run("--help").stdout.split("Commands:", 1)[1]
    names = [line.split()[0] for line in listing.splitlines() if line.startswith("  ") and line.split()]
    assert {"aws", "azure", "gcp", "plan", "merge", "diff", "estimate"} <= set(names)
    return [[], *([name] for name in names)]


def test_every_option_readme_and_docs_name_exists() -> None:
    # The rule pages generated from rules/ are left out: their fixes are the clouds' commands (aws autoscaling
    # --vpc-zone-identifier, gcloud --mtu) in the rule files' prose.
    texts = [p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]]
    pages = [text for text in texts if not text.startswith("<!-- Generated by tools/build_rule_docs.py")]
    assert len(pages) > 10  # the docs pages are there: the check reads what users read
    lines = [line for page in pages for line in page.splitlines()]
    ours = [line for line in lines if not any(tool in line for tool in OTHER_TOOLS)]
    named = {o for line in ours for o in re.findall(r"(?<![\w-])(--[a-z][a-z-]*[a-z])", line)}
    # The AWS CLI's (where the docs explain truncated dumps) and Open MPI's (where they explain NCCL logs).
    named -= {"--max-items", "--no-paginate", "--tag-output"}
    shown = "".join(run(*c, "--help").stdout for c in _commands())
    missing = {o for o in named if o not in shown}
    assert named and missing - DOCUMENTED_AHEAD == set()


# ------------------------------------------------------------------------------------------ 25: edges


@pytest.mark.parametrize("price", ["inf", "nan", "-inf", "1e400"])
def test_price_must_be_a_finite_number(price: str) -> None:
    assert "--price-per-gpu-hour" in one_clean_line(run("demo", "--price-per-gpu-hour", price))


@pytest.mark.parametrize("change", ["drop", "empty"])
def test_an_inventory_that_does_not_say_what_was_collected_cannot_pass(
    tmp_path: Path, saved: dict[str, Any], change: str
) -> None:
    data = dict(saved)
    if change == "drop":
        del data["collected"]
    else:
        data["collected"] = []
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(data))
    result = run("check", str(path), "-f", "json", "--fail-on", "never")
    assert result.returncode == 2, result.stderr
    found = report(result)
    assert found["complete"] is False
    error = next(e for e in found["errors"] if e["code"] == "NotCollected")
    assert error["call"] == "snapshot" and str(path) in error["message"]
    assert "security_groups" in error["message"] and "instances" in error["message"]
    text = run("check", str(path), "--fail-on", "never")
    assert text.returncode == 2 and "INCOMPLETE" in text.stdout


def test_an_empty_inventory_that_says_what_was_collected_passes(tmp_path: Path, saved: dict[str, Any]) -> None:
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({**saved, "nodes": [], "specs": []}))
    result = run("check", str(path), "-f", "json")
    assert result.returncode == 0, result.stderr
    assert report(result)["complete"] is True


@pytest.mark.parametrize(
    ("where", "field", "value"),
    [
        ("capabilities", "accelerators", 1e9),
        ("capabilities", "fabric_interfaces", -1),
        ("capabilities", "fabric_gbps", 1e12),
        ("capabilities", "network_cards", 100000),
        ("interfaces", "network_card_index", 1_000_000),
        ("interfaces", "device_index", -2),
    ],
)
def test_counts_out_of_any_real_range_are_one_line_naming_the_field(
    tmp_path: Path, saved: dict[str, Any], where: str, field: str, value: float
) -> None:
    data = json.loads(json.dumps(saved))
    if where == "capabilities":
        name = next(iter(data["capabilities"]))
        data["capabilities"][name][field] = value
        expected = f"field capabilities.{name}.{field}:"
    else:
        data["nodes"][0]["interfaces"][0][field] = value
        expected = f"field nodes.0.interfaces.0.{field}:"
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(data))
    line = one_clean_line(run("check", str(path)))
    assert str(path) in line and expected in line


def test_a_byte_order_mark_at_the_start_of_dump_files_is_accepted(tmp_path: Path, saved: dict[str, Any]) -> None:
    plain = run("aws", "--from-dump", str(DEMO), "-f", "json", "--fail-on", "never")
    for encoding in ("utf-8-sig", "utf-16"):  # both write the mark first; UTF-16 is what PowerShell 5's > writes
        folder = tmp_path / encoding
        folder.mkdir()
        for path in DEMO.glob("*.json"):
            (folder / path.name).write_bytes(path.read_text().encode(encoding))
        result = run("aws", "--from-dump", str(folder), "-f", "json", "--fail-on", "never")
        assert result.returncode == 0, (encoding, result.stderr)
        assert report(result)["findings"] == report(plain)["findings"], encoding
    snapshot = tmp_path / "inventory.json"
    snapshot.write_bytes(json.dumps(saved).encode("utf-8-sig"))
    assert run("check", str(snapshot), "-f", "json", "--fail-on", "never").returncode == 0
