"""The neutral model holds no provider quirk (issue 30 item 4): what only one provider's nodes or NICs have is a part
of that provider's (resources/<provider>.py), held in a node's `extensions` or a NIC's `extension`.

Saved inventories and flat nodes written before the parts held those keys (`firewall_targets` on a node, `accelerated`
on a NIC) still read, into the parts. A new field of a node's shape or NIC must be listed here as neutral, with why.
"""

from __future__ import annotations

import json
import shutil
import typing
from pathlib import Path
from typing import Any

import pytest
from cli_run import run
from pydantic import ValidationError

from fabriccheck import Dump, SavedInventory, audit
from fabriccheck.errors import FabricCheckError
from fabriccheck.model import NetworkInterface, NicPart, Node, NodePart, NodeShape
from fabriccheck.resources.azure import AzureNicPart
from fabriccheck.resources.gcp import GcpNodePart
from fabriccheck.resources.k8s import PodPart
from fabriccheck.resources.slurm import SlurmPart
from fabriccheck.sources.snapshot import load_inventory, save_inventory

ROOT = Path(__file__).resolve().parent.parent
# `fabriccheck azure --from-dump fixtures/demo/azure --save-inventory FILE` as main@facb3c0 wrote it, before NICs held
# accelerated networking in an Azure part: every NIC carries a top-level `accelerated`.
BEFORE_PARTS = Path(__file__).parent / "snapshots" / "azure-inventory-before-parts.json"
# `fabriccheck slurm --from-dump fixtures/slurm/pcluster --cloud-dump fixtures/demo/aws --scripts
# fixtures/slurm/scripts/fsdp-efa.sbatch --save-inventory FILE` as main@facb3c0 wrote it: each node and the job
# script's spec carry a top-level `slurm` part, each node joined to its EC2 instance.
SLURM_BEFORE_PARTS = Path(__file__).parent / "snapshots" / "slurm-inventory-before-parts.json"
# `fabriccheck k8s --from-dump fixtures/demo/k8s --save-inventory FILE` as main@6184cf8 wrote it: each pod's node
# carries a top-level `pod` part.
K8S_BEFORE_PARTS = Path(__file__).parent / "snapshots" / "k8s-inventory-before-parts.json"

# Every field of a node's shape and of a NIC, with why it belongs to every provider. A field only one provider fills
# is a part of that provider's (resources/<provider>.py), not a line here.
NEUTRAL_SHAPE: dict[str, str] = {
    "provider": "which provider's node it is",
    "account": "every provider scopes a node: AWS account, Azure subscription, GCP project, cluster",
    "region": "every provider places a node in a region (or a cluster's)",
    "origin": "running, template or plan: any provider's node may be either",
    "spec": "a launch template, scale-set model, instance template or Terraform resource: every cloud has one",
    "zone": "every cloud has zones",
    "instance_type": "instance type, VM size, machine type",
    "image": "AMI, Azure image, container image: what the node boots or runs",
    "tags": "AWS tags, Azure tags, GCP and Kubernetes labels",
    "interfaces": "every node has NICs",
    "placement": "neutral references (kind + id) to what places it, on every cloud",
    "network": "a node's own network when it lists no NICs (an AWS pending launch; any cloud may say it)",
    "software": "agents installed on the node (Azure VM extensions today; any cloud's agents are the same fact)",
    "accelerators": "GPUs attached beside the type's (GCP N1 today, a pod's node, a Slurm Gres on any cloud)",
    "accelerator": "the kind of those GPUs",
    "extensions": "the typed slot for provider-only parts (model.NodePart)",
}
NEUTRAL_NIC: dict[str, str] = {
    "interface_type": "the cloud's own word for the NIC (InterfaceType, nicType, nic), read by its provider",
    "network": "VPC, virtual network, GCP network",
    "subnet": "every cloud has subnets",
    "security_groups": "AWS security groups today; a firewall group a NIC is in is the same fact elsewhere",
    "public_ip": "every cloud gives a NIC a public address or not",
    "network_card_index": "which card; 0 where a cloud has one card",
    "device_index": "its order on the card",
    "extension": "the typed slot for a provider-only part of a NIC (model.NicPart)",
}


def test_every_field_of_a_shape_and_a_nic_is_listed_as_neutral() -> None:
    # A new provider-only field lands in resources/<provider>.py as a part; a new neutral one is listed above.
    assert set(NodeShape.model_fields) == set(NEUTRAL_SHAPE)
    assert set(NetworkInterface.model_fields) == set(NEUTRAL_NIC)


