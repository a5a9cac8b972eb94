"""`fabriccheck nccl-tests` and `fabriccheck nccl-log` as a user runs them: formats, exit codes, bad input."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from cli_run import one_clean_line, run

FIXTURES = Path(__file__).parent / "fixtures" / "nccl"
TCP_RUN = str(FIXTURES / "tests_rank_prefixed_truncated.txt")  # NVIDIA/nccl#1453: ~5 GB/s above 32 MiB
MIXED_LOG = str(FIXTURES / "log_mixed_networks.txt")
HEALTHY_LOG = str(FIXTURES / "log_ib_gdrdma_channels.txt")


def test_nccl_tests_finds_tcp_fallback_in_every_format(tmp_path: Path) -> None:
    args = [TCP_RUN, "--instance-type", "p4d.24xlarge", "--nodes", "2"]
    text = run("nccl-tests", *args)
    assert text.returncode == 1, text.stderr
    assert "NCCL210" in text.stdout and "measured/expected" in text.stdout
    report = json.loads(run("nccl-tests", *args, "--format", "json").stdout)
    assert report["schema_version"] == 1 and report["evidence"] == "nccl-tests" and report["complete"]
    (finding,) = report["findings"]
    assert finding["rule"] == "NCCL210" and finding["provider"] == "aws" and finding["category"] == "fabric-missing"
    assert {"rule", "severity", "category", "provider", "cluster", "resources", "message", "remediation"} <= set(
        finding
    )
    run_detail = report["clusters"][0]["evidence"]["runs"][0]
    assert run_detail["verdict"] == "tcp-fallback" and run_detail["comparisons"][-1]["bytes"] == 536870912
    sarif = json.loads(run("nccl-tests", *args, "--format", "sarif").stdout)
    assert sarif["runs"][0]["results"][0]["ruleId"] == "NCCL210"
    junit = ET.fromstring(run("nccl-tests", *args, "--format", "junit").stdout)
    assert junit.find(".//failure") is not None
    markdown = run("nccl-tests", *args, "--format", "markdown").stdout
    assert "NCCL210" in markdown and "| run | op |" in markdown
    out = tmp_path / "r.json"
    written = run("nccl-tests", *args, "--format", "json", "--output", str(out))
    assert written.returncode == 1 and written.stdout == "" and json.loads(out.read_text())["findings"]
    assert run("nccl-tests", *args, "--fail-on", "never").returncode == 0


def test_nccl_tests_custom_fabric_and_parse_only() -> None:
    custom = run(
        "nccl-tests", TCP_RUN, "--nodes", "2", "--gpu", "A100", "--gpus-per-node", "8", "--nics", "4",
        "--nic-gbps", "100", "--transport", "efa", "--ethernet-gbps", "100", "--format", "json",
    )  # fmt: skip
    assert custom.returncode == 1 and json.loads(custom.stdout)["clusters"][0]["provider"] == "aws"
    parse_only = run("nccl-tests", str(FIXTURES / "tests_allreduce_8x8_v100_ib.txt"), "--format", "json")
    report = json.loads(parse_only.stdout)
    assert parse_only.returncode == 0 and report["findings"] == []
    assert report["clusters"][0]["evidence"]["fabric"] is None


def test_nccl_tests_that_cannot_be_compared_exits_2() -> None:
    # No hosts in the file and no --nodes: the comparison asked for could not be made.
    result = run("nccl-tests", str(FIXTURES / "tests_single_node_h100.txt"), "--instance-type", "p5.48xlarge")
    assert result.returncode == 2 and "INCOMPLETE" in result.stdout and "--nodes" in result.stdout


def test_nccl_log_reports_transports() -> None:
    mixed = run("nccl-log", MIXED_LOG, "--format", "json")
    assert mixed.returncode == 1
    report = json.loads(mixed.stdout)
    assert [f["rule"] for f in report["findings"]] == ["NCCL206", "NCCL201"]
    assert {p["transport"] for p in report["clusters"][0]["evidence"]["log"]["processes"]} == {"IB", "Socket"}
    healthy = run("nccl-log", HEALTHY_LOG)
    assert healthy.returncode == 0 and "no findings" in healthy.stdout and "GDR" in healthy.stdout
    assert run("nccl-log", MIXED_LOG, "--provider", "azure", "--format", "json").stdout.count('"azure"') >= 2
    warning_only = run("nccl-log", str(FIXTURES / "log_ib_no_module_channels.txt"))
    assert warning_only.returncode == 0
    assert run("nccl-log", str(FIXTURES / "log_ib_no_module_channels.txt"), "--fail-on", "warning").returncode == 1


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["nccl-log", "/nonexistent/x.log"], "no such file"),
        (["nccl-log", "/etc/hostname"], "no NCCL log lines"),
        (["nccl-tests", "/etc/hostname"], "no nccl-tests header or result rows"),
        (["nccl-tests", TCP_RUN, "--nodes", "2"], "--nodes needs a fabric"),
        (["nccl-tests", TCP_RUN, "--nodes", "0", "--instance-type", "p4d.24xlarge"], "--nodes"),
        (["nccl-tests", TCP_RUN, "--instance-type", "p4d.24xlarge", "--gpu", "H100"], "cannot be used together"),
        (["nccl-tests", TCP_RUN, "--instance-type", "x9.huge"], "not in the capability catalog"),
        (["nccl-tests", TCP_RUN, "--op", "allreduce"], "--op allreduce"),
        (["nccl-tests", TCP_RUN, "--gpu", "H100", "--transport", "ib"], "a custom fabric needs"),
        (["nccl-tests", TCP_RUN, "--nic-gbps", "abc"], "--nic-gbps"),
        (["nccl-log", MIXED_LOG, "--provider", "oci"], "--provider oci"),
        (["nccl-log", MIXED_LOG, "--output", MIXED_LOG], "is the file being read"),
        (["nccl-log", MIXED_LOG, "--format", "yaml"], "yaml"),
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str], needle: str) -> None:
    assert needle in one_clean_line(run(*args))


def test_binary_garbage_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "garbage.bin"
    path.write_bytes(bytes(range(256)) * 64)
    assert "garbage.bin" in one_clean_line(run("nccl-log", str(path)))
    assert "garbage.bin" in one_clean_line(run("nccl-tests", str(path)))


# ---------------------------------------------------------------------------------------------- issue 17 item 22


@pytest.mark.parametrize(
    ("args", "code", "words", "needle"),
    [
        (["nccl-tests", TCP_RUN, "--op", "allreduce"], "usage", "bad usage", "--op allreduce"),
        (["nccl-tests", TCP_RUN, "--nodes", "2"], "usage", "bad usage", "--nodes needs a fabric"),
        (["nccl-log", MIXED_LOG, "--provider", "oci"], "usage", "bad usage", "--provider oci"),
        (["nccl-tests", TCP_RUN, "--instance-type", "x9.huge"], "unknown-model", "unknown model", "x9.huge"),
        (["nccl-tests", TCP_RUN, "--gpu", "Z9000", "--gpus-per-node", "8", "--nics", "8", "--nic-gbps", "400",
          "--transport", "ib"], "unknown-model", "unknown model", "--gpu Z9000: unknown accelerator"),
        (["nccl-log", "/nonexistent/x.log"], "unreadable-input", "unreadable input", "no such file"),
        (["nccl-log", "/etc/hostname"], "unreadable-input", "unreadable input", "no NCCL log lines"),
        (["nccl-tests", "/etc/hostname"], "unreadable-input", "unreadable input", "no nccl-tests header"),
    ],
)  # fmt: skip
def test_each_kind_of_failure_has_its_words_and_its_json_code(
    args: list[str], code: str, words: str, needle: str, tmp_path: Path
) -> None:
    line = one_clean_line(run(*args))
    assert line.startswith(f"fabriccheck: error: {words}: ") and needle in line
    as_json = run(*args, "--format", "json")
    assert as_json.returncode == 2 and len(as_json.stderr.strip().splitlines()) == 1
    report = json.loads(as_json.stdout)
    assert report["complete"] is False and report["findings"] == []
    assert [e["code"] for e in report["errors"]] == [code] and needle in report["errors"][0]["message"]
    out = tmp_path / "r.sarif"
    assert run(*args, "--format", "sarif", "--output", str(out)).returncode == 2
    (notification,) = json.loads(out.read_text())["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert notification["descriptor"]["id"] == code


def test_an_error_report_never_overwrites_the_input(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text("not a log\n")
    result = run("nccl-log", str(log), "--format", "json", "--output", str(log))
    assert "is the file being read" in one_clean_line(result) and log.read_text() == "not a log\n"


# ---------------------------------------------------------------------------------------------- issue 18 item 4


def test_a_multi_node_log_without_its_transport_exits_2_and_never_says_no_findings() -> None:
    result = run("nccl-log", str(FIXTURES / "log_plugin_missing_azure_pdsh.txt"))
    assert result.returncode == 2, result.stdout
    assert "\n  no findings\n" not in result.stdout and "INCOMPLETE" in result.stdout
    assert "not which network NCCL used" in result.stdout


def test_nccl_tests_with_impossible_bandwidth_exits_2(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.txt"
    text = (FIXTURES / "tests_slurm_label_2x8_p5.txt").read_text()
    damaged.write_text(text.replace("487.09", "99999.00"))
    args = ["--instance-type", "p5.48xlarge", "--nodes", "2", "--format", "json"]
    healthy = run("nccl-tests", str(FIXTURES / "tests_slurm_label_2x8_p5.txt"), *args)
    (healthy_job,) = json.loads(healthy.stdout)["clusters"]
    assert healthy.returncode == 0 and healthy_job["evidence"]["runs"][0]["verdict"] == "healthy"
    result = run("nccl-tests", str(damaged), *args)
    report = json.loads(result.stdout)
    assert result.returncode == 2 and report["clusters"][0]["evidence"]["runs"][0]["verdict"] == "suspect"


def test_nccl_tests_reads_the_nccl_lines_of_its_own_file() -> None:
    # 2 x p3dn over EFA, NCCL 2.4.8: the table alone looked like TCP before (the ordinary NIC is as fast as EFA);
    # the file's `Selected Provider is efa` says the fabric ran.
    args = ["--instance-type", "p3dn.24xlarge", "--format", "json"]
    result = run("nccl-tests", str(FIXTURES / "tests_with_log_p3dn_nccl248.txt"), *args)
    report = json.loads(result.stdout)
    assert result.returncode == 0 and report["findings"] == [] and report["clusters"][0]["provider"] == "aws"
    assert report["clusters"][0]["evidence"]["nccl_lines"]["fabric_seen"] == ["`Selected Provider is efa`"]
    socket = run("nccl-tests", str(FIXTURES / "tests_with_log_g4dn_socket.txt"), "--instance-type", "g4dn.8xlarge",
                 "--nodes", "2", "--op", "all_reduce")  # fmt: skip
    assert socket.returncode == 1 and "NCCL210" in socket.stdout and "`Using network Socket`" in socket.stdout


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["--nodes", "2"], "usage", "give --instance-type"),
        (["--nodes", "2", "--instance-type", "p5.48xlarge", "--state", "fast"], "usage", "--state fast"),
        (["--nodes", "2", "--instance-type", "x9.huge"], "unknown-model", "x9.huge"),
        (["--nodes", "2", "--gpu", "Z9000"], "unknown-model", "--gpu Z9000: unknown accelerator"),
        (["--nodes", "2", "--instance-type", "p5.48xlarge", "--calibrate", "/nonexistent/t.txt"],
         "unreadable-input", "/nonexistent/t.txt"),
    ],
)  # fmt: skip
def test_estimate_json_says_why_there_is_no_estimate(args: list[str], code: str, needle: str) -> None:
    result = run("estimate", *args, "--format", "json")
    line = one_clean_line(result)
    assert needle in line
    failure = json.loads(result.stdout)
    assert failure["kind"] == "estimate" and failure["complete"] is False
    assert [e["code"] for e in failure["errors"]] == [code] and needle in failure["errors"][0]["message"]
    assert run("estimate", *args).stdout == ""  # text has no failure report: the one line says it
    assert json.loads(run("estimate", *args, "--format", "json", "-o", "-").stdout) == failure  # - is stdout


def test_a_log_cut_mid_line_never_passes(tmp_path: Path) -> None:
    # The first 95 bytes of a real two-host log (log_mixed_networks.txt): one host on IB, and the start of the
    # line where the other host fails to load libibverbs. What was cut may hold more hosts and ranks on sockets.
    cut = tmp_path / "cut.log"
    cut.write_bytes((FIXTURES / "log_mixed_networks.txt").read_bytes()[:95])
    result = run("nccl-log", str(cut), "--format", "json")
    assert result.returncode == 2, result.stdout
    report = json.loads(result.stdout)
    assert report["complete"] is False and any("cut short" in n for n in report["notes"])
    whole = tmp_path / "whole.log"
    whole.write_bytes((FIXTURES / "log_mixed_networks.txt").read_bytes().split(b"\n", 1)[0] + b"\n")
    assert run("nccl-log", str(whole)).returncode == 0  # one whole line of one host: nothing inter-node to judge


def test_evidence_read_from_standard_input(tmp_path: Path) -> None:
    """`-` reads the log or table from standard input (`kubectl logs job/x | fabriccheck nccl-log -`): the same
    findings as from the file, the source and every error named as standard input, no copy left behind."""
    import os
    import subprocess

    env = {**os.environ, "TMPDIR": str(tmp_path)}  # where the copy of standard input is made

    def piped(*args: str, data: bytes) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["fabriccheck", *args], input=data, capture_output=True, timeout=120, env=env)

    log = (FIXTURES / "log_mixed_networks.txt").read_bytes()
    from_file = json.loads(run("nccl-log", MIXED_LOG, "--format", "json").stdout)
    result = piped("nccl-log", "-", "--format", "json", data=log)
    report = json.loads(result.stdout)
    assert result.returncode == 1 and report["source"] == "-"
    assert [(f["rule"], f["resources"]) for f in report["findings"]] == [
        (f["rule"], f["resources"]) for f in from_file["findings"]
    ]
    table = piped("nccl-tests", "-", "--instance-type", "p4d.24xlarge", "--nodes", "2", data=Path(TCP_RUN).read_bytes())
    assert table.returncode == 1 and b"NCCL210" in table.stdout
    garbage = piped("nccl-log", "-", data=b"not a log\n")
    assert garbage.returncode == 2
    assert garbage.stderr.decode().startswith("fabriccheck: error: unreadable input: standard input (-): no NCCL")
    assert list(tmp_path.iterdir()) == []


def test_a_log_whose_lines_name_no_host_is_not_taken_for_one_host(tmp_path: Path) -> None:
    """Issue 29 item 9: lines without NCCL's `host:pid:tid` prefix (tests/fixtures/nccl/log_ofi_gdr_off_no_host.txt,
    whose source SOURCES.md names) were read as one host, "nothing inter-node to judge", exit 0. NCCL prefixes every
    INFO line with them (`%s:%d:%d [%d] NCCL INFO`: hostname, pid, tid, device), so a log without them was stripped, and
    may hold any number of hosts: incomplete, exit 2, said in the report; the log as it was. (NCCL's format:
    github.com/NVIDIA/nccl src/debug.cc, ncclDebugLog.)"""
    log = tmp_path / "no-host.txt"
    log.write_bytes((FIXTURES / "log_ofi_gdr_off_no_host.txt").read_bytes())
    before = log.read_bytes()
    result = run("nccl-log", str(log), "-f", "json")
    assert result.returncode == 2 and result.stderr == "", result.stderr
    report = json.loads(result.stdout)
    assert report["complete"] is False
    assert report["notes"] == [
        "lines of the log name no host (`[0] NCCL INFO ...`, without NCCL's `host:pid:tid` prefix): how many hosts "
        "the run spans is unknown, so the inter-node transport is not judged (pass the log as NCCL wrote it)"
    ]
    assert log.read_bytes() == before
    # Lines without a host that show inter-node channels are judged as before (NVIDIA/nccl#385's numbered lines).
    assert run("nccl-log", str(FIXTURES / "log_ring_lines_2.4_gdrdma_numbered.txt")).returncode == 0
