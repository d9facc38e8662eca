"""Who may submit, signal and cancel on Kafka: the ``authorization`` header of a record
on ``submissions`` or ``control``, checked when ``HEADWATER_AUTH`` is on.

Other systems write to these two topics (submissions, and JSON signals on
``control``), so with auth on every record on them carries ``authorization: Bearer
<token>`` (a header, as HTTP carries it; RFC 6750 §2.1), verified like the gateway's
requests (``services.common.auth.tokens``), and the services put their own token on those
they produce. The token's role must allow ``submit``. A token of one tenant submits only
for its tenant, named in the record's ``tenant``; signals and cancels only a run of its
tenant that exists; a child workflow (``ChildSubmitted``) and a timer (``TimerFired``)
and a limiter's request or release (``PermitRequested``, ``PermitReleased``) and a
cache's lookup or release (``CacheLookedUp``, ``CacheReleased``) come only from a
coordinator, whose token is for every tenant. A tenant's token passes no blob reference
(``headwater.blobs``) in a submission or a signal: the gateway checks that a reference
is its tenant's to pass, which nothing can on Kafka. A record that fails goes
to the dead-letter topic with the reason (``effects._route``). A submission to an id
another tenant's run holds is refused by the core (``idempotency.conflict``),
dead-lettered with its reason too. ``reports`` and the other topics are written by the
services alone: Kafka's ACLs keep other producers off them (docs/auth.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from headwater.blobs import REF_KEY, refs_in
from headwater.core import events as ev
from headwater.core.state import WorkflowState
from services.common.auth.tokens import Authenticator, AuthError, derived_id

AUTHORIZATION = "authorization"
"""The header holding a record's bearer token (matched in any case)."""


TWICE = "two authorization headers"
"""What ``authorization`` answers for a record with more than one (refused, not
chosen between)."""
_SECRET_NAMES = frozenset({"authorization", "authorisation", "proxy-authorization",
                           "x-api-key", "api-key", "token", "x-auth-token", "cookie"})
_SECRET_VALUE = re.compile(rb"\s*(bearer\s|basic\s|hwk_)|.*hwk_[0-9a-f]{12}_", re.IGNORECASE)


def authorization(headers: Iterable[tuple[str, bytes]] | None) -> str | None:
    """The ``authorization`` header's value (any case), ``TWICE`` when there are more,
    or None."""
    found = [v for k, v in headers or () if k.lower() == AUTHORIZATION and v is not None]
    if len(found) > 1:
        return TWICE
    return found[0].decode(errors="replace") if found else None


def without_authorization(headers: Iterable[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """``headers`` less anything that may hold a credential: what a dead letter keeps.
    Besides ``authorization`` (any case, stray spaces), the names producers use for one
    by mistake and any value that reads as one (``Bearer ...``, an API key)."""
    return [(k, v) for k, v in headers
            if k.strip().lower() not in _SECRET_NAMES
            and (v is None or _SECRET_VALUE.match(v) is None)]


Guarded = ev.WorkflowSubmitted | ev.ChildSubmitted | ev.CancelRequested | ev.SignalSent | (
    ev.TimerFired | ev.PermitRequested | ev.PermitReleased | ev.LimitDefined
    | ev.CacheLookedUp | ev.CacheReleased)
"""The inputs whose producer is checked (those of ``submissions`` and ``control``)."""


def producer_fault(auth: Authenticator, headers: Iterable[tuple[str, bytes]] | None,
                   record: Guarded, state: WorkflowState | None) -> str | None:
    """Why ``record`` may not be taken from its producer, or None.

    Args:
        auth: the coordinator's authenticator.
        headers: the record's Kafka headers.
        record: the decoded input.
        state: its workflow's state (None: not submitted yet).

    Returns:
        ``"unauthenticated: ..."``, ``"forbidden: ..."`` or ``"tenant: ..."``; None when
        the token may send it.
    """
    value = authorization(headers)
    if value == TWICE:
        return "unauthenticated: the record has two authorization headers; send one"
    if value is None:
        return (f"unauthenticated: the record has no authorization header; HEADWATER_AUTH "
                f"is on, so a {type(record).__name__} carries 'authorization: Bearer "
                "<token>'")
    try:
        me = auth.header(value)
    except AuthError as e:
        return f"unauthenticated: {e}"
    if not me.may("submit"):
        return (f"forbidden: the token's role is {me.role}; a {type(record).__name__} needs "
                "submit or admin")
    if me.every_tenant:
        return None
    return _tenant_fault(me.tenant, record, state) or _reference_fault(record)


def _tenant_fault(tenant: str, record: Guarded, state: WorkflowState | None) -> str | None:
    """Why a token of ``tenant`` may not send ``record``, or None."""
    if isinstance(record, ev.ChildSubmitted | ev.TimerFired | ev.PermitRequested
                  | ev.PermitReleased | ev.LimitDefined | ev.CacheLookedUp
                  | ev.CacheReleased):
        return (f"forbidden: a {type(record).__name__} comes from a coordinator, whose "
                "token is for every tenant")
    if isinstance(record, ev.WorkflowSubmitted):
        if derived_id(record.workflow_id):
            return (f"forbidden: workflow id {record.workflow_id} has the form of the ids "
                    "Headwater derives (':' in it, or call-<hash>), which a tenant's token "
                    "may not take")
        if record.tenant == tenant:
            return None
        names = "names no tenant" if record.tenant is None else f"names {record.tenant!r}"
        return (f"tenant: the token is for tenant {tenant!r} and the record {names}; a "
                f"submission names its token's tenant (\"tenant\": {tenant!r})")
    if state is None or state.tenant != tenant:  # never says which, or whether it exists
        return (f"tenant: the token is for tenant {tenant!r}, and workflow "
                f"{record.workflow_id} is no run of it (a {type(record).__name__} of a "
                "tenant's token goes to its own runs, once they exist)")
    return None


def _reference_fault(record: Guarded) -> str | None:
    """Why a tenant's token may not send ``record``: a reference (``headwater.blobs``) in
    a submission's spec or input or a signal's fields; None when it holds none. A digest
    is no permission: the run's worker would resolve it whoever stored it, and the
    projector would note the run as referring to it, which lets the tenant read it
    through the gateway."""
    if isinstance(record, ev.WorkflowSubmitted):
        values: Any = [record.spec, record.input]
    elif isinstance(record, ev.SignalSent):
        values = record.fields
    else:
        return None
    found = next(refs_in(values), None)
    if found is None:
        return None
    return (f"forbidden: the {type(record).__name__} holds a reference to blob "
            f"{found[REF_KEY]}; a tenant's token passes values on Kafka inline (a "
            "reference goes through the gateway, which takes one only when a run of the "
            "tenant refers to its blob)")
