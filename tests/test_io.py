"""Files in and out, in process: atomic writes that fail midway, byte order marks, and a worker pool that lets
its caller stop at once."""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
from pathlib import Path

import pytest

from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.jsonfiles import read_json
from fabriccheck.outputs import write_atomic
from fabriccheck.sources.parallel import in_parallel
from fabriccheck.sources.snapshot import load_inventory, save_inventory

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "aws"


def _only(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_write_atomic_replaces_the_whole_file_and_keeps_its_permissions(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.write_text("old")
    target.chmod(0o640)
    write_atomic(target, b"new report", "--output")
    assert target.read_bytes() == b"new report"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert _only(tmp_path) == ["report.json"]
    fresh = tmp_path / "fresh.json"
    write_atomic(fresh, b"x", "--output")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask  # as open() would make it


@pytest.mark.parametrize("failing", ["write", "fsync", "replace"])
def test_a_failure_during_the_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    target = tmp_path / "report.json"
    target.write_text("the previous report")

    def full_disk(*args: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    if failing == "write":
        # Half the data reaches the temporary file, then the disk is full.
        real_fdopen = os.fdopen

        class HalfWriter:
            def __init__(self, fd: int, mode: str) -> None:
                self.file = real_fdopen(fd, mode)

            def __enter__(self) -> HalfWriter:
                return self

            def __exit__(self, *exc: object) -> None:
                self.file.close()

            def write(self, data: bytes) -> int:
                self.file.write(data[: len(data) // 2])
                self.file.flush()
                full_disk()
                return 0

        monkeypatch.setattr("fabriccheck.outputs.os.fdopen", HalfWriter)
    else:
        monkeypatch.setattr(f"fabriccheck.outputs.os.{failing}", full_disk)
    with pytest.raises(FabricCheckError) as caught:
        write_atomic(target, b"a new report that does not fit", "--output")
    assert str(caught.value) == f"--output {target}: cannot write (No space left on device)"
    assert target.read_text() == "the previous report"
    assert _only(tmp_path) == ["report.json"]


def test_ctrl_c_during_the_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "inventory.json"
    target.write_text("the previous inventory")

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("fabriccheck.outputs.os.fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_inventory(Inventory(), target)
    assert target.read_text() == "the previous inventory"
    assert _only(tmp_path) == ["inventory.json"]


def test_write_atomic_follows_a_symlink_and_refuses_a_folder(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_atomic(link, b"new", "--output")
    assert link.is_symlink() and real.read_text() == "new"
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(FabricCheckError, match=r"^--output .*folder: cannot write \("):
        write_atomic(folder, b"x", "--output")
    assert _only(tmp_path) == ["folder", "link.json", "real.json"]


def test_read_json_accepts_a_byte_order_mark(tmp_path: Path) -> None:
    doc = {"Subnets": [{"SubnetId": "subnet-1", "Tags": [{"Key": "Name", "Value": "é"}]}]}
    for encoding in ("utf-8-sig", "utf-16", "utf-16-le", "utf-16-be"):
        path = tmp_path / f"{encoding}.json"
        text = json.dumps(doc, ensure_ascii=False)
        data = text.encode(encoding)
        if encoding in ("utf-16-le", "utf-16-be"):
            data = "\ufeff".encode(encoding) + data
        path.write_bytes(data)
        assert read_json(path) == doc, encoding
    bad = tmp_path / "bom-then-garbage.json"
    bad.write_bytes(b"\xef\xbb\xbf{nope")
    with pytest.raises(FabricCheckError, match="not valid JSON"):
        read_json(bad)
    odd = tmp_path / "odd-utf16.json"
    odd.write_bytes(b"\xff\xfe{\x00")
    with pytest.raises(FabricCheckError, match="not valid JSON"):
        read_json(odd)
    # A mark anywhere but the start is still not JSON.
    middle = tmp_path / "middle.json"
    middle.write_bytes(b'{"a": 1}\xef\xbb\xbf')
    with pytest.raises(FabricCheckError, match="not valid JSON"):
        read_json(middle)


def test_a_stopped_pool_starts_nothing_more_and_waits_for_nothing() -> None:
    """Told by events, not by the clock: the calls under way hang until the test lets them go, so closing the
    results while they still hang shows it waited for none of them, however busy the machine is."""
    release = threading.Event()
    started: list[int] = []
    finished: list[int] = []
    changed = threading.Condition()

    def work(n: int) -> int:
        with changed:
            started.append(n)
            changed.notify_all()
        if n != 0:
            release.wait(120)  # a call that hangs (an endpoint that never answers) until released
        with changed:
            finished.append(n)
            changed.notify_all()
        return n

    before = set(threading.enumerate())
    results = in_parallel(range(10), work, max_workers=3)
    assert next(results) == 0
    with changed:  # the freed worker takes one more: three calls hang, one a worker
        assert changed.wait_for(lambda: len(started) == 4, timeout=60), started
    results.close()  # what Ctrl-C in the caller's loop does: leave the generator
    with changed:
        assert finished == [0] and sorted(started) == [0, 1, 2, 3]  # closed while the three still hang
    release.set()
    workers = [t for t in set(threading.enumerate()) - before if t.name.startswith("fabriccheck-worker-")]
    assert len(workers) == 3 and all(t.daemon for t in workers)
    for worker in workers:
        worker.join(60)
    assert not any(t.is_alive() for t in workers)
    assert sorted(started) == [0, 1, 2, 3] and sorted(finished) == [0, 1, 2, 3]  # the rest were cancelled


def test_an_error_in_one_item_reaches_the_caller() -> None:
    def work(n: int) -> int:
        if n == 2:
            raise ValueError("item 2")
        return n

    with pytest.raises(ValueError, match="item 2"):
        list(in_parallel(range(5), work, max_workers=2))


def test_a_snapshot_without_collected_is_not_collected(tmp_path: Path) -> None:
    from fabriccheck.providers.aws.dump import load_dump

    path = tmp_path / "inventory.json"
    save_inventory(load_dump(DEMO), path)
    data = json.loads(path.read_text())
    assert load_inventory(path).complete
    del data["collected"]
    path.write_text(json.dumps(data))
    loaded = load_inventory(path)
    assert not loaded.complete
    [error] = [e for e in loaded.errors if e.code == "NotCollected"]
    assert error.call == "snapshot" and error.provider == "aws" and str(path) in error.message
    assert "has no field collected" in error.message and "placement_groups" in error.message
