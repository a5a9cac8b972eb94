"""What the provider commands share: the SDK extra a live run needs, the options a dump cannot take, the least
privilege printed on request, and reading a dump or collecting live; each as the provider's declaration says
(fabriccheck/provider.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from fabriccheck.cli.app import emit
from fabriccheck.cli.finish import loaded
from fabriccheck.cli.options import CloudOptions, ScanOptions
from fabriccheck.cli.progress import progress
from fabriccheck.errors import FabricCheckError
from fabriccheck.provider import declaration

if TYPE_CHECKING:
    from fabriccheck.inventory import Inventory


# ------------------------------------------------------------------------------------- live options and a dump


def check_live_options(provider: str, scan: ScanOptions, endpoint_url: str | None) -> None:
    """With --from-dump, no option of a live run (the declaration's live_only: the first one given is an error saying
    why). An --endpoint-url that would send the credential in clear text is refused before anything is read."""
    declared = declaration(provider)
    invocation = scan.invocation
    if invocation.params.get("from_dump") is not None:
        for live in declared.live_only:
            if not invocation.was_given(live.param):
                continue
            value = invocation.params[live.param]
            count = len(value) if isinstance(value, list | tuple) else 1
            if count > live.most:
                flag = invocation.flags[live.param]
                raise FabricCheckError(live.message.format(flag=flag, why=live.why, count=count))
    if declared.endpoint_credential is not None:  # None: its SDK refuses plain http by itself
        from fabriccheck import endpoints

        endpoints.check_endpoint_url(endpoint_url, declared.endpoint_credential)


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
    declared = declaration(provider)
    if from_dump is not None:
        return loaded(from_dump, lambda: declared.load_dump(from_dump, dump_scope))
    collect = declared.collector()
    options = {name: value for name, value in (vars(live) if live is not None else {}).items() if value is not None}
    with progress(scan.verbose) as shown:
        result: Inventory = collect.collect_live(scopes, **options, **extra, progress=shown)
        return result


# ------------------------------------------------------------------------------------------ least privilege

_PRINT = ("print_role", "print_iam_policy")  # one option, spelled as each cloud's documents spell it


def print_privilege(provider: str, scan: ScanOptions, common: CloudOptions, *shaped_by: object) -> None:
    """With `--print-role` / `--print-iam-policy`: the least privilege the command needs, the function of `shaped_by`
    its declaration's `privilege` names, printed or written to --output FILE, then exit 0. Else nothing."""
    if not (common.print_role or common.print_iam_policy):
        return
    import json

    declared = declaration(provider)
    privilege = declared.privilege
    assert privilege is not None  # only the commands of providers that declare one have the option
    document = getattr(declared.collector(), privilege.function)
    print_document(
        scan, privilege.what, "JSON", lambda: json.dumps(document(*shaped_by), indent=2) + "\n", privilege.shaping
    )


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
