"""NCCL_DEBUG=INFO logs (real excerpts under tests/fixtures/nccl/, sources in SOURCES.md) and their findings."""

from __future__ import annotations

import itertools
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabriccheck.errors import FabricCheckError
from fabriccheck.evidence import judge
from fabriccheck.evidence import nccl_log as reader

FIXTURES = Path(__file__).parent / "fixtures" / "nccl"


def lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text().splitlines(keepends=True)


def read(name: str) -> reader.Log:
    return reader.read_file(FIXTURES / name)


def rules(name: str, text: list[str] | None = None) -> list[str]:
    log = reader.read_lines(text if text is not None else lines(name), name)
    return [f.rule for f in judge.judge_log(log).findings]


def test_ofi_efa_ranks_versions_and_provider() -> None:
    log = read("log_ofi_efa_2.10.3.txt")
    first = log.processes[("algo-1", "462")]
    assert first.version == "2.10.3+cuda11.3"  # printed alone, right after this process's lines
    assert list(first.networks) == ["AWS Libfabric"] and first.transport_family == "ofi"
    assert first.ofi_provider == "efa" and "aws-ofi-nccl 1.3.0aws" in first.plugin_loaded
    assert len(log.processes) == 4 and log.nodes == 1
    ev = judge.judge_log(log)
    assert ev.provider == "aws" and ev.findings == []
    assert any("one host" in n for n in ev.notes)


def test_newer_ofi_network_name_and_nic_count() -> None:
    log = read("log_ofi_p5en_nics.txt")
    assert log.processes[("8h200-2", "6831")].transport == "Libfabric"
    assert log.processes[("8h200-3", "6310")].ofi_nics == 16
    assert log.nodes == 2 and judge.judge_log(log).provider == "aws"


def test_ib_2_4_healthy_with_a_harmless_missing_plugin() -> None:
    log = read("log_ib_2.4.7_two_hosts.txt")
    master = log.processes[("master_node", "20")]
    assert master.ib_nics == {"mlx5_0:1/IB": None} and master.inferred_transport == "IB"
    assert master.env == {"NCCL_IB_DISABLE": "0"} and master.plugin_missing
    assert master.version == "2.4.7+cuda10.0" and log.nodes == 2
    assert judge.judge_log(log).findings == []  # "No plugin found (libnccl-net.so)" alone is harmless


def test_gdrdma_channels_are_gpudirect_on() -> None:
    proc = read("log_ib_gdrdma_channels.txt").processes[("10-90-43-152", "120890")]
    assert proc.channels == {"IB": 12} and proc.channels_gdr == 12 and proc.gdr is True
    assert rules("log_ib_gdrdma_channels.txt") == []


def test_gpudirect_disabled_lines_and_channels_without_gdrdma() -> None:
    log = read("log_ib_no_module_channels.txt")
    assert all(p.gdr is False for p in log.processes.values())
    ev = judge.judge_log(log)
    (f,) = ev.findings
    assert (f.rule, f.category, f.effect) == ("NCCL204", "fabric-partial", "gpudirect-off")
    assert sorted(f.resources) == ["21346d5cefce:5325", "6a5a91752e39:74352"]
    # RoCE with `GPU Direct RDMA Disabled for HCA`: off, but the excerpt shows one host only (not judged)
    roce = read("log_roce_gdr_disabled.txt").processes[("hostname1", "25668")]
    assert roce.gdr is False and roce.ib_nics == {"mlx5_0:1/RoCE": None, "mlx5_1:1/RoCE": None}
    assert roce.nranks == 16 and 0 in roce.ranks


def test_socket_fallback_between_two_machines_of_the_same_name() -> None:
    log = read("log_socket_no_verbs_2.18.txt")
    assert log.hosts == ["ubuntu"] and log.nodes == 2  # told apart by address (10.0.0.2, 10.0.0.1)
    assert log.versions == ["2.18.3+cuda12.2"]
    ev = judge.judge_log(log)
    (f,) = ev.findings
    assert f.rule == "NCCL201" and f.effect == "tcp-fallback"
    assert "libibverbs not found" in f.message and "libnccl-net.so" not in f.message  # no plugin was wanted


def test_old_socket_log_without_a_network_line() -> None:
    log = read("log_socket_aws_2.4.7.txt")
    proc = log.processes[("ip-172-31-10-182", "45407")]
    assert proc.no_ib_device and proc.inferred_transport == "Socket"
    assert log.nodes == 6 and rules("log_socket_aws_2.4.7.txt") == ["NCCL201"]


