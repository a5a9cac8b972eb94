"""`--pushgateway URL [--job NAME]` against a real Pushgateway (Debian's `prometheus-pushgateway`, which .ci/run
installs), started here on 127.0.0.1 with no persistence file: what it serves afterwards is held against the
textfile of the same run, and the metric names and labels are pinned (docs/scheduled-audit.md documents them)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from cli_run import one_clean_line, run
from gateway_run import free_port, needs_gateway, pushgateway, samples, served
from loopback import serving
from prometheus_client.parser import text_string_to_metric_families

from fabriccheck import flow
from fabriccheck import pushgateway as pushgateway_module
from fabriccheck.cli import demo_inventory
from fabriccheck.reports.prometheus import registry_of
from fabriccheck.waivers import Waiver

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with pushgateway(tmp_path_factory.mktemp("pushgateway")) as url:
        yield url


@needs_gateway
def test_the_gateway_serves_what_the_textfile_holds(gateway: str, tmp_path: Path) -> None:
    prom, report_file = tmp_path / "audit.prom", tmp_path / "audit.json"
    args = ["demo", "--price-per-gpu-hour", "2.5", "-o", str(prom), "-o", str(report_file), "--pushgateway", gateway]
    result = run(*args)
    assert result.returncode == 0 and result.stdout == "", result.stderr
    pushed, written = served(gateway, "fabriccheck"), samples(prom.read_text())
    assert pushed == written and len(pushed) > 100  # the push and the textfile: one registry of the report
    report = json.loads(report_file.read_text())
    findings = sum(v for name, _, v in pushed if name == "fabriccheck_findings")
    assert findings == len(report["findings"]) == 50
    by_status = {dict(labels)["status"]: v for name, labels, v in pushed if name == "fabriccheck_clusters"}
    assert by_status == {k: float(v) for k, v in report["summary"]["clusters_by_status"].items()}
    dollars = {
        dict(labels)["cluster"]: v
        for name, labels, v in pushed
        if name == "fabriccheck_lost_dollars_per_day" and dict(labels)["bound"] == "high"
    }
    for cluster in report["clusters"]:
        lost = cluster["penalty"].get("lost_gpu_hours_per_day")
        if cluster["penalty"]["estimated"] and lost is not None:
            assert dollars[cluster["id"]] == pytest.approx(2.5 * lost["high"])
    assert ("fabriccheck_scan_complete", frozenset(), 1.0) in pushed


@needs_gateway
def test_a_push_replaces_its_jobs_metrics_and_leaves_other_jobs_alone(gateway: str) -> None:
    assert run("demo", "-f", "json", "--pushgateway", gateway, "--job", "kept").returncode == 0
    kept = served(gateway, "kept")
    assert run("demo", "-f", "json", "--pushgateway", gateway, "--job", "nightly-aws").returncode == 0
    assert (
        len({dict(labels)["rule"] for n, labels, _ in served(gateway, "nightly-aws") if n == "fabriccheck_findings"})
        > 5
    )
    # The next run of the job sees one rule fail: the gateway holds that run's findings only (a PUT, not a POST),
    # so what was fixed since does not linger.
    only = ["aws", "--from-dump", str(DEMO / "aws"), "--select", "AWS101", "-f", "json", "--fail-on", "never"]
    assert run(*only, "--pushgateway", gateway, "--job", "nightly-aws").returncode == 0
    rules = {dict(labels)["rule"] for n, labels, _ in served(gateway, "nightly-aws") if n == "fabriccheck_findings"}
    assert rules == {"AWS101"}
    assert served(gateway, "kept") == kept


@needs_gateway
def test_merge_pushes_the_merged_report(gateway: str, tmp_path: Path) -> None:
    part = tmp_path / "gcp.json"
    assert run("gcp", "--from-dump", str(DEMO / "gcp"), "-o", str(part)).returncode == 1
    result = run("merge", str(part), "-o", str(tmp_path / "merged.prom"), "--pushgateway", gateway, "--job", "merged")
    assert result.returncode == 1, result.stderr  # the merge's own verdict: GCP error findings
    assert served(gateway, "merged") == samples((tmp_path / "merged.prom").read_text())
    accounts = {dict(labels)["account"] for n, labels, _ in served(gateway, "merged") if n == "fabriccheck_findings"}
    assert accounts == {"fabriccheck-demo"}


def test_a_dead_gateway_is_one_line_and_exit_2_after_the_reports_are_written(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there: connection refused
    report = tmp_path / "report.json"
    result = run("demo", "--fail-on", "error", "-o", str(report), "--pushgateway", url)
    assert one_clean_line(result) == f"fabriccheck: error: --pushgateway {url}: cannot push (Connection refused)"
    assert len(json.loads(report.read_text())["findings"]) == 50  # written before the push was tried


@needs_gateway
def test_an_http_error_is_the_gateways_answer_in_one_line(gateway: str, tmp_path: Path) -> None:
    result = run("demo", "-o", str(tmp_path / "r.prom"), "--pushgateway", f"{gateway}/not-a-gateway")
    line = one_clean_line(result)
    assert line.startswith(f"fabriccheck: error: --pushgateway {gateway}/not-a-gateway: the gateway answered 404 ")
    assert (tmp_path / "r.prom").is_file()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("pushgateway:9091", "give the gateway's http:// or https:// URL"),
        ("ftp://127.0.0.1:9091", "give the gateway's http:// or https:// URL"),
        ("http://", "give the gateway's http:// or https:// URL"),
        ("http://127.0.0.1:port", "not a URL"),
        ("http://user:secret@127.0.0.1:9091", "credentials in the URL are not sent"),
        ("http://127.0.0.1:9091/?x=1", "a query or fragment has no place"),
    ],
)
def test_a_url_that_is_no_gateway_is_refused_before_the_scan(tmp_path: Path, url: str, says: str) -> None:
    line = one_clean_line(run("demo", "-o", str(tmp_path / "r.json"), "--pushgateway", url))
    assert says in line and "secret" not in line
    assert list(tmp_path.iterdir()) == []


# The contract: every metric's name, type and labels. A dashboard or an alert keys on these; changing one is a
# breaking change, to be made on purpose (and docs/scheduled-audit.md updated with it).
CONTRACT: dict[str, tuple[str, tuple[str, ...]]] = {
    "fabriccheck_findings": ("gauge", ("rule", "severity", "category", "provider", "account", "cluster", "status")),
    "fabriccheck_cluster_gpu_hours_per_day": ("gauge", ("provider", "account", "cluster")),
    "fabriccheck_cluster_cannot_run": ("gauge", ("provider", "account", "cluster")),
    "fabriccheck_lost_share": ("gauge", ("provider", "account", "cluster", "bound")),
    "fabriccheck_lost_gpu_hours_per_day": ("gauge", ("provider", "account", "cluster", "bound")),
    "fabriccheck_lost_dollars_per_day": ("gauge", ("provider", "account", "cluster", "bound")),
    "fabriccheck_possible_lost_gpu_hours_per_day": ("gauge", ("provider", "account", "cluster", "bound")),
    "fabriccheck_clusters": ("gauge", ("status",)),
    "fabriccheck_scan_complete": ("gauge", ()),
    "fabriccheck_collection_errors": ("gauge", ()),
    "fabriccheck_scan_duration_seconds": ("gauge", ()),
    "fabriccheck_api_calls": ("gauge", ()),
    "fabriccheck_last_run_timestamp_seconds": ("gauge", ()),
    "fabriccheck_waivers": ("gauge", ("status",)),
}
# What an nccl-tests report adds: its measured and expected bus bandwidth per judged message size.
EVIDENCE_CONTRACT = {"fabriccheck_nccl_busbw_gbytes_per_s": ("gauge", ("cluster", "run", "op", "bytes", "figure"))}


def test_metric_names_types_and_labels_are_the_documented_contract() -> None:
    waiver = Waiver(rule="AWS110", resources=["*"], reason="accepted")
    report = flow.run(demo_inventory(), flow.Options(price_per_gpu_hour=2.0, waivers=[waiver], waivers_file="w"))
    report.duration_seconds, report.api_calls = 1.5, 0
    found: dict[str, tuple[str, tuple[str, ...]]] = {}
    for family in registry_of(report).collect():
        labels = {tuple(s.labels) for s in family.samples}
        assert len(labels) == 1, family.name  # every sample of a metric carries the same labels
        found[family.name] = (family.type, labels.pop())
    assert found == CONTRACT
    # tests/fixtures/nccl/tests_rank_prefixed_truncated.txt: NVIDIA/nccl issue #1453, 2 x p4d.
    table = ROOT / "tests" / "fixtures" / "nccl" / "tests_rank_prefixed_truncated.txt"
    evidence = run("nccl-tests", str(table), "--instance-type", "p4d.24xlarge", "--nodes", "2", "-f", "prometheus")
    added = {
        family.name: (family.type, {tuple(sorted(s.labels)) for s in family.samples})  # the parser sorts them
        for family in text_string_to_metric_families(evidence.stdout)
        if family.name not in CONTRACT
    }
    assert added == {name: (kind, {tuple(sorted(names))}) for name, (kind, names) in EVIDENCE_CONTRACT.items()}
    docs = (ROOT / "docs" / "scheduled-audit.md").read_text()
    documented = set(re.findall(r"`(fabriccheck_[a-z_]+)`", docs))
    assert documented == set(CONTRACT) | set(EVIDENCE_CONTRACT)
    for name, (_, names) in {**CONTRACT, **EVIDENCE_CONTRACT}.items():
        row = next(line for line in docs.splitlines() if line.startswith(f"| `{name}`"))
        assert all(f"`{label}`" in row for label in names), (name, row)


# ---------------------------------------------------------------------------------------------- a trickling gateway
# Issue 29 item 6: a gateway that answers one byte every 10 s held a run for 375 s, because urllib's timeout bounds
# each blocking socket call, not the request (https://docs.python.org/3/library/urllib.request.html, urlopen
# "timeout"); and SIGTERM or Ctrl-C during the push waited for it. The gateway here is a real HTTP server on
# 127.0.0.1 that reads the PUT (prometheus_client's push_to_gateway: PUT /metrics/job/NAME, body the text
# exposition) and then trickles its answer.

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"


def _trickling(every: float, got: threading.Event, stop: threading.Event) -> type[BaseHTTPRequestHandler]:
    class Trickle(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            got.set()
            for byte in ANSWER:
                if stop.wait(every):
                    return
                self.wfile.write(bytes([byte]))
                self.wfile.flush()

        def log_message(self, *args: object) -> None:
            pass

    return Trickle


@contextmanager
def _trickling_gateway(every: float) -> Iterator[tuple[str, threading.Event]]:
    got, stop = threading.Event(), threading.Event()
    try:
        with serving(_trickling(every, got, stop), daemon_threads=True) as url:
            yield url, got
    finally:
        stop.set()


def test_a_trickling_gateway_ends_the_push_at_its_bound_in_one_line_after_the_report_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A byte every 0.5 s: each read well inside the per-read timeout, the whole answer (38 bytes) far beyond the
    bound (set to 1 s here; 30 s by default, as docs/scheduled-audit.md says)."""
    monkeypatch.setattr(pushgateway_module, "TIMEOUT_SECONDS", 1.0)
    report = tmp_path / "report.json"
    with _trickling_gateway(0.5) as (url, got):
        line = one_clean_line(run("demo", "-o", str(report), "--pushgateway", url))
        assert got.is_set()
    assert line == f"fabriccheck: error: --pushgateway {url}: cannot push (no whole answer within 1 s)"
    assert len(json.loads(report.read_text())["findings"]) == 50  # written before the push was tried


@pytest.mark.parametrize(
    ("signum", "code", "says"), [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")]
)
def test_a_signal_during_a_push_ends_the_run_with_its_code_and_the_report_kept(
    tmp_path: Path, signum: int, code: int, says: str
) -> None:
    """The issue's gateway (a byte every 10 s): the signal is sent once the gateway has the PUT. The run ends with
    the signal's code and line (docs/usage.md, "Exit codes") instead of waiting for the push; the report, put in
    place before the push, is whole. No time is asserted: 60 s is only the safety timeout of a run that hangs."""
    report = tmp_path / "report.json"
    with _trickling_gateway(10.0) as (url, got):
        args = ["fabriccheck", "demo", "-o", str(report), "--pushgateway", url]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
        try:
            assert got.wait(60), "the push never came"
            proc.send_signal(signum)
            stdout, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert (proc.returncode, stderr, stdout) == (code, f"fabriccheck: {says}\n", "")
    assert len(json.loads(report.read_text())["findings"]) == 50
