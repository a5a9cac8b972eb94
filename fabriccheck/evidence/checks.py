"""The NCCL2xx findings: what evidence from a running cluster can say, as data (one entry per id).

Ids 201-209 come from NCCL_DEBUG=INFO logs (`fabriccheck nccl-log`), 210-219 from nccl-tests tables
(`fabriccheck nccl-tests`). Categories are the project's stable vocabulary (DESIGN.md). `effect` tells the
penalty model what the finding does to the fabric, in the words `penalty.FabricState` uses
(`tcp-fallback`, `partial-fabric`, `gpudirect-off`, `unreachable`, `none`).
"""

from __future__ import annotations

from dataclasses import dataclass

from fabriccheck.findings import Severity


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    severity: Severity
    category: str
    effect: str
    remediation: str
    references: tuple[str, ...]


NCCL_ENV_DOC = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
NCCL_TROUBLESHOOTING = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
NCCL_TESTS_PERF = "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md"
EFA_NCCL = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start-nccl.html"
OFI_NCCL = "https://github.com/aws/aws-ofi-nccl"
AZURE_IB = "https://learn.microsoft.com/azure/virtual-machines/setup-infiniband"
GCP_GPUDIRECT = "https://cloud.google.com/compute/docs/gpus/gpudirect"

CHECKS: dict[str, Check] = {
    c.id: c
    for c in (
        Check(
            "NCCL201",
            "Inter-node traffic over TCP sockets",
            "error",
            "fabric-missing",
            "tcp-fallback",
            "Make NCCL use the fabric: install and load the fabric's transport (rdma-core/OFED for InfiniBand and "
            "RoCE, aws-ofi-nccl with the EFA installer on AWS, the GPUDirect-TCPX/TCPXO or gIB plugin on GCP), "
            "unset NCCL_IB_DISABLE / NCCL_NET=Socket, and check that the fabric devices are visible in the "
            "container (/dev/infiniband). Rerun with NCCL_DEBUG=INFO: every rank must say `Using network IB` "
            "(or the plugin's network), never `Socket`.",
            (NCCL_TROUBLESHOOTING, NCCL_ENV_DOC, EFA_NCCL),
        ),
        Check(
            "NCCL202",
            "Network plugin failed to load or start",
            "error",
            "fabric-missing",
            "tcp-fallback",
            "Install the plugin the fabric needs where NCCL looks for it (LD_LIBRARY_PATH, or NCCL_NET_PLUGIN "
            "naming it): aws-ofi-nccl from the EFA installer on AWS (the provider must say `efa`: EFA interfaces "
            "attached and /dev/infiniband/uverbs* passed into the container), the GPUDirect-TCPX/TCPXO or gIB "
            "plugin on GCP. Then check the log says `Using network` with the plugin's name.",
            (OFI_NCCL, EFA_NCCL, GCP_GPUDIRECT, NCCL_ENV_DOC),
        ),
        Check(
            "NCCL203",
            "NCCL_IB_DISABLE=1 on a multi-node run",
            "error",
            "network-config",
            "tcp-fallback",
            "Unset NCCL_IB_DISABLE (or set it to 0) in the job's environment, container image and launcher "
            "(`mpirun -x`, Slurm --export, Kubernetes env). With the built-in transport it forces TCP sockets.",
            (NCCL_ENV_DOC,),
        ),
        Check(
            "NCCL204",
            "GPUDirect RDMA is off",
            "warning",
            "fabric-partial",
            "gpudirect-off",
            "Load the peer-memory module (nvidia_peermem, or nv_peer_mem on old drivers) or use DMA-BUF "
            "(Linux 5.12+, open GPU kernel modules), keep NCCL_NET_GDR_LEVEL unset or wide enough for the "
            "node's PCIe topology, and on AWS use aws-ofi-nccl 1.7+ with libfabric 1.18+. Channels should then "
            "read `via NET/IB/0/GDRDMA`.",
            (NCCL_TROUBLESHOOTING, NCCL_ENV_DOC, OFI_NCCL),
        ),
        Check(
            "NCCL205",
            "NCCL sockets bound to a loopback, container or virtual interface",
            "warning",
            "network-config",
            "none",
            "Set NCCL_SOCKET_IFNAME to the host's real interface (e.g. `eth0`, `ens`, `bond0`; `^lo,docker` "
            "excludes) so bootstrap and any socket traffic use the network the peers can reach.",
            (NCCL_ENV_DOC,),
        ),
        Check(
            "NCCL206",
            "Ranks of one run use different networks",
            "error",
            "fabric-isolated",
            "unreachable",
            "Make every node the same: the same NCCL, plugin and fabric drivers, and the fabric devices visible "
            "on each. NCCL cannot connect a rank on IB to a rank on sockets; the job fails or hangs at start.",
            (NCCL_TROUBLESHOOTING,),
        ),
        Check(
            "NCCL210",
            "Measured bus bandwidth is what TCP gives, not the fabric",
            "error",
            "fabric-missing",
            "tcp-fallback",
            "The fabric is not used: run the same test with NCCL_DEBUG=INFO and read the log with "
            "`fabriccheck nccl-log` to see which transport each rank chose and why.",
            (NCCL_TESTS_PERF, NCCL_TROUBLESHOOTING),
        ),
        Check(
            "NCCL211",
            "Measured bus bandwidth well below what the fabric gives",
            "warning",
            "fabric-partial",
            "partial-fabric",
            "The run is slower than the fabric should be: check that every fabric NIC is attached and used "
            "(NCCL_DEBUG=INFO lists them), that GPUDirect RDMA is on, that nodes are placed close together, and "
            "that NCCL and its network plugin are current. `fabriccheck nccl-log` reads the log.",
            (NCCL_TESTS_PERF, NCCL_TROUBLESHOOTING),
        ),
        Check(
            "NCCL212",
            "nccl-tests found wrong results",
            "error",
            "software",
            "none",
            "A collective returned wrong data (#wrong > 0 or out-of-bounds values FAILED): a hardware, driver "
            "or NCCL fault. Take the node out of service and run the test per node pair to find it.",
            (NCCL_TESTS_PERF, NCCL_TROUBLESHOOTING),
        ),
    )
}