def test_socket_channels_behind_a_loaded_ibext_plugin() -> None:
    log = read("log_socket_channels_ibext.txt")
    assert log.processes[("<cluster_name>", "926")].channels == {"Socket": 2}
    assert rules("log_socket_channels_ibext.txt") == ["NCCL201"]


def test_ranks_on_different_networks() -> None:
    log = read("log_mixed_networks.txt")
    assert log.processes[("x0", "26431")].no_verbs  # a WARN line naming misc/ibvwrap.cc:63
    assert rules("log_mixed_networks.txt") == ["NCCL206", "NCCL201"]


def test_efa_plugin_without_a_device_behind_cloudwatch_prefixes() -> None:
    log = read("log_ofi_efa_missing_cloudwatch.txt")
    proc = log.processes[("ip-10-36-29-253", "79")]
    assert proc.env == {"NCCL_SOCKET_IFNAME": "eth0"} and proc.bootstrap == "eth0"
    assert log.versions == ["2.21.5+cuda12.8"]
    assert log.libfabric_failures and " | " not in log.libfabric_failures[0]
    ev = judge.judge_log(log)
    # One host, no network asked for by name: the plugin that did not start carried nothing (issue 28, item 11).
    assert ev.findings == [] and ev.provider == "aws"
    assert any("not a finding" in n and "network plugin did not start" in n for n in ev.notes)
    # Asked for by name (NCCL_NET=AWS Libfabric), its failure is the run's: NCCL202 with the libfabric cause.
    proc.env["NCCL_NET"] = "AWS Libfabric"
    asked = judge.judge_log(log)
    assert [f.rule for f in asked.findings] == ["NCCL202"]
    assert "provider efa output empty list" in asked.findings[0].message


def test_ofi_gdr_off_without_host_prefixes() -> None:
    log = read("log_ofi_gdr_off_no_host.txt")
    (proc,) = log.processes.values()
    assert proc.key == "?:?" and proc.ofi_gdr_off and proc.gdr is False
    assert proc.ranks == {0, 1} and proc.nranks == 2


def test_fastsocket_plugin_and_version_as_an_info_line() -> None:
    proc = read("log_fastsocket_2.20.5.txt").processes[("nathan-h100-1", "14492")]
    assert proc.version == "2.20.5+cuda12.4" and "FastSocket" in proc.plugin_loaded
    assert not proc.plugin_missing  # "Failed to find ncclNetPlugin_v8 symbol" is only version probing
    assert judge.judge_log(read("log_fastsocket_2.20.5.txt")).provider == "gcp"


def test_ibext_channels_env_and_nested_nic_lists() -> None:
    log = read("log_ib_disable_ignored_ibext.txt")
    proc = log.processes[("bigo", "1884")]
    assert proc.transport == "IBext_v8" and proc.transport_family == "ib"
    assert list(proc.ib_nics) == ["mlx5_2:1/RoCE", "mlx5_3:1/RoCE", "mlx5_0:1/RoCE", "mlx5_1:1/RoCE"]
    assert proc.nnodes == 3 and log.nodes == 3 and proc.env["NCCL_P2P_LEVEL"] == "LOC"
    bond = read("log_ibext_bond_ifname.txt").processes[("hostname-test", "984")]
    assert bond.env["NCCL_SOCKET_IFNAME"] == "bond0"


def test_launcher_prefixes_and_blank_lines() -> None:
    log = read("log_plugin_missing_azure_pdsh.txt")
    assert set(log.hosts) == {"MLVM2", "MLVM"}
    assert log.processes[("MLVM2", "10792")].bootstrap == "ibP257s464513"
    assert judge.judge_log(log).findings == []  # no plugin wanted, no transport shown: nothing to say
    env = read("log_socket_ifname_en_ibext_disabled.txt").processes[("gpu01", "351578")].env
    assert env == {"NCCL_SOCKET_IFNAME": "en", "NCCL_IBEXT_DISABLE": "1"}


