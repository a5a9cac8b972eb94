"""First-run polish (issue 30, item 8): what a new user's first mistakes get back.

typer (0.2x) converts option values through pydantic and words a failure in pydantic's words ("Value error, 'JSON'
is not one of ...", "Input should be a valid number, unable to parse string as a number": pydantic-core's
error messages, docs.pydantic.dev "Validation Errors"); fabriccheck's line says it in its own."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from cli_run import one_clean_line, run

DEMO_AWS = Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "aws"
LIBRARY_WORDS = ("Value error", "Input should", "validation error", "pydantic", "Assertion failed")


@pytest.mark.parametrize("fmt", ["JSON", "Json", "json"])
def test_format_is_case_insensitive(fmt: str) -> None:
    result = run("demo", "-f", fmt, "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["schema_version"] == 1
    listed = run("rules", "--format", fmt)
    assert listed.returncode == 0 and json.loads(listed.stdout)[0]["id"], listed.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["demo", "-f", "yaml"], "Invalid value for '--format' / '-f': 'yaml' is not one of 'text', 'json'"),
        (["demo", "--fail-on", "sometimes"], "Invalid value for '--fail-on': 'sometimes' is not one of 'error'"),
        (["demo", "--price-per-gpu-hour", "abc"], "Invalid value for '--price-per-gpu-hour': 'abc': not a number"),
        (["estimate", "--nodes", "abc"], "Invalid value for '--nodes': 'abc': not a whole number"),
        (["estimate", "--nodes", "2.5"], "Invalid value for '--nodes': '2.5': not a whole number"),
        (["aws", "--concurrency", "many"], "Invalid value for '--concurrency': 'many': not a whole number"),
    ],
)
def test_a_value_typer_cannot_convert_is_said_in_our_words(args: list[str], says: str) -> None:
    line = one_clean_line(run(*args))
    assert says in line, line
    assert not any(word in line for word in LIBRARY_WORDS), line


def test_the_config_file_is_found_from_a_sub_folder_up_to_the_repository_root(tmp_path: Path) -> None:
    """As ruff finds its own (astral-sh/ruff docs/configuration.md, "Config file discovery"): the closest file up
    from the working folder, a pyproject.toml without the tool's table skipped, paths relative to the file; not
    above the repository's root."""
    outer = tmp_path / "outer"
    repo = outer / "repo"
    deep = repo / "infra" / "modules"
    deep.mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / "fabriccheck.toml").write_text('fail-on = "never"\nwaivers = "waivers.yaml"\n')
    (repo / "waivers.yaml").write_text("waivers: []\n")
    (repo / "infra" / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")  # not ours: skipped
    shown = json.loads(run("config", "-f", "json", cwd=deep).stdout)
    assert shown["file"] == str(repo / "fabriccheck.toml")
    assert (shown["settings"]["fail-on"]["value"], shown["settings"]["waivers"]["value"]) == (
        "never",
        str(repo / "waivers.yaml"),
    )
    assert run("aws", "--from-dump", str(DEMO_AWS), cwd=deep).returncode == 0  # the gate the file sets
    # The closest wins: a sub-folder's own file.
    (repo / "infra" / "pyproject.toml").write_text('[tool.fabriccheck]\nfail-on = "warning"\n')
    assert json.loads(run("config", "-f", "json", cwd=deep).stdout)["file"] == str(repo / "infra" / "pyproject.toml")
    # Above the repository's root is another project's: not read.
    (repo / "fabriccheck.toml").unlink()
    (repo / "infra" / "pyproject.toml").unlink()
    (outer / "fabriccheck.toml").write_text('fail-on = "never"\n')
    assert json.loads(run("config", "-f", "json", cwd=deep).stdout)["file"] is None
    assert run("aws", "--from-dump", str(DEMO_AWS), cwd=deep).returncode == 1  # the default: error findings fail


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["demo", "--price-per-gpu-hour", "1e300"], "'--price-per-gpu-hour': 1e+300: not a price (dollars a GPU-hour"),
        (["demo", "--price-per-gpu-hour", "1000.01"], "1000.01: not a price (dollars a GPU-hour, 0 to 1,000)"),
        (["estimate", "--nodes", "100000000000", "--instance-type", "p5.48xlarge"], "more than 100,000 nodes"),
        (["nccl-tests", "-", "--nodes", "100000000000"], "Invalid value for '--nodes': '100000000000': more than"),
    ],
)
def test_an_absurd_number_is_refused_in_one_line(args: list[str], says: str) -> None:
    """bounds.py: far above anything real (an H100 rents for about $5 to $12 a GPU-hour; the largest clusters hold
    about 100,000 GPUs), so a typo is told, not priced: 1e300 dollars a GPU-hour made a report of 6e303 dollars."""
    line = one_clean_line(run(*args))
    assert says in line and not any(word in line for word in LIBRARY_WORDS), line


