"""AWS-only resources: the `aws` namespace of the inventory. Each carries the account and region whose
answer it came from, and is looked up by that scope."""

from __future__ import annotations

from pydantic import Field

from fabriccheck.values import Model, ProviderResources, Scoped, Topology


class PlacementGroup(Scoped):
    name: str
    strategy: str  # cluster | spread | partition
    state: str = "available"
    id: str | None = None


class SecurityRule(Model):
    protocol: str  # "-1" means all traffic
    group_ids: list[str] = Field(default_factory=list)
    cidrs: list[str] = Field(default_factory=list)


class SecurityGroup(Scoped):
    id: str
    name: str | None = None
    vpc_id: str | None = None
    ingress: list[SecurityRule] = Field(default_factory=list)
    egress: list[SecurityRule] = Field(default_factory=list)

    def allows_all_with_itself(self) -> bool:
        """EFA's rule: all traffic in AND out, each naming this group itself (ParallelCluster's
        EfaSecurityGroupValidator). Egress to 0.0.0.0/0 alone does not count."""

        def has(rules: list[SecurityRule]) -> bool:
            return any(r.protocol == "-1" and self.id in r.group_ids for r in rules)

        return has(self.ingress) and has(self.egress)


class Subnet(Scoped):
    id: str
    vpc_id: str | None = None
    zone: str | None = None
    map_public_ip_on_launch: bool = False


class CapacityReservation(Scoped):
    id: str
    reservation_type: str | None = None  # "capacity-block" for Capacity Blocks
    instance_type: str | None = None
    placement_group_arn: str | None = None
    # Where its capacity sits (DescribeCapacityReservationTopology), before launch; None: not asked or not told.
    topology: Topology | None = None


class AwsResources(ProviderResources):
    placement_groups: list[PlacementGroup] = Field(default_factory=list)
    security_groups: list[SecurityGroup] = Field(default_factory=list)
    subnets: list[Subnet] = Field(default_factory=list)
    capacity_reservations: list[CapacityReservation] = Field(default_factory=list)