def test_ib_disable_and_local_interfaces_from_real_lines_with_other_values() -> None:
    # The real nv_peer_memory#56 lines with NCCL_IB_DISABLE=1 instead of 0 and without the IB NIC line: what
    # NCCL 2.4 prints when IB is disabled (it then uses the socket interface it names).
    text = [
        line.replace("to 0.", "to 1.") for line in lines("log_ib_2.4.7_two_hosts.txt") if "NET/IB : Using" not in line
    ]
    text.append("master_node:20:289 [0] NCCL INFO NET/IB : No device found.\n")
    assert rules("x", text) == ["NCCL201", "NCCL203"]
    docker = [line.replace("ens4", "docker0") for line in lines("log_socket_no_verbs_2.18.txt")]
    assert rules("x", docker) == ["NCCL201", "NCCL205"]


def test_interleaved_logs_read_as_each_alone() -> None:
    a, b = lines("log_ib_no_module_channels.txt"), lines("log_socket_no_verbs_2.18.txt")
    mixed = [x for pair in itertools.zip_longest(a, b) for x in pair if x is not None]
    both = reader.read_lines(mixed)
    for name in ("log_ib_no_module_channels.txt", "log_socket_no_verbs_2.18.txt"):
        alone = read(name)
        for key, proc in alone.processes.items():
            other = both.processes[key]
            assert (other.channels, other.networks, other.gdr, other.env) == (
                proc.channels, proc.networks, proc.gdr, proc.env,
            )  # fmt: skip


