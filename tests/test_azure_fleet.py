"""Azure at fleet scale through the real SDK clients over HTTPS on 127.0.0.1: the subscriptions under a
management group (nested groups included), subscriptions collected concurrently, each one's API requests and
retries counted, and one denied subscription leaving the rest collected."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from arm_replay import ArmReplay, make_certificate, serve, use_fake_az

from fabriccheck.builders import demo_azure as demo_builder
from fabriccheck.errors import FabricCheckError
from fabriccheck.providers.azure import collect

SUBS = [f"{n}{n}{n}{n}{n}{n}{n}{n}-0000-0000-0000-000000000000" for n in range(1, 5)]
OUTSIDE = "99999999-0000-0000-0000-000000000000"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture(autouse=True)
def azure_env(tmp_path: Path, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    use_fake_az(tmp_path, certificate[0], monkeypatch)
    yield


def estate(**kwargs: Any) -> ArmReplay:
    """Four subscriptions under `research` (two directly, two in a nested group) and one outside it."""
    replay = ArmReplay({s: demo_builder.demo(s).files for s in [*SUBS, OUTSIDE]}, page_size=50, **kwargs)
    replay.management_groups = {
        "research": [("subscription", SUBS[0]), ("group", "research-gpu"), ("subscription", SUBS[1])],
        "research-gpu": [("subscription", SUBS[2]), ("subscription", SUBS[3])],
    }
    return replay


def test_management_group_collects_its_subscriptions_nested_included(certificate: tuple[Path, Path]) -> None:
    replay = estate()
    with serve(replay, *certificate) as url:
        inventory = collect.collect_live([], endpoint_url=url, management_group="research", concurrency=3)
    assert inventory.complete, inventory.errors
    assert {s.account for s in inventory.scopes} == set(SUBS)
    assert {n.account for n in inventory.nodes} == set(SUBS)
    assert not any(f"/subscriptions/{OUTSIDE}" in path for _, path in replay.calls)
    assert replay.count("/descendants") == 5  # five entries, one a page
    # Every request made for a subscription is counted under it, and nothing was retried.
    for scope in inventory.scopes:
        made = sum(1 for _, path in replay.calls if path.lower().startswith(f"/subscriptions/{scope.account}"))
        assert (scope.api_calls, scope.retries) == (made, 0)


def test_a_denied_subscription_leaves_the_rest_and_a_retry_is_counted(certificate: tuple[Path, Path]) -> None:
    replay = estate(throttle={"ppg-list.json": 1}, retry_after="0")
    replay.deny = {SUBS[1]}
    with serve(replay, *certificate) as url:
        inventory = collect.collect_live([], endpoint_url=url, management_group="research")
    assert not inventory.complete
    scopes = {s.account: s for s in inventory.scopes}
    assert not scopes[SUBS[1]].complete and "AccessDenied" in (scopes[SUBS[1]].reason or "")
    assert all(scopes[s].complete for s in (SUBS[0], SUBS[2], SUBS[3]))
    # The one 429 hit whichever subscription asked first; it was retried once and counted once.
    assert sum(s.retries for s in inventory.scopes) == 1
    assert {n.account for n in inventory.nodes} == {SUBS[0], SUBS[2], SUBS[3]}
    denied = [e for e in inventory.errors if e.account == SUBS[1]]
    assert denied and all(e.permission and e.permission.startswith("Microsoft.") for e in denied)


def test_an_unknown_group_and_conflicting_options_are_one_line(certificate: tuple[Path, Path]) -> None:
    replay = estate()
    with serve(replay, *certificate) as url:
        with pytest.raises(FabricCheckError, match="--management-group nope: listing its subscriptions failed"):
            collect.collect_live([], endpoint_url=url, management_group="nope")
        with pytest.raises(FabricCheckError, match="--subscription and --management-group cannot be used together"):
            collect.collect_live([SUBS[0]], endpoint_url=url, management_group="research")
        with pytest.raises(FabricCheckError, match="not a management group id"):
            collect.collect_live([], endpoint_url=url, management_group="a/b")


def test_the_role_for_a_management_group_adds_exactly_the_listing() -> None:
    plain = collect.role_for()
    grouped = collect.role_for("research")
    assert set(grouped["Actions"]) ^ set(plain["Actions"]) == {
        collect.DESCENDANTS_READ,
        "Microsoft.Resources/subscriptions/read",  # the group names them: no subscription list
    }
    assert grouped["AssignableScopes"] == ["/providers/Microsoft.Management/managementGroups/research"]


def test_an_expired_token_is_one_line_naming_azure(certificate: tuple[Path, Path]) -> None:
    replay = estate()
    replay.expired = True
    with serve(replay, *certificate) as url, pytest.raises(FabricCheckError) as raised:
        collect.collect_live(SUBS, endpoint_url=url)
    message = str(raised.value)
    assert message.startswith("Azure refused the credential (ExpiredAuthenticationToken"), message
    assert "az login" in message and "\n" not in message
