"""A live, read-only collection through the official `kubernetes` client (the `fabriccheck[k8s]` extra): standard
kubeconfig loading (exec credential plugins such as `aws eks get-token`, `gke-gcloud-auth-plugin`, `kubelogin`
included) or the pod's service account in a cluster. Only `list` calls, one per kind (role.KINDS), paged with
`limit`/`continue`; per namespace when namespaces are named. A forbidden kind or namespace is recorded with the RBAC
rule it needed (the run is incomplete); a custom resource that is not installed (404) has no objects; 429 and 5xx,
a connection reset and a read timeout are retried with back-off (a Retry-After up to MAX_RETRY_AFTER is honoured;
one asking for more is recorded at once). An answer that is not the list asked for (dump.list_items, the dump
reader's own check) and a continue token that leads back to a page already read are recorded as BadResponse: the
run is incomplete, never an empty cluster. An API server that cannot be reached is one line, exit 2; so is a
server URL that would send the user's credential over plain http:// to another machine (endpoints.py).

Every list goes through the client's typed, public API: CoreV1Api for the core group (nodes, pods, ConfigMaps)
and CustomObjectsApi's generic lists for every other group (apps and batch too: the path is the same
/apis/GROUP/VERSION/PLURAL), with the options each of those methods documents (`limit`, `_continue`,
`_request_timeout`, and `_preload_content=False`: the answer unread, the urllib3 response). Nothing drives
ApiClient.call_api, whose signature the client's regenerated 37 changed. The raw answers are read as the API's own
JSON, the same objects a `kubectl get -o json` dump holds, so both go through one normalizer (objects.py).
"""

from __future__ import annotations

import logging
import math
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import urllib3
import yaml
from kubernetes import client
from kubernetes import config as kube_config
from kubernetes.client.exceptions import ApiException

from fabriccheck.endpoints import check_endpoint_url
from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.model import ScopeStatus
from fabriccheck.providers.k8s.dump import NotAList, list_items
from fabriccheck.providers.k8s.objects import ClusterObjects, Normalizer
from fabriccheck.providers.k8s.role import KINDS, Kind, resource_of, rule_for
from fabriccheck.redaction import first_line, redact
from fabriccheck.sources.progress import API_CALLS, Progress
from fabriccheck.sources.retries import RetryPolicy, retry_policy
from fabriccheck.sources.scope import BAD_RESPONSE, UNREACHABLE, Scope

PAGE = 500  # objects per list call
MAX_RETRY_AFTER = 60.0  # seconds: a server that asks for a longer wait is not waited for (the list is recorded)
# Pages per list before the answer is taken to loop: 10,000 pages of 500 are 5 million objects, past any cluster's
# (Kubernetes' own scalability limits: 150,000 pods, 5,000 nodes).
MAX_PAGES = 10_000
_RETRIED = frozenset({429, 500, 502, 503, 504})
# A kind's group or version the server does not serve (404), told apart by identity.
_NOT_SERVED_PAGE: dict[str, Any] = {"items": []}
_NOT_SERVED: list[dict[str, Any]] = []