def test_truncated_log_is_noted(tmp_path: Path) -> None:
    text = (FIXTURES / "log_ib_no_module_channels.txt").read_text()
    path = tmp_path / "cut.log"
    path.write_text(text[: len(text) // 2 + 7])
    log = reader.read_file(path)
    assert log.ends_mid_line
    assert any("cut short" in n for n in judge.judge_log(log).notes)


@pytest.mark.parametrize("content", [b"", b"hello\n", b"\xff\xfe\x00garbage", b"NCCL version 2.18.3\n"])
def test_no_nccl_lines_is_one_clear_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.log"
    path.write_bytes(content)
    with pytest.raises(FabricCheckError, match=r"bad\.log: no NCCL log lines"):
        reader.read_file(path)


def _synthetic(n: int) -> Iterator[str]:
    shapes = lines("log_ib_no_module_channels.txt") + lines("log_socket_no_verbs_2.18.txt")
    for i in range(n):
        yield shapes[i % len(shapes)]


def test_memory_does_not_grow_with_the_log() -> None:
    def peak(n: int) -> int:
        tracemalloc.start()
        reader.read_lines(_synthetic(n))
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    small, large = peak(5_000), peak(50_000)
    assert large < small * 1.5 + 64_000, (small, large)


def _facts(log: reader.Log) -> dict[tuple[str, str], tuple[object, ...]]:
    return {
        key: (p.version, dict(p.channels), p.channels_gdr, list(p.networks), p.gdr, p.env, p.ranks, p.nranks,
              list(p.ib_nics), list(p.socket_nics), p.bootstrap, p.address, p.plugin_failures, p.warnings)
        for key, p in log.processes.items()
    }  # fmt: skip


@pytest.mark.parametrize("block", [7, 64, 4096])
def test_block_reading_agrees_with_line_reading(block: int) -> None:
    # read_file counts repeated (process, message) pairs per block; it must say what line-by-line reading says.
    for path in sorted(FIXTURES.glob("log_*.txt")):
        text = path.read_text()
        by_line = reader.read_lines(text.splitlines(keepends=True))
        by_block = reader.read_chunks([text[i : i + block] for i in range(0, len(text), block)])
        assert _facts(by_block) == _facts(by_line), path.name
        assert (by_block.lines, by_block.nccl_lines, by_block.versions) == (
            by_line.lines, by_line.nccl_lines, by_line.versions,
        ), path.name  # fmt: skip
        assert [f.rule for f in judge.judge_log(by_block).findings] == [
            f.rule for f in judge.judge_log(by_line).findings
        ]


def test_mpi_tagged_log_reads_as_the_untagged_one() -> None:
    # Open MPI --tag-output puts `[1,rank]<stdout>:` before NCCL's own prefix; blocks drop it in one pass.
    for name in ("log_ib_no_module_channels.txt", "log_socket_no_verbs_2.18.txt", "log_ofi_efa_2.10.3.txt"):
        plain = lines(name)
        tagged = "".join(f"[1,{i % 4}]<stdout>:{line}" for i, line in enumerate(plain))
        assert _facts(reader.read_chunks([tagged])) == _facts(reader.read_lines(plain)), name
        assert _facts(reader.read_lines(tagged.splitlines(keepends=True))) == _facts(reader.read_lines(plain)), name


# ---------------------------------------------------------------------------------------------- issue 17 item 19


def test_ofi_channels_name_a_network_with_a_space() -> None:
    # `via NET/AWS Libfabric/1/GDRDMA` (2 x p4d, aws-samples/aws-efa-eks): the OFI family with GPUDirect RDMA on,
    # not a network called "AWS" of family "other" with GPUDirect off.
    log = read("log_ofi_libfabric_gdrdma_channels_p4d.txt")
    proc = log.processes[("nccl-tests-efa-16-worker-0", "26")]
    assert proc.channels == {"AWS Libfabric": 2} and proc.channels_gdr == 2 and proc.gdr is True
    assert proc.transport_family == "ofi"
    ev = judge.judge_log(log)
    assert ev.provider == "aws" and ev.findings == [] and ev.complete


def test_ofi_channels_without_gdrdma_are_the_ofi_family() -> None:
    # 2 x g4dn.metal (aws-ia/terraform-aws-eks-blueprints): `via NET/AWS Libfabric/0`, no /GDRDMA. GPUDirect RDMA is
    # off; the finding says EFA has none on such types.
    log = read("tests_with_log_g4dnmetal_efa.txt")
    assert {p.transport_family for p in log.processes.values()} == {"ofi"}
    assert all(p.gdr is False for p in log.processes.values())
    (f,) = judge.judge_log(log).findings
    assert f.rule == "NCCL204" and "EFA on p3dn, g5 and the other g types has none" in f.message
    # The type the user names (nccl-tests --instance-type) settles it where the catalog says the EFA has no GDR.
    ev = judge.judge_log(log, instance_type="g5.48xlarge")
    assert ev.findings == [] and any("expected, not a finding" in n for n in ev.notes)


def test_gpudirect_off_where_the_provider_says_it_has_none_is_no_finding() -> None:
    # 4 x g6e.48xlarge (gnosia93/training-on-eks): aws-ofi-nccl 1.16 says `GDR not supported` and names the
    # platform; GPUDirect RDMA is off by design there, which is a note, not a warning.
    log = read("log_ofi_gdr_not_supported_g6e48x.txt")
    (proc,) = log.processes.values()
    assert (proc.ofi_provider, proc.ofi_nics, proc.ofi_platform) == ("efa", 4, "g6e.48xlarge")
    assert proc.gdr_unsupported and proc.gdr is False and proc.transport_family == "ofi"
    ev = judge.judge_log(log)
    assert ev.findings == [] and any("on g6e.48xlarge" in n and "expected" in n for n in ev.notes)
    # Without that line the same log is a warning (g6e's catalog row does not say it lacks GPUDirect RDMA).
    said = reader.read_lines(
        [line for line in lines("log_ofi_gdr_not_supported_g6e48x.txt") if "not supported" not in line]
    )
    assert [f.rule for f in judge.judge_log(said).findings] == ["NCCL204"]


def test_nccl_2_4_with_only_the_ofi_provider_line() -> None:
    # NCCL 2.4.8 with aws-ofi-nccl on 2 x p3dn (awsdocs/aws-deep-learning-amis): `NET/OFI Selected Provider is efa`,
    # no `Using network`, no channel lines. The provider says the plugin runs: the transport is OFI.
    log = read("tests_with_log_p3dn_nccl248.txt")
    proc = log.processes[("ip-172-31-41-105", "3801")]
    assert proc.ofi_provider == "efa" and proc.inferred_transport == "OFI" and proc.transport_family == "ofi"
    assert proc.version == "2.4.8+cuda10.0" and log.nodes == 2
    ev = judge.judge_log(log)
    assert ev.provider == "aws" and ev.complete and ev.findings == []


def test_nccl_2_4_ring_lines_give_transport_channels_and_gdr() -> None:
    # Mellanox/nv_peer_memory#56: `Ring 00 : 6 -> 2 [send] via NET/IB/0` with GDR disabled by distance.
    log = read("log_ring_lines_2.4_ib_no_gdr.txt")
    proc = log.processes[("secondary_node", "11791")]
    assert proc.channels == {"IB": 2} and proc.gdr is False and proc.transport_family == "ib"
    assert rules("log_ring_lines_2.4_ib_no_gdr.txt") == ["NCCL204"]
    # NVIDIA/nccl#385 (lines numbered by the author, no host): `[send] via NET/IB/1/GDRDMA`.
    (numbered,) = read("log_ring_lines_2.4_gdrdma_numbered.txt").processes.values()
    assert numbered.channels == {"IB": 2} and numbered.channels_gdr == 2 and numbered.gdr is True
    assert rules("log_ring_lines_2.4_gdrdma_numbered.txt") == []
    # NVIDIA/nccl#226: `Ring 00 : 43 -> 44 [receive] via NET/Socket/0` on AWS hosts.
    assert rules("log_ring_lines_2.4_socket.txt") == ["NCCL201"]


def test_aws_ofi_cpp_warn_lines_are_plugin_failures_with_their_cause() -> None:
    # aws-ofi-nccl 1.16 on g6e without an EFA device (gnosia93/training-on-eks): `NET/OFI No eligible providers
    # were found`, then WARN lines with a timestamp and a C++ signature before NCCL's level word.
    text = lines("log_ofi_init_failed_cpp_warn_g6e.txt")
    log = reader.read_lines(text)
    (proc,) = log.processes.values()
    assert proc.warnings == 3 and proc.plugin_failures[0] == "NET/OFI No eligible providers were found"
    ev = judge.judge_log(log)
    assert ev.provider == "aws" and [f.rule for f in ev.findings] == ["NCCL201", "NCCL202"]
    socket, plugin = ev.findings
    assert "no EFA device is visible" in plugin.message and "No eligible providers" in plugin.message
    assert "network plugin failed: no usable libfabric provider" in socket.message
    assert "InfiniBand" not in socket.message  # that NCCL then found no IB device is a consequence, not a cause
    # The WARN lines alone (the INFO line left out) are the failure: the protocols could not start.
    warn_only = reader.read_lines([line for line in text if "No eligible" not in line])
    (f,) = [f for f in judge.judge_log(warn_only).findings if f.rule == "NCCL202"]
    assert "could start neither of its protocols" in f.message and "Unable to find a protocol" in f.message


def test_aws_ofi_on_libfabric_verbs_is_not_aws() -> None:
    # On-premises RoCE (devopsrustem/slurmv4): aws-ofi-nccl 1.6.0 loads on `verbs;ofi_rxm`, then NCCL uses IB.
    log = read("log_ofi_verbs_provider_ib_roce.txt")
    (proc,) = log.processes.values()
    assert proc.ofi_provider == "verbs;ofi_rxm" and proc.ofi_nics == 58 and proc.transport == "IB"
    assert "AWS Libfabric" in proc.plugin_loaded and proc.gdr is True
    ev = judge.judge_log(log)
    assert ev.provider == "unknown" and ev.findings == []


def test_an_ofi_plugin_on_libfabric_tcp_is_sockets() -> None:
    # The same real lines with the provider libfabric falls back to when no fabric provider is there (`tcp`).
    text = [line.replace("verbs;ofi_rxm", "tcp;ofi_rxm").replace("Using network IB", "Using network AWS Libfabric")
            for line in lines("log_ofi_verbs_provider_ib_roce.txt") if "via NET/IB" not in line]  # fmt: skip
    (f,) = judge.judge_log(reader.read_lines(text)).findings
    assert f.rule == "NCCL201" and "libfabric's TCP provider" in f.message and "tcp;ofi_rxm" in f.message


# ---------------------------------------------------------------------------------------------- issue 18 item 4


def test_a_multi_node_log_that_never_names_its_transport_is_not_judged() -> None:
    # Two hosts (MLVM, MLVM2: NVIDIA/nccl#1059) and no `Using network` line: it cannot pass as "no findings".
    ev = judge.judge_log(read("log_plugin_missing_azure_pdsh.txt"))
    assert not ev.complete and ev.findings == []
    assert any("not which network NCCL used" in n for n in ev.notes)
    # A log cut before any transport line: the 2 x p3dn run's first lines only.
    cut = [line for line in lines("tests_with_log_p3dn_nccl248.txt") if "NET/OFI" not in line]
    ev = judge.judge_log(reader.read_lines(cut))
    assert not ev.complete and ev.job.log is not None and ev.job.log.nodes == 2
    # One host, and no transport: nothing inter-node to judge, which is complete.
    assert judge.judge_log(read("log_ofi_efa_missing_cloudwatch.txt")).complete
