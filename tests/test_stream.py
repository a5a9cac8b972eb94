"""Dump files read as a stream (sources/stream.py)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.jsonfiles import read_json
from fabriccheck.providers.aws.dump import load_dump
from fabriccheck.sources import stream

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo" / "aws"


def _reservations(at: tuple[str | int, ...], opener: str) -> bool:
    return at == () or at == ("Reservations",)


def _walked(path: Path) -> list[tuple[tuple[str | int, ...], Any]]:
    return list(stream.walk(path, _reservations))


def test_items_come_one_by_one_with_the_members_beside_them(tmp_path: Path) -> None:
    path = tmp_path / "describe-instances.json"
    path.write_text(json.dumps({"NextToken": "abc", "Reservations": [{"a": 1}, {"b": [1, 2]}], "Count": 12345}))
    assert _walked(path) == [
        (("NextToken",), "abc"),
        (("Reservations", 0), {"a": 1}),
        (("Reservations", 1), {"b": [1, 2]}),
        (("Count",), 12345),
    ]
    path.write_text('  {"Reservations": [] , "Other": {"x": [1]}}\n')
    assert _walked(path) == [(("Other",), {"x": [1]})]


def test_a_large_file_is_read_in_windows_and_gives_what_a_whole_parse_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A tiny window makes every item, string and number cross a chunk boundary somewhere.
    monkeypatch.setattr(stream, "_CHUNK", 7)
    monkeypatch.setattr(stream, "_TAIL", 64)
    doc = {
        "Reservations": [{"Id": f"r-{i}", "Tags": [{"Key": "é", "Value": "ü" * i}], "N": 10**i} for i in range(40)],
        "Total": 1234567890123,
    }
    for encoding in ("utf-8", "utf-8-sig", "utf-16"):
        path = tmp_path / f"{encoding}.json"
        path.write_bytes(json.dumps(doc, indent=4, ensure_ascii=False).encode(encoding))
        walked = _walked(path)
        assert [v for at, v in walked if at[0] == "Reservations"] == doc["Reservations"], encoding
        assert walked[-1] == (("Total",), 1234567890123), encoding  # a number cut by the window is read whole


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('{"Reservations": [{"a": 1}, {"b": [1, 2', "not valid JSON (Expecting ',' delimiter"),
        ('{"Reservations": [{"a": 1}', "not valid JSON (expected ']' but found the end of the file)"),
        ("", "not valid JSON (the file is empty)"),
        ('{"Reservations": []} {"again": 1}', "not valid JSON (extra data after the document)"),
        ('{"Reservations": [{"a": nope}]}', "not valid JSON (Expecting value at character 24)"),
        ('{"Reservations": [{"a": "\xff"}]}', "not valid JSON (invalid start byte"),
    ],
)
def test_a_bad_file_is_one_line_naming_it(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "describe-instances.json"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(FabricCheckError) as caught:
        _walked(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and needle in message and "\n" not in message


def test_an_error_far_back_is_reported_without_reading_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Garbage early in a large file is reported from the window at hand: the window does not grow to the end
    of the file (which would hold a 2 GB file in memory) just to find the same error."""
    monkeypatch.setattr(stream, "_CHUNK", 1024)
    monkeypatch.setattr(stream, "_TAIL", 256)
    path = tmp_path / "describe-instances.json"
    path.write_text('{"Reservations": [{"a": nope}, ' + ", ".join(['{"b": 1}'] * 5000) + "]}")
    reads: list[int] = []
    real = stream._Window.more

    def counted(window: stream._Window) -> bool:
        reads.append(1)
        return real(window)

    monkeypatch.setattr(stream._Window, "more", counted)
    with pytest.raises(FabricCheckError, match="Expecting value at character 24"):
        _walked(path)
    assert len(reads) <= 1


