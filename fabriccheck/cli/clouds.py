"""The scan commands of the three clouds: `aws`, `azure`, `gcp`, live or from a dump of the cloud CLI's own JSON.

Each one: the least privilege when asked; the options a dump cannot take (its declaration's live_only); the
gate settled in one call before anything is collected (a bad file fails in a second, not after a long scan);
collect; finish. What a command passes to its provider's `collect_live` is one options group (AwsLive,
AzureLive, GcpLive), named as collect_live names it. The cloud's SDK is imported only when its command runs live."""

import dataclasses
from typing import TYPE_CHECKING, Annotated, Any

import typer

from fabriccheck.cli.app import Command, app
from fabriccheck.cli.finish import finish
from fabriccheck.cli.live import check_live_options, collected, print_privilege
from fabriccheck.cli.options import CloudOptions, ConcurrencyOpt, EndpointOpt, ScanOptions, options
from fabriccheck.provider import cloud_sdk

if TYPE_CHECKING:
    from fabriccheck.providers.aws.fleet import Fleet


@dataclasses.dataclass(frozen=True)
class AwsLive:
    """The options `aws` passes to providers.aws.collect.collect_live."""

    every_region: Annotated[bool, typer.Option("--all-regions", help="Audit every enabled region.")] = False
    profile: Annotated[str | None, typer.Option(metavar="PROFILE", help="AWS profile from the shared config.")] = None
    endpoint_url: EndpointOpt = None
    topology: Annotated[
        bool, typer.Option("--topology", help="Also call DescribeInstanceTopology (one call per 100 instances).")
    ] = False
    concurrency: ConcurrencyOpt = None


def _account_ids(what: str) -> Any:
    return typer.Option(metavar="IDS", help=f"With --org-role: {what} account ids (repeatable, or comma-separated).")


@dataclasses.dataclass(frozen=True)
class AwsFleet:
    """The accounts `aws` audits through a role: one (--role-arn), or every account of the organization."""

    role_arn: Annotated[str | None, typer.Option(metavar="ARN", help="Assume this IAM role and audit its account.")] = (
        None
    )
    org_role: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="Audit every active account of the organization (organizations:ListAccounts) through the role "
            "NAME in each.",
        ),
    ] = None
    external_id: Annotated[
        str | None, typer.Option(metavar="ID", help="External id sent with AssumeRole (--role-arn, --org-role).")
    ] = None
    accounts: Annotated[list[str] | None, _account_ids("only these")] = None
    exclude_accounts: Annotated[list[str] | None, _account_ids("skip these")] = None

    def plan(self) -> "Fleet":
        """The fleet these options name (a malformed ARN or account id is an error now)."""
        from fabriccheck.providers.aws.fleet import Fleet, split_ids

        accounts, excluded = split_ids(self.accounts), split_ids(self.exclude_accounts)
        return Fleet(self.role_arn, self.org_role, self.external_id, accounts, excluded)


RegionOpt = Annotated[
    list[str] | None, typer.Option("--region", "-r", metavar="REGION", help="Region to audit (repeatable).")
]


@app.command(cls=Command)
@options("scan", ScanOptions)
@options("fleet", AwsFleet)
@options("common", CloudOptions)
@options("live", AwsLive)
def aws(*, region: RegionOpt = None, live: AwsLive, common: CloudOptions, fleet: AwsFleet, scan: ScanOptions) -> None:
    """Audit AWS: EFA interfaces, security groups, placement groups and launch templates."""
    accounts = fleet.plan()
    print_privilege("aws", scan, common, accounts)
    check_live_options("aws", scan, live.endpoint_url)
    settled = scan.settle()
    with cloud_sdk("aws"):
        dump_region = region[0] if region else None
        inventory = collected("aws", scan, common.from_dump, dump_region, region or [], live, accounts=accounts)
        finish(inventory, scan, settled)


@dataclasses.dataclass(frozen=True)
class AzureLive:
    """The options `azure` passes to providers.azure.collect.collect_live."""

    resource_groups: Annotated[
        list[str] | None,
        typer.Option("--resource-group", "-g", metavar="RG", help="Only these resource groups (repeatable)."),
    ] = None
    endpoint_url: EndpointOpt = None
    cloud: Annotated[str, typer.Option(metavar="CLOUD", help="Azure cloud: public, usgov or china.")] = "public"
    management_group: Annotated[
        str | None,
        typer.Option(metavar="ID", help="Audit every subscription under this management group (nested included)."),
    ] = None
    concurrency: ConcurrencyOpt = None


SubscriptionOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--subscription", "-s", metavar="ID", help="Subscription to audit (repeatable; default: every one listed)."
    ),
]


@app.command(cls=Command)
@options("scan", ScanOptions)
@options("common", CloudOptions)
@options("live", AzureLive)
def azure(*, subscription: SubscriptionOpt = None, live: AzureLive, common: CloudOptions, scan: ScanOptions) -> None:
    """Audit Azure: InfiniBand sizes, scale sets, availability sets, drivers and virtual networks."""
    from fabriccheck.errors import FabricCheckError

    print_privilege("azure", scan, common, live.management_group)
    if live.cloud not in ("public", "usgov", "china"):
        raise FabricCheckError(f"--cloud {live.cloud}: choose from public, usgov, china")
    check_live_options("azure", scan, live.endpoint_url)
    settled = scan.settle()
    with cloud_sdk("azure"):
        inventory = collected("azure", scan, common.from_dump, subscription, subscription or [], live)
        finish(inventory, scan, settled)


@dataclasses.dataclass(frozen=True)
class GcpLive:
    """The options `gcp` passes to providers.gcp.collect.collect_live."""

    endpoint_url: EndpointOpt = None
    zones: Annotated[
        list[str] | None,
        typer.Option("--zone", "-z", metavar="ZONE", help="Zone to audit (repeatable; default: every zone)."),
    ] = None
    organization: Annotated[
        str | None,
        typer.Option(metavar="ID", help="Audit every active project of this organization (numeric id), folders too."),
    ] = None
    folder: Annotated[
        str | None, typer.Option(metavar="ID", help="Audit every active project under this folder (numeric id).")
    ] = None
    concurrency: ConcurrencyOpt = None


ProjectOpt = Annotated[
    list[str] | None,
    typer.Option("--project", "-p", metavar="PROJECT", help="Project to audit (repeatable; default: the ADC one)."),
]


@app.command(cls=Command)
@options("scan", ScanOptions)
@options("common", CloudOptions)
@options("live", GcpLive)
def gcp(*, project: ProjectOpt = None, live: GcpLive, common: CloudOptions, scan: ScanOptions) -> None:
    """Audit Google Cloud: GPU NICs (TCPX, TCPXO, RDMA), their networks and firewalls, placement policies."""
    print_privilege("gcp", scan, common, live.organization is not None or live.folder is not None)
    check_live_options("gcp", scan, live.endpoint_url)
    settled = scan.settle()
    with cloud_sdk("gcp"):
        inventory = collected("gcp", scan, common.from_dump, project[0] if project else None, project or [], live)
        finish(inventory, scan, settled)
