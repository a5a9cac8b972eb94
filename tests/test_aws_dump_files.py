"""A dump file without its list is not an empty answer (issue 18, item 2), and a capability value of another type
is unknown, not "no EFA" (issue 18, item 5), read from real files as `aws ec2 describe-* --output json` writes them.

Before this, describe-instances.json of `{}`, `{"Reservations": null}` or `{"reservations": []}` was complete with
0 nodes (exit 0), and `bool("yes")` or `bool("false")` made a type EFA-capable. The files of another kind are
written in their tools' shapes: a Compute Engine instance as `gcloud compute instances list --format=json` lists
it (after forseti-security/forseti-security@9069bfb04e818e51f484d860a249de0d578d4cf3:
tests/services/inventory/test_data/mock_gcp_results.py, GCE_INSTANCE_TEMPLATE_IAP), an `az vm list` entry (after
Azure/azure-rest-api-specs@3873f33d7b91f28c55d7c98b6eb7da8aa5a5bda4 .../VirtualMachine_Get.json), and what
`aws ec2 run-instances` prints, one reservation (lavanyak-hub/shell-practice@a5c09eec8327f98e77edf45beb7ab61f81f34ab7:
19-loops.sh).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run
from ec2_shapes import answers, instance, write

from fabriccheck.providers.aws.normalize import CALLS

GCP_INSTANCE = {
    "kind": "compute#instance",
    "id": "1061001",
    "creationTimestamp": "2017-05-26T22:08:11.094-07:00",
    "name": "iap-ig-79bj",
    "machineType": "https://www.googleapis.com/compute/v1/projects/project1/zones/us-central1-c/machineTypes/f1-micro",
    "status": "RUNNING",
    "zone": "https://www.googleapis.com/compute/v1/projects/project1/zones/us-central1-c",
    "networkInterfaces": [
        {
            "kind": "compute#networkInterface",
            "network": "https://www.googleapis.com/compute/v1/projects/project1/global/networks/default",
            "networkIP": "10.128.0.2",
            "name": "nic0",
        }
    ],
}
AZURE_VM = {
    "id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/myResourceGroup/providers/"
    "Microsoft.Compute/virtualMachines/myVM",
    "location": "westus",
    "name": "myVM",
    "resourceGroup": "myResourceGroup",
    "type": "Microsoft.Compute/virtualMachines",
    "hardwareProfile": {"vmSize": "Standard_DS3_v2"},
}


def _dump(tmp_path: Path, **files: Any) -> Path:
    docs = answers([instance(f"i-0{n:016x}", "p5.48xlarge", efa=32) for n in (1, 2)])
    docs.update({name.replace("_", "-") + ".json": doc for name, doc in files.items()})
    return write(tmp_path, docs)


def _line(folder: Path) -> str:
    return one_clean_line(run("aws", "--from-dump", str(folder), "-f", "json", "--fail-on", "never"))


@pytest.mark.parametrize(
    ("doc", "holds"),
    [
        ({}, "holds an empty object"),
        ({"reservations": []}, 'holds a key "reservations" (keys are case-sensitive)'),
        ({"Reservations": None}, "Reservations is null, not a list"),
        ({"NextToken": "eyJ2IjoxfQ=="}, 'holds an object with "NextToken"'),
    ],
    ids=["empty-object", "misspelt", "null", "only-a-token"],
)
def test_describe_instances_without_its_list_is_one_line(tmp_path: Path, doc: Any, holds: str) -> None:
    folder = _dump(tmp_path, describe_instances=doc)
    line = _line(folder)
    assert f"{folder / 'describe-instances.json'}: " in line and holds in line


@pytest.mark.parametrize(
    ("doc", "holds"),
    [
        (lambda docs: docs["describe-subnets.json"], "holds the answer of aws ec2 describe-subnets (Subnets)"),
        (lambda docs: [GCP_INSTANCE], "holds a Google Cloud list of instance items (gcloud --format=json)"),
        (lambda docs: [AZURE_VM], "holds an Azure list (az ... -o json)"),
        (
            lambda docs: docs["describe-instances.json"]["Reservations"][0],
            "holds one reservation (what aws ec2 run-instances prints)",
        ),
    ],
    ids=["describe-subnets", "gcloud-instances", "az-vm-list", "run-instances"],
)
def test_a_file_of_another_kind_is_one_line_saying_what_it_holds(tmp_path: Path, doc: Any, holds: str) -> None:
    docs = answers([instance(f"i-0{n:016x}", "p5.48xlarge", efa=32) for n in (1, 2)])
    folder = _dump(tmp_path, describe_instances=doc(docs))
    line = _line(folder)
    assert f"{folder / 'describe-instances.json'}: {holds}, not the answer of aws ec2 describe-instances" in line


@pytest.mark.parametrize("call", CALLS, ids=[c.dump_file for c in CALLS])
def test_every_dump_file_must_hold_its_list(tmp_path: Path, call: Any) -> None:
    folder = _dump(tmp_path, **{call.dump_file[:-5].replace("-", "_"): {}})
    line = _line(folder)
    assert f"{folder / call.dump_file}: holds an empty object" in line and f"its {call.result_key} list" in line


def test_present_empty_lists_are_a_complete_empty_answer(tmp_path: Path) -> None:
    write(tmp_path, answers([]) | {"describe-instance-types.json": {"InstanceTypes": []}})
    result = run("aws", "--from-dump", str(tmp_path), "-f", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["complete"] is True and report["errors"] == [] and report["clusters"] == []


# ------------------------------------------------------------------------------------------- capability values


def _types(name: str, **network: Any) -> dict[str, Any]:
    """One DescribeInstanceTypes item in the API's shape (p5.48xlarge's, from the demo answer), with `network`
    replacing fields of its NetworkInfo."""
    demo = json.loads((Path(__file__).parent.parent / "fixtures/demo/aws/describe-instance-types.json").read_text())
    item = json.loads(json.dumps(next(t for t in demo["InstanceTypes"] if t["InstanceType"] == "p5.48xlarge")))
    item["InstanceType"] = name
    item["NetworkInfo"].update(network)
    return {"InstanceTypes": [item]}


@pytest.mark.parametrize(
    ("network", "field"),
    [
        ({"EfaSupported": "yes"}, 'NetworkInfo.EfaSupported is "yes", not true or false'),
        ({"EfaSupported": "false"}, 'NetworkInfo.EfaSupported is "false", not true or false'),
        ({"EfaInfo": {"MaximumEfaInterfaces": "4"}}, 'MaximumEfaInterfaces is "4", not a whole number'),
        ({"EfaInfo": {}}, "NetworkInfo.EfaInfo.MaximumEfaInterfaces is missing, not a whole number"),
    ],
    ids=["yes", "false-as-text", "count-as-text", "no-count"],
)
def test_an_unrecognised_capability_value_is_unknown_not_no_efa(
    tmp_path: Path, network: dict[str, Any], field: str
) -> None:
    """A type the shipped tables do not know (p9.96xlarge): its clusters are not judged, and the file is named."""
    nodes = [instance(f"i-0{n:016x}", "p9.96xlarge", efa=0) for n in (1, 2)]
    write(tmp_path, answers(nodes) | {"describe-instance-types.json": _types("p9.96xlarge", **network)})
    result = run("aws", "--from-dump", str(tmp_path), "-f", "json")
    assert result.returncode == 2, result.stderr
    report = json.loads(result.stdout)
    [error] = report["errors"]
    assert (error["call"], error["code"]) == ("DescribeInstanceTypes", "BadResponse")
    assert str(tmp_path / "describe-instance-types.json") in error["message"] and field in error["message"]
    assert "InstanceTypes[0] (p9.96xlarge)" in error["message"] and "its capability is unknown" in error["message"]
    assert report["findings"] == []  # neither "no EFA attached" (AWS101) nor "a type without EFA" (AWS130)
    [cluster] = report["clusters"]
    assert cluster["status"] == "incomplete"
    assert all("p9.96xlarge is unknown" in n["reason"] for n in cluster["not_judged"])


def test_a_gpu_count_of_another_type_falls_back_to_the_catalog_row(tmp_path: Path) -> None:
    """p5.48xlarge is in the shipped catalog: its row stands in for the unreadable answer, and the error says so."""
    doc = _types("p5.48xlarge")
    doc["InstanceTypes"][0]["GpuInfo"]["Gpus"][0]["Count"] = 8.0
    folder = _dump(tmp_path, describe_instance_types=doc)
    result = run("aws", "--from-dump", str(folder), "-f", "json")
    report = json.loads(result.stdout)
    [error] = report["errors"]
    assert "GpuInfo.Gpus[0].Count is 8.0, not a whole number" in error["message"]
    assert "the shipped catalog's row is used instead" in error["message"]
    assert result.returncode == 2 and report["complete"] is False
    [cluster] = report["clusters"]
    assert cluster["gpus"] == 16 and cluster["not_judged"] == []  # judged on the catalog's row
