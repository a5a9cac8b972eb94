"""The Python API: `audit(provider, source)` returns the Report that every output format renders.

    from fabriccheck import Dump, Live, Plan, SavedInventory, audit, render

    report = audit("aws", Dump("dumps/aws"))                 # `aws ec2 describe-*` files, no network
    report = audit("gcp", Live("my-project", zones=["us-central1-a"]))   # the cloud's SDK, its credential chain
    report = audit("all", Plan("plan.json", terraform_dir="infra"))      # every cloud the plan holds
    report = audit("aws", SavedInventory("inventory.json"))  # what --save-inventory wrote
    print(render(report, "markdown"))

A plain path is read as the CLI reads it: a folder is a dump, a JSON file a saved inventory when it has a
`schema_version`, else a Terraform or OpenTofu plan. The same flow as the CLI judges the inventory
(fabriccheck.flow.run); what the CLI adds around it (config files, FABRICCHECK_* variables, the exit code) stays in
the CLI: the caller decides what a report means for it (`report.fully_judged()`, `report.worst_severity()`).
Every failure a user can cause (a missing file, an unknown option, a plan that is not JSON) is a
`FabricCheckError` with a one-line message.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabriccheck.errors import FabricCheckError
from fabriccheck.flow import Options
from fabriccheck.inventory import Inventory
from fabriccheck.model import PROVIDERS
from fabriccheck.provider import cloud_sdk, declaration, registered
from fabriccheck.report import Report

ALL = "all"  # a plan or a saved inventory: every cloud it holds


@dataclass(frozen=True)
class Dump:
    """A folder of the cloud CLI's own JSON (`--from-dump DIR`). `scope`: AWS, the region of a flat folder; Azure,
    only these subscriptions (a list); GCP, the project of a flat folder."""

    path: str | Path
    scope: str | list[str] | None = None


@dataclass(frozen=True)
class Plan:
    """The JSON of `terraform show -json PLANFILE` (or tofu); `terraform_dir`: the configuration's root, so that
    findings name the file and line of each resource block."""

    path: str | Path
    terraform_dir: str | Path | None = None


@dataclass(frozen=True)
class SavedInventory:
    """An inventory saved with `--save-inventory FILE`, judged offline (`fabriccheck check FILE`)."""

    path: str | Path


@dataclass(frozen=True, init=False)
class Live:
    """A live collection through the cloud's SDK (its extra installed, its usual credential chain). `scopes`: AWS
    regions, Azure subscriptions, GCP projects (none: the SDK's default). `options`: the keyword arguments of the
    provider's `collect_live`, named as the CLI's options are (`profile`, `every_region`, `topology`,
    `endpoint_url`, `resource_groups`, `cloud`, `management_group`, `zones`, `organization`, `folder`,
    `concurrency`, ...)."""

    scopes: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)

    def __init__(self, *scopes: str, **options: Any) -> None:
        object.__setattr__(self, "scopes", scopes)
        object.__setattr__(self, "options", options)


Source = Dump | Plan | SavedInventory | Live


def audit(
    provider: str,
    source: Source | str | Path,
    *,
    workload: str = "llm-70b-fsdp",
    price_per_gpu_hour: float | None = None,
    cluster_tag: str | None = None,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    rules_dirs: Sequence[str | Path] = (),
    options: Options | None = None,
) -> Report:
    """Collect or read `source` for `provider` ("aws", "azure", "gcp"; "all" for a plan or a saved inventory of
    several clouds) and judge it. The keyword settings mean what the CLI's options of the same names mean;
    `options` (fabriccheck.flow.Options: waivers, baseline, severity overrides, roles) replaces them all."""
    from fabriccheck import flow

    chosen = _source(source)
    if provider not in (*PROVIDERS, ALL):
        raise FabricCheckError(f"provider {provider!r}: choose from {', '.join(PROVIDERS)} (or {ALL!r})")
    if provider == ALL and isinstance(chosen, Dump | Live):
        raise FabricCheckError(
            f"provider {ALL!r} reads a plan or a saved inventory; a dump or live run names its cloud"
        )
    defaults = (workload, price_per_gpu_hour, cluster_tag, tuple(select), tuple(ignore), tuple(rules_dirs))
    if options is not None and defaults != ("llm-70b-fsdp", None, None, (), (), ()):
        raise FabricCheckError("give options=Options(...) or the keyword settings, not both")
    if options is None:
        options = Options(
            workload=workload,
            price_per_gpu_hour=price_per_gpu_hour,
            cluster_tag=cluster_tag,
            select=list(select),
            ignore=list(ignore),
            rules_dirs=[Path(d) for d in rules_dirs],
        )
    return flow.run(inventory(provider, chosen), options)


def inventory(provider: str, source: Source | str | Path) -> Inventory:
    """What `audit` judges: the inventory of `source`, restricted to `provider`'s resources for a plan or a saved
    inventory (unless `provider` is "all")."""
    chosen = _source(source)
    if isinstance(chosen, Live):
        return _live(provider, chosen)
    if isinstance(chosen, Dump):
        return declaration(provider).load_dump(_existing(chosen.path), chosen.scope)
    if isinstance(chosen, Plan):
        from fabriccheck.sources.terraform import load_plan

        folder = Path(chosen.terraform_dir) if chosen.terraform_dir is not None else None
        return only(provider, load_plan(str(_existing(chosen.path)), folder))
    from fabriccheck.sources.snapshot import load_inventory

    return only(provider, load_inventory(_existing(chosen.path)))


def only(provider: str, whole: Inventory) -> Inventory:
    """`whole` without the resources, errors and scopes of other clouds ("all": as it is)."""
    if provider == ALL:
        return whole
    kept = whole.model_copy(
        update={
            "nodes": [n for n in whole.nodes if n.provider == provider],
            "specs": [n for n in whole.specs if n.provider == provider],
            "errors": [e for e in whole.errors if e.provider == provider],
            "collected": [c for c in whole.collected if c.split(":", 1)[0] == provider],
            "scopes": [s for s in whole.scopes if s.provider == provider],
        }
    )
    for other in registered():
        # A provider that keeps resources of its own has a namespace of the inventory named after it.
        if other != provider and other in Inventory.model_fields:
            setattr(kept, other, type(getattr(whole, other))())
    return kept


def _source(source: Source | str | Path) -> Source:
    if isinstance(source, Dump | Plan | SavedInventory | Live):
        return source
    if not isinstance(source, str | Path):
        raise FabricCheckError(f"source {source!r}: give a path, Dump, Plan, SavedInventory or Live")
    path = _existing(source)
    if path.is_dir():
        return Dump(path)
    from fabriccheck.jsonfiles import read_json

    data = read_json(path)
    return SavedInventory(path) if isinstance(data, dict) and "schema_version" in data else Plan(path)


def _existing(path: str | Path) -> Path:
    found = Path(path)
    if not found.exists():
        raise FabricCheckError(f"{found}: no such file or folder")
    return found


def _live(provider: str, source: Live) -> Inventory:
    with cloud_sdk(provider):  # the collector imports its SDK: not installed is the missing extra, one line
        collect = declaration(provider).collector()
    accepted = inspect.signature(collect.collect_live).parameters
    unknown = sorted(set(source.options) - set(accepted) - {"progress"})
    if unknown or "progress" in source.options:
        raise FabricCheckError(
            f"Live({', '.join(f'{u}=' for u in unknown or ['progress'])}): not an option of a live {provider} run"
        )
    with cloud_sdk(provider):
        found: Inventory = collect.collect_live(list(source.scopes), **source.options)
    return found
