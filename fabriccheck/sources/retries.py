"""How hard every collector retries a throttled or failed call, and the setting that scales its back-off."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

from fabriccheck.errors import FabricCheckError


@dataclass(frozen=True)
class RetryPolicy:
    """How hard a collector retries throttled or failed calls before recording them. Each SDK's own retry
    machinery is configured from this (botocore: standard mode, exponential backoff with jitter).

    `backoff_base` is the back-off's time scale in seconds: at 1.0 (the default) every SDK waits as it does by
    default (botocore up to 1 s before a throttled call's first retry and 50 ms before another's, doubling to
    20 s; Azure 0.8 s doubling; GCP 1 s doubling to 16 s within a 60 s budget); each of those times is scaled
    by it. The test suite sets FABRICCHECK_RETRY_BASE=0.01 so that its fault scenarios do not sleep through
    the production waits; the attempts made are the same."""

    max_attempts: int = 8
    connect_timeout: float = 5.0
    read_timeout: float = 60.0
    backoff_base: float = 1.0

    def backoff(self, seconds: float) -> float:
        """One of an SDK's default back-off times (in seconds), on this policy's scale."""
        return seconds * self.backoff_base


RETRIES = RetryPolicy()
RETRY_BASE_ENV = "FABRICCHECK_RETRY_BASE"


def retry_policy(env: Mapping[str, str] | None = None) -> RetryPolicy:
    """The run's retry policy: the defaults, with the back-off scaled by FABRICCHECK_RETRY_BASE when it is set.
    A value that is not a number of seconds is one line naming the variable."""
    text = (os.environ if env is None else env).get(RETRY_BASE_ENV, "").strip()
    if not text:
        return RETRIES
    try:
        base = float(text)
    except ValueError:
        base = math.nan
    if not (math.isfinite(base) and 0.001 <= base <= 60):
        raise FabricCheckError(
            f"environment variable {RETRY_BASE_ENV}: {text!r} is not a back-off base in seconds "
            "(0.001 to 60; the default is 1)"
        )
    return replace(RETRIES, backoff_base=base)