def _configuration(context: str | None, kubeconfig: Path | None) -> tuple[client.Configuration, str]:
    """The client's configuration and the cluster's name (the context's): kubeconfig, else the pod's service
    account when running in a cluster."""
    configuration = client.Configuration()
    # kubernetes 37 ships its config loaders without annotations (36 had them): typed as Any here, so mypy --strict
    # passes on either release the extra allows.
    config: Any = kube_config
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
        with _logged_errors() as logged:
            config.load_kube_config(config_file=file, context=chosen, client_configuration=configuration)
        if logged and not configuration.api_key:
            # The client logs a failed exec credential plugin (aws eks get-token not installed, an expired SSO
            # session) and goes on without a credential (kubernetes-client/python config/kube_config.py
            # _load_from_exec_plugin): the run would only meet a 401. Said here, in the plugin's words.
            raise FabricCheckError(f"{_where(kubeconfig)}: the user's credential plugin failed: {logged[0]}")
    except FabricCheckError:
        raise
    except (config.ConfigException, yaml.YAMLError, OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        # The client reads the file as it finds it: a server that is a number, YAML that does not parse, a list
        # where a mapping belongs all end here, never as an internal error.
        raise FabricCheckError(f"{_where(kubeconfig)}: {first_line(exc)}") from None
    _check_credentials(configuration, kubeconfig)
    return configuration, str(chosen or "kubernetes")


@contextmanager
def _logged_errors() -> Iterator[list[str]]:
    """The ERROR records the client logs (on the root logger) while the block runs, kept from stderr: the run says
    what matters in its own one line."""
    found: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            found.append(redact(record.getMessage().splitlines()[0] if record.getMessage() else record.levelname))

    root = logging.getLogger()
    handler = Keep(logging.ERROR)
    root.addHandler(handler)
    try:
        yield found
    finally:
        root.removeHandler(handler)


def _where(kubeconfig: Path | None) -> str:
    return f"kubeconfig {kubeconfig}" if kubeconfig else "kubeconfig"


# What a request to the API server carries (the client puts a token, an exec plugin's token or a basic-auth
# user:password alike into the Authorization header: kubernetes-client/python config/kube_config.py).
K8S_CREDENTIAL = "the kubeconfig user's bearer token or password"


def _check_credentials(configuration: client.Configuration, kubeconfig: Path | None) -> None:
    """The server must be https://, or http:// to this machine (endpoints.check_endpoint_url, as for every cloud);
    a token that could not be a header value is one line, never a request (http.client would quote it whole in
    its error)."""
    check_endpoint_url(str(configuration.host or ""), K8S_CREDENTIAL, option=f"{_where(kubeconfig)}: server")
    if any(_CONTROL.search(str(value)) for value in (configuration.api_key or {}).values()):
        raise FabricCheckError(f"{_where(kubeconfig)}: the user's token holds a line break or control character")


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass
class _Lister:
    api: client.ApiClient
    scope: Scope
    host: str  # as shown: any password in the server URL masked
    errors: list[Any] = field(default_factory=list)
    calls: int = 0
    retries: int = 0
    policy: RetryPolicy = field(default_factory=retry_policy)  # read from the environment once per run
    down: str | None = None  # the list that failed through every retry on a reset or timeout: none is tried after

    def objects(self, kind: Kind, namespace: str | None) -> list[dict[str, Any]] | None:
        """Every object of `kind` (in `namespace`), page by page, at the first of its versions the server serves;
        None when it could not be read whole (recorded: forbidden, throttled, failing, or an answer that is not the
        list asked for)."""
        what = f"list {kind.plural}" + (f" in namespace {namespace}" if namespace else "")
        if self.down is not None:
            # A server that stopped answering one list through every retry is not waited on again for each kind
            # (at the 60 s read timeout, eight attempts each would hold a run for hours): the rest are recorded.
            detail = f"{what}: not listed: the API server stopped answering ({self.down} failed after retries)"
            self.errors.append(self.scope.error(what, UNREACHABLE, detail))
            return None
        for version in (kind.version, *kind.fallback):
            items = self._pages(_ListCall(kind, version, namespace), what)
            if items is not _NOT_SERVED:
                return items
        return []  # the custom resource is not installed: there are none

    def _pages(self, call: _ListCall, what: str) -> list[dict[str, Any]] | None:
        kind = call.kind
        items: list[dict[str, Any]] = []
        token, seen = "", set[str]()
        for number in range(1, MAX_PAGES + 1):
            page = self._get(call, token, what)
            if page is None or page is _NOT_SERVED_PAGE:
                return None if page is None else _NOT_SERVED
            try:
                items += list_items(page, kind.plural)  # the dump reader's own check (dump.list_items)
            except NotAList as exc:
                self._bad(what, f"page {number} of the answer is not the {kind.plural} list: {_shown(exc)}")
                return None
            meta = page.get("metadata")
            found = meta.get("continue") if isinstance(meta, dict) else None
            if not found:
                return items
            if not isinstance(found, str) or found in seen:
                # An API server's continue token names where the next page starts; one already followed leads back
                # to a page read before, and the list would never end (as GCP's nextPageToken: gcp/collect.py).
                if not isinstance(found, str):
                    self._bad(what, f"page {number} of the answer has a continue token that is not text")
                    return None
                said = f"the continue token {found[:40]!r} leads back to a page already read (page {number})"
                self._bad(what, f"{said}: the list never ends")
                return None
            token = found
            seen.add(token)
        self._bad(what, f"the list did not end after {MAX_PAGES} pages: stopped there")
        return None

    def _bad(self, what: str, detail: str) -> None:
        self.errors.append(self.scope.error(what, BAD_RESPONSE, f"{what}: {detail}"))
        return None

    def _get(self, call: _ListCall, token: str, what: str) -> Any:
        """One page's JSON (None when recorded): a 429 or 5xx, a reset or a read timeout are retried with
        back-off, as AWS and GCP retry them; a Retry-After longer than MAX_RETRY_AFTER is not waited for."""
        policy, kind = self.policy, call.kind
        for attempt in range(policy.max_attempts):
            last = attempt + 1 == policy.max_attempts
            try:
                data = self._call(call, token)
            except ApiException as exc:
                if exc.status not in _RETRIED or last:
                    return self._failed(exc, kind, what)
                wait = _wait(exc, attempt)
                if wait is None:  # asked to wait longer than a run waits
                    return self._failed(exc, kind, what, waited=False)
                self._retry(policy.backoff(wait))
                continue
            except urllib3.exceptions.ConnectTimeoutError as exc:  # refused, no such host: nothing to retry
                raise FabricCheckError(f"Kubernetes API server {self.host}: unreachable ({first_line(exc)})") from None
            except urllib3.exceptions.SSLError as exc:  # a certificate fault is not passing
                raise FabricCheckError(f"Kubernetes API server {self.host}: TLS failed ({first_line(exc)})") from None
            except (urllib3.exceptions.HTTPError, OSError) as exc:  # a reset, a read timeout, a cut answer
                if last:
                    detail = f"{what}: {first_line(exc)}: still failing after {policy.max_attempts} attempts"
                    self.errors.append(self.scope.error(what, UNREACHABLE, detail))
                    self.down = what
                    return None
                self._retry(policy.backoff(0.5 * 2**attempt))
                continue
            try:
                page = orjson.loads(data)
            except orjson.JSONDecodeError:
                self._bad(what, "the answer is not JSON: not read")
                return None
            if page is None:  # JSON null: None means "recorded" to the caller, so it is recorded here
                self._bad(what, "the answer is null: not read")
            return page
        raise AssertionError("not reached: the last attempt returns or raises")

    def _call(self, call: _ListCall, token: str) -> bytes:
        """One page's GET through the typed API, its body read whole (a reset mid-body is raised here too)."""
        self.calls += 1
        API_CALLS.add(1)
        options: dict[str, Any] = {
            "limit": PAGE,
            "_preload_content": False,  # the urllib3 response, unread: the API's own JSON, not the client's models
            "_request_timeout": (self.policy.connect_timeout, self.policy.read_timeout),
        }
        if token:
            options["_continue"] = token
        response = call.method(self.api)(*call.arguments, **options)
        data: bytes = response.data
        return data

    def _retry(self, seconds: float) -> None:
        self.retries += 1
        time.sleep(seconds)

    def _failed(self, exc: ApiException, kind: Kind, what: str, waited: bool = True) -> dict[str, Any] | None:
        if exc.status == 404 and kind.group:
            return _NOT_SERVED_PAGE  # not installed, or not at this version
        if exc.status == 401:
            raise FabricCheckError(
                f"Kubernetes API server {self.host}: unauthorized (401): check the kubeconfig's credentials"
            )
        # The words every cloud's collection errors use (sources.scope.Scope): denied with the rule it needed,
        # throttled after the retries, else the HTTP status.
        detail = f"{what}: {exc.status} {exc.reason}"
        if not waited:
            asked = (exc.headers or {}).get("Retry-After")
            detail += f": Retry-After {str(asked)[:20]} s is longer than the {MAX_RETRY_AFTER:.0f} s a run waits"
        if exc.status == 403:
            self.errors.append(self.scope.denied(what, detail, rule_for(kind)))
        elif exc.status == 429:
            self.errors.append(self.scope.throttled(what, detail))
        else:
            self.errors.append(self.scope.error(what, f"HTTP{exc.status}", detail))
        return None


@dataclass(frozen=True)
class _ListCall:
    """Which public list method reads one kind at one version (in one namespace, or all)."""

    kind: Kind
    version: str
    namespace: str | None

    def method(self, api: client.ApiClient) -> Any:
        if not self.kind.group:  # the core group: CoreV1Api's own method per kind
            core = client.CoreV1Api(api)
            # Across the cluster (every namespace), and in one namespace. Nodes are not namespaced.
            lists = {
                "nodes": (core.list_node, core.list_node),
                "pods": (core.list_pod_for_all_namespaces, core.list_namespaced_pod),
                "configmaps": (core.list_config_map_for_all_namespaces, core.list_namespaced_config_map),
            }
            if self.version != "v1" or self.kind.plural not in lists:
                raise AssertionError(f"no CoreV1Api list for {self.kind.plural} at {self.version}")
            every, one = lists[self.kind.plural]
            return one if self.namespace else every
        custom = client.CustomObjectsApi(api)
        return custom.list_namespaced_custom_object if self.namespace else custom.list_cluster_custom_object

    @property
    def arguments(self) -> tuple[str, ...]:
        where = (self.namespace,) if self.namespace else ()
        if not self.kind.group:
            return where
        return (self.kind.group, self.version, *where, resource_of(self.kind))


def _shown(exc: NotAList) -> str:
    text = str(exc)
    if text == "no items list":
        return "it has no items list"
    return f"it is {text}" if text.startswith("a ") else text


def _wait(exc: ApiException, attempt: int) -> float | None:
    """Retry-After when the server says (seconds), else an exponential back-off (the policy scales both); None when
    the server asks for more than MAX_RETRY_AFTER: waiting less would be refused again, waiting that long holds a
    run past any gate's patience."""
    header = (exc.headers or {}).get("Retry-After") if exc.headers else None
    try:
        seconds = float(header) if header is not None else 0.5 * 2**attempt
    except ValueError:  # an HTTP date, or junk: the back-off
        seconds = 0.5 * 2**attempt
    if not math.isfinite(seconds):
        return None
    return None if seconds > MAX_RETRY_AFTER else max(0.0, seconds)


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
        host = redact(str(configuration.host))  # a password in the server URL never reaches a line or report
        lister = _Lister(api, scope, host)
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
    inventory = normalizer.inventory(f"k8s live {name} ({host})")
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
