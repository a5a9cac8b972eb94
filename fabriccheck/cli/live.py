"""What the three cloud commands share: the cloud SDK extras, the options a dump cannot take (one table), the least
privilege printed on request, and reading a dump or collecting live."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from fabriccheck.cli.app import emit
from fabriccheck.cli.finish import loaded
from fabriccheck.cli.options import CloudOptions, ScanOptions
from fabriccheck.cli.progress import progress
from fabriccheck.errors import FabricCheckError

if TYPE_CHECKING:
    from fabriccheck.inventory import Inventory

AWS_EXTRA = "fabriccheck aws needs the AWS extra: pip install 'fabriccheck[aws]'"
AZURE_EXTRA = "fabriccheck azure needs the Azure extra: pip install 'fabriccheck[azure]'"
GCP_EXTRA = "fabriccheck gcp needs the GCP extra: pip install 'fabriccheck[gcp]'"
K8S_EXTRA = "fabriccheck k8s needs the Kubernetes extra for a live run: pip install 'fabriccheck[k8s]'"
_EXTRAS = {
    "boto3": AWS_EXTRA,
    "botocore": AWS_EXTRA,
    "azure": AZURE_EXTRA,
    "google": GCP_EXTRA,
    "kubernetes": K8S_EXTRA,
}
_PROVIDER_EXTRAS = {"aws": AWS_EXTRA, "azure": AZURE_EXTRA, "gcp": GCP_EXTRA, "k8s": K8S_EXTRA}


@contextmanager
def cloud_sdk(provider: str | None = None) -> Iterator[None]:
    """A cloud SDK that is not installed is the missing extra, named with how to install it (one line). In a live
    run of `provider`, any library missing is: the SDK's own dependencies come with the extra too, and the first
    import to fail may be one of them (the Kubernetes collector imports urllib3 before the client), while
    fabriccheck's own dependencies are installed with it (and the extra's install would bring them back too)."""
    try:
        yield
    except ModuleNotFoundError as exc:
        top = (exc.name or "").partition(".")[0]
        message = _EXTRAS.get(top)
        if message is None and provider is not None and top not in ("", "fabriccheck"):
            message = _PROVIDER_EXTRAS.get(provider)
        if message is None:
            raise
        raise FabricCheckError(message) from None


# ------------------------------------------------------------------------------------- live options and a dump


@dataclasses.dataclass(frozen=True)
class LiveOnly:
    """An option of a live run that --from-dump cannot take: given at all, or given more than `most` times."""

    param: str
    why: str
    most: int = 0
    message: str = "--from-dump and {flag} cannot be used together ({why})"


_NO_AWS_CALL = "a dump makes no AWS call"
_NO_AZURE_CALL = "a dump makes no Azure call"
_NO_GCP_CALL = "a dump makes no Google Cloud call"
_PROJECTS = "a dump holds the projects it has, one folder each"

# Per provider, in the order they are checked (the first one given is the error).
LIVE_ONLY: dict[str, tuple[LiveOnly, ...]] = {
    "aws": (
        LiveOnly("role_arn", _NO_AWS_CALL),
        LiveOnly("org_role", _NO_AWS_CALL),
        LiveOnly("concurrency", _NO_AWS_CALL),
        LiveOnly("profile", _NO_AWS_CALL),
        LiveOnly("endpoint_url", _NO_AWS_CALL),
        LiveOnly("every_region", "a dump holds the regions it has, one folder each"),
        LiveOnly("topology", "a dump's topology is its describe-instance-topology.json"),
        LiveOnly(
            "region",
            "",
            most=1,
            message="--from-dump takes one --region (the region of a flat dump folder), not {count}: a dump of "
            "several regions keeps each in a folder named after it",
        ),
    ),
    "azure": (
        LiveOnly("endpoint_url", _NO_AZURE_CALL),
        LiveOnly("cloud", _NO_AZURE_CALL),
        LiveOnly("resource_groups", _NO_AZURE_CALL),
        LiveOnly("management_group", _NO_AZURE_CALL),
        LiveOnly("concurrency", _NO_AZURE_CALL),
    ),
    "gcp": (
        LiveOnly("project", "one --project names the project of a flat dump folder", most=1),
        LiveOnly("zones", "a dump holds the zones it has"),
        LiveOnly("endpoint_url", _NO_GCP_CALL),
        LiveOnly("organization", _PROJECTS),
        LiveOnly("folder", _PROJECTS),
        LiveOnly("concurrency", _NO_GCP_CALL),
    ),
}


def check_live_options(provider: str, scan: ScanOptions, endpoint_url: str | None) -> None:
    """With --from-dump, no option of a live run (LIVE_ONLY: the first one given is an error saying why). An
    --endpoint-url that would send the credential in clear text is refused before anything is read."""
    invocation = scan.invocation
    if invocation.params.get("from_dump") is not None:
        for live in LIVE_ONLY[provider]:
            if not invocation.was_given(live.param):
                continue
            value = invocation.params[live.param]
            count = len(value) if isinstance(value, list | tuple) else 1
            if count > live.most:
                flag = invocation.flags[live.param]
                raise FabricCheckError(live.message.format(flag=flag, why=live.why, count=count))
    if provider in ("aws", "gcp"):  # Azure's SDK refuses plain http by itself
        from fabriccheck import endpoints

        endpoints.check_endpoint_url(
            endpoint_url, endpoints.AWS_CREDENTIAL if provider == "aws" else endpoints.GCP_CREDENTIAL
        )


def collected(
    provider: str,
    scan: ScanOptions,
    from_dump: Path | None,
    dump_scope: object,
    scopes: list[str],
    live: object | None,
    **extra: Any,
) -> Inventory:
    """The inventory of --from-dump DIR, read by the provider's `dump.load_dump(DIR, dump_scope)`; else collected
    live by its `collect.collect_live(scopes, ...)` with the progress display, the fields of `live` (a command's
    live options, named as collect_live names them; None: collect_live's default) and `extra`. The provider's
    modules are imported only now, and its SDK only by collect_live."""
    if from_dump is not None:
        reader = importlib.import_module(f"fabriccheck.providers.{provider}.dump")
        return loaded(from_dump, lambda: reader.load_dump(from_dump, dump_scope))
    collect = importlib.import_module(f"fabriccheck.providers.{provider}.collect")
    options = {name: value for name, value in (vars(live) if live is not None else {}).items() if value is not None}
    with progress(scan.verbose) as shown:
        result: Inventory = collect.collect_live(scopes, **options, **extra, progress=shown)
        return result


# ------------------------------------------------------------------------------------------ least privilege

# Per provider: what --print-role prints (its word in the error line), the function of providers.<cloud>.collect
# that gives it, and the options that change it (any other option given beside it would be ignored: an error).
PRIVILEGE: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "aws": ("policy", "iam_policy", ("role_arn", "org_role", "external_id", "accounts", "exclude_accounts")),
    "azure": ("role", "role_for", ("management_group",)),
    "gcp": ("role", "custom_role", ("organization", "folder")),
}
_PRINT = ("print_role", "print_iam_policy")  # one option, spelled as each cloud's documents spell it


def print_privilege(provider: str, scan: ScanOptions, common: CloudOptions, *shaped_by: object) -> None:
    """With `--print-role` / `--print-iam-policy`: the least privilege the command needs, `PRIVILEGE[provider]`'s
    function of `shaped_by`, printed or written to --output FILE, then exit 0. Else nothing."""
    if not (common.print_role or common.print_iam_policy):
        return
    import json

    what, function, shaping = PRIVILEGE[provider]
    document = getattr(importlib.import_module(f"fabriccheck.providers.{provider}.collect"), function)
    print_document(scan, what, "JSON", lambda: json.dumps(document(*shaped_by), indent=2) + "\n", shaping)


def print_document(
    scan: ScanOptions, what: str, kind: str, text: Callable[[], str], shaping: tuple[str, ...] = ()
) -> NoReturn:
    """`text()`, the least privilege a live run needs (`what`: policy, role, ClusterRole; one `kind` of document),
    printed or written to --output FILE, then exit 0. Any other option but those `shaping` it would be ignored:
    an error."""
    invocation = scan.invocation
    asked = [invocation.flags[name] for name in invocation.given if name in _PRINT]
    others = [invocation.flags[name] for name in invocation.given if name not in (*_PRINT, "output", *shaping)]
    if others:
        raise FabricCheckError(
            f"{asked[0]} and {', '.join(others)} cannot be used together "
            f"(it prints the {what} and exits; --output FILE writes it there)"
        )
    outputs = scan.output or []
    if len(outputs) > 1:
        raise FabricCheckError(f"{asked[0]} writes one {kind} document: give one --output FILE, not {len(outputs)}")
    emit(text(), outputs[0] if outputs else None)
    raise typer.Exit(0)
