"""Several outputs in one run: `--output FILE` repeated, each file in the format its suffix names (`-o -` is
stdout), all from one scan, all checked before the scan and put in place together (fabriccheck.targets)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cli_run import one_clean_line, run
from loopback import closing_endpoint
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo"
SARIF_SCHEMA = json.loads((Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json").read_text())
NCCL_LOG = str(Path(__file__).parent / "fixtures" / "nccl" / "log_mixed_networks.txt")


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


def files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_one_scan_writes_every_format_its_files_name(tmp_path: Path) -> None:
    names = ["r.json", "r.sarif", "r.xml", "r.md", "r.prom", "r.txt", "results.sarif.json", "UPPER.JSON"]
    args = [a for name in names for a in ("-o", str(tmp_path / name))]
    result = run("demo", "--price-per-gpu-hour", "2", *args, "-o", "-", "-f", "markdown")
    assert result.returncode == 0, result.stderr
    assert files(tmp_path) == sorted(names)  # and no temporary file left
    report: dict[str, Any] = json.loads((tmp_path / "r.json").read_text())
    assert json.loads((tmp_path / "UPPER.JSON").read_text()) == report  # one render per format, whatever the files
    sarif = json.loads((tmp_path / "r.sarif").read_text())
    assert not list(jsonschema.Draft4Validator(SARIF_SCHEMA).iter_errors(sarif))
    assert json.loads((tmp_path / "results.sarif.json").read_text()) == sarif  # .sarif.json is SARIF, not JSON
    assert len(sarif["runs"][0]["results"]) == len(report["findings"]) > 10
    junit = ET.fromstring((tmp_path / "r.xml").read_text())
    assert junit.tag == "testsuites" and int(junit.get("tests", "0")) >= len(report["findings"])
    prom = samples((tmp_path / "r.prom").read_text())
    assert sum(v for _, v in prom["fabriccheck_findings"]) == len(report["findings"])
    # One scan, not one per output: the figures that differ from run to run are the same in every file.
    [(_, stamp)] = prom["fabriccheck_last_run_timestamp_seconds"]
    assert stamp == pytest.approx(_timestamp(report["generated_at"]))
    [(_, duration)] = prom["fabriccheck_scan_duration_seconds"]
    assert duration == report["duration_seconds"]
    text = (tmp_path / "r.txt").read_text()
    assert "\x1b[" not in text and all(f["rule"] in text for f in report["findings"])
    markdown = (tmp_path / "r.md").read_text()
    assert result.stdout == markdown and markdown.startswith("#")  # -o - with --format markdown


def _timestamp(iso: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(iso).timestamp()


def test_a_name_without_a_suffix_takes_format_and_an_unknown_suffix_needs_it(tmp_path: Path) -> None:
    plain = tmp_path / "report"
    assert run("demo", "-o", str(plain)).returncode == 0
    assert plain.read_text().startswith("fabriccheck ")  # --format's default: text
    assert run("demo", "-f", "json", "-o", str(plain)).returncode == 0
    assert json.loads(plain.read_text())["schema_version"] == 1
    line = one_clean_line(run("demo", "-o", str(tmp_path / "audit.log")))
    assert line == (
        f"fabriccheck: error: --output {tmp_path / 'audit.log'}: no format is known for the suffix .log (name it "
        ".json, .sarif, .xml, .md, .prom, .html, .txt, or give --format)"
    )
    assert run("demo", "-f", "json", "-o", str(tmp_path / "audit.log")).returncode == 0
    assert json.loads((tmp_path / "audit.log").read_text())["schema_version"] == 1


def test_a_format_that_no_output_uses_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    line = one_clean_line(run("demo", "-f", "sarif", "-o", str(target)))
    assert line == (
        f"fabriccheck: error: --format sarif is the format of no output ({target} is json by its suffix): drop "
        "--format, or add an output in sarif"
    )
    assert files(tmp_path) == []
    # A --format that one output uses is fine beside outputs in other formats.
    both = run("demo", "-f", "json", "-o", str(target), "-o", str(tmp_path / "r.md"))
    assert both.returncode == 0 and files(tmp_path) == ["r.md", "report.json"]


def test_html_by_its_suffix_is_written(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    result = run("demo", "-o", str(target))
    assert result.returncode == 0 and "<html" in target.read_text().lower() and files(tmp_path) == ["report.html"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["-o", "-", "-o", "-"], "-o - is given twice: stdout takes one report"),
        (["-o", "{tmp}/a.json", "-o", "{tmp}/./a.json"], "name the same file"),
        (["-o", "{tmp}/a.json", "-o", "{tmp}/b.json", "--save-inventory", "{tmp}/b.json"], "name the same file"),
        (["--job", "nightly"], "--job names the push to a Pushgateway: give --pushgateway URL too"),
    ],
)
def test_outputs_that_cannot_all_be_written_are_one_line(tmp_path: Path, args: list[str], says: str) -> None:
    line = one_clean_line(run("demo", *[a.format(tmp=tmp_path) for a in args]))
    assert says in line
    assert files(tmp_path) == []


def test_a_bad_folder_fails_before_the_scan_starts(tmp_path: Path) -> None:
    """Every output is checked before a live scan starts (which could take minutes), so a folder that does not exist
    (or is a file) fails first, one line, the endpoint never called and the good outputs not written."""
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    good = tmp_path / "report.json"
    cases = [(tmp_path / "missing" / "r.prom", "No such file or directory"), (a_file / "r.prom", "Not a directory")]
    with closing_endpoint() as (url, called):
        for bad, why in cases:
            result = run("aws", "--endpoint-url", url, "--region", "us-east-1", "-o", str(good), "-o", str(bad))
            assert one_clean_line(result) == f"fabriccheck: error: --output {bad}: cannot write ({why})"
            assert not called.is_set(), "the scan started"
        result = run("aws", "--endpoint-url", url, "-o", str(tmp_path), "--region", "us-east-1")
        assert one_clean_line(result) == f"fabriccheck: error: --output {tmp_path}: cannot write (Is a directory)"
        bad_inventory = tmp_path / "missing" / "inventory.json"
        result = run("aws", "--endpoint-url", url, "--region", "us-east-1", "--save-inventory", str(bad_inventory))
        assert one_clean_line(result).endswith(
            f"--save-inventory {bad_inventory}: cannot write (No such file or directory)"
        )
    assert not called.is_set(), "the scan started"
    assert files(tmp_path) == ["not-a-folder"]


def test_the_exit_code_does_not_depend_on_the_number_of_outputs(tmp_path: Path) -> None:
    outputs: list[str] = []
    for name in ("a.json", "a.prom", "a.txt"):
        code = run("demo", "--fail-on", "error", *outputs).returncode
        assert code == 1, outputs  # the demo has error findings
        outputs += ["-o", str(tmp_path / name)]
    assert run("demo", "--fail-on", "error", *outputs).returncode == 1
    assert run("demo", "--fail-on", "never", *outputs).returncode == 0
    incomplete = run("aws", "--from-dump", str(DEMO / "aws"), "--select", "AWS101", *outputs, "--fail-on", "never")
    assert incomplete.returncode == 0 and json.loads((tmp_path / "a.json").read_text())["complete"] is True


def test_a_failed_write_leaves_every_earlier_file_as_it_was(tmp_path: Path) -> None:
    """Outputs are staged and put in place together: when one cannot be written, none is."""
    old = tmp_path / "report.json"
    old.write_text("the previous report\n")
    result = run("demo", "-o", str(old), "-o", "/dev/full", "-f", "text")
    assert "--output /dev/full: cannot write (No space left on device)" in one_clean_line(result)
    assert old.read_text() == "the previous report\n" and files(tmp_path) == ["report.json"]


def test_merge_writes_many_outputs_and_never_over_a_part(tmp_path: Path) -> None:
    part = tmp_path / "aws.json"
    assert run("aws", "--from-dump", str(DEMO / "aws"), "-o", str(part)).returncode == 1
    merged, prom = tmp_path / "merged.json", tmp_path / "merged.prom"
    result = run("merge", str(part), "-o", str(merged), "-o", str(prom), "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    assert len(json.loads(merged.read_text())["findings"]) == len(json.loads(part.read_text())["findings"])
    assert sum(v for _, v in samples(prom.read_text())["fabriccheck_findings"]) == len(
        json.loads(part.read_text())["findings"]
    )
    line = one_clean_line(run("merge", str(part), "-o", str(merged), "-o", str(part)))
    assert line.endswith(f"--output {part} is one of the reports being merged: write it elsewhere")


def test_evidence_commands_take_many_outputs_in_every_format(tmp_path: Path) -> None:
    as_json, as_md, as_prom = tmp_path / "log.json", tmp_path / "log.md", tmp_path / "log.prom"
    result = run("nccl-log", NCCL_LOG, "-o", str(as_json), "-o", str(as_md), "-o", str(as_prom))
    assert result.returncode in (0, 1), result.stderr
    document = json.loads(as_json.read_text())
    assert document["evidence"] == "nccl-log" and "NCCL" in as_md.read_text()
    assert sum(v for _, v in samples(as_prom.read_text())["fabriccheck_findings"]) == len(document["findings"])
    line = one_clean_line(run("nccl-log", NCCL_LOG, "-o", str(tmp_path / "log.yaml")))
    assert line == (
        f"fabriccheck: error: bad usage: --output {tmp_path / 'log.yaml'}: no format is known for the suffix .yaml "
        "(name it .json, .sarif, .xml, .md, .prom, .html, .txt, or give --format)"
    )


def test_single_output_commands_take_dash_for_stdout() -> None:
    schema = run("schema", "-o", "-")
    assert schema.returncode == 0 and json.loads(schema.stdout)["$schema"].startswith("https://json-schema.org/")
    policy = run("aws", "--print-iam-policy", "-o", "-")
    assert policy.returncode == 0 and "ec2:DescribeInstances" in policy.stdout
    line = one_clean_line(run("aws", "--print-iam-policy", "-o", "a.json", "-o", "b.json"))
    assert line.endswith("--print-iam-policy writes one JSON document: give one --output FILE, not 2")
