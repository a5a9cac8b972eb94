"""`fabriccheck slurm --from-dump DIR [--cloud-dump DIR]`: a Slurm dump (files.COMMANDS), joined to the cloud
dump underneath, read by that cloud's own dump reader (`fabriccheck aws|azure|gcp --from-dump` read the same
folder). The cloud is told by the files the folder holds."""

from __future__ import annotations

from pathlib import Path

from fabriccheck.errors import FabricCheckError
from fabriccheck.gcpause import paused_gc
from fabriccheck.inventory import Inventory
from fabriccheck.provider import ProviderDeclaration, clouds
from fabriccheck.providers.slurm.files import read_dump
from fabriccheck.providers.slurm.join import Joiner, addresses
from fabriccheck.providers.slurm.normalize import Normalizer
from fabriccheck.providers.slurm.scripts import read_script


def cloud_of(folder: Path) -> ProviderDeclaration:
    """The cloud whose dump `folder` is, by the file that marks its dump (its instances answer, which each reader
    requires; at any depth: account, region folders)."""
    if not folder.is_dir():
        raise FabricCheckError(f"--cloud-dump {folder}: not a folder")
    marked = [cloud for cloud in clouds() if cloud.dump_mark is not None]
    found = [cloud for cloud in marked if next(folder.rglob(cloud.dump_mark or ""), None) is not None]
    if len(found) != 1:
        marks = ", ".join(cloud.dump_mark or "" for cloud in marked)
        which = "none" if not found else " and ".join(cloud.dump_mark or "" for cloud in found)
        raise FabricCheckError(f"--cloud-dump {folder}: holds {which} of {marks}: give one cloud's dump")
    return found[0]


def load_cloud(folder: Path) -> Inventory:
    return cloud_of(folder).load_dump(folder)


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
