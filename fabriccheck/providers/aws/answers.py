"""What a 2xx answer to an AWS call must be before it is read (issue 18, item 1).

botocore's parsers are lenient: a captive portal's HTML page, XML with another root, or a DescribeInstancesResponse
without its reservationSet all parse to `{}`, which reads as "no instances" (complete, 0 nodes, exit 0); a boolean
that is not `true` parses to False ("no EFA"). `check(client)` hooks every client fabriccheck makes (EC2, STS,
Organizations) so that such an answer is a `NotTheAnswer`, a botocore ResponseParserError, and the call is recorded
as BadResponse like a cut body:
- before parsing: the body is what the protocol answers (XML for EC2 and STS, a JSON object for Organizations),
  not an HTML page, an empty body, or the other protocol's; an XML answer's root element is `<Operation>Response`,
  and every boolean and number in it reads as one;
- after parsing: the answer holds the list (or result) fabriccheck reads, even when empty.
The body decides, the Content-Type only words the error: emulators and header-rewriting proxies send real answers
under a loose type (moto's server answers Organizations' JSON as `text/html; charset=utf-8`, issue 33), while a
captive portal's page is HTML whatever its header says.
Error answers (3xx and up) are left to botocore, which already reads them.
"""

from __future__ import annotations

import json
import re
from typing import Any
from xml.etree.ElementTree import Element, ParseError, XMLPullParser

from botocore.parsers import ResponseParserError

from fabriccheck.providers.aws.normalize import CALLS

# Operation -> the member of its answer that is read: present (if empty) in every answer the service gives.
EXPECTED = {c.operation: c.result_key for c in CALLS} | {
    "DescribeRegions": "Regions",
    "AssumeRole": "Credentials",
    "ListAccounts": "Accounts",
}
_XML_PROTOCOLS = ("ec2", "query")
# What a body is, as an error line names it.
_KINDS = {"xml": "XML", "json": "JSON", "html": "an HTML page", "empty": "an empty body", "text": "text"}
# The start of an HTML page, after any byte-order mark, blank space and XML or SGML prologue (comments included).
_HTML = re.compile(rb"(?:<(?:\?[^>]*\?|!--.*?--)>\s*)*<(?:!doctype\s+html|html|head|body)[\s>]", re.I | re.S)
# The text of a scalar as the XML protocols write it, by the member's type in the service model.
_SCALAR = {
    "boolean": re.compile(r"true|false"),
    "integer": re.compile(r"-?\d+"),
    "long": re.compile(r"-?\d+"),
    "float": re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"),
    "double": re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"),
}
_WORDS = {"boolean": "true or false", "integer": "a whole number", "long": "a whole number"}
_ITEM = re.compile(rb"<(instanceType|instanceId|groupId|subnetId|launchTemplateId)>([^<]{1,64})</\1>")


class NotTheAnswer(ResponseParserError):  # type: ignore[misc]  # botocore ships no type hints
    """A 2xx answer that is not the operation's answer; the message says what it holds instead."""


def check(client: Any) -> Any:
    """Hook `client` (once, however often it is called) so that its answers are checked as above."""
    service = client.meta.service_model.service_id.hyphenize()
    events = client.meta.events
    events.register(f"before-parse.{service}", _before_parse, unique_id=f"fabriccheck-before-parse-{service}")
    events.register(f"after-call.{service}", _after_call, unique_id=f"fabriccheck-after-call-{service}")
    return client


def _before_parse(operation_model: Any, response_dict: dict[str, Any], **_: Any) -> None:
    status = int(response_dict.get("status_code") or 0)
    if not 200 <= status < 300:
        return
    operation = operation_model.name
    body: bytes = response_dict.get("body") or b""
    xml = operation_model.service_model.resolved_protocol in _XML_PROTOCOLS
    kind = body_kind(body)
    if kind == "empty" and operation_model.output_shape is None:
        return  # an operation that answers nothing (none that fabriccheck calls)
    if kind != ("xml" if xml else "json"):
        media = str(response_dict["headers"].get("Content-Type") or "").split(";")[0].strip().lower()
        typed = f" (Content-Type {_quoted(media)})" if media else ""
        raise NotTheAnswer(
            f"{operation} answered HTTP {status} with {_KINDS[kind]}{typed}, not {'XML' if xml else 'JSON'}: "
            "not an AWS answer (a proxy or captive-portal page?)"
        )
    if not xml:
        _json_object(operation, body)
        return
    root = _root(body)
    if root is not None and root != f"{operation}Response":
        raise NotTheAnswer(f"{operation} answered with XML whose root is <{_quoted(root)}>, not <{operation}Response>")
    _scalars(operation_model, body)


