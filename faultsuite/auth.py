"""The suite with auth on (``python -m faultsuite --auth``): each run's keys, the
suite's token on every request, and the checks that auth took nothing away.

With auth on, a run's sandbox home holds a keys file (``services.common.auth.tokens``) with two
API keys: the services' own (tenant ``*``, role ``submit``: ``HEADWATER_TOKEN``, which the
gateway and the coordinator put on the submissions they produce) and the suite's
(tenant ``TENANT``, role ``admin``: it registers the definitions, puts the schedule and
submits the batch, so every run is that tenant's). The sandbox starts with
``HEADWATER_AUTH=on`` (docs/auth.md).

The suite's HTTP requests carry ``Authorization: Bearer <token>`` (RFC 6750 §2.1) of
``HEADWATER_TOKEN`` in the suite's own environment, as the CLI's and the client's do:
``client_token`` sets it for a run (the sandbox's processes get the services' token in
their environment instead), and ``client_headers`` reads it.

After the run, what auth may have cost is checked: a record on the submissions topic
without a token, a submission dead-lettered for its token (a child workflow's
``ChildSubmitted``, produced by a coordinator, first or carried out again from its
intents after a kill, most of all: its parent would never end), and a run, or a child
of one, of another tenant than the suite's (children run as their parent's tenant).
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faultsuite.audit import WorkflowAudit
from faultsuite.topics import Record, read_all
from headwater.client.http import auth_headers
from headwater.topics import REASON_HEADER
from ops.sandbox import Sandbox
from services.common.auth.tokens import EVERY_TENANT, new_key
from services.coordinator.submitters import authorization

TENANT = "faults"
"""The tenant of the suite's token, whose runs every run's are."""
TOKEN_ENV = "HEADWATER_TOKEN"
AUTH_REASONS = ("unauthenticated", "forbidden", "tenant")
"""The dead-letter reasons (before ``:``) of a submission refused for its token
(``services.coordinator.submitters``)."""


@dataclass(frozen=True)
class RunAuth:
    """The keys of one run with auth on.

    Attributes:
        keys_file: the keys file (mode 0600, hashes only).
        service_token: the services' token (tenant ``*``, role ``submit``).
        client_token: the suite's token (``tenant``, role ``admin``).
        tenant: the suite's tenant.
    """

    keys_file: Path
    service_token: str
    client_token: str
    tenant: str = TENANT

    def env(self) -> dict[str, str]:
        """The sandbox's settings: auth on, the keys file, the services' token."""
        return {"HEADWATER_AUTH": "on", "HEADWATER_AUTH_KEYS_FILE": str(self.keys_file),
                TOKEN_ENV: self.service_token}


def keys_in(home: Path, tenant: str = TENANT) -> RunAuth:
    """Make the services' key and a ``tenant`` admin key in ``home``'s keys file.

    Raises:
        ValueError: a bad tenant name (``services.common.auth.check_tenant``).
    """
    service_token, service_line = new_key(EVERY_TENANT, "submit")
    client_token, client_line = new_key(tenant, "admin")
    path = home / "keys"
    path.touch(mode=0o600)
    path.write_text(f"# the services\n{service_line}\n# the fault suite\n{client_line}\n")
    return RunAuth(path, service_token, client_token, tenant)


@contextlib.contextmanager
def run_auth(home: Path, on: bool) -> Iterator[RunAuth | None]:
    """With ``on``: make the keys in ``home`` (``keys_in``) and send the suite's token
    while the block runs (``client_token``); yield them. Else yield None."""
    keys = keys_in(home) if on else None
    with client_token(keys.client_token if keys else None):
        yield keys


def sandbox_env(auth: RunAuth | None) -> dict[str, str]:
    """The sandbox's auth settings (``RunAuth.env``; none when auth is off)."""
    return auth.env() if auth is not None else {}


