"""Dumps read with only the fields the normalizers use (sources/projected.py) give exactly what reading every field
gives, and an item unlike its neighbours keeps its own values."""

from __future__ import annotations

import copy
import json
import shutil
import sys
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints, is_typeddict

import pytest

from fabriccheck.builders.demo_gcp import Project, build, fleet
from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.providers.gcp import dump as gcp_dump
from fabriccheck.providers.gcp import normalize as gcp_normalize
from fabriccheck.providers.gcp.listing import INSTANCES
from fabriccheck.providers.gcp.normalize import InstanceFields, Normalizer
from fabriccheck.sources import projected
from fabriccheck.sources.pools import without

ROOT = Path(__file__).resolve().parent.parent
GCP_DEMO = ROOT / "fixtures" / "demo" / "gcp"


class _Reads(dict[str, Any]):
    """A dict that records the keys read from it (and from the dicts it holds, under their path)."""

    def __init__(self, value: dict[str, Any], path: str, log: set[str]) -> None:
        super().__init__(value)
        self._path, self._log = path, log

    def _wrap(self, key: str, value: Any) -> Any:
        where = f"{self._path}{key}"
        self._log.add(where)
        if isinstance(value, dict):
            return _Reads(value, where + ".", self._log)
        if isinstance(value, list):
            return [_Reads(v, where + "[].", self._log) if isinstance(v, dict) else v for v in value]
        return value

    def get(self, key: str, default: Any = None) -> Any:
        return self._wrap(key, super().get(key, default))

    def __getitem__(self, key: str) -> Any:
        return self._wrap(key, super().__getitem__(key))

    def __contains__(self, key: object) -> bool:
        self._log.add(f"{self._path}{key}")
        return super().__contains__(key)


def _projection_paths(typed: Any, prefix: str = "") -> set[str]:
    """Every path a projection keeps; below a field of another type (Any, str, dict[str, str]) everything is
    kept (the path ends with '*'). Optional fields and lists are looked through to the TypedDict they hold."""
    paths = set()
    for name, hint in get_type_hints(typed).items():
        paths.add(prefix + name)
        inner, nested = hint, "."
        if get_origin(inner) in (Union, UnionType):
            inner = next(a for a in get_args(inner) if a is not type(None))
        if get_origin(inner) is list:
            inner, nested = get_args(inner)[0], "[]."
        if is_typeddict(inner):
            paths |= _projection_paths(inner, prefix + name + nested)
        else:
            paths.add(prefix + name + ".*")
    return paths


def _kept(path: str, kept: set[str]) -> bool:
    """Whether the projection keeps `path`: named itself, or below a field kept whole."""
    flat = {k.replace("[].", ".") for k in kept}
    parts = path.replace("[].", ".").split(".")
    return ".".join(parts) in flat or any(".".join(parts[:n]) + ".*" in flat for n in range(1, len(parts)))


def _gcp_instances() -> list[dict[str, Any]]:
    """The demo's instances, a bench fleet's, and the same with every optional shape the normalizer reads."""
    demo = Project()
    build(demo)
    items = demo.instances + fleet(64).instances
    extra = copy.deepcopy(items[0])
    extra["scheduling"] = {"provisioningModel": "FLEX_START"}
    extra["reservationAffinity"] = {"consumeReservationType": "SPECIFIC_RESERVATION", "values": ["r1"]}
    extra["resourceStatus"] = {"physicalHost": "/c/r/h"}
    extra["networkInterfaces"][0]["ipv6AccessConfigs"] = [{"name": "v6"}]
    return [*items, extra]


def test_the_gcp_projection_keeps_every_field_the_normalizer_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    log: set[str] = set()
    # An instance's shape is read from a copy without its own fields (sources/pools.py): record reads there too.
    monkeypatch.setattr(gcp_normalize, "without", lambda item, paths: _Reads(without(item, paths), "", log))
    inventory = Inventory()
    normalizer = Normalizer(inventory, "fabriccheck-demo", lambda call: "instances-list.json")
    for index, item in enumerate(_gcp_instances()):
        normalizer._read_node(_Reads(item, "", log), "fabriccheck-demo")  # the reading of one instance
        if index == 0:
            assert {"name", "zone", "machineType", "networkInterfaces"} <= log  # the recorder sees reads
    kept = _projection_paths(InstanceFields)
    assert {path for path in log if not _kept(path, kept)} == set()


def _dump(folder: Path, project: Project) -> Path:
    project.write(folder)
    return folder


