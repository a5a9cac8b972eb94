"""Kubernetes: pods judged against the nodes they run on (dumps, manifests, live through the kubernetes client)."""

from fabriccheck.provider import ProviderDeclaration

DECLARATION = ProviderDeclaration(
    name="k8s",
    package=__name__,
    title="Kubernetes",
    extra="k8s",
    sdk_modules=("kubernetes",),
    extra_for_live_only=True,  # a dump or manifests are read without the client
    # `fabriccheck k8s` prints its ClusterRole itself (cli/kube.py); a dump takes none of the live options.
    unplaced="pending",
)
