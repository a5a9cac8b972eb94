"""A live, read-only collection through the official `kubernetes` client (the `fabriccheck[k8s]` extra): standard
kubeconfig loading (exec credential plugins such as `aws eks get-token`, `gke-gcloud-auth-plugin`, `kubelogin`
included) or the pod's service account in a cluster. Only `list` calls, one per kind (role.KINDS), paged with
`limit`/`continue`; per namespace when namespaces are named. A forbidden kind or namespace is recorded with the RBAC
rule it needed (the run is incomplete); a custom resource that is not installed (404) has no objects; 429 and 5xx
are retried, honouring Retry-After. An API server that cannot be reached is one line, exit 2.

The client's raw answers (`_preload_content=False`) are read as the API's own JSON, the same objects a
`kubectl get -o json` dump holds, so both go through one normalizer (objects.py).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.model import ScopeStatus
from fabriccheck.providers.k8s.objects import ClusterObjects, Normalizer
from fabriccheck.providers.k8s.role import KINDS, Kind, resource_of, rule_for
from fabriccheck.sources.common import API_CALLS, Progress, RetryPolicy, Scope, first_line, retry_policy

PAGE = 500  # objects per list call
MAX_RETRY_AFTER = 60.0  # seconds: a longer wait asked for is cut to this
_RETRIED = frozenset({429, 500, 502, 503, 504})
# A kind's group or version the server does not serve (404), told apart by identity.
_NOT_SERVED_PAGE: dict[str, Any] = {"items": []}
_NOT_SERVED: list[dict[str, Any]] = []


def _configuration(context: str | None, kubeconfig: Path | None) -> tuple[client.Configuration, str]:
    """The client's configuration and the cluster's name (the context's): kubeconfig, else the pod's service
    account when running in a cluster."""
    configuration = client.Configuration()
    in_cluster = (
        kubeconfig is None
        and context is None
        and "KUBERNETES_SERVICE_HOST" in os.environ
        and not os.environ.get("KUBECONFIG")
        and not Path(os.path.expanduser(config.KUBE_CONFIG_DEFAULT_LOCATION)).exists()
    )
    try:
        if in_cluster:
            config.load_incluster_config(client_configuration=configuration)
            return configuration, "in-cluster"
        file = str(kubeconfig) if kubeconfig is not None else None
        contexts, active = config.list_kube_config_contexts(config_file=file)
        chosen = context or (active or {}).get("name")
        if context is not None and not any(c.get("name") == context for c in contexts or ()):
            raise FabricCheckError(f"--context {context}: no such context in the kubeconfig")
        config.load_kube_config(config_file=file, context=chosen, client_configuration=configuration)
    except FabricCheckError:
        raise
    except (config.ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
        where = f"kubeconfig {kubeconfig}" if kubeconfig else "kubeconfig"
        raise FabricCheckError(f"{where}: {first_line(exc)}") from None
    return configuration, str(chosen or "kubernetes")


@dataclass
class _Lister:
    api: client.ApiClient
    scope: Scope
    host: str
    errors: list[Any] = field(default_factory=list)
    calls: int = 0
    retries: int = 0
    policy: RetryPolicy = field(default_factory=retry_policy)  # read from the environment once per run

    def objects(self, kind: Kind, namespace: str | None) -> list[dict[str, Any]] | None:
        """Every object of `kind` (in `namespace`), page by page, at the first of its versions the server serves;
        None when it was forbidden (recorded)."""
        for version in (kind.version, *kind.fallback):
            base = f"/api/{version}" if not kind.group else f"/apis/{kind.group}/{version}"
            where = f"/namespaces/{namespace}" if namespace else ""
            items = self._pages(f"{base}{where}/{resource_of(kind)}", kind, namespace)
            if items is not _NOT_SERVED:
                return items
        return []  # the custom resource is not installed: there are none

    def _pages(self, path: str, kind: Kind, namespace: str | None) -> list[dict[str, Any]] | None:
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            query: list[tuple[str, Any]] = [("limit", PAGE)] + ([("continue", token)] if token else [])
            page = self._get(path, query, kind, namespace)
            if page is None or page is _NOT_SERVED_PAGE:
                return None if page is None else _NOT_SERVED
            items += [i for i in page.get("items") or () if isinstance(i, dict)]
            token = str((page.get("metadata") or {}).get("continue") or "")
            if not token:
                return items

    def _get(self, path: str, query: list[tuple[str, Any]], kind: Kind, namespace: str | None) -> dict[str, Any] | None:
        policy = self.policy
        what = f"list {kind.plural}" + (f" in namespace {namespace}" if namespace else "")
        for attempt in range(policy.max_attempts):
            self.calls += 1
            API_CALLS.add(1)
            try:
                response = self.api.call_api(
                    path,
                    "GET",
                    query_params=query,
                    header_params={"Accept": "application/json"},
                    auth_settings=["BearerToken"],
                    _preload_content=False,
                    _request_timeout=(policy.connect_timeout, policy.read_timeout),
                )
            except ApiException as exc:
                if exc.status in _RETRIED and attempt + 1 < policy.max_attempts:
                    self.retries += 1
                    time.sleep(policy.backoff(_wait(exc, attempt)))
                    continue
                return self._failed(exc, kind, what)
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                raise FabricCheckError(f"Kubernetes API server {self.host}: unreachable ({first_line(exc)})") from None
            raw = response[0] if isinstance(response, tuple) else response
            try:
                page: dict[str, Any] = orjson.loads(raw.data)
            except orjson.JSONDecodeError:
                raise FabricCheckError(f"Kubernetes API server {self.host}: {what}: the answer is not JSON") from None
            return page
        raise AssertionError("not reached: the last attempt returns or raises")

    def _failed(self, exc: ApiException, kind: Kind, what: str) -> dict[str, Any] | None:
        if exc.status == 404 and kind.group:
            return _NOT_SERVED_PAGE  # not installed, or not at this version
        if exc.status == 401:
            raise FabricCheckError(
                f"Kubernetes API server {self.host}: unauthorized (401): check the kubeconfig's credentials"
            )
        # The words every cloud's collection errors use (sources.common.Scope): denied with the rule it needed,
        # throttled after the retries, else the HTTP status.
        detail = f"{what}: {exc.status} {exc.reason}"
        if exc.status == 403:
            self.errors.append(self.scope.denied(what, detail, rule_for(kind)))
        elif exc.status == 429:
            self.errors.append(self.scope.throttled(what, detail))
        else:
            self.errors.append(self.scope.error(what, f"HTTP{exc.status}", detail))
        return None


def _wait(exc: ApiException, attempt: int) -> float:
    """Retry-After when the server says (seconds), else an exponential back-off (the policy scales both)."""
    header = (exc.headers or {}).get("Retry-After") if exc.headers else None
    try:
        seconds = min(float(header), MAX_RETRY_AFTER) if header is not None else 0.5 * 2**attempt
    except ValueError:
        seconds = 0.5 * 2**attempt
    return max(0.0, seconds)


def collect_live(
    namespaces: list[str],
    context: str | None = None,
    kubeconfig: Path | str | None = None,
    progress: Progress | None = None,
) -> Inventory:
    """The cluster's objects (in `namespaces`, or all), listed kind by kind, normalized as a dump's are. The
    namespaces come first, as the scopes of the clouds' collect_live do (fabriccheck.api.Live)."""
    kubeconfig = Path(kubeconfig) if kubeconfig is not None else None
    configuration, name = _configuration(context, kubeconfig)
    configuration.retries = False  # the collector retries, honouring Retry-After; urllib3 must not add its own
    shown = progress or Progress()
    scope = Scope("k8s", name, None)
    with client.ApiClient(configuration) as api:
        lister = _Lister(api, scope, configuration.host)
        items: dict[str, list[dict[str, Any]]] = {}
        for kind in KINDS:
            shown.step(name, f"list {kind.plural}")
            places: list[str | None] = list(namespaces) if namespaces and kind.namespaced else [None]
            found: list[dict[str, Any]] = []
            complete = True
            for namespace in places:
                listed = lister.objects(kind, namespace)
                complete = complete and listed is not None
                found += listed or []
            if complete or found:
                items[kind.plural] = found
    objects = ClusterObjects(name=name, items=items, errors=list(lister.errors))
    normalizer = Normalizer(objects)
    inventory = normalizer.inventory(f"k8s live {name} ({configuration.host})")
    for error in inventory.errors:
        error.region = normalizer.region
    inventory.scopes.append(
        ScopeStatus(
            provider="k8s",
            account=name,
            region=normalizer.region,
            complete=not inventory.errors,
            nodes=len(inventory.nodes),
            api_calls=lister.calls,
            retries=lister.retries,
            reason="; ".join(e.message for e in inventory.errors[:3]) or None,
        )
    )
    return inventory
