"""The one inventory every source ends in: neutral nodes and specs, plus each provider's own namespace.

A live account, a dump, a saved snapshot and (later) a Terraform plan all normalize into `Inventory`, so a
rule written once judges them alike. This module is where the provider namespaces meet; everything that
reads the inventory through the neutral fields names no cloud.
"""

from __future__ import annotations

from pydantic import Field

from fabriccheck.model import SCHEMA_VERSION, Capability, CollectionError, Model, Node, ScopeStatus, fact_key
from fabriccheck.resources.aws import AwsResources
from fabriccheck.resources.azure import AzureResources
from fabriccheck.resources.gcp import GcpResources
from fabriccheck.resources.k8s import K8sResources
from fabriccheck.resources.slurm import SlurmResources


class Inventory(Model):
    schema_version: int = SCHEMA_VERSION
    source: str = "unknown"  # "aws live", "aws dump DIR", "snapshot FILE", ...
    nodes: list[Node] = Field(default_factory=list)  # what runs now
    specs: list[Node] = Field(default_factory=list)  # what templates and plans would launch
    capabilities: dict[str, Capability] = Field(default_factory=dict)  # live answers, by instance type
    aws: AwsResources = Field(default_factory=AwsResources)
    azure: AzureResources = Field(default_factory=AzureResources)
    gcp: GcpResources = Field(default_factory=GcpResources)
    k8s: K8sResources = Field(default_factory=K8sResources)
    slurm: SlurmResources = Field(default_factory=SlurmResources)
    errors: list[CollectionError] = Field(default_factory=list)
    # Which kinds of facts were collected, as "provider:account:region:fact" (model.fact_key). A rule needing
    # facts that were not collected for a node's own account and region stays silent and the report says so,
    # rather than judging on an empty list or on another account's answer.
    collected: list[str] = Field(default_factory=list)
    # What the source asks the report to say (a plan that only destroys, resources judged as absent).
    notes: list[str] = Field(default_factory=list)
    # One entry per scope a live collection visited (account x region, subscription, project).
    scopes: list[ScopeStatus] = Field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.errors

    def has(self, provider: str, account: str, region: str, fact: str) -> bool:
        return fact_key(provider, account, region, fact) in self.collected

    def merge(self, other: Inventory) -> None:
        self.nodes.extend(other.nodes)
        self.specs.extend(other.specs)
        self.capabilities.update(other.capabilities)
        self.aws.merge(other.aws)
        self.azure.merge(other.azure)
        self.gcp.merge(other.gcp)
        self.k8s.merge(other.k8s)
        self.slurm.merge(other.slurm)
        self.errors.extend(other.errors)
        self.notes.extend(other.notes)
        self.collected = sorted(set(self.collected) | set(other.collected))
        self.scopes.extend(other.scopes)
