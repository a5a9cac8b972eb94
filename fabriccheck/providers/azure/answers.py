"""What the live Azure collector accepts as an ARM list answer, and how it pages through one (imports azure-core:
only the live collector imports this module).

Every call the collector makes is a GET of an ARM list, whose 200 answer is a JSON object with a `value` list of
objects and, when there is more, a `nextLink` (ARM's list pages; azure-rest-api-specs *_List* examples). A 200
that is not that (a captive portal's HTML, an empty body, `{}`, a `value` of another type) is not "nothing
there": the client hook below raises BadArmAnswer, a ServiceResponseError, so azure-core's retry policy retries it
as it does a cut answer, and the collector then records that call as BadResponse. A nextLink that leads back to a
page already read (ARM's own or a proxy's loop) or a list that never ends is stopped and recorded alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

import orjson
from azure.core.exceptions import ServiceResponseError

# Pages one list call may take: ARM pages hold up to 1,000 items, so this is a million VMs or NICs in a
# subscription (ARM's own limits stop far below), and a list that runs on beyond it is broken.
MAX_PAGES = 1_000


class BadArmAnswer(ServiceResponseError):
    """A 200 answer that is not the list the call asked for, or paging that does not end."""


def page_problem(body: bytes, content_type: str) -> str | None:
    """What is wrong with a 200 answer to a list call, or None for an ARM list page."""
    if not body.strip():
        return "an empty body"
    try:
        page = orjson.loads(body)
    except orjson.JSONDecodeError:
        kind = content_type.split(";", 1)[0].strip() or "no content type"
        return f"a body that is not JSON ({kind}, starting {body[:40].decode('utf-8', 'replace')!r})"
    if not isinstance(page, dict):
        return f"a JSON {type(page).__name__}, not an ARM list page"
    if "value" not in page:
        return f"an object without the value list (keys: {', '.join(sorted(page)[:6]) or 'none'})"
    items = page["value"]
    if not isinstance(items, list):
        return f"a value that is a JSON {type(items).__name__}, not a list"
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            return f"value[{index}] is a JSON {type(item).__name__}, not an object"
    link = page.get("nextLink")
    if link is not None and not isinstance(link, str):
        return f"a nextLink that is a JSON {type(link).__name__}, not a link"
    return None


def check_answer(response: Any) -> None:
    """azure-core's raw_response_hook (after the retry policy, so each attempt is checked): a GET answered 200 must
    be an ARM list page."""
    request, answer = response.http_request, response.http_response
    if request.method != "GET" or answer.status_code != 200:
        return
    problem = page_problem(answer.body(), str(answer.headers.get("Content-Type", "")))
    if problem is not None:
        raise BadArmAnswer(f"GET {urlsplit(request.url).path} answered 200 with {problem}")


def items_of(paged: Any, as_dict: Callable[[Any], dict[str, Any]]) -> list[dict[str, Any]]:
    """Every item of an SDK pager (ItemPaged), page by page, stopping at a nextLink already followed or after
    MAX_PAGES pages with BadArmAnswer."""
    pages = paged.by_page()
    found: list[dict[str, Any]] = []
    for page in _guarded(pages, lambda: pages.continuation_token):
        found += [as_dict(item) for item in page]
    return found


def pages_of(first: str, fetch: Callable[[str], dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The pages of a list read by URL (`fetch` GETs one), following nextLink with the same guards."""
    link: str | None = first
    seen: set[str] = set()
    while link:
        if link in seen or len(seen) >= MAX_PAGES:
            raise BadArmAnswer(_looping(link, len(seen)))
        seen.add(link)
        page = fetch(link)
        yield page
        link = page.get("nextLink")


def _guarded(pages: Iterable[Any], next_link: Callable[[], str | None]) -> Iterator[Any]:
    """Each page; before the next is fetched, its link is held against those already followed."""
    seen: set[str] = set()
    for count, page in enumerate(pages, 1):
        yield page
        link = next_link()
        if link and (link in seen or count >= MAX_PAGES):
            raise BadArmAnswer(_looping(link, count))
        if link:
            seen.add(link)


def _looping(link: str, pages: int) -> str:
    where = urlsplit(link)
    if pages >= MAX_PAGES:
        return f"the list did not end after {MAX_PAGES} pages (nextLink {where.path}); stopped there"
    return f"nextLink {where.path}?{where.query[:80]} leads back to a page already read after {pages} page(s); stopped"
