"""Evidence (issue 28, item 11), each case written in the shape of a public log (the source beside it): NCCL202
only where the failed plugin mattered, `Error: network gIB not found` as NCCL202, nccl-tests tables of a type whose
accelerator the model lacks, an `Avg bus bandwidth` line without `#`, and NCCL_SOCKET_IFNAME=lo where more hosts
will join."""

from __future__ import annotations

import json
from pathlib import Path

from cli_run import run

from fabriccheck.evidence import judge
from fabriccheck.evidence import nccl_log as reader


def _log(tmp_path: Path, text: str) -> reader.Log:
    path = tmp_path / "nccl.log"
    path.write_text(text)
    return reader.read_file(path)


# AI-Hypercomputer/gpu-recipes#5: A3 Ultra serving pods with NCCL_NET=gIB, whose libnccl-net.so needs a newer glibc.
GIB_NOT_FOUND = """\
serve-0:562:562 [5] net.cc:579 NCCL WARN Error: network gIB not found.
serve-0:562:562 [5] NCCL INFO init.cc:321 -> 5
serve-0:565:565 [7] NCCL INFO Bootstrap : Using eth0:10.8.10.18<0>
serve-0:565:565 [7] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)
serve-0:565:565 [7] NCCL INFO NET/Plugin: Plugin load returned 2 : /lib/x86_64-linux-gnu/libc.so.6: version \
`GLIBC_2.32' not found (required by /usr/local/nvidia/lib64/libnccl-net.so) : when loading libnccl-net.so
serve-0:565:565 [7] NCCL INFO NET/Plugin: Using internal network plugin.
"""


def test_a_network_asked_for_and_not_found_is_nccl202_with_the_load_failure(tmp_path: Path) -> None:
    ev = judge.judge_log(_log(tmp_path, GIB_NOT_FOUND))
    [finding] = ev.findings
    assert finding.rule == "NCCL202" and finding.resources == ["serve-0:562"]
    assert "network gIB was asked for and not found" in finding.message and "GLIBC_2.32" in finding.message


# aws/deep-learning-containers#2675: one g5 container, aws-ofi-nccl fails to start, NCCL falls back to sockets on lo.
ONE_CONTAINER = """\
16d2d618f560:123:890 [0] ofi_init:1355 NCCL WARN NET/OFI aws-ofi-nccl initialization failed
16d2d618f560:123:890 [0] NCCL INFO NET/IB : No device found.
16d2d618f560:123:890 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0> [1]eth0:172.17.0.2<0>
16d2d618f560:123:890 [0] NCCL INFO Using network Socket
16d2d618f560:125:125 [2] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>
"""


def test_a_plugin_that_failed_on_one_host_asked_for_nothing_is_a_note(tmp_path: Path) -> None:
    ev = judge.judge_log(_log(tmp_path, ONE_CONTAINER))
    assert ev.findings == []  # no NCCL202, and no NCCL205: nothing shows another host joining
    assert any("network plugin did not start" in n and "not a finding" in n for n in ev.notes)


def test_the_same_failure_in_a_two_host_run_is_nccl202(tmp_path: Path) -> None:
    two = ONE_CONTAINER + ONE_CONTAINER.replace("16d2d618f560", "7c1e0a9b2f44").replace("172.17.0.2", "172.17.0.3")
    rules = [f.rule for f in judge.judge_log(_log(tmp_path, two)).findings]
    assert "NCCL202" in rules and "NCCL205" in rules


# NVIDIA/nccl#1053 (one host, NCCL_SOCKET_IFNAME=lo) and NCCL 2.18's `ncclCommInitRank ... rank R nranks N` line
# (the rccl/nccl Init START line, as sglang#3398 prints it).
LO_ONE_HOST = """\
axa:3048391:3048566 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to lo
axa:3048391:3048566 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>
axa:3048391:3048566 [0] NCCL INFO Using network Socket
"""
INIT_RANK = (
    "axa:3048391:3048566 [0] NCCL INFO ncclCommInitRank comm 0x559ee41b2b50 rank 0 nranks {n} cudaDev 0 nvmlDev 0 "
    "busId 18000 commId 0xfc552889eb5339ed - Init START\n"
)


def test_lo_is_flagged_where_more_ranks_than_one_host_holds_will_join(tmp_path: Path) -> None:
    assert judge.judge_log(_log(tmp_path, LO_ONE_HOST)).findings == []
    assert judge.judge_log(_log(tmp_path, LO_ONE_HOST + INIT_RANK.format(n=8))).findings == []  # fits one host
    ev = judge.judge_log(_log(tmp_path, LO_ONE_HOST + INIT_RANK.format(n=32)))  # no host holds 32 GPUs
    assert "NCCL205" in [f.rule for f in ev.findings]


# dstackai/dstack mkdocs/docs/examples/clusters/gcp.md: nccl-tests output printed without its `#` marks.
DSTACK_TABLE = """\
    nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 \
validation: 1 graph: 0
          size         count      type   redop    root     time   algbw   busbw  wrong     time   algbw   busbw  wrong
           (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
    4294967296    1073741824     float     sum      -1    11952  359.36  673.79      0    11942  359.65  674.34      0
    8589934592    2147483648     float     sum      -1    23563  364.55  683.52      0    23702  362.42  679.54      0
    Out of bounds values : 0 OK
    Avg bus bandwidth    : 677.12
"""


