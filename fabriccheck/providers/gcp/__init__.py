"""Google Cloud: Compute Engine machine types, GPUDirect-TCPX/TCPXO and RDMA NICs, resource policies."""

from fabriccheck.provider import LiveOnly, Privilege, ProviderDeclaration, SocketDefaults

_NO_CALL = "a dump makes no Google Cloud call"
_PROJECTS = "a dump holds the projects it has, one folder each"

DECLARATION = ProviderDeclaration(
    name="gcp",
    package=__name__,
    title="GCP",
    extra="gcp",
    sdk_modules=("google",),
    live_only=(
        LiveOnly("project", "one --project names the project of a flat dump folder", most=1),
        LiveOnly("zones", "a dump holds the zones it has"),
        LiveOnly("endpoint_url", _NO_CALL),
        LiveOnly("organization", _PROJECTS),
        LiveOnly("folder", _PROJECTS),
        LiveOnly("concurrency", _NO_CALL),
    ),
    privilege=Privilege("role", "custom_role", ("organization", "folder")),
    endpoint_credential="the OAuth access token (good for an hour)",
    terraform_providers=("google",),  # google-beta is read as google (sources/terraform.py)
    dump_mark="instances-list.json",
    sells_instances=True,
    # GPUDirect-TCPX and TCPXO, gIB (Google's RDMA NCCL plugin) and FastSocket: Google's NCCL plugins, the words
    # fabriccheck/evidence reads from NCCL_DEBUG=INFO logs and `estimate --transport` takes.
    nccl_transports=("tcpx", "tcpxo", "gib", "fastsocket"),
    # Google gVNIC (PCI vendor 0x1ae0): 4 socket threads x 1 socket (NVIDIA/nccl@28189e2 net_socket.cc); the VPC's
    # default MTU is 1460 (Compute API reference, networks.mtu; GKE pods keep it).
    sockets=SocketDefaults(threads=(4, 1), mtu=1460),
)
