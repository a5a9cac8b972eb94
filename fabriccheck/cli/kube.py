"""`fabriccheck k8s`: do the training workloads of a Kubernetes cluster use the fabric their nodes have? Live through
kubeconfig (the `kubernetes` client, imported only here and only for a live run), from `kubectl get KIND -A -o json`
dumps, or on manifests before apply."""

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from fabriccheck.cli.app import Command, app
from fabriccheck.cli.finish import finish, loaded
from fabriccheck.cli.options import ScanOptions, options
from fabriccheck.errors import FabricCheckError

if TYPE_CHECKING:
    pass


@dataclasses.dataclass(frozen=True)
class K8sSource:
    """Where the cluster's objects come from: live (kubeconfig), a dump, or manifests."""

    context: Annotated[str | None, typer.Option(metavar="NAME", help="kubeconfig context (default: the current).")] = (
        None
    )
    kubeconfig: Annotated[
        Path | None, typer.Option(metavar="FILE", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config).")
    ] = None
    namespaces: Annotated[
        list[str] | None,
        typer.Option("--namespace", "-n", metavar="NS", help="Only these namespaces (repeatable; default: all)."),
    ] = None
    from_dump: Annotated[
        Path | None,
        typer.Option(
            "--from-dump",
            metavar="DIR",
            help="Read kubectl get KIND -A -o json files (nodes.json, pods.json, daemonsets.json ...) from DIR; "
            "one sub-folder per cluster allowed.",
        ),
    ] = None
    manifests: Annotated[
        bool,
        typer.Option(
            "--manifests", help="Judge the manifest files or folders PATH ... before apply (--nodes-from; - is stdin)."
        ),
    ] = False
    nodes_from: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="With --manifests: the dump folder whose nodes.json the pods would run on."),
    ] = None
    print_role: Annotated[
        bool, typer.Option("--print-role", help="Print the least-privilege ClusterRole a live run needs, and exit.")
    ] = False


_LIVE = ("context", "kubeconfig", "namespaces")


def _check(source: K8sSource, paths: list[Path], scan: ScanOptions) -> None:
    """One source at a time, each with its own options: the first mix given is one line saying why."""
    invocation = scan.invocation
    given = [name for name in _LIVE if invocation.was_given(name)]
    flags = [invocation.flags[name] for name in given]
    if source.from_dump is not None and source.manifests:
        raise FabricCheckError("--from-dump and --manifests cannot be used together (one source per run)")
    if (source.from_dump is not None or source.manifests) and flags:
        which = "--from-dump" if source.from_dump is not None else "--manifests"
        raise FabricCheckError(f"{which} and {flags[0]} cannot be used together (a {which[2:]} run calls no cluster)")
    if source.manifests and source.nodes_from is None:
        raise FabricCheckError("--manifests needs --nodes-from DIR (a dump folder holding nodes.json)")
    if source.manifests and not paths:
        raise FabricCheckError("--manifests needs at least one PATH (a manifest file or folder)")
    if not source.manifests and source.nodes_from is not None:
        raise FabricCheckError("--nodes-from goes with --manifests")
    if paths and not source.manifests:
        raise FabricCheckError(f"{paths[0]}: PATH arguments are manifests, and need --manifests")


@app.command(cls=Command)
@options("scan", ScanOptions)
@options("source", K8sSource)
def k8s(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(metavar="PATH", help="With --manifests: manifest files or folders (YAML or JSON)."),
    ] = None,
    *,
    source: K8sSource,
    scan: ScanOptions,
) -> None:
    """Audit Kubernetes workloads (EKS, GKE, AKS): do their pods use the fabric their nodes have?"""
    if source.print_role:
        from fabriccheck.cli.live import print_document
        from fabriccheck.providers.k8s.role import cluster_role_yaml

        print_document(scan, "ClusterRole", "YAML", cluster_role_yaml)
    given = list(paths or [])
    _check(source, given, scan)
    settled = scan.settle()
    if source.manifests:
        from fabriccheck.providers.k8s.manifests import load_manifests

        nodes_from = source.nodes_from
        assert nodes_from is not None  # _check
        inventory = loaded(given[0], lambda: load_manifests(given, nodes_from))
    else:
        from fabriccheck.cli.live import collected
        from fabriccheck.provider import cloud_sdk

        with cloud_sdk("k8s"):  # the client (or urllib3, its dependency) not installed: the extra, in one line
            context, kubeconfig = source.context, source.kubeconfig
            scopes = source.namespaces or []
            inventory = collected(
                "k8s", scan, source.from_dump, None, scopes, None, context=context, kubeconfig=kubeconfig
            )
    finish(inventory, scan, settled)