def test_an_average_line_without_its_hash_is_read(tmp_path: Path) -> None:
    path = tmp_path / "dstack.txt"
    path.write_text(DSTACK_TABLE)
    report = json.loads(run("nccl-tests", str(path), "-f", "json").stdout)
    [found] = report["clusters"][0]["evidence"]["runs"]
    assert found["avg_busbw_gbytes_per_s"] == 677.12 and found["complete"] is True
    assert not any("no `# Avg bus bandwidth` line" in n for n in report["notes"])


# gnosia93/slurm-on-aws lesson/4-nccl-test.md: 2 x g7e.8xlarge (1 RTX PRO 6000 Blackwell each, 1 x 100 Gbps EFA,
# "GDR not supported"), all_reduce at ~12.4 GB/s. The accelerator ("RTX PRO Server 6000" in DescribeInstanceTypes)
# has its row in the model's table since issue 32 item 5.
def _g7e_table(busbw: float) -> str:
    head = (
        "# Collective test starting: all_reduce_perf\n"
        "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20\n"
        "#  Rank  0 Group  0 Pid  78499 on gpu-st-ml-1 device  0 [0000:30:00] NVIDIA RTX PRO 6000 Blackwell Server "
        "Edition\n"
        "#  Rank  1 Group  0 Pid  77729 on gpu-st-ml-2 device  0 [0000:30:00] NVIDIA RTX PRO 6000 Blackwell Server "
        "Edition\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
        "#wrong\n"
    )
    rows = "".join(
        f"  {size:>10}  {size // 4:>12}     float     sum      -1    86786  {busbw:6.2f}  {busbw:6.2f}      0    "
        f"86676  {busbw:6.2f}  {busbw:6.2f}      0\n"
        for size in (268435456, 536870912, 1073741824)
    )
    return head + rows + f"# Out of bounds values : 0 OK\n# Avg bus bandwidth    : {busbw}\n"


def test_g7e_is_judged_by_the_model_now_its_accelerator_has_figures(tmp_path: Path) -> None:
    """The published run is healthy and a TCP-level one is not, judged by the penalty model (no line-rate note)."""
    path = tmp_path / "g7e.txt"
    path.write_text(_g7e_table(12.37))
    result = run("nccl-tests", str(path), "--instance-type", "g7e.8xlarge", "--nodes", "2", "-f", "json")
    report = json.loads(result.stdout)
    assert result.returncode == 0 and report["complete"] is True
    [judged] = report["clusters"][0]["evidence"]["runs"]
    assert judged["verdict"] == "healthy"
    assert not any("published line rate" in n for n in report["notes"])
    slow = tmp_path / "slow.txt"
    slow.write_text(_g7e_table(1.1))  # TCP-level: the line rate says so
    assert json.loads(
        run("nccl-tests", str(slow), "--instance-type", "g7e.8xlarge", "--nodes", "2", "-f", "json").stdout
    )["findings"]


def test_one_gpu_a_node_without_the_accelerators_figures_is_judged_by_the_line_rate_alone(tmp_path: Path) -> None:
    """A custom fabric of one MI355X a node (no sourced dense peak or Infinity Fabric figure, so no model expectation)
    on one 400 Gbps RoCE NIC: the run is held to the NIC's line rate x RoCE's efficiency, and a note says so; a run
    at socket speed is flagged (g7e was this path's example until its GPU got figures)."""
    fabric = ("--gpu", "MI355X", "--gpus-per-node", "1", "--nics", "1", "--nic-gbps", "400", "--transport", "roce")
    path = tmp_path / "mi355x.txt"
    path.write_text(_g7e_table(45.0))
    report = json.loads(run("nccl-tests", str(path), *fabric, "--nodes", "2", "-f", "json").stdout)
    [judged] = report["clusters"][0]["evidence"]["runs"]
    assert judged["verdict"] == "healthy"
    [note] = [n for n in report["notes"] if "published line rate alone" in n]
    assert "(400 Gbps: " in note and "MI355X" in note
    path.write_text(_g7e_table(1.1))
    slow = json.loads(run("nccl-tests", str(path), *fabric, "--nodes", "2", "-f", "json").stdout)
    assert slow["clusters"][0]["evidence"]["runs"][0]["verdict"] != "healthy" and slow["findings"]


def test_a_fabric_fact_the_tables_lack_reads_as_not_known_in_text(tmp_path: Path) -> None:
    """g7e's GPUDirect RDMA is in no table (None): the text report says so in words, never "None"."""
    path = tmp_path / "g7e.txt"
    path.write_text(_g7e_table(12.37))
    result = run("nccl-tests", str(path), "--instance-type", "g7e.8xlarge", "--nodes", "2")
    assert result.returncode == 0, result.stderr
    assert "GPUDirect RDMA not known" in result.stdout and "None" not in result.stdout
