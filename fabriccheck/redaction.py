"""What may never leave the process: credentials riding along in an SDK's error text, masked before any error
record, log or error line is made of it.
"""

from __future__ import annotations

import re

# a URL (https://user:PASSWORD@host), the signing and token parameters of presigned / SAS / signed URLs (S3
# X-Amz-*, Azure SAS sig=, GCS X-Goog-*), bearer tokens, AWS access key ids, PEM private keys and JWTs.
_SECRETS = (
    (re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+@"), "***@"),
    (
        re.compile(
            r"(?i)([?&](?:x-amz-(?:signature|credential|security-token)|x-goog-(?:signature|credential)|sig|"
            r"signature|access_token|token|code|key|client_secret|password)=)[^&\s#\"']+"
        ),
        r"\1***",
    ),
    (re.compile(r"(?i)\b(bearer|basic)\s+[\w\-.~+/]+=*"), r"\1 ***"),
    (re.compile(r"\b(?:AKIA|ASIA|AROA|AIDA)[A-Z0-9]{12,}\b"), "AWS-KEY-***"),
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S), "***"),
    (re.compile(r"\beyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]*"), "***"),
)


def redact(text: str) -> str:
    """`text` with anything credential-like masked (see _SECRETS); applied to every error that leaves a
    collector and every line the CLI prints about a failure."""
    for pattern, masked in _SECRETS:
        text = pattern.sub(masked, text)
    return text


def first_line(exc: BaseException) -> str:
    text = str(exc)
    return redact(text.splitlines()[0]) if text else type(exc).__name__
