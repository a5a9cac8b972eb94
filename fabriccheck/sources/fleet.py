"""What collecting a whole estate needs beyond one scope, for every cloud: client-side rate limits (a token
bucket per service and throttling domain, so that many scopes collected at once do not throttle the job
itself), a count of the API calls and retries of each scope, and the tally the progress display shows.

A scope is what a cloud throttles and permits separately: an AWS account in one region, an Azure
subscription, a GCP project. Scopes are collected concurrently on the shared worker pool
(`sources.parallel.in_parallel`); one scope's failure is recorded for that scope and the rest go on.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from fabriccheck.model import Provider, ScopeStatus

# How many scopes are collected at once unless --concurrency says otherwise. Collection waits on the network,
# so more workers than cores pay off; beyond this the client-side parsing (boto3's XML, the GIL) is the limit
# on a small machine (benchmarks/bench_fleet.py).
DEFAULT_CONCURRENCY = 16
MAX_CONCURRENCY = 256


@dataclass(frozen=True)
class Rate:
    """A token bucket: `burst` calls at once, then `per_second` on average. `source` says where it comes from."""

    per_second: float
    burst: int
    source: str


# Each cloud's own published limits for read calls, per throttling domain (the key the bucket is kept under).
RATES: dict[str, Rate] = {
    # Per account and region: "non-mutating actions: bucket size 100, refill rate 20 per second"
    # (Amazon EC2 API Reference, Request throttling, 2026).
    "ec2": Rate(20.0, 100, "EC2 API request throttling, non-mutating actions"),
    # Per account: AssumeRole shares the STS request quota (IAM and AWS STS quotas); kept well below it.
    "sts": Rate(20.0, 20, "AWS STS request quotas (kept well below)"),
    # Organizations throttles per account at a few calls per second; ListAccounts pages hold 20 accounts.
    "organizations": Rate(5.0, 5, "AWS Organizations API throttling (a few calls per second)"),
    # Per subscription: Resource Manager's token bucket for reads, 250 with a refill of 25 per second
    # (Azure Resource Manager, Understand how ARM throttles requests, 2024).
    "arm": Rate(25.0, 250, "Azure Resource Manager throttling, subscription reads"),
    # Per project: Compute Engine API read requests, 1,500 per minute by default (Compute Engine API rate quotas).
    "compute": Rate(25.0, 50, "Compute Engine API read request quota (1,500 per minute)"),
    # Resource Manager v3 read requests per minute (900 by default), for listing projects.
    "cloudresourcemanager": Rate(10.0, 10, "Resource Manager API read request quota"),
}


class TokenBucket:
    """Waits until a call may be made. Thread-safe; the wait happens outside the lock. `clock` and `sleep` are
    the process's own unless a test runs the bucket on a made-up time."""

    def __init__(
        self, rate: Rate, clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.rate = rate
        self.clock = clock
        self.sleep = sleep
        self.tokens = float(rate.burst)
        self.stamp = clock()
        self.lock = threading.Lock()

    def take(self) -> float:
        """Take one token, sleeping until there is one; returns how long it waited."""
        with self.lock:
            now = self.clock()
            self.tokens = min(float(self.rate.burst), self.tokens + (now - self.stamp) * self.rate.per_second)
            self.stamp = now
            self.tokens -= 1.0  # reserved now; a negative balance is the wait of the callers queued behind
            wait = -self.tokens / self.rate.per_second if self.tokens < 0 else 0.0
        if wait > 0:
            self.sleep(wait)
        return wait


class RateLimits:
    """One token bucket per (service, throttling domain), made on first use."""

    def __init__(
        self,
        rates: dict[str, Rate] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.rates = RATES if rates is None else rates
        self.clock, self.sleep = clock, sleep
        self.buckets: dict[tuple[str, str], TokenBucket] = {}
        self.lock = threading.Lock()

    def bucket(self, service: str, domain: str) -> TokenBucket | None:
        rate = self.rates.get(service)
        if rate is None:
            return None
        with self.lock:
            found = self.buckets.get((service, domain))
            if found is None:
                found = self.buckets[(service, domain)] = TokenBucket(rate, self.clock, self.sleep)
            return found

    def take(self, service: str, domain: str) -> float:
        """Take a token of the domain's bucket (none for a service without a published rate); how long it waited."""
        bucket = self.bucket(service, domain)
        return 0.0 if bucket is None else bucket.take()


@dataclass
class CallCount:
    """The requests one scope sent: `calls` operations asked for, `attempts` HTTP requests made for them (a
    retried call is several attempts)."""

    calls: int = 0
    attempts: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def call(self) -> None:
        with self.lock:
            self.calls += 1

    def attempt(self) -> None:
        with self.lock:
            self.attempts += 1

    def retry(self) -> None:
        """One more attempt of a call already counted (for SDKs that report retries, not attempts)."""
        self.attempt()

    @property
    def retries(self) -> int:
        return max(0, self.attempts - self.calls)


def scope_status(
    provider: Provider, account: str, region: str | None, count: CallCount, nodes: int, reasons: list[str]
) -> ScopeStatus:
    return ScopeStatus(
        provider=provider,
        account=account,
        region=region,
        complete=not reasons,
        nodes=nodes,
        api_calls=count.attempts,
        retries=count.retries,
        reason="; ".join(reasons[:3]) + (f" (+{len(reasons) - 3} more)" if len(reasons) > 3 else "") or None,
    )


@dataclass
class Tally:
    """Scopes done and failed and nodes found so far, for the progress display; updated from worker threads."""

    total: int = 0
    done: int = 0
    failed: int = 0
    nodes: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, status: ScopeStatus) -> None:
        with self.lock:
            self.done += 1
            self.failed += 0 if status.complete else 1
            self.nodes += status.nodes

    def line(self) -> str:
        with self.lock:
            failed = f", {self.failed:,} failed" if self.failed else ""
            return f"{self.done:,}/{self.total:,} scopes done{failed}, {self.nodes:,} nodes found"


def settle_gc() -> None:
    """After a live collection: free what the scopes left behind (SDK clients are reference cycles), then
    freeze the model that survived so that judging it does not rescan it (see common.paused_gc)."""
    gc.collect()
    gc.freeze()