@pytest.mark.parametrize("union", [NodePart, NicPart])
def test_each_part_lives_in_its_providers_room_and_is_tagged_with_its_name(union: object) -> None:
    members = typing.get_args(typing.get_args(union)[0]) or (typing.get_args(union)[0],)
    for part in members:
        provider = part.model_fields["provider"].default
        assert typing.get_args(part.model_fields["provider"].annotation) == (provider,)
        assert part.__module__ == f"fabriccheck.resources.{provider}"


def test_a_flat_node_of_before_reads_its_keys_into_the_parts_and_writes_them_there() -> None:
    # The keys a flat node and its NIC held before (a saved inventory, a rule example of main@facb3c0).
    before: dict[str, Any] = {
        "id": "gpu-0",
        "provider": "gcp",
        "account": "p",
        "region": "us-central1",
        "instance_type": "a3-megagpu-8g",
        "firewall_targets": ["tag:gpu", "sa:train@p.iam.gserviceaccount.com"],
        "interfaces": [{"id": "nic0", "network": "net", "accelerated": False}, {"id": "nic1", "accelerated": None}],
    }
    node = Node.flat(**before)
    assert node.shape.part(GcpNodePart) == GcpNodePart(
        firewall_targets=("tag:gpu", "sa:train@p.iam.gserviceaccount.com")
    )
    assert node.interfaces[0].part(AzureNicPart) == AzureNicPart(accelerated=False)
    assert node.interfaces[1].extension is None  # null was "not said": no part
    written = node.model_dump(mode="json")
    assert "firewall_targets" not in written
    assert written["extensions"] == [{"provider": "gcp", "firewall_targets": list(before["firewall_targets"])}]
    assert written["interfaces"][0]["extension"] == {"provider": "azure", "accelerated": False}
    assert "accelerated" not in written["interfaces"][0]
    assert Node.flat(**written) == node


def test_a_node_without_a_part_writes_no_extensions() -> None:
    node = Node.flat(id="i-1", account="1", region="us-east-1", instance_type="p5.48xlarge", firewall_targets=None)
    assert node.shape.extensions == ()
    assert "extensions" not in node.model_dump(mode="json")


def test_two_parts_of_one_provider_on_one_node_are_refused() -> None:
    with pytest.raises(ValidationError, match="more than one extension of one provider: gcp, gcp"):
        Node.flat(id="n", account="p", region="r", extensions=[{"provider": "gcp"}, {"provider": "gcp"}])


