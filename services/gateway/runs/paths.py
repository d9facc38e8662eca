"""``POST <path>``: a ``@workflow(path="/research")`` is an HTTP endpoint of its own.

A workflow a worker announces with a path is registered with it (its definition's code
node holds ``path``: ``definitions.announced``); a ``POST`` to that path runs the
latest version of the definition that claims it, exactly as ``POST /v1/run/{name}``
does (``runs.run.run_named``: the body is the input, checked against the input schema;
``timeout``, ``id`` and ``queue_anyway`` in the query; sync, ``Prefer: respond-async``
and ``Accept: text/event-stream``), with the same auth (``submit``:
``auth.gate.role_needed``).

The route is the app's last, and takes a ``POST`` only when no other route takes its
path (in any method: a ``POST`` to ``/v1/...`` or to a ``GET``-only path keeps its 404
or 405), and the path has the form of a workflow's (``PATH_PATTERN``). A path no
definition the principal sees claims is 404; one that two definitions (their latest
versions, not deleted) claim is 409 naming both, until one of them moves.
"""

from __future__ import annotations

from typing import Annotated

import asyncpg
from fastapi import FastAPI, Header, Query, Request
from starlette.responses import Response

from services.common.auth.tokens import Principal
from services.gateway.auth.scope import principal
from services.gateway.definitions.registry import tenant_of
from services.gateway.edge.problems import Problem
from services.gateway.lifetime import accepting
from services.gateway.runs.path_route import WorkflowPathRoute
from services.gateway.runs.run import RunQuery, run_named

MAX_CLAIMS = 10
"""The most definitions a 409 names."""


async def claimants(pool: asyncpg.Pool, path: str, me: Principal) -> list[str]:
    """The definitions whose latest version (not deleted) serves ``path`` and that
    ``me`` sees, by name (at most ``MAX_CLAIMS`` + 1)."""
    rows = await pool.fetch(
        "select h.name from definition_heads h join definitions d on d.name = h.name"
        " and d.version = h.version where not h.deleted"
        " and ($2::text is null or h.tenant is null or h.tenant = $2)"
        " and exists (select 1 from jsonb_array_elements(d.spec->'nodes') n"
        " where n->>'kind' = 'code' and n->>'path' = $1) order by h.name limit $3",
        path, tenant_of(me), MAX_CLAIMS + 1)
    return [str(r["name"]) for r in rows]


def owner(path: str, names: list[str]) -> str:
    """The one definition serving ``path``.

    Raises:
        Problem: 404 when none does, 409 naming them when more than one does.
    """
    if not names:
        raise Problem(404, "Not found", f"no workflow is served at {path} (a @workflow's "
                      "path=, announced by a live worker, or POST /v1/run/{name})",
                      path=path)
    if len(names) > 1:
        raise Problem(409, "Conflict", f"workflows {', '.join(names[:MAX_CLAIMS])} all claim "
                      f"the path {path}; give all but one another path=",
                      path=path, workflows=names[:MAX_CLAIMS])
    return names[0]


async def run_at_path(
    request: Request,
    query: Annotated[RunQuery, Query()],
    accept: Annotated[str, Header()] = "",
    prefer: Annotated[list[str] | None, Header()] = None,
) -> Response:
    """Run the workflow served at the request's path (see the module).

    Raises:
        Problem: 404 no workflow serves the path, 409 two do; then as ``POST
            /v1/run/{name}``.
    """
    hw = accepting(request)
    path = request.url.path
    name = owner(path, await claimants(hw.pool, path, principal(request)))
    return await run_named(request, hw, name, query, accept, prefer)


def install(app: FastAPI) -> FastAPI:
    """Serve workflow paths on ``app`` (after every other route)."""
    app.router.routes.append(WorkflowPathRoute(
        "/{path:path}", run_at_path, methods=["POST"], include_in_schema=False))
    return app
