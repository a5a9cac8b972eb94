"""What each provider declares once, and the one place the providers are registered.

A provider (a cloud, or a scheduler that runs on clouds) is one folder, `fabriccheck/providers/<name>/`, whose
`__init__.py` builds one frozen `ProviderDeclaration`: its SDK extra, the options a live run takes that a dump
cannot, its least-privilege document, its Terraform provider, the traits the neutral stages read (its network's
defaults, whether it sells instances, how its ids compare), and where its own modules are. The neutral stages ask
`declaration(name)` or `declarations()` and never build a provider's module name or name a provider themselves;
what the provider answers about its nodes is its `support` module's CloudSupport (cloud.support(name)).

The providers registered are the names of `model.Provider` (the saved inventory's and the report's provider enum:
adding a provider is adding its name there, one line, beside its folder). A declaration imports no SDK and none of
its provider's modules: `module()`, `load_dump()`, `collector()` and `map_plan()` import them on first use, so
judging a saved inventory never loads boto3 or the Azure, Google or Kubernetes clients.
"""

from __future__ import annotations

import functools
import importlib
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from fabriccheck.errors import FabricCheckError

if TYPE_CHECKING:
    from fabriccheck.inventory import Inventory
    from fabriccheck.model import Provider


@dataclass(frozen=True)
class LiveOnly:
    """An option of a live run that --from-dump cannot take: given at all, or given more than `most` times."""

    param: str
    why: str
    most: int = 0
    message: str = "--from-dump and {flag} cannot be used together ({why})"


@dataclass(frozen=True)
class Privilege:
    """What --print-role (--print-iam-policy) prints: `what` the provider's documents call it (its word in the error
    line), the function of the provider's `collect` module that builds it, and the options that shape it (any
    other option given beside it would be ignored: an error)."""

    what: str
    function: str
    shaping: tuple[str, ...] = ()


@dataclass(frozen=True)
class SocketDefaults:
    """What NCCL's socket transport finds on this provider's host NICs when the job sets nothing: helper threads and
    sockets per thread (by the NIC's PCI vendor, ncclNetSocketGetNsockNthread), and the MTU of its network's path.
    None: NCCL's and Ethernet's generic defaults (penalty/links.py)."""

    threads: tuple[int, int] | None = None  # (NCCL_SOCKET_NTHREADS, NCCL_NSOCKS_PERTHREAD)
    mtu: int | None = None
    # What one TCP flow between instances outside one placement group (or across zones) carries of one inside it.
    loose_flow_share: float = 1.0


@dataclass(frozen=True)
class ProviderDeclaration:
    """One provider, declared once (see the module's docstring)."""

    name: Provider  # the CLI command, the inventory's namespace, the first part of a cluster id
    package: str  # where its modules are: its `__init__`'s `__name__`
    title: str  # as people write it: "AWS", "Kubernetes"
    # The pip extra a live run needs (None: it has no SDK), and the top-level modules of that SDK: a missing one is
    # the missing extra, said in one line.
    extra: str | None = None
    sdk_modules: tuple[str, ...] = ()
    extra_for_live_only: bool = False  # its dumps are read without the extra
    live_only: tuple[LiveOnly, ...] = ()  # in the order they are checked: the first one given is the error
    privilege: Privilege | None = None
    # What a plain-http --endpoint-url would carry in clear text (endpoints.check_endpoint_url); None: its SDK
    # refuses plain http by itself, or it has no such option.
    endpoint_credential: str | None = None
    terraform_providers: tuple[str, ...] = ()  # Terraform providers whose plans its `plan.map_plan` reads
    dump_mark: str | None = None  # the file that marks a dump of its own (Slurm's --cloud-dump tells the cloud by it)
    # A cloud that sells instances (other providers' nodes run on them); else its nodes are a cloud's instances
    # seen through a scheduler.
    sells_instances: bool = False
    ids_ignore_case: bool = False  # its resource ids name the same resource in any case (Azure's)
    # How people tell its clusters apart in a report (reports/names.py): by resource group rather than by account
    # and region (an Azure subscription id is long and rarely what differs); what a lone node is called.
    named_by_resource_group: bool = False
    node_word: str = "node"
    # What NCCL's logs and `estimate --transport` call the transports and plugins only this provider's instances
    # carry (a finding's provider when no instance type says it).
    nccl_transports: tuple[str, ...] = ()
    # A scheduler's members that run on no cloud instance: "named", each is a machine of its own name (a Slurm node
    # joined to none); "pending", they wait for one and are counted (a Kubernetes workload's pending pods).
    unplaced: Literal["named", "pending"] | None = None
    sockets: SocketDefaults = field(default_factory=SocketDefaults)
    # The provider whose folder of the bundled demo its demo's nodes run on (its dump reader's `cloud_dump`).
    demo_runs_on: str | None = None

    @property
    def extra_needed(self) -> str:
        """The one line that says which extra to install."""
        live = " for a live run" if self.extra_for_live_only else ""
        return f"fabriccheck {self.name} needs the {self.title} extra{live}: pip install 'fabriccheck[{self.extra}]'"

    def module(self, part: str) -> ModuleType:
        """One of its own modules (support, dump, collect, plan), imported now: the one place a provider's module
        is found by name."""
        return importlib.import_module(f"{self.package}.{part}")

    def load_dump(self, folder: Path, scope: object = None, **extra: Any) -> Inventory:
        """Its dump in `folder`, read by its `dump.load_dump(folder, scope, ...)` (no SDK)."""
        found: Inventory = self.module("dump").load_dump(folder, scope, **extra)
        return found

    def collector(self) -> ModuleType:
        """Its `collect` module (collect_live, the privilege document): this imports its SDK."""
        return self.module("collect")

    def map_plan(self, plan: object, inventory: Inventory) -> None:
        """Its resources of a Terraform plan, mapped into `inventory` by its `plan.map_plan`."""
        self.module("plan").map_plan(plan, inventory)


def registered() -> tuple[str, ...]:
    """The registered providers' names, in model.Provider's order (imported now: `--help` loads no pydantic)."""
    from fabriccheck.model import Provider

    return typing.get_args(Provider)


@functools.cache
def declaration(name: str) -> ProviderDeclaration:
    """The declaration of provider `name` (one of `registered()`), from its package's `DECLARATION`."""
    if name not in registered():
        raise KeyError(f"no provider {name!r}: choose from {', '.join(registered())}")
    found: ProviderDeclaration = importlib.import_module(f"fabriccheck.providers.{name}").DECLARATION
    return found


def declared(name: str | None) -> ProviderDeclaration | None:
    """The declaration of `name`, or None when no provider of that name is registered (a name read from a report
    another version wrote)."""
    if name is None or name not in registered():
        return None
    return declaration(name)


def declarations() -> tuple[ProviderDeclaration, ...]:
    return tuple(declaration(name) for name in registered())


def transport_provider(word: str) -> str | None:
    """The provider whose instances alone carry the NCCL transport or plugin `word` (efa, tcpx ...), or None."""
    return next((d.name for d in declarations() if word in d.nccl_transports), None)


def clouds() -> tuple[ProviderDeclaration, ...]:
    """The providers that sell instances (what Kubernetes and Slurm nodes run on)."""
    return tuple(d for d in declarations() if d.sells_instances)


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
        with_extra = [d for d in declarations() if d.extra is not None]
        owner = next((d for d in with_extra if top in d.sdk_modules), None)
        if owner is None and provider is not None and top not in ("", "fabriccheck"):
            owner = next((d for d in with_extra if d.name == provider), None)
        if owner is None:
            raise
        raise FabricCheckError(owner.extra_needed) from None
