"""GCP firewall rules read as what they allow: ports and port ranges of every protocol item, priorities and deny
rules, on the shapes the Compute API stores and gcloud prints.

Real shapes: Cluster Toolkit's `modules/network/vpc` internal rule (GoogleCloudPlatform/cluster-toolkit
@0056cb4d329df2a33c6bf538b964026cafd67f2f:modules/network/vpc/main.tf: allow tcp ports ["0-65535"], udp ports
["0-65535"], icmp, from the network's address range), which Google's GPUDirect-TCPX/TCPXO pages create with
`gcloud compute firewall-rules create --rules=tcp:0-65535,udp:0-65535,icmp`; the default network's
`default-allow-internal` as the API recorded it (forseti-security/forseti-security
@9069bfb04e818e51f484d860a249de0d578d4cf3:tests/services/inventory/test_data/mock_gcp_results.py, GCE_FIREWALL_
TEMPLATE_DEFAULT: udp and tcp ports ["1-65535"], icmp, from 10.0.0.0/8) and its SSH rule (tcp ports ["22"]).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_run import run

from fabriccheck.builders.demo_gcp import Project, build
from fabriccheck.errors import FabricCheckError
from fabriccheck.providers.gcp.dump import load_dump
from fabriccheck.providers.gcp.firewall import port_mask, port_ranges, tcp_reach
from fabriccheck.resources.gcp import FirewallRule

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo" / "gcp"
CIDR = "10.10.0.0/16"


def rule(**fields: object) -> FirewallRule:
    return FirewallRule.model_validate({"account": "p", "region": "global", "name": "r", **fields})


def test_every_port_is_every_port_however_written() -> None:
    for entries in (["tcp:0-65535"], ["tcp:1-65535"], ["tcp"], ["all"], ["6:0-65535"], ["tcp:0-999", "tcp:1000-65535"]):
        assert tcp_reach([rule(entries=entries, source_ranges=[CIDR])], CIDR).verdict == "ok", entries
    # Ranges in two rules join as well.
    low, high = (
        rule(entries=["tcp:1-32767"], source_ranges=[CIDR]),
        rule(entries=["tcp:32768-65535"], source_ranges=[CIDR]),
    )
    assert tcp_reach([low, high], CIDR).verdict == "ok"


def test_some_ports_are_partial_and_say_which() -> None:
    ssh = tcp_reach([rule(entries=["tcp:22"], source_ranges=["0.0.0.0/0"])], CIDR)
    assert (ssh.verdict, ssh.detail) == ("partial", "TCP ports 22 only")
    some = tcp_reach([rule(entries=["tcp:22", "tcp:8000-9000", "udp:0-65535"], source_ranges=[CIDR])], CIDR)
    assert some.detail == "TCP ports 22, 8000-9000 only"
    assert tcp_reach([rule(entries=["udp:0-65535", "icmp"], source_ranges=[CIDR])], CIDR).verdict == "missing"
    many = port_ranges(port_mask([f"tcp:{p}" for p in range(100, 120, 2)]))
    assert many == "100, 102, 104, 106, 108, 110 and 4 more ranges"


def test_rules_that_do_not_apply_count_for_nothing() -> None:
    assert tcp_reach([rule(entries=["all"], source_tags=["gpu"])], CIDR).verdict == "ok"  # the instances themselves
    for fields in (
        {"source_ranges": ["10.20.0.0/16"]},
        {"source_ranges": [CIDR], "direction": "EGRESS"},
        {"source_ranges": [CIDR], "disabled": True},
        {"source_ranges": [CIDR], "action": "deny"},
    ):
        assert tcp_reach([rule(entries=["all"], **fields)], CIDR).verdict == "missing", fields
    # The subnet's range unknown: a private or open source range is taken as internal.
    assert tcp_reach([rule(entries=["all"], source_ranges=["172.16.0.0/12"])], None).verdict == "ok"
    assert tcp_reach([rule(entries=["all"], source_ranges=["35.235.240.0/20"])], None).verdict == "missing"


def test_a_deny_rule_takes_back_the_ports_it_names_where_it_comes_first() -> None:
    allow = rule(entries=["tcp:0-65535"], source_ranges=[CIDR], priority=1000)
    deny = rule(entries=["tcp:1024-65535"], source_ranges=["0.0.0.0/0"], action="deny", priority=900)
    assert tcp_reach([allow, deny], CIDR).detail == "TCP ports 1-1023 only"
    assert tcp_reach([allow, deny.model_copy(update={"priority": 1000})], CIDR).verdict == "partial"  # deny wins ties
    assert tcp_reach([allow, deny.model_copy(update={"priority": 1001})], CIDR).verdict == "ok"
    assert tcp_reach([allow, deny.model_copy(update={"entries": ["udp"]})], CIDR).verdict == "ok"
    assert tcp_reach([allow, deny.model_copy(update={"entries": ["all"]})], CIDR).verdict == "missing"


def test_an_inventory_saved_before_ports_were_kept_is_unknown_where_it_listed_ports() -> None:
    assert tcp_reach([rule(protocols=["tcp", "udp"], all_ports=True, source_ranges=[CIDR])], CIDR).verdict == "ok"
    legacy = tcp_reach([rule(protocols=["tcp"], all_ports=False, source_ranges=[CIDR])], CIDR)
    assert legacy.verdict == "unknown" and "saved without its ports" in legacy.detail


@pytest.mark.parametrize("entry", ["tcp:70000", "tcp:90-80", "tcp:22,80", "TCP 22"])
def test_an_entry_that_is_no_protocol_and_port_is_refused(entry: str) -> None:
    with pytest.raises(ValueError, match="is not PROTOCOL or PROTOCOL:PORT"):
        rule(entries=[entry])


def _dump_with(tmp_path: Path, network: str, allowed: list[dict[str, Any]], sources: list[str]) -> Path:
    """The demo project whose GPU network `network` has only the rule `allowed` from `sources`."""
    project = Project()
    build(project)
    project.firewalls = [f for f in project.firewalls if not f["network"].endswith(f"/networks/{network}")]
    project.firewall(network, f"{network}-rule", allowed, sources)
    folder = tmp_path / "dump"
    project.write(folder)
    return folder


def _gcp110(folder: Path) -> list[dict[str, Any]]:
    report = json.loads(run("gcp", "--from-dump", str(folder), "-f", "json").stdout)
    return [f for f in report["findings"] if f["rule"] == "GCP110"]


def test_the_correct_a3_high_cluster_with_ports_as_gcloud_writes_them_is_clean() -> None:
    """The demo's GPU networks carry the Cluster Toolkit rule with ports ["0-65535"]: no false GCP110."""
    rules = json.loads((DEMO / "firewall-rules-list.json").read_text())
    internal = next(r for r in rules if r["name"] == "a3-gpu-0-allow-internal-traffic")
    assert internal["allowed"][0] == {"IPProtocol": "tcp", "ports": ["0-65535"]}
    assert _gcp110(DEMO) == []
    report = json.loads(run("gcp", "--from-dump", str(DEMO), "-f", "json").stdout)
    [cluster] = [c for c in report["clusters"] if c["id"].endswith("/a3-high")]
    assert cluster["status"] == "clean"


