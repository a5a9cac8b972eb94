"""Which AWS accounts a run audits, and with what credentials: the caller's own account, one role
(`--role-arn`), or every active account of the organization through a role of the same name in each
(`--org-role`, from `organizations:ListAccounts`), filtered by `--accounts` / `--exclude-accounts`.

The only calls made here are `organizations:ListAccounts` and `sts:AssumeRole`; `OPERATIONS` lists them for
the IAM policy and the read-only test. Assumed credentials live in memory only, inside the clients made from
them: they are never logged, printed, or written to a report or saved inventory.
"""

from __future__ import annotations

import datetime as dt
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fabriccheck.errors import FabricCheckError
from fabriccheck.model import CollectionError
from fabriccheck.redaction import first_line
from fabriccheck.sources.scope import ACCESS_DENIED, BAD_RESPONSE, Scope

# service -> operations this module may issue (besides EC2's, in collect.OPERATIONS).
OPERATIONS = {"sts": ("AssumeRole",), "organizations": ("ListAccounts",)}
SESSION_NAME = "fabriccheck"
ACCOUNT_ID = re.compile(r"\d{12}")
# IAM role names: up to 64 of letters, digits and +=,.@_- (IAM User Guide, IAM name requirements); a path
# before the name is allowed in a role ARN.
ROLE_NAME = re.compile(r"[\w+=,.@-]{1,64}")
ROLE_ARN = re.compile(r"arn:(aws[a-z-]*):iam::(\d{12}):role/(?:[\w+=,.@/-]+/)?[\w+=,.@-]{1,64}")
EXTERNAL_ID = re.compile(r"[\w+=,.@:/-]{2,1224}")
# Answers that mean the caller's own credentials are not good (expired, revoked, unknown): no scope can be
# collected with them, so the run stops with one line saying what to do.
CREDENTIAL_CODES = {
    "ExpiredToken",
    "ExpiredTokenException",
    "RequestExpired",
    "InvalidClientTokenId",
    "UnrecognizedClientException",
    "AuthFailure",
    "SignatureDoesNotMatch",
}
# Assumed credentials last an hour by default (and at most an hour when roles are chained): a scope that starts
# with less than this left assumes the role again, so a long run over many accounts does not fail its last
# scopes as expired.
REFRESH_MARGIN = dt.timedelta(minutes=15)
REFRESH_HINT = "refresh them (aws sso login, aws configure, or a new session token for AWS_SESSION_TOKEN) and run again"


def credential_error(code: str, detail: str) -> FabricCheckError:
    what = "have expired" if "Expired" in code else "were rejected"
    return FabricCheckError(f"AWS credentials {what} ({code}: {detail}); {REFRESH_HINT}")


@dataclass(frozen=True)
class Fleet:
    """The accounts options, checked; an empty Fleet is the caller's own account."""

    role_arn: str | None = None
    org_role: str | None = None
    external_id: str | None = None
    accounts: tuple[str, ...] = ()
    exclude_accounts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.role_arn is not None and self.org_role is not None:
            raise FabricCheckError("--role-arn and --org-role cannot be used together (one role, or one per account)")
        if self.role_arn is not None and not ROLE_ARN.fullmatch(self.role_arn):
            raise FabricCheckError(f"--role-arn {self.role_arn}: not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)")
        if self.org_role is not None and not ROLE_NAME.fullmatch(self.org_role):
            raise FabricCheckError(f"--org-role {self.org_role}: not an IAM role name (the name only, not an ARN)")
        if self.external_id is not None:
            if self.role_arn is None and self.org_role is None:
                raise FabricCheckError("--external-id goes with --role-arn or --org-role (it is sent with AssumeRole)")
            if not EXTERNAL_ID.fullmatch(self.external_id):
                raise FabricCheckError("--external-id: 2 to 1,224 letters, digits or +=,.@:/-")
        for option, ids in (("--accounts", self.accounts), ("--exclude-accounts", self.exclude_accounts)):
            if ids and self.org_role is None:
                raise FabricCheckError(f"{option} filters the organization's accounts: use it with --org-role NAME")
            for account in ids:
                if not ACCOUNT_ID.fullmatch(account):
                    raise FabricCheckError(f"{option} {account}: not an AWS account id (12 digits)")

    @property
    def assumes(self) -> bool:
        return self.role_arn is not None or self.org_role is not None


@dataclass
class Account:
    """One account to audit. `id` None is the caller's own account, named later by its answers."""

    id: str | None
    role_arn: str | None = None
    name: str | None = None
    # Assumed credentials (access key, secret, token); repr=False keeps them out of any debug print.
    credentials: dict[str, str] | None = field(default=None, repr=False)
    expires: dt.datetime | None = field(default=None, repr=False)  # when the assumed credentials expire
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


def split_ids(values: list[str] | None) -> tuple[str, ...]:
    """`--accounts 1,2 --accounts 3` -> ('1', '2', '3')."""
    return tuple(dict.fromkeys(v.strip() for value in values or () for v in value.split(",") if v.strip()))


