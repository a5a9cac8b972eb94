"""The fleet plumbing every collector shares: token buckets pace calls, call counts tell retries apart, and the
progress tally counts scopes and nodes."""

from __future__ import annotations

import threading

import pytest

from fabriccheck.sources.fleet import CallCount, Rate, RateLimits, Tally, TokenBucket, scope_status


class MadeUpTime:
    """A clock that moves only when the bucket sleeps: the waits are exact, whatever else the machine is doing."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_a_token_bucket_lets_a_burst_through_then_paces_at_its_rate() -> None:
    time = MadeUpTime()
    bucket = TokenBucket(Rate(per_second=50.0, burst=5, source="test"), time.clock, time.sleep)
    assert [bucket.take() for _ in range(5)] == [0.0] * 5 and time.now == 0.0  # the burst
    waits = [bucket.take() for _ in range(10)]
    assert waits == [pytest.approx(1 / 50.0)] * 10  # ten more at 50 a second, each one a fiftieth of a second
    assert time.now == pytest.approx(10 / 50.0) and time.slept == waits
    time.now += 1.0  # a second idle refills the burst, no more
    assert [bucket.take() for _ in range(6)] == [0.0] * 5 + [pytest.approx(1 / 50.0)]


def test_threads_share_one_bucket_per_domain_and_domains_do_not_share() -> None:
    """Twelve calls from three threads at one instant: each reserves the next slot of the one bucket, whichever
    thread made it (the clock stands still, so every wait is the slot's own)."""
    limits = RateLimits({"ec2": Rate(per_second=40.0, burst=1, source="test")}, lambda: 0.0, lambda _: None)
    waits: list[float] = []
    lock = threading.Lock()

    def four_calls() -> None:
        for _ in range(4):
            wait = limits.take("ec2", "a/us-east-1")
            with lock:
                waits.append(wait)

    threads = [threading.Thread(target=four_calls) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(waits) == [pytest.approx(n / 40.0) for n in range(12)]
    # Each new domain has its own full bucket; a service without a published rate is not paced.
    assert [limits.take("ec2", d) for d in ("a/eu-west-1", "b/us-east-1", "c/us-east-1")] == [0.0] * 3
    assert limits.take("unknown-service", "x") == 0.0 and limits.bucket("unknown-service", "x") is None


def test_retries_are_attempts_beyond_calls_and_a_scope_status_says_why_it_is_incomplete() -> None:
    count = CallCount()
    for _ in range(3):
        count.call()
        count.attempt()
    count.retry()
    count.retry()
    assert (count.calls, count.attempts, count.retries) == (3, 5, 2)
    status = scope_status("aws", "1", "us-east-1", count, 7, ["DescribeInstances: Throttled"] * 5)
    assert (status.api_calls, status.retries, status.nodes, status.complete) == (5, 2, 7, False)
    assert status.reason == "; ".join(["DescribeInstances: Throttled"] * 3) + " (+2 more)"
    tally = Tally(total=4)
    tally.add(status)
    tally.add(scope_status("aws", "1", "eu-west-1", CallCount(), 3, []))
    assert tally.line() == "2/4 scopes done, 1 failed, 10 nodes found"
