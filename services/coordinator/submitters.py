"""Who may submit on Kafka: the ``authorization`` header of a submission record, checked
when ``HEADWATER_AUTH`` is on.

The ``submissions`` topic is the one topic other systems write to, so with auth on every
record on it carries ``authorization: Bearer <token>`` (a header, as HTTP carries it;
RFC 6750 §2.1), verified like the gateway's requests (``services.common.auth``). The
token's role must allow ``submit``; a token of one tenant submits only for its tenant,
named in the record's ``tenant``; a child workflow (``ChildSubmitted``) comes only from
a coordinator, whose token is for every tenant. A record that fails goes to the
dead-letter topic with the reason (``inputs.decode_input`` raises it as a
``DecodeError``). A submission to an id another tenant's run holds is refused by the
core (``idempotency.conflict``), dead-lettered with its reason too. The other input
topics are written by the services alone: Kafka's ACLs keep other producers off them
(README, "Tenants and auth").
"""

from __future__ import annotations

from collections.abc import Iterable

from headwater.core import events as ev
from services.common.auth import Authenticator, AuthError

AUTHORIZATION = "authorization"
"""The header holding a record's bearer token (matched in any case)."""


def authorization(headers: Iterable[tuple[str, bytes]] | None) -> str | None:
    """The ``authorization`` header's value (any case), or None."""
    for key, value in headers or ():
        if key.lower() == AUTHORIZATION and value is not None:
            return value.decode(errors="replace")
    return None


def without_authorization(headers: Iterable[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """``headers`` less ``authorization``: what a dead letter keeps (never a token)."""
    return [(k, v) for k, v in headers if k.lower() != AUTHORIZATION]


def submitter_fault(auth: Authenticator, headers: Iterable[tuple[str, bytes]] | None,
                    record: ev.WorkflowSubmitted | ev.ChildSubmitted) -> str | None:
    """Why the submission ``record`` may not be taken from its producer, or None.

    Args:
        auth: the coordinator's authenticator.
        headers: the record's Kafka headers.
        record: the decoded submission.

    Returns:
        ``"unauthenticated: ..."``, ``"forbidden: ..."`` or ``"tenant: ..."``; None when
        the token may submit it.
    """
    value = authorization(headers)
    if value is None:
        return ("unauthenticated: the record has no authorization header; HEADWATER_AUTH "
                "is on, so a submission carries 'authorization: Bearer <token>'")
    try:
        me = auth.header(value)
    except AuthError as e:
        return f"unauthenticated: {e}"
    if not me.may("submit"):
        return f"forbidden: the token's role is {me.role}; submitting needs submit or admin"
    return None if me.every_tenant else _tenant_fault(me.tenant, record)


def _tenant_fault(tenant: str, record: ev.WorkflowSubmitted | ev.ChildSubmitted) -> str | None:
    """Why a token of ``tenant`` may not submit ``record``, or None."""
    if isinstance(record, ev.ChildSubmitted):
        return ("forbidden: a child workflow's submission comes from a coordinator, whose "
                "token is for every tenant")
    if record.tenant != tenant:
        return (f"tenant: the token is for tenant {tenant!r}; the record names "
                f"{record.tenant!r} (a submission names its tenant)")
    return None
