"""The GCP collector through faults (issue 18), the real google-cloud-compute clients against tests/gce_replay.py on
127.0.0.1: a 200 answer that is not the list, looping page tokens, and connection resets.

Every Compute API list page says its kind ("Always compute#instanceList for lists of Instance resources", Compute v1
InstanceList; compute#instanceAggregatedList for aggregated pages), so a `200 {}` or a page of another kind is not
the call's answer; a nextPageToken is to be passed back as pageToken for the next page, so one that was followed
already leads round in a loop.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_run import run
from gce_replay import ComputeReplay, serve, use_fake_google_key

from fabriccheck.builders.demo_gcp import PROJECT, Project, build
from fabriccheck.providers.gcp import collect
from fabriccheck.providers.gcp.listing import CALLS, INSTANCES, NETWORKS

HTML = ("text/html; charset=UTF-8", "<html><head><title>Sign in</title></head><body>Wi-Fi login</body></html>")
EMPTY = ("application/json; charset=UTF-8", "{}")


@pytest.fixture(autouse=True)
def google_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    key = use_fake_google_key(tmp_path, monkeypatch)
    yield key


def replay(**faults: Any) -> ComputeReplay:
    project = Project()
    build(project)
    return ComputeReplay.from_files({PROJECT: project.files()}, **faults)


def collected(replay: ComputeReplay, **kwargs: Any) -> Any:
    with serve(replay) as url:
        return collect.collect_live([PROJECT], endpoint_url=url, retry_budget=1.0, **kwargs)


@pytest.mark.parametrize("call", CALLS, ids=[c.resource for c in CALLS])
def test_a_200_empty_object_is_a_bad_response_for_that_call_not_an_empty_list(call: Any) -> None:
    inventory = collected(replay(bodies={(PROJECT, call.resource): EMPTY}))
    [error] = inventory.errors
    assert (error.call, error.code) == (call.resource, "BadResponse")
    assert "page of kind (none)" in error.message and "not the list" in error.message
    assert not inventory.has("gcp", PROJECT, "global", call.fact)
    others = [c for c in CALLS if c is not call]
    assert all(inventory.has("gcp", PROJECT, "global", c.fact) for c in others)


def test_a_200_html_page_for_the_instances_is_a_bad_response() -> None:
    inventory = collected(replay(bodies={(PROJECT, "instances"): HTML}))
    assert [(e.call, e.code) for e in inventory.errors] == [("instances", "BadResponse")]
    assert not inventory.nodes


def test_a_page_of_another_list_is_a_bad_response_in_the_zonal_lists_too() -> None:
    networks = ("application/json", json.dumps({"kind": "compute#networkList", "items": []}))
    inventory = collected(replay(bodies={(PROJECT, "instances"): networks}), zones=["us-central1-a"])
    [error] = inventory.errors
    assert error.code == "BadResponse" and "kind compute#networkList" in error.message


def test_a_gate_over_a_200_empty_object_exits_2_never_green(google_key: Path) -> None:
    faulty = replay(bodies={(PROJECT, "instances"): EMPTY})
    env = {**os.environ, "GOOGLE_APPLICATION_CREDENTIALS": str(google_key)}
    with serve(faulty) as url:
        result = run("gcp", "--endpoint-url", url, "-p", PROJECT, "-f", "json", env=env)
    assert result.returncode == 2, result.stderr
    report = json.loads(result.stdout)
    assert report["complete"] is False and report["summary"]["nodes"] == 0
    assert [e["code"] for e in report["errors"]] == ["BadResponse"]


def test_a_page_token_that_leads_back_stops_at_once_and_the_rest_of_the_run_goes_on() -> None:
    """Issue 18.8: page 1 of the instances hands back the token of page 0. The pager would follow it for ever."""
    looping = replay(looping={(PROJECT, "instances")}, page_size=5)
    inventory = collected(looping)
    [error] = inventory.errors
    assert (error.call, error.code) == ("instances", "BadResponse")
    assert "leads back to a page already read" in error.message
    pages = [r for r in looping.requests if r.path.endswith("/aggregated/instances")]
    assert len(pages) <= 7  # 24 instances in pages of 5, then the first page once more, then stop
    assert not inventory.nodes and not inventory.has("gcp", PROJECT, "global", "instances")
    assert all(inventory.has("gcp", PROJECT, "global", c.fact) for c in CALLS if c is not INSTANCES)


def test_a_page_cap_ends_an_answer_that_never_repeats_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collect, "MAX_PAGES", 3)
    endless = replay(page_size=2)
    inventory = collected(endless)
    [error] = [e for e in inventory.errors if e.call == "instances"]  # the other lists run past 3 pages of 2 too
    assert error.code == "BadResponse" and "follows 3 pages" in error.message
    assert len([r for r in endless.requests if r.path.endswith("/aggregated/instances")]) == 3


def test_a_connection_reset_is_retried_as_a_5xx_is() -> None:
    resets = replay(resets={(PROJECT, "networks"): 1, (PROJECT, "instances"): 2})
    inventory = collected(resets)
    assert inventory.complete, inventory.errors
    assert len(inventory.nodes) == 24
    assert sum(1 for r in resets.requests if r.query.get("reset")) == 3


def test_a_persistent_reset_is_recorded_against_its_call_only() -> None:
    """Issue 18.10: one call resets every time. Its error names it; the project's other calls are still made."""
    resets = replay(resets={(PROJECT, NETWORKS.resource): -1})
    inventory = collected(resets)
    [error] = inventory.errors
    assert (error.call, error.code) == ("networks", "Unreachable")
    assert "Connection reset by peer" in error.message and "still failing after retries" in error.message
    assert sum(1 for r in resets.requests if r.path.endswith("/global/networks")) >= 2  # retried
    assert len(inventory.nodes) == 24  # the instances were listed after it
    assert inventory.has("gcp", PROJECT, "global", "firewalls")
    assert not inventory.has("gcp", PROJECT, "global", "networks")


def test_a_refused_connection_still_stops_the_project_at_once() -> None:
    inventory = collect.collect_live([PROJECT], endpoint_url="http://127.0.0.1:9", retry_budget=30.0)
    assert [(e.call, e.code) for e in inventory.errors] == [(CALLS[0].resource, "Unreachable")]
