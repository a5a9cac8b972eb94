"""Damaged and odd input gets one clear line naming the file, exit 2, never a hang or an internal error (issue 18,
items 13, 14 and 16): a FIFO or a device in a dump folder, JSON nested a thousand deep, dates that do not exist,
files that are not UTF-8, a rule example that is a list, a closed or full stdout, a very long string.

Dumps are copies of the demo's (fixtures/demo/<cloud>, made by tools/build_demo*.py) with one file replaced."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo"
AZURE_SUB = "11111111-2222-3333-4444-555555555555"
# One list file of each cloud's dump, as its CLI names it.
LIST_FILES = {
    "aws": Path("describe-instances.json"),
    "gcp": Path("instances-list.json"),
    "azure": Path(AZURE_SUB) / "vm-list.json",
}


def _dump(tmp_path: Path, cloud: str) -> Path:
    folder = tmp_path / cloud
    shutil.copytree(DEMO / cloud, folder)
    return folder


@pytest.mark.parametrize("cloud", sorted(LIST_FILES))
def test_a_fifo_in_a_dump_folder_is_refused_not_read_forever(tmp_path: Path, cloud: str) -> None:
    folder = _dump(tmp_path, cloud)
    fifo = folder / LIST_FILES[cloud]
    fifo.unlink()
    os.mkfifo(fifo)
    line = one_clean_line(run(cloud, "--from-dump", str(folder)))  # cli_run's timeout: a hang fails the test
    assert line == f"fabriccheck: error: {fifo}: is a named pipe (FIFO), not a file: " + (
        "a dump folder holds the cloud CLI's JSON files"
    )


@pytest.mark.parametrize("cloud", sorted(LIST_FILES))
def test_a_device_in_a_dump_folder_is_refused(tmp_path: Path, cloud: str) -> None:
    folder = _dump(tmp_path, cloud)
    device = folder / LIST_FILES[cloud]
    device.unlink()
    device.symlink_to("/dev/zero")  # never ends
    line = one_clean_line(run(cloud, "--from-dump", str(folder)))
    assert f"{device}: is a character device, not a file" in line


def test_a_pipe_named_on_the_command_line_is_still_read(tmp_path: Path) -> None:
    """Only a dump folder's files must be files: `check <(cat inventory.json)` reads the pipe."""
    inventory = tmp_path / "inventory.json"
    run("aws", "--from-dump", str(DEMO / "aws"), "--save-inventory", str(inventory))
    piped = subprocess.run(
        ["bash", "-c", f"fabriccheck check <(cat {inventory}) -f json --fail-on never"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert piped.returncode == 0, piped.stderr


# ---------------------------------------------------------------------------------------------- item 14

DEEP = "[" * 1_000 + "]" * 1_000  # valid JSON, a thousand lists deep
AWS121 = ROOT / "rules" / "aws" / "AWS121-spread-placement-group.yaml"


def _read_or_named(result: subprocess.CompletedProcess[str], path: Path, undamaged: dict[str, Any]) -> None:
    """The damaged dump was read with nothing lost (the undamaged report's findings and nodes), or refused in one
    line naming the file `path` too deep to read."""
    if result.returncode == 2:
        assert one_clean_line(result) == (
            f"fabriccheck: error: {path}: nested too deeply to read (more than about 1,000 levels of lists or objects)"
        )
    else:
        report = json.loads(result.stdout)
        assert [f["fingerprint"] for f in report["findings"]] == [f["fingerprint"] for f in undamaged["findings"]]
        assert report["summary"]["nodes"] == undamaged["summary"]["nodes"]


@pytest.mark.parametrize("layout", ["as the CLI writes it", "on one line"])
@pytest.mark.parametrize("cloud", sorted(LIST_FILES))
def test_json_nested_a_thousand_deep_in_a_dump_is_read_or_one_line_naming_the_file(
    tmp_path: Path, cloud: str, layout: str
) -> None:
    """A field no reader knows, nested a thousand deep in the first item: read past (orjson, as the CLI lays the
    file out, goes 1,024 deep), or refused with that reason (the standard library's scanner stops near Python's
    recursion limit); never an internal error, and never a report that lost anything."""
    folder = _dump(tmp_path, cloud)
    path = folder / LIST_FILES[cloud]
    undamaged = json.loads(run(cloud, "--from-dump", str(folder), "-f", "json").stdout)
    document = json.loads(path.read_text())
    first = (document if isinstance(document, list) else document["Reservations"])[0]
    first["Deep"] = "DEEP"
    text = json.dumps(document, indent=2 if layout == "as the CLI writes it" else None)
    path.write_text(text.replace('"DEEP"', DEEP))
    _read_or_named(run(cloud, "--from-dump", str(folder), "-f", "json"), path, undamaged)


EVERY_DUMP_FILE = [(c, p.relative_to(DEMO / c)) for c in sorted(LIST_FILES) for p in sorted((DEMO / c).rglob("*.json"))]


@pytest.mark.parametrize("indent", [2, None], ids=["as the CLI writes it", "on one line"])
@pytest.mark.parametrize(("cloud", "name"), EVERY_DUMP_FILE, ids=[f"{c}-{n}" for c, n in EVERY_DUMP_FILE])
def test_every_dump_file_nested_too_deep_is_read_or_names_itself(
    tmp_path: Path, cloud: str, name: Path, indent: int | None
) -> None:
    """Each file of a dump is read under its own name: a value too deep to read is a line naming the file, never
    only its folder (a subscription's or project's folder holds several files: the line says which to fix)."""
    folder = _dump(tmp_path, cloud)
    undamaged = json.loads(run(cloud, "--from-dump", str(folder), "-f", "json").stdout)
    path = folder / name
    document = json.loads(path.read_text())
    items = document if isinstance(document, list) else next(v for v in document.values() if isinstance(v, list))
    assert items and isinstance(items[0], dict), f"{name}: the demo's file has no item to damage"
    items[0]["Deep"] = "DEEP"
    path.write_text(json.dumps(document, indent=indent).replace('"DEEP"', DEEP))
    _read_or_named(run(cloud, "--from-dump", str(folder), "-f", "json"), path, undamaged)


def test_json_nested_too_deep_in_a_plan_or_an_inventory_is_one_line(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    original = (DEMO / "plans" / "aws-wrong.json").read_text()
    # A field the plan reader checks and quotes in its error: the quote itself was a RecursionError.
    plan.write_text(original.replace('"format_version": "1.2"', f'"format_version": {DEEP}', 1))
    assert plan.read_text() != original
    assert f"{plan}: nested too deeply to read" in one_clean_line(run("plan", str(plan)))
    inventory = tmp_path / "inventory.json"
    run("aws", "--from-dump", str(DEMO / "aws"), "--save-inventory", str(inventory))
    saved = inventory.read_text()
    inventory.write_text(saved.replace('"notes": [', '"notes": [' + "[" * 1_100 + "]" * 1_100 + ",", 1))
    assert f"{inventory}: nested too deeply to read" in one_clean_line(run("check", str(inventory)))


def test_a_date_that_does_not_exist_is_one_line_naming_the_file(tmp_path: Path) -> None:
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text('waivers:\n  - rule: AWS110\n    resources: ["*"]\n    reason: "r"\n    expires: 2027-02-30\n')
    line = one_clean_line(run("aws", "--from-dump", str(DEMO / "aws"), "--waivers", str(waivers)))
    assert f"waivers file {waivers}: not valid YAML" in line
    assert "'2027-02-30' is not a date (day is out of range for month)" in line and "line 5" in line
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "X921.yaml").write_text(AWS121.read_text().replace("id: AWS121", "id: X921\nadded: 2027-02-30", 1))
    line = one_clean_line(run("rules", "--rules-dir", str(rules)))
    assert str(rules / "X921.yaml") in line and "'2027-02-30' is not a date" in line
    workload = tmp_path / "job.yaml"
    workload.write_text("name: 2027-02-30\nparameters: 7e9\nlayers: 32\nhidden: 4096\nseq_len: 4096\n")
    line = one_clean_line(
        run("estimate", "--nodes", "2", "--instance-type", "p5.48xlarge", "--workload-file", str(workload))
    )
    assert str(workload) in line and "'2027-02-30' is not a date" in line


def test_a_file_that_is_not_utf8_is_one_line_naming_it(tmp_path: Path) -> None:
    latin1 = "# Règle écrite en Latin-1\n".encode("latin-1")
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "X921.yaml").write_bytes(latin1 + AWS121.read_bytes().replace(b"id: AWS121", b"id: X921"))
    line = one_clean_line(run("aws", "--from-dump", str(DEMO / "aws"), "--rules-dir", str(rules)))
    assert line.startswith(f"fabriccheck: error: {rules / 'X921.yaml'}: not UTF-8 text (invalid continuation byte")
    workload = tmp_path / "job.yaml"
    workload.write_bytes(latin1 + b"parameters: 7e9\nlayers: 32\nhidden: 4096\nseq_len: 4096\n")
    line = one_clean_line(run("aws", "--from-dump", str(DEMO / "aws"), "--workload", str(workload)))
    assert f"--workload {workload}: not UTF-8 text" in line
    waivers = tmp_path / "waivers.yaml"
    waivers.write_bytes(latin1)
    assert f"waivers file {waivers}: not UTF-8 text" in one_clean_line(run("demo", "--waivers", str(waivers)))


def test_a_rule_example_node_that_is_a_list_is_one_line_naming_the_example(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    text = AWS121.read_text().replace("id: AWS121", "id: X921")
    broken = text.replace("          - {<<: *node, id: i-2}", "          - [i-2, not, a, node]", 1)
    assert broken != text
    (rules / "X921.yaml").write_text(broken)
    line = one_clean_line(run("demo", "--rules-dir", str(rules)))
    assert line == (
        f"fabriccheck: error: {rules / 'X921.yaml'}: example 'cluster strategy': field inventory.nodes[1]: "
        "expected a mapping of fields"
    )


@pytest.mark.parametrize(
    ("redirect", "why"),
    [(">/dev/full", "cannot write to stdout (No space left on device)"), (">&-", "stdout is closed")],
)
def test_a_full_or_closed_stdout_is_one_line(redirect: str, why: str) -> None:
    for command in ("fabriccheck demo -f json", "fabriccheck rules", "fabriccheck --version"):
        result = subprocess.run(["bash", "-c", f"{command} {redirect}"], capture_output=True, text=True, timeout=120)
        assert result.returncode == 2, (command, result.stderr)
        assert result.stderr.count("\n") == 1 and why in result.stderr and "Traceback" not in result.stderr


def test_a_reader_that_goes_away_is_one_line() -> None:
    proc = subprocess.Popen(
        ["fabriccheck", "demo", "-f", "json", "--verbose"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before the report is written: Broken pipe
    _, err = proc.communicate(timeout=120)
    assert (
        proc.returncode == 2 and err == "fabriccheck: error: cannot write to stdout (Broken pipe): give --output FILE\n"
    )


def test_an_nccl_device_index_no_nccl_prints_is_one_line(tmp_path: Path) -> None:
    log = tmp_path / "nccl.log"
    source = ROOT / "tests" / "fixtures" / "nccl" / "log_ib_gdrdma_channels.txt"  # its origin: SOURCES.md there
    lines = source.read_text().splitlines(keepends=True)
    host, _, rest = lines[0].partition(" [0] ")
    assert rest, lines[0]
    log.write_text(f"{host} [18446744073709551616] {rest}" + "".join(lines[1:]))
    for fmt in ("text", "json"):
        line = one_clean_line(run("nccl-log", str(log), "-f", fmt))
        assert f"{log}: device 18446744073709551616 of " in line and "is not a number NCCL prints" in line


# ---------------------------------------------------------------------------------------------- item 16


@pytest.mark.parametrize("cloud", sorted(LIST_FILES))
def test_a_string_longer_than_16_mib_in_a_dump_is_read(tmp_path: Path, cloud: str) -> None:
    """Valid JSON with one 17 MiB string (a tag value, say): longer than the stream reader's window, which used to
    call it unterminated. It is read, and the report is the undamaged dump's."""
    folder = _dump(tmp_path, cloud)
    path = folder / LIST_FILES[cloud]
    undamaged = json.loads(run(cloud, "--from-dump", str(folder), "-f", "json").stdout)
    document = json.loads(path.read_text())
    (document if isinstance(document, list) else document["Reservations"])[0]["Long"] = "x" * (17 << 20)
    path.write_text(json.dumps(document, indent=2))
    result = run(cloud, "--from-dump", str(folder), "-f", "json")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert [f["fingerprint"] for f in report["findings"]] == [f["fingerprint"] for f in undamaged["findings"]]
    # Cut inside that string, the file is what it says: unterminated.
    path.write_text(path.read_text()[: 16 << 20])
    assert "Unterminated string" in one_clean_line(run(cloud, "--from-dump", str(folder)))


def test_a_saved_inventory_naming_a_provider_that_does_not_exist_is_one_line(tmp_path: Path) -> None:
    """Found by tests/test_fuzz.py (seed 13): a `collected` entry of 5,000 letters was taken for a provider, and
    its rules folder's name was too long for the file system (an internal error)."""
    inventory = tmp_path / "inventory.json"
    run("aws", "--from-dump", str(DEMO / "aws"), "--save-inventory", str(inventory))
    saved = json.loads(inventory.read_text())
    for bad in ("A" * 5_000, "nosuch:111122223333:us-east-1:subnets", "aws-subnets"):
        saved["collected"][2] = bad
        inventory.write_text(json.dumps(saved))
        line = one_clean_line(run("check", str(inventory)))
        assert f"{inventory}: field collected.2: " in line and "is not provider:account:region:fact" in line
