"""What a collection tells the CLI as it goes: the step it is on, the scopes of a fleet run as they finish, and
how many cloud API requests it has sent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from fabriccheck.model import ScopeStatus


@dataclass
class Progress:
    """What the CLI shows while collecting; collectors only call it (scope: account, region or project)."""

    step: Callable[[str, str], None] = lambda scope, what: None
    # A fleet run: how many scopes there are, then each one as it finishes (model.ScopeStatus).
    planned: Callable[[int], None] = lambda scopes: None
    finished: Callable[[ScopeStatus], None] = lambda status: None


class CallCounter:
    """Cloud API requests sent in this process, for the report (`api_calls`) and the Prometheus metrics. Each
    collector counts where its SDK lets it see a request: AWS and Azure each request sent (retries included),
    GCP each page read."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0

    def add(self, *_: object, **__: object) -> None:  # a hook of any SDK; returns None so as not to alter the call
        with self._lock:
            self.value += 1


API_CALLS = CallCounter()