def test_an_absurd_price_in_a_config_file_or_variable_is_refused_too(tmp_path: Path) -> None:
    (tmp_path / "fabriccheck.toml").write_text("price-per-gpu-hour = 1e300\n")
    line = one_clean_line(run("demo", cwd=tmp_path))
    where = f"config file {tmp_path / 'fabriccheck.toml'}: price-per-gpu-hour"
    assert line.endswith(f"{where}: 1e+300: not a price (dollars a GPU-hour, 0 to 1,000)"), line
    (tmp_path / "fabriccheck.toml").unlink()
    env = {**os.environ, "FABRICCHECK_PRICE_PER_GPU_HOUR": "5000"}
    line = one_clean_line(run("demo", cwd=tmp_path, env=env))
    assert "environment variable FABRICCHECK_PRICE_PER_GPU_HOUR: price-per-gpu-hour: 5000: not a price" in line
    # The real ones still price: the top of the range, and a real H100 price.
    for price in ("1000", "12.29"):
        priced = run("demo", "--price-per-gpu-hour", price, "-f", "json", "--fail-on", "never", cwd=tmp_path)
        assert json.loads(priced.stdout)["summary"]["lost_dollars_per_day"]["high"] > 0, priced.stderr


def test_the_largest_real_cluster_is_still_estimated() -> None:
    result = run("estimate", "--nodes", "100000", "--instance-type", "p5.48xlarge", "-f", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["nodes"] == 100_000


WEB = "aws:111122223333:us-east-1:auto-scaling-group/web"  # three c5.large behind a web tier (fixtures/demo/aws)


def test_the_nodes_that_train_alone_or_have_no_fabric_are_named_in_json_and_with_verbose(tmp_path: Path) -> None:
    """The summary's "N nodes train alone or have no fabric to use" names its nodes: in the JSON report
    (`nodes_not_reported`, one entry per node counted, with why) and, with -v, in the text. A group made not
    training by --role is counted there too, and says so."""
    data = json.loads(run("demo", "-f", "json").stdout)
    named = {n["id"]: (n["reason"], n["instance_type"], n["cluster"]) for n in data["nodes_not_reported"]}
    assert len(named) == len(data["nodes_not_reported"]) == data["summary"]["nodes_not_in_reported_clusters"] == 10
    assert named["i-00000000000000222"] == ("alone", "c5.large", "aws:111122223333:us-east-1:i-00000000000000222")
    assert named["i-000000000000003e3"] == ("no-fabric", "c5.large", WEB)
    assert named["web-0"][:2] == ("alone", "e2-standard-4")
    reported = {node for c in data["clusters"] for node in c["nodes"]}
    assert not reported & set(named)  # none of them is in a reported cluster
    env = {**os.environ, "COLUMNS": "200"}
    verbose = run("demo", "-v", "--role", f"{WEB}=ignore", env=env).stdout
    block = verbose.split("Nodes in no reported cluster\n", 1)[1].split("\n\n", 1)[0]
    assert "  Train alone (5): i-00000000000000222 (c5.large), i-000000000000003d3 (p5.48xlarge)," in block
    assert "  No fabric to use (2): i-000000000000003e9 (c5n.18xlarge), i-000000000000003ee (c5n.18xlarge)" in block
    assert "  Not training (skipped) (3): i-000000000000003d9 (c5.large)" in block
    assert "Nodes in no reported cluster" not in run("demo", env=env).stdout  # without -v: the count alone
    # merge keeps them: the parts' nodes, each once.
    parts = []
    for cloud in ("aws", "gcp"):
        part = tmp_path / f"{cloud}.json"
        dump = DEMO_AWS.parent / cloud
        assert run(cloud, "--from-dump", str(dump), "-f", "json", "-o", str(part)).returncode in (0, 1)
        parts.append(str(part))
    merged = json.loads(run("merge", *parts, "-f", "json").stdout)
    # The demo's are AWS's, GCP's and its Slurm cluster's one-node partition (merged here without Slurm).
    assert sorted(n["id"] for n in merged["nodes_not_reported"]) == sorted(k for k in named if k != "dev-st-p5-1")
    assert len(merged["nodes_not_reported"]) == merged["summary"]["nodes_not_in_reported_clusters"]


NCCL = Path(__file__).resolve().parent / "fixtures" / "nccl"


def test_quiet_prints_the_verdict_line_and_errors_only(tmp_path: Path) -> None:
    """--quiet: a scan's text is its verdict line (the exit code still says pass or fail), a warning is not
    printed, a file asked for is written whole, JSON on stdout is left as it is, and an error is still its line."""
    quiet = run("demo", "-q", "--fail-on", "error", "--cluster-tag", "no-such-tag")
    assert quiet.returncode == 1 and quiet.stderr == ""
    assert quiet.stdout == (
        "fabriccheck: 35 errors, 14 warnings, 1 info in 38 training clusters of 103 nodes; "
        "4,971–5,159 GPU-hours a day lost\n"
    )
    loud = run("demo", "--cluster-tag", "no-such-tag")
    assert "warning: no node carries the tag no-such-tag" in loud.stderr and "Clusters that cost most" in loud.stdout
    saved = tmp_path / "report.txt"
    assert run("demo", "-q", "-o", str(saved), "-o", "-").stdout.count("\n") == 1
    assert "Clusters that cost most" in saved.read_text()
    assert json.loads(run("demo", "-q", "-f", "json").stdout)["summary"]["clusters"] == 38
    assert one_clean_line(run("demo", "-q", "--format", "yaml")).startswith("fabriccheck: error: Invalid value")
    evidence = run("nccl-log", str(NCCL / "log_mixed_networks.txt"), "--quiet")
    said = "fabriccheck nccl-log: 2 errors, 0 warnings, 0 info in 1 job on 2 nodes\n"
    assert (evidence.returncode, evidence.stdout) == (1, said)
    cut = tmp_path / "cut.txt"
    cut.write_bytes((NCCL / "log_mixed_networks.txt").read_bytes()[:95])
    partial = run("nccl-log", str(cut), "-q")
    assert partial.returncode == 2 and partial.stdout.endswith("; INCOMPLETE: this result cannot pass a gate\n")
    # A collection that missed something: INCOMPLETE on the verdict line, and what was not collected under it.
    dump = tmp_path / "dump"
    shutil.copytree(DEMO_AWS, dump)
    (dump / "describe-security-groups.json").unlink()
    missed = run("aws", "--from-dump", str(dump), "-q")
    lines = missed.stdout.splitlines()
    assert (missed.returncode, len(lines)) == (2, 2)
    assert lines[0].endswith("; INCOMPLETE: this result cannot pass a gate")
    assert lines[1].startswith("error: describe-security-groups.json in aws 111122223333 us-east-1: MissingDump: ")
    aws = tmp_path / "aws.json"
    assert run("aws", "--from-dump", str(DEMO_AWS), "-f", "json", "-o", str(aws)).returncode == 1
    changed = run("diff", str(aws), str(aws), "-q")
    assert (changed.returncode, changed.stdout) == (0, "fabriccheck diff: 0 new, 0 fixed, 19 unchanged findings.\n")


def _on_a_terminal(*args: str, env: dict[str, str]) -> bytes:
    """`python -m fabriccheck ARGS` with stdout on a pseudo-terminal (colour is only for a terminal), its bytes."""
    import pty
    import subprocess
    import sys

    leader, follower = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "fabriccheck", *args], stdout=follower, stderr=subprocess.DEVNULL, env=env
    ) as child:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the child is gone (Linux reads EIO)
                break
            if not chunk:
                break
            chunks.append(chunk)
        child.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks)


def test_no_color_and_the_no_color_variable_take_the_colour_away() -> None:
    """https://no-color.org: NO_COLOR "when present and not an empty string (regardless of its value), prevents
    the addition of ANSI color"; --no-color does the same for one run."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")} | {"COLUMNS": "100"}
    args = ("aws", "--from-dump", str(DEMO_AWS))
    assert b"\x1b[" in _on_a_terminal(*args, env=env)
    assert b"\x1b[" in _on_a_terminal(*args, env=env | {"NO_COLOR": ""})  # empty: not set, says the convention
    assert b"\x1b[" not in _on_a_terminal(*args, env=env | {"NO_COLOR": "1"})
    plain = _on_a_terminal(*args, "--no-color", env=env)
    assert b"\x1b[" not in plain and b"Clusters that cost most" in plain
