"""What a request's principal may see and touch: its own tenant's runs, nothing else.

The principal is the one ``auth.gate.Authenticate`` put on the request (``auth.OPEN``
when auth is off, which sees everything). A run of another tenant is answered as one
that does not exist (404, never 403: a guessed id tells nothing), and a list shows only
the principal's tenant. A submission is the principal's tenant's: its ``tenant`` may be
left out (it is filled in) but may not name another (403).
"""

from __future__ import annotations

import asyncpg
from fastapi import Request

from headwater.core.caching import CACHE_PREFIX
from headwater.core.ids import is_child_id
from headwater.core.limits import LIMITER_PREFIX, reserved_id
from services.common.auth.tokens import Principal, derived_id
from services.gateway.edge.problems import Problem
from services.gateway.runs.models import SubmitRequest


def principal(request: Request) -> Principal:
    """The request's principal, as ``auth.gate.Authenticate`` set it (``auth.OPEN`` when
    auth is off).

    Raises:
        Problem: 401 when none was set (a route outside ``/v1`` asking: fail closed).
    """
    me = getattr(request.state, "principal", None)
    if not isinstance(me, Principal):
        raise Problem(401, "Unauthorized", "no token was checked for this path")
    return me


def not_found(workflow_id: str) -> Problem:
    """The 404 of an unknown (or another tenant's) workflow."""
    return Problem(404, "Not found", f"no workflow {workflow_id}")


async def require_run(pool: asyncpg.Pool, me: Principal, workflow_id: str) -> None:
    """Return when ``me`` may touch ``workflow_id``'s run. A principal of every tenant is
    not asked about (the route answers an unknown id itself).

    Raises:
        Problem: 404 when the run is another tenant's or, for a tenant's principal,
            unknown (the same answer).
    """
    if me.every_tenant:
        return
    row = await pool.fetchrow("select tenant from workflows where workflow_id = $1",
                              workflow_id)
    if row is None or row["tenant"] != me.tenant:
        raise not_found(workflow_id)


def list_tenant(me: Principal, asked: str | None) -> tuple[str | None, bool]:
    """The ``tenant`` filter of a list for ``me`` that asked for ``asked``.

    Returns:
        ``(tenant, empty)``: the filter; ``empty`` when ``me`` asked for another
        tenant's (nothing to show).
    """
    if me.every_tenant:
        return asked, False
    return me.tenant, asked is not None and asked != me.tenant


def submission(me: Principal, request: SubmitRequest) -> SubmitRequest:
    """``request`` as ``me``'s: its ``tenant`` filled in with ``me``'s.

    Raises:
        Problem: 422 for an id of a child workflow's form (``ids.is_child_id``: the
            coordinator may give it to a child or a schedule's run at any moment, after
            this gateway had claimed it) or of a limiter's (``limits.reserved_id``);
            403 when it names another tenant, or, for a tenant's principal, an id of the
            forms Headwater derives (``derived_id``).
    """
    if request.id is not None and is_child_id(request.id):
        fault = (f"workflow id {request.id!r} has the form of the ids Headwater gives the "
                 "child workflows it starts and a schedule's runs (<parent>:<node>:<attempt>"
                 ", schedule:<name>:<n>); choose one that does not end in ':<number>'")
        raise Problem(422, "Invalid request", fault, errors=[fault])
    if request.id is not None and reserved_id(request.id):
        fault = (f"workflow id {request.id!r} starts with {LIMITER_PREFIX!r} or "
                 f"{CACHE_PREFIX!r}, which name the limiters that keep concurrency and rate "
                 "limits and the caches that keep task results; choose another")
        raise Problem(422, "Invalid request", fault, errors=[fault])
    if me.every_tenant:
        return request
    if request.id is not None and derived_id(request.id):
        raise Problem(403, "Forbidden", f"workflow id {request.id!r} has the form of the ids "
                      "Headwater gives child workflows, schedules and ctx.call children "
                      f"(':' in it, or call-<hash>); {me.tenant!r}'s own ids have neither",
                      role=me.role, needs="an id without ':'")
    if request.tenant is None:
        return request.model_copy(update={"tenant": me.tenant})
    if request.tenant != me.tenant:
        raise Problem(403, "Forbidden", f"the token is for tenant {me.tenant!r}; the body "
                      f"names {request.tenant!r}", role=me.role, needs="tenant " + me.tenant)
    return request
