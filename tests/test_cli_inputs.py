"""Damaged and odd input gets one clear line naming the file, exit 2, never a hang or an internal error (issue 18,
items 13, 14 and 16): a FIFO or a device in a dump folder, JSON nested a thousand deep, dates that do not exist,
files that are not UTF-8, a rule example that is a list, a closed or full stdout, a very long string.

Dumps are copies of the demo's (fixtures/demo/<cloud>, made by tools/build_demo*.py) with one file replaced."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_run import one_clean_line, run

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo"
AZURE_SUB = "11111111-2222-3333-4444-555555555555"
# One list file of each cloud's dump, as its CLI names it.
LIST_FILES = {
    "aws": Path("describe-instances.json"),
    "gcp": Path("instances-list.json"),
    "azure": Path(AZURE_SUB) / "vm-list.json",
}


def _dump(tmp_path: Path, cloud: str) -> Path:
    folder = tmp_path / cloud
    shutil.copytree(DEMO / cloud, folder)
    return folder


@pytest.mark.parametrize("cloud", sorted(LIST_FILES))
def test_a_fifo_in_a_dump_folder_is_refused_not_read_forever(tmp_path: Path, cloud: str) -> None:
    folder = _dump(tmp_path, cloud)
    fifo = folder / LIST_FILES[cloud]
    fifo.unlink()
    os.mkfifo(fifo)
    line = one_clean_line(run(cloud, "--from-dump", str(folder)))  # cli_run's timeout: a hang fails the test
    assert line == f"fabriccheck: error: {fifo}: is a named pipe (FIFO), not a file: " + (
        "a dump folder holds the cloud CLI's JSON files"
    )


@pytest.mark.parametrize("cloud", sorted(LIST_FILES))
def test_a_device_in_a_dump_folder_is_refused(tmp_path: Path, cloud: str) -> None:
    folder = _dump(tmp_path, cloud)
    device = folder / LIST_FILES[cloud]
    device.unlink()
    device.symlink_to("/dev/zero")  # never ends
    line = one_clean_line(run(cloud, "--from-dump", str(folder)))
    assert f"{device}: is a character device, not a file" in line


def test_a_pipe_named_on_the_command_line_is_still_read(tmp_path: Path) -> None:
    """Only a dump folder's files must be files: `check <(cat inventory.json)` reads the pipe."""
    inventory = tmp_path / "inventory.json"
    run("aws", "--from-dump", str(DEMO / "aws"), "--save-inventory", str(inventory))
    piped = subprocess.run(
        ["bash", "-c", f"fabriccheck check <(cat {inventory}) -f json --fail-on never"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert piped.returncode == 0, piped.stderr