def organization_accounts(client: Any) -> list[tuple[str, str]]:
    """The organization's active accounts, (id, name), paged. Suspended and closing accounts are left out: they
    run nothing and AssumeRole into them fails."""
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.parsers import ResponseParserError

    found: list[tuple[str, str]] = []
    try:
        for page in client.get_paginator("list_accounts").paginate():
            for account in page.get("Accounts", []):
                # `State` (2025 on) is the newer field; `Status` the one it replaces.
                state = str(account.get("State") or account.get("Status") or "").upper()
                if state == "ACTIVE" and account.get("Id"):
                    found.append((str(account["Id"]), str(account.get("Name") or "")))
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", "ClientError"))
        if code in CREDENTIAL_CODES:
            raise credential_error(code, _message(exc)) from None
        raise FabricCheckError(
            f"--org-role: listing the organization's accounts failed ({code}: {_message(exc)}); it needs "
            "organizations:ListAccounts, from the management account or a delegated administrator"
        ) from None
    except (BotoCoreError, ResponseParserError) as exc:
        raise FabricCheckError(f"--org-role: listing the organization's accounts failed: {first_line(exc)}") from None
    return sorted(found)


def accounts(fleet: Fleet, organizations: Any, partition: str) -> list[Account]:
    """The accounts to audit, each with the role to assume in it (none for the caller's own)."""
    if fleet.role_arn is not None:
        match = ROLE_ARN.fullmatch(fleet.role_arn)
        assert match is not None  # checked by Fleet
        return [Account(match.group(2), fleet.role_arn)]
    if fleet.org_role is None:
        return [Account(None)]
    listed = organization_accounts(organizations)
    wanted = set(fleet.accounts)
    unknown = sorted(wanted - {a for a, _ in listed})
    if unknown:
        raise FabricCheckError(f"--accounts {', '.join(unknown)}: not an active account of the organization")
    chosen = [(a, n) for a, n in listed if (not wanted or a in wanted) and a not in fleet.exclude_accounts]
    if not chosen:
        raise FabricCheckError("--org-role: no active account is left to audit after --accounts / --exclude-accounts")
    return [Account(a, f"arn:{partition}:iam::{a}:role/{fleet.org_role}", n) for a, n in chosen]


def assume(sts: Any, account: Account, external_id: str | None) -> CollectionError | None:
    """Assume the account's role, keeping the credentials on the account; a failure is that account's error."""
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.parsers import ResponseParserError

    if account.role_arn is None:
        return None
    scope = Scope("aws", account.id or "unknown")
    params: dict[str, Any] = {"RoleArn": account.role_arn, "RoleSessionName": SESSION_NAME}
    if external_id is not None:
        params["ExternalId"] = external_id
    try:
        answer = sts.assume_role(**params)
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", "ClientError"))
        if code in CREDENTIAL_CODES:
            raise credential_error(code, _message(exc)) from None
        if code in ("AccessDenied", "AccessDeniedException"):
            return scope.error(
                "AssumeRole",
                ACCESS_DENIED,
                f"cannot assume {account.role_arn}: {_message(exc)} (the caller needs sts:AssumeRole on it, and "
                "the role's trust policy must allow the caller" + (" with this external id)" if external_id else ")"),
                "sts:AssumeRole",
            )
        return scope.error("AssumeRole", code, f"cannot assume {account.role_arn}: {_message(exc)}")
    except BotoCoreError as exc:
        return scope.unreachable("AssumeRole", exc)
    except ResponseParserError as exc:  # a 200 that is not AssumeRole's answer (answers.py), or a cut body
        return scope.error("AssumeRole", BAD_RESPONSE, f"AssumeRole into {account.role_arn}: {first_line(exc)}")
    given = answer.get("Credentials") or {}
    if not all(given.get(k) for k in ("AccessKeyId", "SecretAccessKey", "SessionToken")):
        return scope.error("AssumeRole", BAD_RESPONSE, f"AssumeRole into {account.role_arn} returned no credentials")
    account.credentials = {
        "aws_access_key_id": str(given["AccessKeyId"]),
        "aws_secret_access_key": str(given["SecretAccessKey"]),
        "aws_session_token": str(given["SessionToken"]),
    }
    expiration = given.get("Expiration")
    account.expires = expiration if isinstance(expiration, dt.datetime) else None
    return None


def refreshed(sts: Callable[[], Any], account: Account, external_id: str | None) -> CollectionError | None:
    """Assume the account's role again if its credentials expire within REFRESH_MARGIN (one scope at a time
    per account does it; the others then see fresh credentials). `sts` makes the client only when needed."""
    if account.role_arn is None or account.expires is None:
        return None
    with account.lock:
        if account.expires - dt.datetime.now(dt.UTC) > REFRESH_MARGIN:
            return None
        return assume(sts(), account, external_id)


def _message(exc: Any) -> str:
    text = str(exc.response.get("Error", {}).get("Message", "")).splitlines()
    return text[0] if text else "no message"
