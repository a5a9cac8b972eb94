"""Where a live command may send its credentials (issue 18, item 17).

Every request to a cloud API carries a credential: AWS signs it (SigV4 headers, and the session token itself when
the credentials are temporary), Google sends a bearer token good for an hour, Azure a bearer token too (its SDK
refuses plain http, and fabriccheck asks https:// of Resource Manager). Over plain http:// anyone on the path reads
them. So an endpoint is https://, or http:// to this machine only (127.0.0.0/8, ::1, localhost), where the
emulators run. One check for every cloud's `--endpoint-url`.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse

from fabriccheck.errors import FabricCheckError
from fabriccheck.redaction import redact

LOOPBACK_NAMES = frozenset({"localhost", "localhost."})


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 (also as ::ffff:127.x.y.z) or localhost; a name that merely resolves there is not."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))


def check_endpoint_url(url: str | None, carries: str, option: str = "--endpoint-url") -> None:
    """Refuse an endpoint that would send `carries` (the credential, in words) in clear text: one line, exit 2."""
    if url is None:
        return
    shown = re.sub(r"[\x00-\x1f\x7f]", "?", redact(url))[:200]
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
        _ = parts.port  # a port that is not a number raises here
    except ValueError:
        raise FabricCheckError(f"{option} {shown}: not a URL") from None
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http") or not host:
        raise FabricCheckError(
            f"{option} {shown}: give the scheme and host: https://HOST, or http://127.0.0.1:PORT to an emulator"
        )
    if scheme == "http" and not is_loopback(host):
        raise FabricCheckError(
            f"{option} {shown}: plain http:// would send {carries} in clear text; use https://, or http:// only "
            "to this machine (127.0.0.1, ::1, localhost) for an emulator"
        )
