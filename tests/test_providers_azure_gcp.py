"""Azure and GCP provider support: type names, how much fabric a node has attached, and grouping signals."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fabriccheck.catalog import fabric_siblings, known_types, resolve
from fabriccheck.cloud import CloudSupport, FabricAttachment, PlacementSignal, TagSignal, support
from fabriccheck.model import Capability, FabricKind, FlatInterface, Node, Placement, Provider
from fabriccheck.providers.azure import support as azure_support
from fabriccheck.providers.gcp import support as gcp_support
from fabriccheck.providers.gcp.lookup import RDMA_PROFILE

AZURE = support("azure")
GCP = support("gcp")
AWS = support("aws")
CLOUDS = (AWS, AZURE, GCP)


def node(
    provider: Provider,
    instance_type: str,
    nics: list[FlatInterface] | None = None,
    placement: list[Placement] | None = None,
) -> Node:
    return Node.flat(
        id=f"{provider}-node",
        provider=provider,
        account="acct-1",
        region="region-1",
        zone="zone-a",
        instance_type=instance_type,
        interfaces=nics or [],
        placement=placement or [],
    )


def nic(index: int, network: str | None, subnet: str | None = None, nic_type: str = "GVNIC") -> FlatInterface:
    return FlatInterface(
        id=f"nic{index}", interface_type=nic_type, network=network, subnet=subnet, device_index=index
    )


def attachment(cloud: CloudSupport, n: Node) -> FabricAttachment:
    assert n.instance_type is not None
    return cloud.fabric_attachment(n.shape, resolve(n.instance_type, {}))


# ---------------------------------------------------------------------------------------------- Azure


def test_azure_infiniband_comes_with_the_size_not_a_nic() -> None:
    scale_set = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/nd"
    vm = node("azure", "Standard_ND96isr_H100_v5", placement=[Placement(kind=azure_support.SCALE_SET, id=scale_set)])
    assert vm.interfaces == ()
    got = attachment(AZURE, vm)
    assert (got.attached, got.paths, got.interfaces) == (8, 8, ())


def test_azure_size_without_infiniband_has_none_attached_whatever_its_nics() -> None:
    vm = node("azure", "Standard_NC24ads_A100_v4", [nic(0, "vnet-1", "default"), nic(1, "vnet-2", "b")])
    assert attachment(AZURE, vm) == FabricAttachment(0, 0)


def test_azure_unknown_size_has_nothing_known_attached() -> None:
    vm = node("azure", "Standard_ND96isr_H100_v5")
    assert AZURE.fabric_attachment(vm.shape, None) == FabricAttachment(0, 0)


def test_azure_hpc_size_without_gpus_is_expected_to_use_its_infiniband() -> None:
    hb = resolve("Standard_HB120rs_v3", {})
    assert hb is not None and hb.fabric is FabricKind.INFINIBAND and hb.accelerators == 0
    assert AZURE.is_hpc("Standard_HB120rs_v3") and AZURE.is_hpc("Standard_HX176rs")
    assert AZURE.fabric_expected("Standard_HB120rs_v3", hb)
    assert AZURE.fabric_expected("Standard_HX176rs", resolve("Standard_HX176rs", {}))
    assert AZURE.fabric_expected("Standard_ND96isr_H100_v5", resolve("Standard_ND96isr_H100_v5", {}))


def test_azure_cpu_size_without_infiniband_is_not_expected_to_use_a_fabric() -> None:
    assert not AZURE.is_hpc("Standard_D8s_v5")
    assert not AZURE.fabric_expected("Standard_D8s_v5", resolve("Standard_D8s_v5", {}))
    plain = Capability(instance_type="Standard_D8s_v5", provider="azure", fabric=FabricKind.NONE, source="test")
    assert not AZURE.fabric_expected("Standard_D8s_v5", plain)
    # A CPU size that is not an HPC size is not flagged even if it had a fabric.
    odd = plain.model_copy(update={"fabric": FabricKind.INFINIBAND, "fabric_interfaces": 1})
    assert not AZURE.fabric_expected("Standard_D8s_v5", odd)


@pytest.mark.parametrize(
    ("size", "gpus"),
    [
        ("Standard_D4s_v5", 0),  # general purpose (sizes/overview.md)
        ("Standard_DS3_v2", 0),  # the previous generation's name of D
        ("Standard_E64-16ds_v4", 0),  # memory optimized, constrained vCPUs
        ("Standard_F72s_v2", 0),
        ("Standard_M416ms_v2", 0),
        ("Standard_B2ms", 0),
        ("Basic_A1", 0),
        ("Standard_L8s_v3", 0),
        ("Standard_DC8ads_v5", 0),
        ("Standard_NP10s", 0),  # FPGA: no GPU
        ("Standard_NC4as_T4_v3", 1),  # N-series without 'r', GPUs from its size page
        ("Standard_NC64as_T4_v3", 4),
        ("Standard_NV36ads_A10_v5", 1),
        ("Standard_NV6ads_A10_v5", 0),  # a sixth of an A10: no whole GPU
        ("Standard_NCC40ads_H100_v5", 1),
    ],
)
def test_azure_size_names_without_infiniband_are_known_without_a_table(size: str, gpus: int) -> None:
    cap = resolve(size, {})
    assert cap is not None and cap.fabric is FabricKind.NONE and cap.accelerators == gpus
    assert "naming" in cap.source


@pytest.mark.parametrize(
    "size",
    [
        "Standard_A8",  # the retired compute-intensive A8 and A9 had RDMA before the 'r' convention
        "Standard_A9",
        "Standard_HB60rs",  # an HPC size with 'r' that no table holds: its InfiniBand is not guessed
        "Standard_H16r",
        "Standard_NC8ads_A10_v4",  # an N-series size whose GPUs no table gives
        "Standard_NC24r",  # an N-series size with 'r'
        "Standard_D96rs_v9",  # an 'r' in any family means RDMA: never answered from the name
    ],
)
def test_azure_size_names_that_do_not_say_stay_unknown(size: str) -> None:
    assert resolve(size, {}) is None


@pytest.mark.parametrize(
    ("size", "family", "generation", "rank"),
    [
        ("Standard_ND96isr_H100_v5", "ND", "ND_H100_v5", 96),
        ("Standard_ND96isr_H200_v5", "ND", "ND_H200_v5", 96),
        ("Standard_ND96asr_v4", "ND", "ND_A100_v4", 96),  # named without its accelerator (RDMA_PAIRS)
        ("Standard_NC24rs_v3", "NC", "NC_v3", 24),
        ("Standard_NC24s_v3", "NC", "NC_v3", 24),
        ("Standard_HB120rs_v3", "HB", "HB_v3", 120),
        ("Standard_HB120-16rs_v3", "HB", "HB_v3", 120),
        ("Standard_HX176rs", "HX", "HX", 176),
        ("Standard_ND40rs_v2", "ND", "ND_v2", 40),
        ("Standard_NC24ads_A100_v4", "NC", "ND_A100_v4", 24),  # paired with its RDMA sibling ND A100 v4
        ("Standard_NC40ads_H100_v5", "NC", "ND_H100_v5", 40),  # paired with ND H100 v5
        ("Standard_ND128isr_NDR_GB200_v6", "ND", "ND_NDR_GB200_v6", 128),
        ("nd96isr_h100_v5", "ND", "ND_H100_v5", 96),
        ("NC24rs_v3", "NC", "NC_v3", 24),
        ("Standard_DS11_v2_Promo", "DS", "DS_v2", 11),
    ],
)
def test_azure_size_names_parse(size: str, family: str, generation: str, rank: int) -> None:
    assert AZURE.family(size) == family
    assert AZURE.generation(size) == generation
    assert AZURE.size_rank(size) == rank


def test_azure_generation_pairs_rdma_and_plain_sizes_but_not_accelerators() -> None:
    assert AZURE.generation("Standard_NC24s_v3") == AZURE.generation("Standard_NC24rs_v3")
    assert AZURE.generation("Standard_ND96isr_H100_v5") != AZURE.generation("Standard_ND96isr_H200_v5")
    assert AZURE.generation("Standard_NC24ads_A100_v4") != AZURE.generation("Standard_NC24s_v3")


def test_azure_nc_v3_siblings_follow_what_the_catalog_holds() -> None:
    # The catalog has the NCv3 rows (AZ-NCV3): the RDMA twin NC24rs_v3 is the suggestion for NC24s_v3 ...
    assert [s.instance_type for s in fabric_siblings(AZURE, "Standard_NC24s_v3", {})] == ["Standard_NC24rs_v3"]
    # ... and a live Resource SKUs answer that says otherwise wins over the catalog.
    live = {
        "Standard_NC24rs_v3": Capability(
            instance_type="Standard_NC24rs_v3",
            provider="azure",
            fabric=FabricKind.NONE,
            accelerators=4,
            accelerator_name="V100",
            source="test",
        )
    }
    assert fabric_siblings(AZURE, "Standard_NC24s_v3", live) == []


def test_azure_nc_sizes_without_rdma_suggest_their_nd_sibling() -> None:
    a100 = [s.instance_type for s in fabric_siblings(AZURE, "Standard_NC96ads_A100_v4", {})]
    assert set(a100) == {"Standard_ND96asr_v4", "Standard_ND96amsr_A100_v4"}
    h100 = [s.instance_type for s in fabric_siblings(AZURE, "Standard_NC80adis_H100_v5", {})]
    assert h100 == ["Standard_ND96isr_H100_v5"]


def test_azure_every_infiniband_series_has_catalog_rows() -> None:
    for size in ("Standard_HC44rs", "Standard_HB120rs_v2", "Standard_HB120-16rs_v3", "Standard_HB176-24rs_v4",
                 "Standard_HX176-48rs", "Standard_NC24rs_v3", "Standard_ND40rs_v2"):  # fmt: skip
        cap = resolve(size, {})
        assert cap is not None and cap.fabric is FabricKind.INFINIBAND and cap.source, size


@pytest.mark.parametrize(
    ("image", "kind"),
    [
        ("microsoft-dsvm:ubuntu-hpc:2204:latest", "hpc"),
        ("almalinux:almalinux-hpc:8_7-hpc-gen2:latest", "hpc"),
        ("Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:latest", "marketplace"),
        ("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/images/custom", "custom"),
        (None, "unknown"),
    ],
)
def test_azure_image_kinds(image: str | None, kind: str) -> None:
    assert azure_support.image_kind(image) == kind


def test_azure_rdma_range_overlap() -> None:
    assert azure_support.overlaps_rdma(["10.0.0.0/16", "172.16.4.0/24", "172.0.0.0/8", "fd00::/8", "bad"]) == [
        "172.16.4.0/24",
        "172.0.0.0/8",
    ]
    assert azure_support.overlaps_rdma(["172.17.0.0/16"]) == []


def test_azure_driver_extension_and_vnet_of_subnet() -> None:
    from fabriccheck.resources.azure import Extension

    assert azure_support.has_ib_driver([Extension(publisher="microsoft.hpccompute", type="InfiniBandDriverLinux")])
    assert not azure_support.has_ib_driver([Extension(publisher="Other", type="InfiniBandDriverLinux")])
    assert azure_support.has_ib_driver([Extension(publisher="", type="InfiniBandDriverLinux")])  # named by id only
    subnet = "/subscriptions/S/resourceGroups/RG/providers/Microsoft.Network/virtualNetworks/V/subnets/x"
    assert azure_support.vnet_of_subnet(subnet) == subnet.lower().rsplit("/subnets/", 1)[0]
    assert azure_support.vnet_of_subnet(None) is None


def test_azure_h100_siblings_never_offer_h200() -> None:
    names = {s.instance_type for s in fabric_siblings(AZURE, "Standard_ND96isr_H100_v5", {})}
    assert "Standard_ND96isr_H200_v5" not in names
    assert "Standard_ND96isr_H200_v5" in known_types("azure", {})  # it is known, just not a stand-in


def test_azure_signals_put_orchestrators_above_the_scale_set() -> None:
    signals = AZURE.signals
    placement = [s for s in signals if isinstance(s, PlacementSignal)]
    assert [s.kind for s in placement] == ["scale-set", "availability-set", "proximity-placement-group"]
    assert (azure_support.SCALE_SET, azure_support.AVAILABILITY_SET, azure_support.PROXIMITY_PLACEMENT_GROUP) == (
        "scale-set",
        "availability-set",
        "proximity-placement-group",
    )
    first_placement = signals.index(placement[0])
    tags = [i for i, s in enumerate(signals) if isinstance(s, TagSignal)]
    assert tags and max(tags) < first_placement  # a job over two scale sets stays one cluster, so its split shows
    keys = {k for s in signals if isinstance(s, TagSignal) for k in s.keys}
    assert {"CycleCloudNodeArray", "aks-managed-poolName"} <= keys
    # The AKS pool name never groups alone: two clusters may both have a pool named `gpu`.
    assert all(s.keys != ("aks-managed-poolName",) for s in signals if isinstance(s, TagSignal))


# ---------------------------------------------------------------------------------------------- GCP


def a3(machine: str, gpu_networks: list[str], host: str = "host-vpc") -> Node:
    # nic0 is listed last: the host NIC is the lowest index, not the first in the list.
    nics = [nic(i + 1, net, f"{net}-sub") for i, net in enumerate(gpu_networks)]
    return node("gcp", machine, [*nics, nic(0, host, "host-sub")])


def test_a3_high_with_four_gpu_vpcs_has_four_attached() -> None:
    got = attachment(GCP, a3("a3-highgpu-8g", ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]))
    assert (got.attached, got.paths) == (4, 4)
    assert sorted(i.device_index for i in got.interfaces) == [1, 2, 3, 4]


def test_a3_high_gpu_nics_sharing_a_vpc_count_once() -> None:
    got = attachment(GCP, a3("a3-highgpu-8g", ["gpu-0", "gpu-1", "gpu-2", "gpu-2"]))
    assert (got.attached, got.paths) == (3, 3)


def test_a3_high_gpu_nic_on_the_host_vpc_does_not_count() -> None:
    got = attachment(GCP, a3("a3-highgpu-8g", ["host-vpc", "gpu-1", "gpu-2", "gpu-3"]))
    assert (got.attached, got.paths) == (3, 3)
    assert 1 not in {i.device_index for i in got.interfaces}


def test_a3_high_counts_at_most_its_four_gpu_nics() -> None:
    got = attachment(GCP, a3("a3-highgpu-8g", ["gpu-0", "gpu-1", "gpu-2", "gpu-3", "extra"]))
    assert (got.attached, got.paths) == (4, 4)


def test_a3_mega_with_eight_gpu_vpcs_has_eight_attached() -> None:
    got = attachment(GCP, a3("a3-megagpu-8g", [f"gpu-{i}" for i in range(8)]))
    assert (got.attached, got.paths) == (8, 8)


def ultra(mrdma: int, subnets: int | None = None, machine: str = "a3-ultragpu-8g") -> Node:
    per_subnet = subnets or mrdma
    nics = [nic(0, "gvnic-a", "a"), nic(1, "gvnic-b", "b")]
    nics += [nic(2 + i, "roce-vpc", f"roce-sub-{i % per_subnet}", "MRDMA") for i in range(mrdma)]
    return node("gcp", machine, nics)


def test_a3_ultra_eight_mrdma_nics_on_one_roce_vpc_are_all_attached() -> None:
    got = attachment(GCP, ultra(8))
    assert (got.attached, got.paths) == (8, 8)
    assert {i.interface_type for i in got.interfaces} == {"MRDMA"} and len(got.interfaces) == 8


def test_a3_ultra_six_mrdma_nics_are_six() -> None:
    assert attachment(GCP, ultra(6)).attached == 6


def test_mrdma_nics_in_one_subnet_are_attached_but_one_path() -> None:
    got = attachment(GCP, ultra(8, subnets=1))
    assert (got.attached, got.paths) == (8, 1)


def test_a3_ultra_with_gvnic_only_has_nothing_attached() -> None:
    got = attachment(GCP, ultra(0))
    assert (got.attached, got.paths, got.interfaces) == (0, 0, ())


def test_a4x_counts_its_four_mrdma_nics() -> None:
    assert attachment(GCP, ultra(4, machine="a4x-highgpu-4g")).attached == 4


@pytest.mark.parametrize(
    ("profile", "zone"),
    [
        ("projects/p/global/networkProfiles/us-central1-a-vpc-roce", ("us-central1-a", "roce")),
        ("projects/p/global/networkProfiles/europe-west4-b-vpc-roce-metal", ("europe-west4-b", "roce")),
        ("projects/p/global/networkProfiles/us-central1-a-vpc-falcon", ("us-central1-a", "falcon")),  # H4D, IRDMA
        ("projects/p/global/networkProfiles/us-central1-a-vpc-standard", None),
    ],
)
def test_gcp_rdma_profiles_name_their_zone_and_kind(profile: str, zone: tuple[str, str] | None) -> None:
    match = RDMA_PROFILE.search(profile)
    assert ((match["zone"], match["kind"]) if match else None) == zone


def test_gcp_type_without_fabric_or_unknown_has_nothing_attached() -> None:
    many = a3("a2-ultragpu-8g", ["gpu-0", "gpu-1"])
    assert attachment(GCP, many) == FabricAttachment(0, 0)
    assert GCP.fabric_attachment(a3("a3-highgpu-8g", ["gpu-0"]).shape, None) == FabricAttachment(0, 0)


@pytest.mark.parametrize(
    ("machine", "family", "rank"),
    [
        ("a3-highgpu-8g", "a3-highgpu", 8),
        ("a3-megagpu-8g", "a3-megagpu", 8),
        ("a3-ultragpu-8g", "a3-ultragpu", 8),
        ("a4-highgpu-8g", "a4-highgpu", 8),
        ("a4x-highgpu-4g", "a4x-highgpu", 4),
        ("a2-ultragpu-8g", "a2-ultragpu", 8),
        ("a3-highgpu-1g", "a3-highgpu", 1),
        ("h4d-highmem-192", "h4d-highmem", 192),
        ("n2-standard-8", "n2-standard", 8),
    ],
)
def test_gcp_machine_types_parse(machine: str, family: str, rank: int) -> None:
    assert GCP.family(machine) == family
    assert GCP.generation(machine) == family
    assert GCP.size_rank(machine) == rank


def test_gcp_generation_keeps_series_and_type_apart() -> None:
    assert GCP.generation("a3-highgpu-1g") == GCP.generation("a3-highgpu-8g")
    assert GCP.generation("a3-ultragpu-8g") != GCP.generation("a3-highgpu-8g")
    assert GCP.generation("a3-megagpu-8g") != GCP.generation("a3-highgpu-8g")


def test_gcp_small_a3_high_suggests_the_eight_gpu_size_first() -> None:
    siblings = fabric_siblings(GCP, "a3-highgpu-1g", {})
    assert siblings and siblings[0].instance_type == "a3-highgpu-8g"
    for sibling in siblings:
        assert sibling.capability.provider == "gcp" and GCP.owns(sibling.instance_type)
        assert sibling.capability.accelerator_name == "H100"


def test_h4d_is_the_gcp_hpc_series() -> None:
    assert GCP.is_hpc("h4d-highmem-192") and GCP.is_hpc("h4d-standard-192")
    assert not GCP.is_hpc("h3-standard-88") and not GCP.is_hpc("a3-highgpu-8g")


def test_gcp_signals_put_orchestrators_above_the_placement_policy() -> None:
    signals = GCP.signals
    assert gcp_support.RESOURCE_POLICY == "resource-policy"
    last = signals[-1]
    assert isinstance(last, PlacementSignal) and last.kind == "resource-policy"
    assert all(isinstance(s, TagSignal) for s in signals[:-1])
    first = signals[0]
    assert isinstance(first, TagSignal) and first.keys == ("goog-k8s-cluster-name", "goog-k8s-node-pool-name")
    assert ("slurm_instance_role", "controller") in GCP.alone_tags


# ---------------------------------------------------------------------------------------------- all clouds


@pytest.mark.parametrize(
    ("name", "owner"),
    [
        ("p5.48xlarge", "aws"),
        ("p6-b200.48xlarge", "aws"),
        ("trn1n.32xlarge", "aws"),
        ("Standard_ND96isr_H100_v5", "azure"),
        ("Standard_HB120-16rs_v3", "azure"),
        ("nd96isr_h100_v5", "azure"),
        ("HX176rs", "azure"),
        ("a3-highgpu-8g", "gcp"),
        ("a4x-maxgpu-4g-metal", "gcp"),
        ("h4d-highmem-192", "gcp"),
        ("n2-standard-8", "gcp"),
    ],
)
def test_owns_separates_the_three_clouds(name: str, owner: str) -> None:
    assert {c.name for c in CLOUDS if c.owns(name)} == {owner}


@pytest.mark.parametrize(
    ("cloud", "types"),
    [
        (AWS, ["p5.4xlarge", "p4d.24xlarge", "trn1.32xlarge", "g6e.24xlarge"]),
        (AZURE, sorted(known_types("azure", {}))),
        (GCP, sorted(known_types("gcp", {}))),
    ],
    ids=["aws", "azure", "gcp"],
)
def test_suggestions_stay_within_their_cloud(cloud: CloudSupport, types: list[str]) -> None:
    others = [c for c in CLOUDS if c is not cloud]
    # A live answer that mentions the other clouds' types must not leak them in either.
    live = {
        name: cap
        for name in ("p5.48xlarge", "Standard_ND96isr_H100_v5", "a3-highgpu-8g")
        if (cap := resolve(name, {})) is not None
    }
    assert types
    for name in types:
        for sibling in fabric_siblings(cloud, name, live):
            assert sibling.capability.provider == cloud.name, (name, sibling.instance_type)
            assert cloud.owns(sibling.instance_type)
            assert not any(other.owns(sibling.instance_type) for other in others)


def test_support_modules_import_no_cloud_sdk() -> None:
    code = (
        "import sys\n"
        "import fabriccheck.providers.azure.support, fabriccheck.providers.gcp.support\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('azure', 'google', 'boto3', 'botocore'))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
