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

from typing import TYPE_CHECKING
from urllib.error import HTTPError, URLError

from fabriccheck.errors import FabricCheckError

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

DEFAULT_JOB = "fabriccheck"
TIMEOUT_SECONDS = 30.0  # per request: a gateway that stopped answering fails the run in half a minute, not never


def push(metrics: CollectorRegistry, url: str, job: str = DEFAULT_JOB, timeout: float = TIMEOUT_SECONDS) -> None:
    """PUT `metrics` to the gateway at `url` under `job`; a failure (refused, unreachable, timed out, an HTTP error
    status) is one FabricCheckError line naming the URL and why."""
    from prometheus_client import push_to_gateway

    try:
        push_to_gateway(url, job=job, registry=metrics, timeout=timeout)
    except HTTPError as exc:
        answer = f"{exc.code} {exc.reason}{_said(exc)}"
        raise FabricCheckError(f"--pushgateway {url}: the gateway answered {answer}") from None
    except URLError as exc:
        reason = exc.reason
        why = getattr(reason, "strerror", None) or str(reason)
        raise FabricCheckError(f"--pushgateway {url}: cannot push ({why})") from None
    except (OSError, ValueError) as exc:  # a timeout while reading the answer; a URL urllib cannot open
        raise FabricCheckError(f"--pushgateway {url}: cannot push ({getattr(exc, 'strerror', None) or exc})") from None


def _said(error: HTTPError) -> str:
    """The first line of the gateway's own explanation (the Pushgateway says which metric it refused and why)."""
    try:
        body = error.read(2000).decode("utf-8", "replace").strip()
    except (OSError, ValueError):
        return ""
    first = body.splitlines()[0] if body else ""
    return f": {first[:300]}" if first else ""