def body_kind(body: bytes) -> str:
    """What a body is, from its first characters: "empty", "html", "xml", "json" or "text". Whether it is whole
    and well-formed is left to the checks after this one and to botocore's parser."""
    start = body[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if not start:
        return "empty"
    if _HTML.match(start):
        return "html"
    if start.startswith(b"<"):
        return "xml"
    return "json" if start[:1] in (b"{", b"[") else "text"


def _after_call(http_response: Any, parsed: dict[str, Any], model: Any, **_: Any) -> None:
    if not 200 <= int(getattr(http_response, "status_code", 0) or 0) < 300:
        return
    key = EXPECTED.get(model.name)
    if key is not None and key not in parsed:
        member = model.output_shape.members.get(key)
        element = member.serialization.get("name", key) if member is not None else key
        raise NotTheAnswer(f"{model.name} answered without its {element} ({key}): not an answer to that call")


def _root(body: bytes) -> str | None:
    """The local name of the XML document's root element; None when the body is not XML (botocore says so)."""
    parser: XMLPullParser[Element] = XMLPullParser(events=("start",))
    try:
        for start in range(0, len(body), 1 << 16):
            parser.feed(body[start : start + (1 << 16)])
            for event in parser.read_events():  # ("start", the root element) comes first
                started: Any = event
                return str(started[1].tag).rsplit("}", 1)[-1]
    except ParseError:
        return None
    return None


def _scalars(operation_model: Any, body: bytes) -> None:
    """Every boolean and number of the answer reads as one: botocore reads any boolean but `true` as False and
    raises a bare ValueError on a number it cannot read."""
    for kind, pattern in _scalar_patterns(operation_model).items():
        bad = pattern.search(body)
        if bad is None:
            continue
        element, value = bad.group(1).decode(), bad.group(2).decode(errors="replace")
        items = list(_ITEM.finditer(body, 0, bad.start()))
        where = f" (in {items[-1].group(1).decode()} {_quoted(items[-1].group(2).decode())})" if items else ""
        raise NotTheAnswer(
            f'{operation_model.name} answered {element} "{_quoted(value)}"{where}, not '
            f"{_WORDS.get(kind, 'a number')}: not an answer EC2 gives"
        )


def _scalar_patterns(operation_model: Any) -> dict[str, re.Pattern[bytes]]:
    """For each scalar type, a pattern finding an element of that type whose text is not of it. Only element names
    that have that one type wherever they occur in the answer are checked (`value` is a boolean in one structure
    and a string in another)."""
    key = (operation_model.service_model.service_name, operation_model.name)
    found = _PATTERNS.get(key)
    if found is None:
        kinds: dict[str, set[str]] = {}
        _walk(operation_model.output_shape, kinds, set())
        by_kind: dict[str, list[str]] = {}
        for element, types in kinds.items():
            if len(types) == 1 and (kind := next(iter(types))) in _SCALAR:
                by_kind.setdefault(kind, []).append(re.escape(element))
        found = _PATTERNS[key] = {
            kind: re.compile(f"<({'|'.join(sorted(names))})>(?!(?:{_SCALAR[kind].pattern})</)([^<]{{0,64}})".encode())
            for kind, names in by_kind.items()
        }
    return found


_PATTERNS: dict[tuple[str, str], dict[str, re.Pattern[bytes]]] = {}


def _walk(shape: Any, kinds: dict[str, set[str]], seen: set[str]) -> None:
    """Every element name of the answer's shape with the types it has (scalar type, or structure / list)."""
    if shape.name in seen:
        return
    seen.add(shape.name)
    if shape.type_name == "list":
        kinds.setdefault(shape.member.serialization.get("name", "member"), set()).add(shape.member.type_name)
        if shape.member.type_name not in _SCALAR:
            _walk(shape.member, kinds, seen)
        return
    for name, member in shape.members.items() if shape.type_name == "structure" else ():
        kinds.setdefault(member.serialization.get("name", name), set()).add(member.type_name)
        if member.type_name in ("structure", "list"):
            _walk(member, kinds, seen)


def _json_object(operation: str, body: bytes) -> None:
    try:
        doc = json.loads(body)
    except ValueError:
        raise NotTheAnswer(f"{operation} answered a body that is not JSON: not an AWS answer") from None
    if not isinstance(doc, dict):
        raise NotTheAnswer(f"{operation} answered a JSON {type(doc).__name__}, not an object: not an AWS answer")


def _quoted(text: str) -> str:
    """Text from an answer, made safe for one error line: no control characters, at most 64 of the rest."""
    return re.sub(r"[\x00-\x1f\x7f]", "?", text)[:64]