def test_the_default_networks_internal_rule_with_ports_1_65535_allows_every_port(tmp_path: Path) -> None:
    allowed: list[dict[str, Any]] = [
        {"IPProtocol": "udp", "ports": ["1-65535"]},
        {"IPProtocol": "tcp", "ports": ["1-65535"]},
        {"IPProtocol": "icmp"},
    ]
    assert _gcp110(_dump_with(tmp_path, "a3-gpu-2", allowed, ["10.0.0.0/8"])) == []


def test_a_gpu_network_open_on_some_ports_only_is_an_error_naming_them(tmp_path: Path) -> None:
    allowed: list[dict[str, Any]] = [{"IPProtocol": "tcp", "ports": ["22", "8000-9000"]}, {"IPProtocol": "icmp"}]
    findings = _gcp110(_dump_with(tmp_path, "a3-gpu-2", allowed, ["10.102.0.0/16"]))
    assert {f["cluster"].rsplit("/", 1)[-1] for f in findings} == {"a3-high", "a3loose"}
    assert "a3-gpu-2 (TCP ports 22, 8000-9000 only)" in findings[0]["message"]


def test_a_port_that_is_no_port_in_a_dump_is_one_line(tmp_path: Path) -> None:
    shutil.copytree(DEMO, tmp_path / "d")
    rules = json.loads((tmp_path / "d" / "firewall-rules-list.json").read_text())
    rules[1]["allowed"][0]["ports"] = ["0-99999"]
    (tmp_path / "d" / "firewall-rules-list.json").write_text(json.dumps(rules))
    with pytest.raises(FabricCheckError, match=r"firewall-rules-list.json.*is not PROTOCOL or PROTOCOL:PORT"):
        load_dump(tmp_path / "d")