def test_a_saved_inventory_with_a_part_of_no_provider_is_one_line_naming_the_field(tmp_path: Path) -> None:
    data = json.loads(BEFORE_PARTS.read_text(encoding="utf-8"))
    data["nodes"][3]["extensions"] = [{"provider": "aws", "firewall_targets": []}]
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(FabricCheckError) as caught:
        load_inventory(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: field nodes.3.extensions.0:") and "\n" not in message
    assert "'aws'" in message


def test_a_saved_inventory_of_before_the_parts_reads_and_judges_as_its_dump() -> None:
    before = json.loads(BEFORE_PARTS.read_text(encoding="utf-8"))
    said = [nic["accelerated"] for node in before["nodes"] for nic in node["interfaces"]]
    assert said.count(False) >= 2 and said.count(True) >= 10  # the demo's slow NICs and its accelerated ones
    inventory = load_inventory(BEFORE_PARTS)
    read = [
        part.accelerated if (part := nic.part(AzureNicPart)) else None for n in inventory.nodes for nic in n.interfaces
    ]
    assert read == said
    from_snapshot = audit("azure", SavedInventory(BEFORE_PARTS))
    from_dump = audit("azure", Dump(ROOT / "fixtures" / "demo" / "azure"))

    def judged(findings: list[Any]) -> list[tuple[str, str | None, tuple[str, ...], str]]:
        return sorted((f.rule, f.cluster, tuple(f.resources), f.message) for f in findings)

    assert judged(from_snapshot.findings) == judged(from_dump.findings)
    assert any(f.rule == "AZ150" for f in from_dump.findings)  # the slow NICs' finding, which reads the parts


def test_a_saved_gcp_inventory_keeps_its_instances_firewall_targets(tmp_path: Path) -> None:
    # Before the parts a saved inventory dropped them, and a re-read took every VPC firewall rule to apply. The demo's
    # first instance is given network tags and a service account as the Compute API v1 Instance carries them
    # (tags.items, serviceAccounts[].email).
    from fabriccheck.api import inventory

    dump = tmp_path / "gcp"
    shutil.copytree(ROOT / "fixtures" / "demo" / "gcp", dump)
    instances = json.loads((dump / "instances-list.json").read_text(encoding="utf-8"))
    instances[0]["tags"]["items"] = ["gpu-fabric"]
    instances[0]["serviceAccounts"] = [{"email": "train@fabriccheck-demo.iam.gserviceaccount.com", "scopes": []}]
    (dump / "instances-list.json").write_text(json.dumps(instances), encoding="utf-8")
    dumped = inventory("gcp", Dump(dump))
    targets = {n.id: n.shape.part(GcpNodePart) for n in dumped.nodes}
    assert targets[instances[0]["name"]] == GcpNodePart(
        firewall_targets=("tag:gpu-fabric", "sa:train@fabriccheck-demo.iam.gserviceaccount.com")
    )
    assert all(p is not None and p.firewall_targets is not None for p in targets.values())  # read, if empty
    path = tmp_path / "gcp.json"
    save_inventory(dumped, path)
    assert {n.id: n.shape.part(GcpNodePart) for n in load_inventory(path).nodes} == targets


def test_a_saved_slurm_inventory_of_before_reads_its_slurm_key_into_the_part_and_judges_as_its_dump() -> None:
    before = json.loads(SLURM_BEFORE_PARTS.read_text(encoding="utf-8"))
    flat = [*before["nodes"], *before["specs"]]
    assert len(flat) == 13 and all(n["slurm"]["joined_by"] == "address" for n in before["nodes"])
    inventory = load_inventory(SLURM_BEFORE_PARTS)
    read = [n.shape.part(SlurmPart) for n in [*inventory.nodes, *inventory.specs]]
    assert read == [SlurmPart.model_validate(n["slurm"]) for n in flat]
    assert {n.shape.extensions for n in inventory.nodes} == {(p,) for p in read[:12]}  # no other part on EC2 nodes
    saved = run("check", str(SLURM_BEFORE_PARTS), "-f", "json")
    dumped = run(
        "slurm",
        "--from-dump",
        str(ROOT / "fixtures" / "slurm" / "pcluster"),
        "--cloud-dump",
        str(ROOT / "fixtures" / "demo" / "aws"),
        "--scripts",
        str(ROOT / "fixtures" / "slurm" / "scripts" / "fsdp-efa.sbatch"),
        "-f",
        "json",
    )
    assert saved.returncode == dumped.returncode == 1, saved.stderr + dumped.stderr

    def judged(report: str) -> list[tuple[str, str | None, tuple[str, ...], str]]:
        found = json.loads(report)["findings"]
        return sorted((f["rule"], f["cluster"], tuple(f["resources"]), f["message"]) for f in found)

    assert judged(saved.stdout) == judged(dumped.stdout) != []


def test_a_slurm_node_on_a_gcp_instance_keeps_the_instances_part_beside_its_own() -> None:
    gcp = GcpNodePart(firewall_targets=("tag:gpu",))
    slurm = SlurmPart(cluster="llm", partition="train", cloud="gcp", joined_by="name")
    node = Node.flat(
        id="n1", provider="slurm", account="llm", region="slurm", extensions=[gcp], slurm=slurm.model_dump()
    )
    assert node.shape.extensions == (gcp, slurm)
    assert node.shape.with_part(slurm.model_copy(update={"partition": "debug"})) == (
        gcp,
        SlurmPart(cluster="llm", partition="debug", cloud="gcp", joined_by="name"),
    )
    assert node.shape.without_part(SlurmPart) == (gcp,)
    assert Node.flat(**node.model_dump(mode="json")) == node


def test_a_saved_k8s_inventory_of_before_reads_its_pod_key_into_the_part_and_judges_as_its_dump() -> None:
    before = json.loads(K8S_BEFORE_PARTS.read_text(encoding="utf-8"))
    assert len(before["nodes"]) == 12 and all("pod" in n for n in before["nodes"])
    inventory = load_inventory(K8S_BEFORE_PARTS)
    assert [n.shape.part(PodPart) for n in inventory.nodes] == [
        PodPart.model_validate(n["pod"]) for n in before["nodes"]
    ]
    written = json.loads(json.dumps(inventory.model_dump(mode="json")))
    assert all("pod" not in n and [p["provider"] for p in n["extensions"]] == ["k8s"] for n in written["nodes"])
    saved = run("check", str(K8S_BEFORE_PARTS), "-f", "json")
    dumped = run("k8s", "--from-dump", str(ROOT / "fixtures" / "demo" / "k8s"), "-f", "json")
    assert saved.returncode == dumped.returncode, saved.stderr + dumped.stderr

    def judged(report: str) -> list[tuple[str, str | None, tuple[str, ...], str]]:
        found = json.loads(report)["findings"]
        return sorted((f["rule"], f["cluster"], tuple(f["resources"]), f["message"]) for f in found)

    assert judged(saved.stdout) == judged(dumped.stdout) != []