def test_a_streamed_dump_judges_as_the_whole_parse_did(tmp_path: Path) -> None:
    """NextToken before the list (keys sorted, as `jq -S` writes them) marks the answer truncated all the same."""
    shutil.copytree(DEMO, tmp_path / "dump")
    instances = tmp_path / "dump" / "describe-instances.json"
    doc = read_json(instances)
    inventory = load_dump(tmp_path / "dump")
    assert inventory.complete and len(inventory.nodes) == sum(len(r["Instances"]) for r in doc["Reservations"])
    instances.write_text(json.dumps({"NextToken": "more", **doc}, sort_keys=True))
    truncated = load_dump(tmp_path / "dump")
    assert [e.code for e in truncated.errors] == ["Truncated"]
    assert [n.model_dump() for n in truncated.nodes] == [n.model_dump() for n in inventory.nodes]
    assert not any(c.endswith(":instances") for c in truncated.collected)


@pytest.mark.parametrize("cloud", ["aws", "azure", "gcp"])
def test_every_cloud_reads_its_dump_alike_through_any_window(cloud: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo dumps, read through a window of 64 bytes (every item crosses a boundary), give the same
    inventory as read through the usual window."""
    from fabriccheck.providers.azure.dump import load_dump as load_azure
    from fabriccheck.providers.gcp.dump import load_dump as load_gcp

    loaders: dict[str, Callable[[Path], Inventory]] = {"aws": load_dump, "azure": load_azure, "gcp": load_gcp}
    load = loaders[cloud]
    folder = DEMO.parent / cloud
    whole = load(folder).model_dump()
    monkeypatch.setattr(stream, "_CHUNK", 64)
    monkeypatch.setattr(stream, "_TAIL", 1 << 16)
    assert load(folder).model_dump() == whole
    assert whole["nodes"] and whole["collected"]


def test_laid_out_and_minified_files_read_alike_even_where_orjson_declines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Values laid out as the CLIs write them are parsed in batches by orjson; a minified file, and values
    orjson declines (a lone surrogate escape, an integer past 64 bits), by the standard library, value by value:
    the same values either way."""
    reservations = [{"Id": f"r-{i}", "Instances": [{"N": i, "Tags": [{"Key": "k", "Value": "v"}]}]} for i in range(50)]
    odd = [*reservations[:20], {"Id": "\ud800", "Big": 2**70}, *reservations[20:]]
    for name, items in (("plain", reservations), ("odd", odd)):
        pretty = tmp_path / f"{name}-pretty.json"
        pretty.write_text(json.dumps({"Reservations": items}, indent=4))
        minified = tmp_path / f"{name}-min.json"
        minified.write_text(json.dumps({"Reservations": items}, separators=(",", ":")))
        expected = [(("Reservations", i), item) for i, item in enumerate(items)]
        assert _walked(pretty) == expected == _walked(minified), name
    # One by one (value()) only where the batches cannot go: the key, then nothing for a plain laid-out file.
    one_by_one: list[int] = []
    real = stream._Window.value

    def counted(window: stream._Window) -> Any:
        one_by_one.append(1)
        return real(window)

    monkeypatch.setattr(stream._Window, "value", counted)
    _walked(tmp_path / "plain-pretty.json")
    assert len(one_by_one) == 1
    _walked(tmp_path / "plain-min.json")
    assert len(one_by_one) == 1 + 1 + len(reservations)


def test_items_across_the_window_edge_are_still_read_in_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A window that moves on keeps the line its next item starts on, so the item's indent still marks where a
    batch ends: no item of a file laid out as the CLIs write it falls back to the one-by-one parser (whose failed
    parse at the window's end counts the lines of the whole window)."""
    monkeypatch.setattr(stream, "_CHUNK", 4096)
    monkeypatch.setattr(stream, "_BATCH", 1024)
    monkeypatch.setattr(stream, "_TAIL", 512)
    items = [{"InstanceId": f"i-{n:08x}", "Tags": [{"Key": "k", "Value": "v" * (n % 97)}]} for n in range(400)]
    path = tmp_path / "describe-instances.json"
    path.write_text(json.dumps({"Reservations": items}, indent=4))
    one_by_one: list[int] = []
    real = stream._Window.value

    def counted(window: stream._Window) -> Any:
        one_by_one.append(window.at)
        return real(window)

    monkeypatch.setattr(stream._Window, "value", counted)
    walked = _walked(path)
    assert [value for _, value in walked] == items
    assert len(one_by_one) == 1  # the key "Reservations" alone
