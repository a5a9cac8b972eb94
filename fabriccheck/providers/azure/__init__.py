"""Microsoft Azure: VM sizes, InfiniBand, scale sets, availability sets and proximity placement groups."""

from fabriccheck.provider import LiveOnly, Privilege, ProviderDeclaration, SocketDefaults

_NO_CALL = "a dump makes no Azure call"

DECLARATION = ProviderDeclaration(
    name="azure",
    package=__name__,
    title="Azure",
    extra="azure",
    sdk_modules=("azure",),
    live_only=(
        LiveOnly("endpoint_url", _NO_CALL),
        LiveOnly("cloud", _NO_CALL),
        LiveOnly("resource_groups", _NO_CALL),
        LiveOnly("management_group", _NO_CALL),
        LiveOnly("concurrency", _NO_CALL),
    ),
    privilege=Privilege("role", "role_for", ("management_group",)),
    endpoint_credential=None,  # Azure's SDK refuses a plain-http endpoint by itself
    terraform_providers=("azurerm",),
    dump_mark="vm-list.json",
    sells_instances=True,
    ids_ignore_case=True,  # an AKS providerID writes the node resource group as it likes
    named_by_resource_group=True,
    node_word="vm",
    # No socket helper threads on its Mellanox VF (NCCL's default for an unknown PCI vendor, net_socket.cc); MTU 1500
    # ("Azure virtual network maximum transmission unit", Azure docs: 1500 by default).
    sockets=SocketDefaults(mtu=1500),
)