def test_a_gcp_dump_reads_the_same_projected_or_in_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    demo = Project()
    build(demo)
    for name, project in (("demo", demo), ("fleet", fleet(300))):
        folder = _dump(tmp_path / name, project)
        assert projected.read(folder / "instances-list.json", InstanceFields) is not None
        fast = gcp_dump.load_dump(folder)
        with monkeypatch.context() as patch:
            patch.setattr(projected, "read", lambda path, item: None)
            full = gcp_dump.load_dump(folder)
        assert fast.model_dump_json() == full.model_dump_json()
        assert len(fast.nodes) == len(project.instances)


def test_projected_read_declines_what_it_does_not_read_as_expected(tmp_path: Path) -> None:
    cases = {
        "api-answer.json": json.dumps({"items": [{"name": "a"}]}),
        "bom.json": "\ufeff" + json.dumps([{"name": "a"}]),
        "not-objects.json": json.dumps([{"name": "a"}, 3]),
        "nics-not-a-list.json": json.dumps([{"name": "a", "networkInterfaces": {"nic0": {}}}]),
        "nan.json": '[{"name": "a", "status": NaN}]',
        "cut.json": '[{"name": "a"',
        "empty.json": "",
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        assert projected.read(path, InstanceFields) is None, name
    assert projected.read(tmp_path / "missing.json", InstanceFields) is None
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps([{"name": "a", "disks": [{"big": "x" * 100}], "labels": {"k": "v"}}]), encoding="utf-8")
    assert projected.read(ok, InstanceFields) == [{"name": "a", "labels": {"k": "v"}}]


def test_a_misshapen_gcp_dump_fails_as_it_did_when_read_in_full(tmp_path: Path) -> None:
    project = fleet(3)
    project.instances[1]["networkInterfaces"] = {"nic0": {}}
    folder = _dump(tmp_path / "bad", project)
    with pytest.raises(FabricCheckError, match=r"instances-list\.json.*\[1\]"):
        gcp_dump.load_dump(folder)
    assert INSTANCES.dump_file == "instances-list.json"


# ---------------------------------------------------------------------------------------- Azure

from fabriccheck.builders import demo_azure as azure_builder  # noqa: E402
from fabriccheck.providers.azure import dump as azure_dump  # noqa: E402
from fabriccheck.providers.azure import normalize as azure_normalize  # noqa: E402

AZURE_CALLS = {call.dump_file: call for call in azure_normalize.CALLS}


def _azure_answers() -> list[tuple[str, dict[str, list[Any]]]]:
    """The demo's and a fleet's answers, as ARM sends them and as `az -o json` prints them (flattened)."""
    out = []
    for name, subscription in (("demo", azure_builder.demo()), ("fleet", azure_builder.fleet(400))):
        out.append((f"{name}-arm", subscription.files))
        out.append((f"{name}-cli", {f: azure_builder.flatten(items) for f, items in subscription.files.items()}))
    return out


def test_the_azure_projections_keep_every_field_the_normalizer_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    projected_calls = azure_normalize.PROJECTIONS
    assert {c.dump_file for c in projected_calls} == {
        "vm-list.json",
        "vmss-list-instances.json",
        "network-nic-list.json",
    }
    for name, files in _azure_answers():
        logs: dict[Any, set[str]] = {call: set() for call in projected_calls}
        # A VM's shape is read from a copy without its own fields (sources/pools.py): record reads there too.
        vm_reads = logs[azure_normalize.VM_LIST] | logs[azure_normalize.SCALE_SET_VM_LIST]
        monkeypatch.setattr(
            azure_normalize, "without", lambda item, paths, log=vm_reads: _Reads(without(item, paths), "", log)
        )
        normalizer = azure_normalize.Normalizer(Inventory(), None, lambda call: call.dump_file)
        for call in azure_normalize.CALLS:  # in reading order: scale sets before their VMs, NICs after
            items = files.get(call.dump_file, [])
            if call in projected_calls:
                items = [_Reads(item, "", logs[call]) for item in items]
            normalizer.add(call, items)
        for call, log in logs.items():
            if files.get(call.dump_file):
                assert "id" in log, (name, call.dump_file)  # the recorder sees reads
            if call in (azure_normalize.VM_LIST, azure_normalize.SCALE_SET_VM_LIST):
                log |= vm_reads  # the VM lists share one projection
            kept = _projection_paths(projected_calls[call])
            assert {path for path in log if not _kept(path, kept)} == set(), (name, call.dump_file)


