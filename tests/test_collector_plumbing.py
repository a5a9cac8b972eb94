"""The plumbing every collector shares: the collector pause, the worker pool, error records, dump reading."""

from __future__ import annotations

import gc
import threading
import time
from pathlib import Path

import pytest

from fabriccheck import flow
from fabriccheck.cli import demo_inventory, demo_plan_inventory
from fabriccheck.errors import FabricCheckError
from fabriccheck.gcpause import paused_gc
from fabriccheck.jsonfiles import read_json
from fabriccheck.providers.aws.dump import load_dump
from fabriccheck.sources.parallel import in_parallel
from fabriccheck.sources.scope import Scope

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "aws"


def test_the_collector_is_paused_only_while_parsing() -> None:
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():  # nested (several regions parsed by several threads) keeps it paused
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    load_dump(DEMO)
    assert gc.isenabled()  # a whole dump read leaves the process as it found it


@pytest.mark.parametrize("inventory", [demo_inventory, demo_plan_inventory], ids=["demo", "demo-plans"])
def test_a_run_leaves_no_reference_cycle_behind(inventory: object) -> None:
    """flow.run pauses the cyclic collector and does not freeze: what a library caller drops of a run is freed at
    once only while a run makes no cycle, which only the collector could free. The demo's every cloud, Kubernetes
    and plans make none."""
    loaded = inventory()  # type: ignore[operator]
    flow.run(loaded, flow.Options())  # once, so that what a first run keeps for the process (caches) is made
    gc.collect()
    report = flow.run(loaded, flow.Options())
    assert report.findings
    del report
    assert gc.collect() == 0
    assert gc.isenabled()


def test_pauses_from_several_threads_end_with_the_last() -> None:
    inside = threading.Barrier(2)
    states: list[bool] = []

    def parse(hold: float) -> None:
        with paused_gc():
            inside.wait()
            time.sleep(hold)
            states.append(gc.isenabled())

    threads = [threading.Thread(target=parse, args=(hold,)) for hold in (0.0, 0.2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert states == [False, False]  # the first to finish did not switch it back on under the other
    assert gc.isenabled()


def test_worker_pool_keeps_order_and_bounds_threads() -> None:
    running: set[int] = set()
    most = 0
    lock = threading.Lock()

    def work(n: int) -> int:
        nonlocal most
        with lock:
            running.add(n)
            most = max(most, len(running))
        time.sleep(0.01)
        with lock:
            running.discard(n)
        return n * n

    assert list(in_parallel(range(20), work, max_workers=3)) == [n * n for n in range(20)]
    assert 1 < most <= 3


def test_error_records_carry_their_scope() -> None:
    scope = Scope("aws", "111122223333", "eu-west-1")
    denied = scope.denied("DescribeSubnets", "UnauthorizedOperation: no", "ec2:DescribeSubnets")
    assert (denied.account, denied.region, denied.code, denied.permission) == (
        "111122223333",
        "eu-west-1",
        "AccessDenied",
        "ec2:DescribeSubnets",
    )
    assert "still throttled" in scope.throttled("DescribeInstances", "RequestLimitExceeded").message
    missing = scope.missing_dump(Path("/d/describe-subnets.json"), "subnets", "aws ec2 describe-subnets")
    assert missing.call == "describe-subnets.json" and "/d/describe-subnets.json is missing" in missing.message


def test_a_bad_dump_file_is_one_line_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "describe-subnets.json"
    bad.write_text("{nope")
    with pytest.raises(FabricCheckError, match=r"describe-subnets.json: not valid JSON") as caught:
        read_json(bad)
    assert "\n" not in str(caught.value)
    with pytest.raises(FabricCheckError, match="cannot read"):
        read_json(tmp_path / "absent.json")
