"""Collection errors, recorded with where the call was made (provider, account, region) and what went wrong in
words every report uses whatever the cloud: a denied call reads the same in an AWS, Azure, GCP or Kubernetes
report.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fabriccheck.model import UNKNOWN_ACCOUNT, CollectionError, Provider
from fabriccheck.redaction import first_line, redact

# What went wrong, in words every report uses whatever the cloud (CollectionError.code).
ACCESS_DENIED = "AccessDenied"
THROTTLED = "Throttled"
UNREACHABLE = "Unreachable"
BAD_RESPONSE = "BadResponse"
MISSING_DUMP = "MissingDump"
TRUNCATED = "Truncated"  # an answer that ends with a paging token: the rest was never read


@dataclass(frozen=True)
class Scope:
    """Where a call was made: provider, account (or subscription, project) and region."""

    provider: Provider
    account: str = UNKNOWN_ACCOUNT
    region: str | None = None

    def error(self, call: str, code: str, message: str, permission: str | None = None) -> CollectionError:
        return CollectionError(
            provider=self.provider,
            account=self.account,
            region=self.region,
            call=call,
            code=code,
            message=redact(message),
            permission=permission,
        )

    def denied(self, call: str, detail: str, permission: str) -> CollectionError:
        return self.error(call, ACCESS_DENIED, detail, permission)

    def throttled(self, call: str, detail: str) -> CollectionError:
        return self.error(call, THROTTLED, f"{detail}: still throttled after retries with backoff")

    def unreachable(self, call: str, exc: BaseException) -> CollectionError:
        return self.error(call, UNREACHABLE, first_line(exc))

    def missing_dump(self, path: Path, what: str, how: str) -> CollectionError:
        return self.error(
            path.name, MISSING_DUMP, f"{path} is missing, so {what} were not collected (make it with: {how})"
        )
