"""Amazon Web Services: EC2 instances, Elastic Fabric Adapter, placement groups and Capacity Blocks."""

from fabriccheck.provider import LiveOnly, Privilege, ProviderDeclaration, SocketDefaults

_NO_CALL = "a dump makes no AWS call"

DECLARATION = ProviderDeclaration(
    name="aws",
    package=__name__,
    title="AWS",
    extra="aws",
    sdk_modules=("boto3", "botocore"),
    live_only=(
        LiveOnly("role_arn", _NO_CALL),
        LiveOnly("org_role", _NO_CALL),
        LiveOnly("concurrency", _NO_CALL),
        LiveOnly("profile", _NO_CALL),
        LiveOnly("endpoint_url", _NO_CALL),
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
    privilege=Privilege(
        "policy", "iam_policy", ("role_arn", "org_role", "external_id", "accounts", "exclude_accounts")
    ),
    endpoint_credential="each request's SigV4 signature and, with temporary credentials, the session token",
    terraform_providers=("aws",),
    dump_mark="describe-instances.json",
    sells_instances=True,
    # libfabric's EFA provider, and AWS's NCCL plugin (aws-ofi-nccl: OFI with its AWS configuration, or no provider
    # named), the words fabriccheck/evidence reads from NCCL_DEBUG=INFO logs and `estimate --transport` takes.
    nccl_transports=("efa", "aws-ofi-nccl"),
    # NCCL reads the NIC's PCI vendor when neither NCCL_SOCKET_NTHREADS nor NCCL_NSOCKS_PERTHREAD is set: AWS ENA
    # (0x1d0f) 2 threads x 8 sockets (NVIDIA/nccl@28189e2 src/transport/net_socket.cc, ncclNetSocketGetNsockNthread).
    # The VPC's MTU is 9001 (jumbo frames inside a VPC; EKS VPC CNI pods keep it): "Network maximum transmission unit
    # (MTU) for your EC2 instance", Amazon EC2 User Guide.
    # AWS caps a single flow at 5 Gbps between instances not in one cluster placement group, 10 Gbps inside one
    # (penalty-model B row 31, "Amazon EC2 instance network bandwidth"): a stream outside one is at most half as fast.
    sockets=SocketDefaults(threads=(2, 8), mtu=9001, loose_flow_share=0.5),
)
