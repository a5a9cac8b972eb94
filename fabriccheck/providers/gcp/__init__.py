"""Google Cloud: Compute Engine machine types, GPUDirect-TCPX/TCPXO and RDMA NICs, resource policies."""
