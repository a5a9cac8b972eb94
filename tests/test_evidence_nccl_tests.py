"""nccl-tests tables (real excerpts under tests/fixtures/nccl/, sources in SOURCES.md) and their judgement."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fabriccheck import penalty
from fabriccheck.errors import FabricCheckError
from fabriccheck.evidence import bandwidth, expect, judge
from fabriccheck.evidence import nccl_log as reader
from fabriccheck.evidence import nccl_tests as t

FIXTURES = Path(__file__).parent / "fixtures" / "nccl"


def lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text().splitlines(keepends=True)


@pytest.fixture
def flat_model() -> Iterator[list[tuple[int, str, float, str]]]:
    """A local stand-in for penalty.collective_bandwidth: healthy busbw 40 GB/s, TCP 5 GB/s, GDR-off 30.
    It records every call, so the tests see what the judge asked."""
    calls: list[tuple[int, str, float, str]] = []

    def model(
        fabric: penalty.FabricDescription, nodes: int, op: str, size: float, state: penalty.FabricState | None
    ) -> tuple[float, float]:
        kind = "healthy" if state is None else state.fabric
        calls.append((nodes, op, size, kind))
        busbw = {"healthy": 40.0, "tcp-fallback": 5.0, "gpudirect-off": 30.0}[kind]
        return busbw / 2, busbw

    expect.use_model(model)
    yield calls
    expect.use_model(None)


def test_old_table_without_root_and_with_an_error_column() -> None:
    parsed = t.parse_lines(lines("tests_old_error_column_p3dn.txt"))
    (run,) = parsed.runs
    assert [r.size for r in run.rows] == [1048576, 2097152, 4194304]
    first = run.rows[0]
    assert (first.redop, first.root, first.time_us, first.busbw, first.in_busbw) == ("sum", None, 1035.3, 1.90, 3.06)
    assert first.wrong is None  # "5e-07" is a max error, not a count
    assert run.error_column == "error" and run.op == "all_reduce" and run.op_source == "columns"
    assert not run.complete


def test_average_line_and_out_of_bounds() -> None:
    (run,) = t.parse_lines(lines("tests_allreduce_8x8_v100_ib.txt")).runs
    assert run.complete and run.avg_busbw == pytest.approx(4.32178)
    assert run.out_of_bounds == 0 and not run.out_of_bounds_failed


def test_alltoall_rows_with_an_empty_redop_cell() -> None:
    (run,) = t.parse_lines(lines("tests_alltoall_8x8_v100_ib.txt")).runs
    assert [r.redop for r in run.rows] == [None, None]
    assert run.rows[0].busbw == 0.51 and run.rows[1].time_us == 1041974
    # size = count x 4 B x 64 ranks and no reduction: all_gather and alltoall print alike, so the file does not say
    # which it ran (the file's name does, nccl-tests#78, but a name is not evidence).
    assert run.op is None and run.op_candidates == ("all_gather", "alltoall")


def test_mpi_tagged_rows_with_root_and_na_cells() -> None:
    (run,) = t.parse_lines(lines("tests_ompi_tagged_efa.txt")).runs
    assert len(run.rows) == 9
    row = run.rows[-1]
    assert (row.size, row.redop, row.root, row.busbw, row.wrong, row.in_wrong) == (524288, "none", -1, 2.31, 0, None)
    assert run.op is None and run.op_candidates == ("all_gather", "alltoall")


def test_rank_tags_glued_inside_rows_and_a_cut_last_row() -> None:
    parsed = t.parse_lines(lines("tests_rank_prefixed_truncated.txt"))
    (run,) = parsed.runs
    assert len(run.rows) == 10 and run.rows[0].size == 1048576 and run.rows[0].root == -1
    assert run.rows[-1].in_busbw == 5.33
    assert parsed.skipped_partial == 1  # "[0]   1073741824     2684"
    assert run.op == "all_reduce"


def test_header_devices_hosts_and_the_echoed_command() -> None:
    parsed = t.parse_lines(lines("tests_header_2x8_h100_gcp.txt"))
    (run,) = parsed.runs
    assert run.threads == 1 and run.gpus_per_thread == 1
    assert len(run.devices) == 16 and run.ranks == 16
    assert run.hosts == ["ztan-mig-235z", "ztan-mig-gq73"]
    assert run.devices[8].bus_id == "0000:04:00" and run.devices[8].name == "NVIDIA H100 80GB HBM3"
    assert run.op == "all_reduce" and run.op_source == "command"
    with pytest.raises(FabricCheckError, match="a header but no result rows"):
        t.parse_file(FIXTURES / "tests_header_2x8_h100_gcp.txt")


def test_each_process_printing_its_own_rank_zero_is_seen() -> None:
    (run,) = t.parse_lines(lines("tests_no_mpi_duplicate_rank0.txt")).runs
    assert run.duplicate_rank_zero
    assert [d.host for d in run.devices] == ["ip-172-31-20-228", "ip-172-31-22-230"]
    assert run.devices[0].bus_id == "0x00" and run.devices[0].name == "Tesla V100-SXM2-16GB"


def test_two_runs_in_one_file_and_interleaved_noise() -> None:
    # Two tests one after the other, with another rank's stderr lines in between (as mpirun interleaves them).
    noise = ["[1,3]<stderr>:NCCL WARN something on another rank\n", "\n", "some-host: unrelated output 12 34\n"]
    text = lines("tests_allreduce_8x8_v100_ib.txt") + noise + lines("tests_alltoall_8x8_v100_ib.txt")
    mixed: list[str] = []
    for index, line in enumerate(text):
        mixed.append(line)
        if index % 3 == 0:
            mixed.append(noise[index % len(noise)])
    runs = t.parse_lines(mixed).runs
    assert [(r.op, len(r.rows)) for r in runs] == [("all_reduce", 2), (None, 2)]
    assert runs[1].op_candidates == ("all_gather", "alltoall")


def test_a_file_cut_mid_row(tmp_path: Path) -> None:
    text = (FIXTURES / "tests_allreduce_8x8_v100_ib.txt").read_text()
    cut = text[: text.index("536870912") + 40]
    path = tmp_path / "cut.txt"
    path.write_text(cut)
    parsed = t.parse_file(path)
    assert parsed.ends_mid_line and parsed.skipped_partial == 1
    (run,) = parsed.runs
    assert len(run.rows) == 1 and not run.complete


@pytest.mark.parametrize(
    "content", ["", "hello\nworld\n", "\x00\x01\x02garbage\xff", "# nThread 1 nGpus 1 minBytes 8 maxBytes 8\n"]
)
def test_no_table_is_one_clear_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content)
    with pytest.raises(FabricCheckError, match=r"bad\.txt: "):
        t.parse_file(path)


def test_infer_op_from_columns() -> None:
    def row(
        size: int, count: int, redop: str | None, root: int | None, algbw: float = 10.0, busbw: float = 10.0
    ) -> t.Row:
        return t.Row(size, count, "float", redop, root, 1.0, algbw, busbw, 0, 1.0, algbw, busbw, 0)

    def op(*rows: t.Row, ranks: int = 0) -> tuple[str | None, tuple[str, ...]]:
        devices = [t.Device(r, "h", r, r, "", "GPU") for r in range(ranks)]
        return t.infer_op(t.Run(rows=list(rows), devices=devices))

    # busbw = algbw x 2(n-1)/n: only all_reduce's factor exceeds 1 (p5 Slurm run: 487.09 / 259.78 = 1.875 = 2 x 15/16)
    assert op(row(1024, 256, "sum", -1, 259.78, 487.09)) == ("all_reduce", ())
    # sendrecv prints the reduction it was given ("sum", CCI-MOC sendrecv log) and busbw = algbw; on 8 ranks an
    # all_reduce would read 1.75x
    assert op(row(1024, 256, "sum", -1, 5.85, 5.85), ranks=8) == ("sendrecv", ())
    # ...but on 2 ranks all_reduce's factor is 1 too: not known
    assert op(row(1024, 256, "sum", -1, 3.11, 3.11), ranks=2) == (None, ("all_reduce", "sendrecv"))
    assert op(row(1024, 256, "sum", -1, 0.01, 0.02)) == (None, ("all_reduce", "sendrecv"))  # too small to read
    assert op(row(1024, 16, "sum", -1)) == ("reduce_scatter", ())
    assert op(row(1024, 16, "none", -1)) == (None, ("all_gather", "alltoall"))
    assert op(row(1024, 256, "none", 0)) == ("broadcast", ())
    assert op(row(1024, 256, "sum", 0)) == ("reduce", ())
    assert op(row(1024, 16, "none", 0)) == (None, ("gather", "scatter"))
    assert op(row(1024, 256, "none", -1)) == ("sendrecv", ())


# ---------------------------------------------------------------------------------------------- judging


def p4d() -> penalty.FabricDescription:
    fabric, provider = expect.fabric_from_options("p4d.24xlarge", None, None, None, None, None, False, None)
    assert fabric is not None and provider == "aws"
    return fabric


def test_tcp_level_busbw_is_a_fabric_missing_finding(flat_model: list[tuple[int, str, float, str]]) -> None:
    parsed = t.parse_lines(lines("tests_allreduce_8x8_v100_ib.txt"), "x.txt")
    ev = bandwidth.judge_tests(parsed, p4d(), 8, "aws")
    (f,) = ev.findings
    assert (f.rule, f.category, f.effect, f.provider, f.severity) == (
        "NCCL210", "fabric-missing", "tcp-fallback", "aws", "error"
    )  # fmt: skip
    assert "4.3 GB/s" in f.message and "40.0 GB/s" in f.message
    assert ev.complete
    comparisons = ev.job.runs[0].comparisons
    assert [c.bytes for c in comparisons] == [268435456, 536870912]
    assert {(n, op) for n, op, _, _ in flat_model} == {(8, "all_reduce")}


@pytest.mark.parametrize(("scale", "rule"), [(1.0, None), (0.4, "NCCL211"), (0.1, "NCCL210")])
def test_verdict_follows_the_measured_share(
    flat_model: list[tuple[int, str, float, str]], scale: float, rule: str | None
) -> None:
    # The real single-node H100 rows (busbw up to ~300 GB/s) scaled against a 40 GB/s healthy expectation.
    text = [line for line in lines("tests_single_node_h100.txt")]
    (run,) = t.parse_lines(text).runs
    for row in run.rows:
        row.busbw = row.in_busbw = 40.0 * scale
    parsed = t.Parsed("x.txt", [run], 0, 0, False, [])
    ev = bandwidth.judge_tests(parsed, p4d(), 4, "aws")
    assert [f.rule for f in ev.findings] == ([rule] if rule else [])


def test_no_gdr_is_judged_against_the_gdr_off_state(flat_model: list[tuple[int, str, float, str]]) -> None:
    fabric, _ = expect.fabric_from_options(None, "H100", 8, 8, 400, "ib", True, 100)
    assert fabric is not None and fabric.gpudirect_rdma is False
    parsed = t.parse_lines(lines("tests_allreduce_8x8_v100_ib.txt"))
    bandwidth.judge_tests(parsed, fabric, 8, "unknown")
    assert {kind for *_, kind in flat_model} == {"gpudirect-off", "tcp-fallback"}


def test_wrong_results_are_a_software_finding() -> None:
    text = [line.replace("      0[0]", "      3[0]", 1) for line in lines("tests_rank_prefixed_truncated.txt")]
    ev = bandwidth.judge_tests(t.parse_lines(text), None, None, "unknown")
    assert [f.rule for f in ev.findings] == ["NCCL212"]
    assert "no fabric given" in ev.notes[-1] or any("no fabric given" in n for n in ev.notes)


def test_nothing_to_compare_makes_the_judgement_incomplete(flat_model: list[tuple[int, str, float, str]]) -> None:
    # No hosts named and no --nodes
    ev = bandwidth.judge_tests(t.parse_lines(lines("tests_single_node_h100.txt")), p4d(), None, "aws")
    assert not ev.complete and any("--nodes" in n for n in ev.notes)
    # Only latency-bound sizes
    ev = bandwidth.judge_tests(t.parse_lines(lines("tests_old_error_column_p3dn.txt")), p4d(), 2, "aws")
    assert not ev.complete and any("latency-bound" in n for n in ev.notes)
    # One node: nothing inter-node to judge, and that is complete
    ev = bandwidth.judge_tests(t.parse_lines(lines("tests_single_node_h100.txt")), p4d(), 1, "aws")
    assert ev.complete and not ev.findings and any("one node" in n for n in ev.notes)
    assert not flat_model


def test_the_default_model_is_the_penalty_core() -> None:
    # NVIDIA/nccl#1453's run collapses to ~5 GB/s above 32 MiB: on 2 x p4d (4 x 100G EFA) that is TCP level.
    parsed = t.parse_lines(lines("tests_rank_prefixed_truncated.txt"))
    ev = bandwidth.judge_tests(parsed, p4d(), 2, "aws")
    assert [f.rule for f in ev.findings] == ["NCCL210"]
    assert "at 2 nodes" in ev.findings[0].message


def test_the_adapter_reads_the_penalty_core() -> None:
    # penalty.collective_bandwidth (the integrator's): busbw = algbw x 2(n-1)/n for all_reduce on n ranks, less
    # over TCP, None for an accelerator it has no figure for, which the adapter turns into "not judged".
    fabric = p4d()
    found = penalty.collective_bandwidth(fabric, 4, "all_reduce", 2**30)
    assert found is not None and found[1] == pytest.approx(found[0] * 2 * 31 / 32)
    assert expect.healthy_busbw(fabric, 4, "all_reduce", 2**30) == pytest.approx(found[1])
    tcp = expect.tcp_busbw(fabric, 4, "all_reduce", 2**30)
    assert tcp is not None and tcp < found[1] / 4
    k80 = penalty.FabricDescription("K80", 8, fabric.fabric, 4, 100, True, 100)
    with pytest.raises(ValueError, match="no bandwidth figure"):
        expect.healthy_busbw(k80, 4, "all_reduce", 1e9)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("p4d.24xlarge", "H100", None, None, None, None, False, None), "cannot be used together"),
        (("nope.large", None, None, None, None, None, False, None), "not in the capability catalog"),
        ((None, "H100", 8, None, None, "ib", False, None), "needs --nics, --nic-gbps"),
        ((None, "K80", 8, 8, 400, "ib", False, None), "--gpu K80: unknown accelerator"),
        ((None, "H100", 8, 8, 400, "ethernet", False, None), "--transport ethernet"),
        ((None, "H100", 8, 8, -1, "ib", False, None), "--nic-gbps -1"),
        ((None, "H100", 8, 8, float("nan"), "ib", False, None), "--nic-gbps nan"),
        ((None, "H100", 8, None, None, "tcp", False, None), "--ethernet-gbps"),
    ],
)
def test_fabric_options_errors(args: tuple, needle: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(FabricCheckError, match=needle.replace("(", r"\(")):
        expect.fabric_from_options(*args)


def test_custom_tcp_fabric() -> None:
    fabric, provider = expect.fabric_from_options(None, "h100", 8, None, None, "tcp", False, 200)
    assert fabric is not None and fabric.fabric.value == "none" and fabric.ethernet_gbps == 200
    assert fabric.accelerator == "H100" and provider == "unknown"
    _, provider = expect.fabric_from_options(None, "H100", 8, 8, 200, "tcpxo", False, None)
    assert provider == "gcp"


@pytest.mark.parametrize("nodes", [2, 3, 4])
def test_real_p4d_efa_rows_are_not_a_fallback(nodes: int) -> None:
    # NVIDIA/nccl#527: 1 GiB all_reduce on 1-4 x p4d.24xlarge over EFA (NCCL 2.9.9). The author's first column
    # is the node count; without it each row is an nccl-tests row of a run on that many nodes.
    rows = [line.split(maxsplit=1) for line in lines("tests_p4d_1_to_4_nodes_table.txt") if line.strip()[:1].isdigit()]
    row = next(rest for count, rest in rows if int(count) == nodes)
    parsed = t.parse_lines([row], "p4d.txt")
    ev = bandwidth.judge_tests(parsed, p4d(), nodes, "aws")
    (detail,) = ev.job.runs
    assert detail.verdict == "healthy", detail.comparisons
    assert not ev.findings


def test_an_accelerator_without_figures_is_not_judged() -> None:
    fabric, _ = expect.fabric_from_options("p2.16xlarge", None, None, None, None, None, False, None)
    assert fabric is not None
    ev = bandwidth.judge_tests(t.parse_lines(lines("tests_allreduce_8x8_v100_ib.txt")), fabric, 8, "aws")
    assert not ev.complete and not ev.findings
    assert any("no bandwidth figure" in n and "K80" in n for n in ev.notes)


def test_an_instance_type_takes_the_same_corrections_as_estimate() -> None:
    fabric, provider = expect.fabric_from_options("p4d.24xlarge", None, None, None, None, None, True, 50)
    assert fabric is not None and provider == "aws"
    assert (fabric.gpudirect_rdma, fabric.ethernet_gbps, fabric.nics) == (False, 50, 4)


# ---------------------------------------------------------------------------------------------- issue 17 item 21


def test_slurm_task_labels_are_read() -> None:
    # srun -l on 2 x p5 (aws-samples/awsome-distributed-training): every line starts with its task label `0: `.
    (run,) = t.parse_lines(lines("tests_slurm_label_2x8_p5.txt")).runs
    assert len(run.rows) == 15 and run.label == "0" and run.rows[-1].busbw == 487.09
    assert (run.op, run.op_source) == ("all_reduce", "columns")  # busbw/algbw = 1.875 = 2 x 15/16
    fabric, _ = expect.fabric_from_options("p5.48xlarge", None, None, None, None, None, False, None)
    ev = bandwidth.judge_tests(t.parse_lines(lines("tests_slurm_label_2x8_p5.txt")), fabric, 2, "aws")
    assert ev.job.runs[0].verdict == "healthy" and ev.findings == []


def test_padded_labels_of_several_tasks_are_runs_of_their_own() -> None:
    # The same lines as two tasks of a build without MPI print them (`srun -l` pads labels to the widest: " 0: ",
    # "12: "), interleaved: each task's table is its own run, not one table of doubled rows.
    body = [line.split(": ", 1)[1] for line in lines("tests_slurm_label_2x8_p5.txt")]
    mixed = [f"{label}: {line}" for line in body for label in (" 0", "12")]
    runs = t.parse_lines(mixed).runs
    assert [(r.label, len(r.rows)) for r in runs] == [("0", 15), ("12", 15)]


def test_sendrecv_is_told_from_all_reduce_and_not_judged_as_one() -> None:
    # sendrecv_perf on 2 x 4 H100 over RoCE (CCI-MOC/roce-testing): it prints `sum` and root -1 as all_reduce does,
    # but busbw = algbw on 8 ranks, where an all_reduce reads 1.75x.
    parsed = t.parse_lines(lines("tests_sendrecv_2x4_h100_roce.txt"), "sendrecv.txt")
    (run,) = parsed.runs
    assert (run.op, run.op_source, run.ranks) == ("sendrecv", "columns", 8)
    fabric, _ = expect.fabric_from_options("Standard_ND96isr_H100_v5", None, None, None, None, None, False, None)
    ev = bandwidth.judge_tests(parsed, fabric, None, "azure")
    assert ev.findings == [] and not ev.complete  # never an all_reduce "TCP fallback" at 1% of expected
    assert any("no bandwidth model for sendrecv" in n for n in ev.notes)


def test_the_collective_named_in_the_header() -> None:
    # nccl-tests 2.14+ prints `# Collective test starting: all_reduce_perf` (dudeperf3ct.github.io post).
    (run,) = t.parse_lines(lines("tests_collective_header_1x4_h100.txt")).runs
    assert (run.op, run.op_source, run.gpus_per_thread, run.ranks) == ("all_reduce", "command", 4, 4)


def test_an_unknown_collective_is_said_and_op_overrides(flat_model: list[tuple[int, str, float, str]]) -> None:
    # 2 x g4dn.metal, one rank each: all_reduce and sendrecv print alike on 2 ranks, and the file names neither.
    parsed = t.parse_lines(lines("tests_with_log_g4dnmetal_efa.txt"), "g4dn.txt")
    assert parsed.runs[0].op is None and parsed.runs[0].op_candidates == ("all_reduce", "sendrecv")
    fabric, _ = expect.fabric_from_options("g4dn.metal", None, None, None, None, None, False, None)
    unknown = bandwidth.judge_tests(parsed, fabric, None, "aws")
    assert not unknown.complete and not flat_model
    assert any("fit all_reduce or sendrecv): give --op" in n for n in unknown.notes)
    given = bandwidth.judge_tests(parsed, fabric, None, "aws", op="all_reduce")
    assert given.complete and {op for _, op, _, _ in flat_model} == {"all_reduce"}
    assert given.job.runs[0].op_from == "option"
    named = t.parse_lines(["all_gather_perf -b 8 -e 1G\n", *lines("tests_slurm_label_2x8_p5.txt")])
    over = bandwidth.judge_tests(named, fabric, 2, "aws", op="all_reduce")
    assert any("--op all_reduce overrides the all_gather the file names" in n for n in over.notes)


# ---------------------------------------------------------------------------------------------- issue 17 item 20


def _p3dn() -> penalty.FabricDescription:
    fabric, _ = expect.fabric_from_options("p3dn.24xlarge", None, None, None, None, None, False, None)
    assert fabric is not None and fabric.ethernet_gbps == fabric.fabric_gbps == 100  # the ordinary NIC is as fast
    return fabric


def _scaled(name: str, factor: float, keep: str = "") -> list[str]:
    """The fixture's lines with every row's bandwidth cells times `factor` (its NCCL lines kept when they hold
    `keep`, dropped otherwise)."""
    out = []
    for line in lines(name):
        tokens = line.split()
        if tokens and tokens[0].isdigit() and len(tokens) >= 12:
            for i in (-7, -6, -3, -2):
                tokens[i] = f"{float(tokens[i]) * factor:.2f}"
            out.append("  ".join(tokens) + "\n")
        elif "NCCL INFO" not in line or (keep and keep in line):
            out.append(line)
    return out


def _judged(
    text: list[str], fabric: penalty.FabricDescription, op: str | None = None, nodes: int | None = None
) -> judge.Evidence:
    path = "x.txt"
    return bandwidth.judge_tests(t.parse_lines(text, path), fabric, nodes, "aws", op, reader.read_lines(text, path))


def test_the_ofi_provider_line_means_the_fabric_was_used() -> None:
    # 2 x p3dn, NCCL 2.4.8 (awsdocs/aws-deep-learning-amis): 8.9 GB/s busbw with `Selected Provider is efa` in the
    # file. That is EFA at work, however it compares: never "TCP fallback".
    ev = _judged(lines("tests_with_log_p3dn_nccl248.txt"), _p3dn())
    assert ev.job.nccl_lines is not None and ev.job.nccl_lines.fabric_seen == ["`Selected Provider is efa`"]
    assert ev.job.runs[0].verdict == "healthy" and ev.findings == []
    slow = _judged(_scaled("tests_with_log_p3dn_nccl248.txt", 0.3, keep="Provider"), _p3dn())
    (f,) = slow.findings
    assert f.rule == "NCCL211" and "show the fabric in use (`Selected Provider is efa`)" in f.message


def test_low_bandwidth_alone_where_tcp_is_as_fast_is_slower_than_expected() -> None:
    # The same table at TCP level without its NCCL lines: on p3dn the ordinary NIC is as fast as EFA, so the
    # bandwidth cannot tell a fallback from a slow fabric.
    ev = _judged(_scaled("tests_with_log_p3dn_nccl248.txt", 0.3), _p3dn())
    (f,) = ev.findings
    assert (f.rule, ev.job.runs[0].verdict) == ("NCCL211", "slower-than-expected")
    assert "cannot tell a TCP fallback" in f.message


def test_a_socket_line_in_the_file_is_a_fallback_whatever_the_ratio() -> None:
    # 2 x g4dn (aws-samples/aws-do-eks): `Using network Socket` in the file.
    fabric, _ = expect.fabric_from_options("g4dn.8xlarge", None, None, None, None, None, False, None)
    assert fabric is not None
    ev = _judged(lines("tests_with_log_g4dn_socket.txt"), fabric, "all_reduce", nodes=2)
    assert ev.job.nccl_lines is not None and ev.job.nccl_lines.sockets_seen == ["`Using network Socket`"]
    (f,) = [f for f in ev.findings if f.rule == "NCCL210"]
    assert "the NCCL lines in the file say `Using network Socket`" in f.message


# ---------------------------------------------------------------------------------------------- issue 18 item 4


@pytest.mark.parametrize("value", ["99999.00", "1e308", "inf", "nan", "-3.11"])
def test_bandwidth_no_run_measures_is_suspect_never_healthy(value: str) -> None:
    # The healthy 2 x p5 Slurm table with its largest row's busbw damaged.
    text = lines("tests_slurm_label_2x8_p5.txt")
    text[-1] = text[-1].replace("487.09", value, 1)
    fabric, _ = expect.fabric_from_options("p5.48xlarge", None, None, None, None, None, False, None)
    for given in (fabric, None):
        ev = bandwidth.judge_tests(t.parse_lines(text), given, 2 if given else None, "aws")
        (run,) = ev.job.runs
        assert run.verdict == "suspect" and not ev.complete, (value, given)
        assert any("not measurements" in n for n in ev.notes)


def test_the_suspect_ceiling_keeps_real_runs() -> None:
    # Real healthy runs stay under the ceiling: 2 x p5 at 487 GB/s, GB200 over MNNVL reads above its NICs' rate.
    p5, _ = expect.fabric_from_options("p5.48xlarge", None, None, None, None, None, False, None)
    assert bandwidth.ceiling(p5)[0] == 900.0  # twice NVLink's 450 GB/s; the 32 x 100 Gbps EFA carry 400
    gb200, _ = expect.fabric_from_options("p6e-gb200.36xlarge", None, None, None, None, None, False, None)
    assert bandwidth.ceiling(gb200)[0] >= 1800.0
    assert bandwidth.ceiling(None)[0] == bandwidth.PLAUSIBLE_MAX_GBYTES
