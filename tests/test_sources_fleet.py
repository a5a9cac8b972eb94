"""The fleet plumbing every collector shares: token buckets pace calls, call counts tell retries apart, and the
progress tally counts scopes and nodes."""

from __future__ import annotations

import threading
import time

from fabriccheck.sources.fleet import CallCount, Rate, RateLimits, Tally, TokenBucket, scope_status


def test_a_token_bucket_lets_a_burst_through_then_paces_at_its_rate() -> None:
    bucket = TokenBucket(Rate(per_second=50.0, burst=5, source="test"))
    started = time.monotonic()
    waits = [bucket.take() for _ in range(5)]
    assert waits == [0.0] * 5 and time.monotonic() - started < 0.2  # the burst
    started = time.monotonic()
    for _ in range(10):
        bucket.take()
    took = time.monotonic() - started
    assert 10 / 50.0 * 0.9 <= took < 10 / 50.0 + 0.5  # ten more at 50 a second: about 0.2 s


def test_threads_share_one_bucket_per_domain_and_domains_do_not_share() -> None:
    limits = RateLimits({"ec2": Rate(per_second=40.0, burst=1, source="test")})
    started = time.monotonic()

    def four_calls() -> None:
        for _ in range(4):
            limits.take("ec2", "a/us-east-1")

    threads = [threading.Thread(target=four_calls) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    shared = time.monotonic() - started
    assert shared >= 11 / 40.0 * 0.9  # twelve calls, one at once then 40 a second, whichever thread made them
    started = time.monotonic()
    for domain in ("a/us-east-1", "b/us-east-1", "c/us-east-1"):
        limits.take("ec2", domain)
    assert time.monotonic() - started < 0.2  # each new domain has its own full bucket
    limits.take("unknown-service", "x")  # a service without a published rate is not paced


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
