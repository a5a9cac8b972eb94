"""Google Cloud-only resources: the `gcp` namespace of the inventory. Each carries the project (`account`) and
region whose answer it came from ("global" for networks and firewall rules) and is looked up by that scope.

Fields as the Compute Engine v1 API names them (sources: Compute API reference for resourcePolicies, networks,
subnetworks and firewalls; fabric-requirements.md section 3, GCP-RP-FIELDS, GCP-RDMA-PROFILE, CTK-MULTIVPC).
"""

from __future__ import annotations

from pydantic import Field

from fabriccheck.model import Model, Scoped

GLOBAL = "global"  # the region of global resources (networks, firewall rules)


class ResourcePolicy(Scoped):
    """A resource policy. Only two kinds place instances: a group placement policy (collocation COLLOCATED is a
    compact placement policy) and a workload policy (type HIGH_THROUGHPUT or HIGH_AVAILABILITY)."""

    name: str
    collocation: str | None = None  # groupPlacementPolicy.collocation: COLLOCATED | UNSPECIFIED_COLLOCATION
    vm_count: int | None = None  # groupPlacementPolicy.vmCount
    availability_domain_count: int | None = None  # groupPlacementPolicy.availabilityDomainCount
    gpu_topology: str | None = None  # groupPlacementPolicy.gpuTopology (A4X slices)
    # groupPlacementPolicy.maxDistance: None when the answer does not say. The installed google-cloud-compute
    # types drop the field (it is not in v1), so a live answer never carries it; gcloud dumps may.
    max_distance: int | None = None
    max_distance_known: bool = False
    # workloadPolicy.type: HIGH_THROUGHPUT ("for high throughput distributed workloads eg. HPC or ML training.
    # Compute Engine collocates VMs at best-effort to reduce network latency") or HIGH_AVAILABILITY (spreads VMs);
    # gcloud reference, compute resource-policies create workload-policy.
    workload_type: str | None = None
    other_kind: bool = False  # a snapshot schedule, instance schedule ... (places nothing)

    @property
    def places(self) -> bool:
        group = self.collocation is not None or self.availability_domain_count is not None
        return group or self.workload_type is not None

    @property
    def compact(self) -> bool:
        return self.collocation == "COLLOCATED" or self.workload_type == "HIGH_THROUGHPUT"


class Network(Scoped):
    id: str  # the network's selfLink path: projects/P/global/networks/NAME
    name: str
    mtu: int | None = None  # None: the API leaves it unset, which means 1460
    network_profile: str | None = None  # projects/P/global/networkProfiles/ZONE-vpc-roce[-metal], or None


class Subnetwork(Scoped):
    id: str  # projects/P/regions/R/subnetworks/NAME
    name: str
    network: str | None = None
    cidr: str | None = None  # ipCidrRange


class FirewallRule(Scoped):
    name: str
    network: str | None = None
    direction: str = "INGRESS"
    disabled: bool = False
    priority: int = 1000
    action: str = "allow"  # allow | deny (which of allowed[] / denied[] the rule has)
    protocols: list[str] = Field(default_factory=list)  # IPProtocol of each allowed/denied entry ("all", "tcp")
    all_ports: bool = True  # every tcp/udp entry lists no ports
    source_ranges: list[str] = Field(default_factory=list)
    source_tags: list[str] = Field(default_factory=list)
    source_service_accounts: list[str] = Field(default_factory=list)


class GcpResources(Model):
    resource_policies: list[ResourcePolicy] = Field(default_factory=list)
    networks: list[Network] = Field(default_factory=list)
    subnetworks: list[Subnetwork] = Field(default_factory=list)
    firewalls: list[FirewallRule] = Field(default_factory=list)

    def merge(self, other: GcpResources) -> None:
        self.resource_policies.extend(other.resource_policies)
        self.networks.extend(other.networks)
        self.subnetworks.extend(other.subnetworks)
        self.firewalls.extend(other.firewalls)
