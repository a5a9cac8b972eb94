"""`--pushgateway URL [--job NAME]`: the report's Prometheus metrics pushed to a Pushgateway, for a scheduled job
(a Kubernetes CronJob pod) that has no node_exporter textfile folder to leave them in.

The push is prometheus-client's own `push_to_gateway`: an HTTP PUT to `URL/metrics/job/NAME`, which replaces every
metric the gateway held under that grouping key. A finding fixed since the last run therefore disappears from the
gateway instead of lingering as it would with a POST (`pushadd_to_gateway`). The grouping key is the job label
alone; audits that must not replace each other's metrics (one CronJob per account or per cloud) push under their
own --job. The URL's host may be anywhere the job can reach; the request honours the usual HTTP(S)_PROXY and
NO_PROXY variables, as urllib does.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING
from urllib.error import HTTPError, URLError

from fabriccheck.errors import FabricCheckError

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

DEFAULT_JOB = "fabriccheck"
# The whole push (connecting, sending, the gateway's answer), not each read: urllib's timeout applies to each
# blocking socket call (https://docs.python.org/3/library/urllib.request.html#urllib.request.urlopen, "timeout"),
# so a gateway that answered one byte every 10 s held a run for 375 s. The push runs in a worker thread, and the run
# stops waiting for it at this bound (the thread is a daemon: it ends with the process).
TIMEOUT_SECONDS = 30.0


def push(metrics: CollectorRegistry, url: str, job: str = DEFAULT_JOB, timeout: float | None = None) -> None:
    """PUT `metrics` to the gateway at `url` under `job`, within `timeout` seconds in all (TIMEOUT_SECONDS unless
    told); a failure (refused, unreachable, no whole answer in time, an HTTP error status) is one FabricCheckError
    line naming the URL and why. SIGTERM and Ctrl-C end the run at once meanwhile (stopping.live), with their code."""
    from fabriccheck import stopping

    bound = TIMEOUT_SECONDS if timeout is None else timeout
    outcome: list[BaseException | None] = []
    worker = threading.Thread(target=_put, args=(metrics, url, job, bound, outcome), daemon=True, name="push")
    with stopping.live():
        worker.start()
        worker.join(bound)  # a signal meanwhile runs its handler, which ends the process
    if not outcome:
        raise FabricCheckError(f"--pushgateway {url}: cannot push (no whole answer within {bound:g} s)")
    if outcome[0] is not None:
        raise _failure(url, outcome[0])


def _put(metrics: CollectorRegistry, url: str, job: str, timeout: float, outcome: list[BaseException | None]) -> None:
    from prometheus_client import push_to_gateway

    try:
        push_to_gateway(url, job=job, registry=metrics, timeout=timeout)
    except Exception as exc:  # handed to the run's thread, which says it in one line
        outcome.append(exc)
    else:
        outcome.append(None)


def _failure(url: str, exc: BaseException) -> FabricCheckError:
    if isinstance(exc, HTTPError):
        answer = f"{exc.code} {exc.reason}{_said(exc)}"
        return FabricCheckError(f"--pushgateway {url}: the gateway answered {answer}")
    if isinstance(exc, URLError):
        reason = exc.reason
        why = getattr(reason, "strerror", None) or str(reason)
        return FabricCheckError(f"--pushgateway {url}: cannot push ({why})")
    # A timeout while reading the answer; a URL urllib cannot open; an answer that is no HTTP.
    return FabricCheckError(f"--pushgateway {url}: cannot push ({getattr(exc, 'strerror', None) or exc})")


def _said(error: HTTPError) -> str:
    """The first line of the gateway's own explanation (the Pushgateway says which metric it refused and why)."""
    try:
        body = error.read(2000).decode("utf-8", "replace").strip()
    except (OSError, ValueError):
        return ""
    first = body.splitlines()[0] if body else ""
    return f": {first[:300]}" if first else ""