@contextlib.contextmanager
def client_token(token: str | None) -> Iterator[None]:
    """Set ``HEADWATER_TOKEN`` of this process to ``token`` (None: leave it as it is)
    while the block runs; restore it after."""
    if token is None:
        yield
        return
    before = os.environ.get(TOKEN_ENV)
    os.environ[TOKEN_ENV] = token
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(TOKEN_ENV, None)
        else:
            os.environ[TOKEN_ENV] = before


def client_headers() -> dict[str, str]:
    """The headers of the suite's requests: ``Authorization`` of ``HEADWATER_TOKEN``, or
    none when it is unset (auth off)."""
    return auth_headers(os.environ.get(TOKEN_ENV))


def dead_letter_reasons(records: Iterable[Record]) -> dict[str, int]:
    """How many records of a dead-letter topic have each reason, by its part before
    ``:`` (``"none"``: a record without a ``reason`` header)."""
    reasons: Counter[str] = Counter()
    for r in records:
        value = dict(r.headers).get(REASON_HEADER)
        reasons[value.decode(errors="replace").split(":", 1)[0] if value else "none"] += 1
    return dict(reasons)


def submission_tokens(records: Iterable[Record]) -> dict[str, int]:
    """How many records of the submissions topic carry an ``authorization`` header (any
    case), per kind: ``"<type> with token"`` and ``"<type> without token"``, ``<type>``
    ``WorkflowSubmitted`` (the gateway's, the schedule's runs) or ``ChildSubmitted``
    (a coordinator's, first or carried out again from its intents)."""
    kinds: Counter[str] = Counter()
    for r in records:
        has = authorization(r.headers) is not None
        kinds[f"{type(r.value).__name__} {'with' if has else 'without'} token"] += 1
    return dict(kinds)


def auth_faults(reasons: Mapping[str, int], tenants: Mapping[str, str | None],
                tenant: str | None, tokens: Mapping[str, int] | None = None) -> list[str]:
    """What auth broke in a run, one line each.

    Args:
        reasons: the dead letters by reason (``dead_letter_reasons``).
        tenants: workflow id -> the tenant its ``WorkflowAccepted`` records, for the
            submitted workflows and their children.
        tenant: the tenant every one of them must have (None: auth off, none checked).
        tokens: the submissions topic's records by kind and token
            (``submission_tokens``); with ``tenant``, one without a token is a violation.
    """
    out = [f"{n} submissions dead-lettered as {why} (for their token)"
           for why, n in sorted(reasons.items()) if why in AUTH_REASONS]
    if tenant is not None:
        out += [f"{wid}: runs as tenant {got!r}, not the suite's {tenant!r}"
                for wid, got in sorted(tenants.items()) if got != tenant]
        out += [f"{n} records on the submissions topic: {kind}"
                for kind, n in sorted((tokens or {}).items()) if kind.endswith("without token")]
    return out


async def audit_auth(sandbox: Sandbox, auth: RunAuth | None,
                     audits: Mapping[str, WorkflowAudit]) -> tuple[dict[str, Any], list[str]]:
    """Read the sandbox's dead-letter topic whole and check a run's auth.

    Args:
        sandbox: the run's sandbox.
        auth: the run's keys, or None (auth off: the tenants are not checked).
        audits: the run's workflows (the batch's and their children) by id.

    Returns:
        The figures ``dead_letters`` (by reason), ``submissions`` (by kind and token,
        ``submission_tokens``) and ``tenants`` (runs per tenant, ``"None"``: none
        named), and the violations (``auth_faults``).
    """
    bootstrap = sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]
    reasons = dead_letter_reasons(await read_all(bootstrap, sandbox.topics.dlq))
    tokens = submission_tokens(await read_all(bootstrap, sandbox.topics.submissions))
    tenants = {wid: a.tenant for wid, a in audits.items() if a.events}
    figures = {"dead_letters": reasons, "submissions": tokens,
               "tenants": dict(Counter(str(t) for t in tenants.values()))}
    return figures, auth_faults(reasons, tenants, auth.tenant if auth else None, tokens)
