"""`fabriccheck slurm --from-dump DIR [--cloud-dump DIR]`: a Slurm dump (files.COMMANDS), joined to the cloud
dump underneath, read by that cloud's own dump reader (`fabriccheck aws|azure|gcp --from-dump` read the same
folder). The cloud is told by the files the folder holds."""

from __future__ import annotations

import importlib
from pathlib import Path

from fabriccheck.errors import FabricCheckError
from fabriccheck.gcpause import paused_gc
from fabriccheck.inventory import Inventory
from fabriccheck.providers.slurm.files import read_dump
from fabriccheck.providers.slurm.join import Joiner, addresses
from fabriccheck.providers.slurm.normalize import Normalizer
from fabriccheck.providers.slurm.scripts import read_script

# The file that marks each cloud's dump (the instances answer each reader requires).
CLOUD_MARKS = {"aws": "describe-instances.json", "azure": "vm-list.json", "gcp": "instances-list.json"}


def cloud_of(folder: Path) -> str:
    """The cloud whose dump `folder` is, by the instances answer it holds (at any depth: account, region folders)."""
    if not folder.is_dir():
        raise FabricCheckError(f"--cloud-dump {folder}: not a folder")
    found = [cloud for cloud, mark in CLOUD_MARKS.items() if next(folder.rglob(mark), None) is not None]
    if len(found) != 1:
        marks = ", ".join(CLOUD_MARKS.values())
        which = "none" if not found else " and ".join(CLOUD_MARKS[c] for c in found)
        raise FabricCheckError(f"--cloud-dump {folder}: holds {which} of {marks}: give one cloud's dump")
    return found[0]


def load_cloud(folder: Path) -> Inventory:
    reader = importlib.import_module(f"fabriccheck.providers.{cloud_of(folder)}.dump")
    cloud: Inventory = reader.load_dump(folder)
    return cloud


def load_dump(
    directory: Path, scope: object = None, cloud_dump: Path | None = None, scripts: list[Path] | None = None
) -> Inventory:
    """The Slurm dump in `directory`, each node joined to its instance in `cloud_dump` when given, and the job
    `scripts` judged on the partitions they name; `scope` (unused) keeps the signature the cloud dumps share."""
    dump = read_dump(directory)
    jobs = [read_script(path) for path in scripts or []]
    cloud = load_cloud(cloud_dump) if cloud_dump is not None else None
    joiner = Joiner(cloud.nodes, addresses(cloud_dump)) if cloud is not None and cloud_dump is not None else None
    source = f"slurm dump {directory}" + (f" + {cloud.source}" if cloud is not None else "")
    with paused_gc():
        inventory = Normalizer(dump, cloud, joiner, jobs).inventory(source)
    if cloud is not None:
        # What the cloud could not collect leaves the joined nodes' facts short: the run is incomplete with it.
        inventory.errors.extend(cloud.errors)
    return inventory
