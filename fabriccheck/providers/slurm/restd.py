"""`fabriccheck slurm --slurmrestd URL`: Slurm's REST daemon read with a JWT from SLURM_JWT, never printed.

What slurmrestd answers (SchedMD/slurm doc/html/rest_api.shtml, "GET /slurm/v0.0.43/nodes", ".../partitions",
".../jobs") is the same data_parser output `scontrol show nodes --json`, `scontrol show partitions --json` and
`squeue --json` print (OPENAPI_NODES_RESP, OPENAPI_PARTITION_RESP, OPENAPI_JOB_INFO_RESP in
src/plugins/data_parser/v0.0.43/parsers.c), so the answers are saved as the dump's files and read by its reader.
The token goes in the X-SLURM-USER-TOKEN header, the user in X-SLURM-USER-NAME (doc/html/rest_quickstart.shtml
curl example; doc/html/rest.shtml); the user is the token's own `sun` (or `username`) claim, the claims Slurm reads
(doc/html/jwt.shtml, "User Mapping" and "Compatibility"), unless --slurm-user names one. The REST API has no
topology or config files: without them the topology rules are listed as not judged, as for a dump without them.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from pathlib import Path

import urllib3

from fabriccheck.endpoints import check_endpoint_url
from fabriccheck.errors import FabricCheckError
from fabriccheck.model import CollectionError
from fabriccheck.redaction import redact
from fabriccheck.sources.scope import UNREACHABLE

CREDENTIAL = "the Slurm JWT (SLURM_JWT) in its X-SLURM-USER-TOKEN header"
TOKEN_ENV = "SLURM_JWT"
# Newest first: the first the daemon answers (not 404, rest_quickstart.shtml "Unable to find requested URL") is used.
# v0.0.38 is Slurm 22.05's (openapi/v0.0.38: the shapes `sinfo --json` and `squeue --json` print there, and partitions
# with `maximum_nodes_per_job`; tests/test_slurm_real.py reads a real 22.05.8 slurmrestd). v0.0.39 is not asked:
# no daemon of it was read.
VERSIONS = ("v0.0.43", "v0.0.42", "v0.0.41", "v0.0.40", "v0.0.38")
ENDPOINTS = {"nodes.json": "nodes", "partitions.json": "partitions", "jobs.json": "jobs"}
TIMEOUT = urllib3.Timeout(connect=10.0, read=60.0)
_HEADER_SAFE = re.compile(r"^[\x21-\x7e]+$")  # a token or user that could not be a header value is never sent


def token_user(token: str) -> str:
    """The user a Slurm JWT names: its `sun` claim, else `username` ('' when it names none or is no JWT)."""
    parts = token.split(".")
    if len(parts) != 3:
        return ""
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError):
        return ""
    if not isinstance(claims, dict):
        return ""
    user = claims.get("sun") or claims.get("username")
    return user if isinstance(user, str) else ""


def credentials(user: str | None) -> dict[str, str]:
    """The two headers slurmrestd authenticates with; one line (never the token) when they cannot be made."""
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise FabricCheckError(f"--slurmrestd needs a token in {TOKEN_ENV} (on a login node: export $(scontrol token))")
    if not _HEADER_SAFE.match(token):
        raise FabricCheckError(f"environment variable {TOKEN_ENV}: not a token (it has spaces or control characters)")
    name = user or token_user(token)
    if not name:
        raise FabricCheckError(f"{TOKEN_ENV} names no user (no sun or username claim): give --slurm-user NAME")
    if not _HEADER_SAFE.match(name):
        raise FabricCheckError(f"--slurm-user {name!r}: not a user name")
    return {"X-SLURM-USER-TOKEN": token, "X-SLURM-USER-NAME": name, "Accept": "application/json"}


class Restd:
    def __init__(self, url: str, headers: dict[str, str]) -> None:
        check_endpoint_url(url, CREDENTIAL, "--slurmrestd")
        self.url = url.rstrip("/")
        self.headers = headers
        self.pool = urllib3.PoolManager(retries=False, timeout=TIMEOUT)
        self.version = ""

    def where(self, endpoint: str, version: str = "") -> str:
        return f"GET {redact(self.url)}/slurm/{version or self.version}/{endpoint}"

    def get(self, endpoint: str, version: str = "") -> tuple[int, bytes]:
        try:
            url = f"{self.url}/slurm/{version or self.version}/{endpoint}"
            answer = self.pool.request("GET", url, headers=self.headers)
        except urllib3.exceptions.HTTPError as exc:
            reason = redact(str(getattr(exc, "reason", None) or exc))[:200]
            raise FabricCheckError(f"--slurmrestd: {self.where(endpoint, version)}: {reason}") from None
        return answer.status, answer.data

    def nodes(self) -> bytes:
        """`nodes` at the newest API version the daemon serves."""
        for version in VERSIONS:
            status, body = self.get("nodes", version)
            if status != 404:
                self.version = version
                return self.checked("nodes", status, body)
        raise FabricCheckError(f"--slurmrestd {redact(self.url)}: serves none of /slurm/{{{','.join(VERSIONS)}}}/nodes")

    def checked(self, endpoint: str, status: int, body: bytes) -> bytes:
        if status == 200:
            return body
        refused = status in (401, 403, 500)  # rest_quickstart.shtml: an expired or absent token is a 500 or 401
        why = " (the token was refused: expired? unset SLURM_JWT; export $(scontrol token))" if refused else ""
        raise FabricCheckError(f"--slurmrestd: {self.where(endpoint)}: HTTP {status}{why}")


def collect(folder: Path, url: str, user: str | None) -> tuple[list[CollectionError], dict[str, str]]:
    """The daemon's answers saved in `folder` as the dump files; what could not be collected, and each file's
    request (to name it in an error)."""
    restd = Restd(url, credentials(user))
    (folder / "nodes.json").write_bytes(restd.nodes())
    errors: list[CollectionError] = []
    for name, endpoint in ENDPOINTS.items():
        if name == "nodes.json":
            continue
        try:
            body = restd.checked(endpoint, *restd.get(endpoint))
        except FabricCheckError as exc:  # optional, as in a dump: the run is incomplete without it
            said, call = f"{exc}: {name} not collected", restd.where(endpoint)
            errors.append(CollectionError(provider="slurm", account="slurm", call=call, code=UNREACHABLE, message=said))
            continue
        (folder / name).write_bytes(body)
    return errors, {name: restd.where(endpoint) for name, endpoint in ENDPOINTS.items()}