def test_an_azure_dump_reads_the_same_projected_or_in_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, files in _azure_answers():
        folder = tmp_path / name / azure_builder.SUBSCRIPTION
        folder.mkdir(parents=True)
        for file, items in files.items():
            (folder / file).write_text(json.dumps(items, indent=1), encoding="utf-8")
        for call, fields in azure_normalize.PROJECTIONS.items():  # the projection reads each of these files
            if files.get(call.dump_file):
                assert projected.read(folder / call.dump_file, fields) is not None, (name, call.dump_file)
        fast = azure_dump.load_dump(tmp_path / name)
        with monkeypatch.context() as patch:
            patch.setattr(projected, "read", lambda path, item: None)
            full = azure_dump.load_dump(tmp_path / name)
        assert fast.model_dump_json() == full.model_dump_json(), name
        assert fast.nodes, name


def _change(item: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        item = item.setdefault(key, {}) if isinstance(item, dict) else item[key]
    item[path[-1]] = value


# Each value a VM's shape is read from, changed on one VM amid others alike: that VM keeps its own value.
_AZURE_SHAPE_CHANGES: dict[str, list[tuple[tuple[Any, ...], Any]]] = {
    "vmss-list-instances.json": [
        (("zones",), ["2"]),
        (("tags",), {"team": "x"}),
        (("sku", "name"), "Standard_ND96asr_v4"),
        (("storageProfile", "imageReference", "offer"), "other"),
        (("networkProfileConfiguration", "networkInterfaceConfigurations", 0, "enableAcceleratedNetworking"), False),
        (("networkProfileConfiguration", "networkInterfaceConfigurations", 0, "name"), "other-nic"),
        (("proximityPlacementGroup",), {"id": "/subscriptions/s/resourceGroups/g/providers/x/ppg-1"}),
    ],
    "vm-list.json": [
        (("hardwareProfile", "vmSize"), "Standard_ND96asr_v4"),
        (("availabilitySet", "id"), "/subscriptions/s/resourceGroups/g/providers/x/availabilitySets/other"),
        (("storageProfile", "imageReference", "sku"), "other"),
        (("location",), "westus"),
    ],
}


def test_an_azure_vm_unlike_its_neighbours_keeps_its_own_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    subscription = azure_builder.fleet(400)
    cli = {f: azure_builder.flatten(items) for f, items in subscription.files.items()}
    for file, changes in _AZURE_SHAPE_CHANGES.items():
        for number, (path, value) in enumerate(changes):
            files = copy.deepcopy(cli)
            _change(files[file][5], path, value)  # VM 5 of a run of alike VMs
            folder = tmp_path / f"{file}-{number}" / azure_builder.SUBSCRIPTION
            folder.mkdir(parents=True)
            for name, items in files.items():
                (folder / name).write_text(json.dumps(items), encoding="utf-8")
            fast = azure_dump.load_dump(folder.parent)
            with monkeypatch.context() as patch:
                patch.setattr(projected, "read", lambda path, item: None)
                full = azure_dump.load_dump(folder.parent)
            assert fast.model_dump_json() == full.model_dump_json(), (file, path)


_GCP_SHAPE_CHANGES: list[tuple[tuple[Any, ...], Any]] = [
    (("zone",), "https://www.googleapis.com/compute/v1/projects/fabriccheck-demo/zones/us-central1-b"),
    (
        ("machineType",),
        "https://www.googleapis.com/compute/v1/projects/fabriccheck-demo/zones/us-central1-a/machineTypes/a2-highgpu-8g",
    ),
    (("status",), "STOPPED"),
    (("networkInterfaces", 1, "nicType"), "VIRTIO_NET"),
    (("networkInterfaces", 0, "accessConfigs"), [{"name": "external-nat", "natIP": "203.0.113.5"}]),
    (("resourcePolicies",), []),
    (("scheduling", "provisioningModel"), "FLEX_START"),
    (("reservationAffinity",), {"consumeReservationType": "SPECIFIC_RESERVATION", "values": ["r-1"]}),
    (("labels", "goog-k8s-node-pool-name"), "other"),
    (("metadata", "items"), [{"key": "created-by", "value": "projects/1/zones/z/instanceGroupManagers/mig-2"}]),
]


def test_a_gcp_instance_unlike_its_neighbours_keeps_its_own_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number, (path, value) in enumerate(_GCP_SHAPE_CHANGES):
        project = fleet(48)
        _change(project.instances[5], path, value)  # instance 5 of a pool of alike instances
        folder = _dump(tmp_path / str(number), project)
        assert projected.read(folder / "instances-list.json", InstanceFields) is not None
        fast = gcp_dump.load_dump(folder)
        with monkeypatch.context() as patch:
            patch.setattr(projected, "read", lambda path, item: None)
            full = gcp_dump.load_dump(folder)
        assert fast.model_dump_json() == full.model_dump_json(), path


# ---------------------------------------------------------------------------------------------- AWS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ec2_shapes import answers as ec2_answers  # noqa: E402
from ec2_shapes import instance as ec2_instance  # noqa: E402

from fabriccheck.providers.aws import dump as aws_dump  # noqa: E402
from fabriccheck.providers.aws import normalize as aws_normalize  # noqa: E402
from fabriccheck.providers.aws.fields import ReservationFields  # noqa: E402

AWS_DEMO = ROOT / "fixtures" / "demo" / "aws"


def _aws_reservations() -> list[dict[str, Any]]:
    """The demo's reservations, and instances with every optional shape the normalizer reads."""
    doc = json.loads((AWS_DEMO / "describe-instances.json").read_text())
    extra = copy.deepcopy(doc["Reservations"][0])
    first = extra["Instances"][0]
    first.update(
        {"CapacityBlockId": "cr-1", "InstanceLifecycle": "capacity-block", "OutpostArn": "arn:aws:outposts:x",
         "CapacityReservationId": "cr-1"}
    )  # fmt: skip
    first["NetworkInterfaces"][0]["Association"] = {"PublicIp": "203.0.113.9"}
    return [*doc["Reservations"], extra]


def test_the_aws_projection_keeps_every_field_the_normalizer_reads() -> None:
    log: set[str] = set()
    inventory = Inventory()
    normalizer = aws_normalize.Normalizer(inventory, "us-east-1", None, lambda call: call.dump_file)
    reservations = [_Reads(r, "", log) for r in _aws_reservations()]
    normalizer.add(aws_normalize.INSTANCES, {"Reservations": reservations})
    assert {"OwnerId", "Instances", "Instances[].InstanceId", "Instances[].NetworkInterfaces"} <= log
    kept = _projection_paths(ReservationFields)
    assert {path for path in log if not _kept(path, kept)} == set()


def test_an_aws_dump_reads_the_same_projected_or_in_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(AWS_DEMO, tmp_path / "dump")
    (tmp_path / "dump" / "describe-instances.json").write_text(
        json.dumps({"Reservations": _aws_reservations()}, indent=4), encoding="utf-8"
    )
    fast = aws_dump.load_dump(tmp_path / "dump")
    monkeypatch.setattr(aws_dump, "ReservationFields", None)
    full = aws_dump.load_dump(tmp_path / "dump")
    assert fast.model_dump_json() == full.model_dump_json()
    assert len(fast.nodes) == sum(len(r["Instances"]) for r in _aws_reservations())


def test_an_aws_instance_unlike_its_neighbours_keeps_its_own_node(tmp_path: Path) -> None:
    """Each value an instance's shape is read from, changed on one instance of a pool: that node alone changes."""
    changes: list[tuple[tuple[Any, ...], Any]] = [
        (("InstanceType",), "p5.48xlarge"),
        (("Placement", "AvailabilityZone"), "us-east-1b"),
        (("Placement", "GroupName"), "other-pg"),
        (("Tags",), [{"Key": "aws:autoscaling:groupName", "Value": "other"}]),
        (("NetworkInterfaces", 1, "InterfaceType"), "interface"),
        (("NetworkInterfaces", 1, "Attachment", "NetworkCardIndex"), 7),
        (("NetworkInterfaces", 0, "Groups"), [{"GroupId": "sg-other"}]),
        (("NetworkInterfaces", 0, "Association"), {"PublicIp": "203.0.113.7"}),
        (("ImageId",), "ami-other"),
    ]
    for number, (path, value) in enumerate(changes):
        pool = [ec2_instance(f"i-{i:017x}", efa=4) for i in range(6)]
        _change(pool[3], path, value)
        folder = tmp_path / str(number)
        docs = ec2_answers(pool)
        folder.mkdir()
        for name, doc in docs.items():
            (folder / name).write_text(json.dumps(doc, indent=2), encoding="utf-8")
        nodes = aws_dump.load_dump(folder).nodes
        alone = [aws_dump.load_dump(_single(tmp_path / f"{number}-{i}", docs, i)).nodes[0] for i in (2, 3)]
        assert nodes[2].model_dump() == alone[0].model_dump(), path
        assert nodes[3].model_dump() == alone[1].model_dump(), path
        assert nodes[3].shape != nodes[2].shape and nodes[2].shape is nodes[4].shape, path


def _single(folder: Path, docs: dict[str, Any], index: int) -> Path:
    """The same answers with only instance `index` listed."""
    folder.mkdir()
    for name, doc in docs.items():
        if name == "describe-instances.json":
            reservation = copy.deepcopy(doc["Reservations"][0])
            reservation["Instances"] = [reservation["Instances"][index]]
            doc = {"Reservations": [reservation]}
        (folder / name).write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return folder
