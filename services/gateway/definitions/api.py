"""HTTP routes of the definitions registry: ``PUT``, ``GET`` (one, or the list) and
``DELETE /v1/definitions/{name}``, and ``POST /v1/definitions/{name}/rollback``
(docs/definitions.md).

A ``PUT`` is validated as a submission's spec is (``parse_spec``, with the definitions
its ``kind: workflow`` nodes name inlined), and its ``input_schema`` must be a JSON
Schema (``definitions.registry.schema_faults``): 422 naming every fault. ``GET`` of a deleted
name is 410 (its versions stay readable with ``?version=N``); the list holds the current
version of each name that is not deleted. A rollback makes an earlier version current
(``Store.rollback``): new runs use it, runs already started keep theirs.

Every read and write is the principal's tenant's (``auth.scope.principal``): it sees its own
definitions and the shared ones (another tenant's is 404, as a name never registered);
it writes its own and new names; a name another tenant holds is 409 on ``PUT``; a shared
one is 403 (``definitions.store``). A principal of every tenant (auth off, an operator's
token) sees and writes them all; what it registers under a new name is shared.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated, Any
from urllib.parse import quote

import orjson
from fastapi import APIRouter, Path, Query, Request
from starlette.responses import Response

from headwater.core.definitions import DefinitionRefError, check_name
from headwater.core.spec import parse_spec
from headwater.errors import SpecError
from services.gateway.auth.scope import principal
from services.gateway.definitions.models import DefinitionRequest, RollbackRequest
from services.gateway.definitions.projector import start
from services.gateway.definitions.registry import (
    DELETED,
    head_of,
    inline_children,
    schema_faults,
    tenant_of,
    unknown_named,
)
from services.gateway.definitions.store import Store
from services.gateway.edge.body import parse_body, parse_json, read_limited, require_storable
from services.gateway.edge.problems import (
    CONFLICT,
    DEFINITION_DELETED,
    FORBIDDEN,
    INVALID_DEFINITION,
    INVALID_DEFINITION_NAME,
    INVALID_REQUEST,
    NOT_FOUND,
    REQUEST_TOO_LARGE,
    Problem,
)
from services.gateway.lifetime import Runtime, accepting, runtime
from services.gateway.openapi.bodies import json_answer, json_body
from services.gateway.openapi.definitions import (
    DEFINITION_NAME_DOC,
    DEFINITION_PUT_SCHEMA,
    DEFINITION_ROLLBACK_SCHEMA,
    DEFINITION_ROLLED_BACK_SCHEMA,
    DEFINITION_SCHEMA,
    DEFINITION_STORED_SCHEMA,
    DEFINITIONS_LIST_SCHEMA,
)
from services.gateway.openapi.problems import READS, WRITES, problems
from services.gateway.pauses.definitions import pauses_of
from services.gateway.runs.path_route import taken_paths

router = APIRouter()
__all__ = ["router", "start"]  # start: read the registry in at start-up (definitions.projector)
DefinitionName = Annotated[str, Path(json_schema_extra=DEFINITION_NAME_DOC)]
"""The ``{name}`` path parameter of a definition (its pattern documented; a name of
another form is 422 on ``PUT`` and names nothing elsewhere: 404)."""
_NOT_FOUND = {404: "no such definition (or version)"}


def _json(doc: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(doc), status_code=status, media_type="application/json",
                    headers=headers)


def links(name: str, version: int) -> dict[str, str]:
    """Hypermedia links of a definition's version."""
    base = f"/v1/definitions/{quote(name, safe='')}"
    return {"self": f"{base}?version={version}", "latest": base,
            "run": f"/v1/run/{quote(name, safe='')}",
            "runs": f"/v1/workflows?definition={quote(name, safe='')}"}


def _store(hw: Runtime) -> Store:
    return hw.definitions_store()


def _iso(value: datetime) -> str:
    return value.isoformat()


def _body(raw: bytes) -> DefinitionRequest:
    """The body as a ``DefinitionRequest``; a bare spec is its ``workflow``.

    Raises:
        Problem: 422 naming each fault of a malformed body.
    """
    try:
        doc = parse_json(raw, "the body")  # every digit kept: _validate checks the values
    except Problem:
        doc = None  # parse_body names the fault
    if isinstance(doc, dict) and "nodes" in doc and "workflow" not in doc:
        return DefinitionRequest(workflow=doc)
    return parse_body(DefinitionRequest, raw)


async def _validate(request: Request, name: str, body: DefinitionRequest) -> None:
    """Check the body as a submission's spec is checked, and its input schema.

    Raises:
        Problem: 422 naming every fault (spec, input schema, child definitions).
    """
    require_storable({"workflow": body.workflow, "input_schema": body.input_schema})
    faults = schema_faults(body.input_schema) if body.input_schema is not None else []
    try:
        hw = runtime(request)
        inlined = await inline_children(hw.pool, body.workflow, (name,),
                                        max_bytes=hw.settings.max_body_bytes,
                                        me=principal(request))
    except Problem as e:
        faults += e.extra.get("errors", [e.detail])
    else:
        try:
            await asyncio.to_thread(parse_spec, inlined)  # a large spec takes a while
        except SpecError as e:
            faults += [f"workflow: {f}" for f in e.faults]
        faults += taken_paths(request.app.router.routes, body.workflow)
    if faults:
        raise Problem(422, "Invalid definition", "; ".join(faults), errors=faults)


@router.put("/v1/definitions/{name}", status_code=201,
            openapi_extra=json_body(DEFINITION_PUT_SCHEMA),
            responses={201: json_answer("a new version", DEFINITION_STORED_SCHEMA),
                       200: json_answer("the same body as the current version: that "
                                        "version, unchanged", DEFINITION_STORED_SCHEMA),
                       **problems(*WRITES, REQUEST_TOO_LARGE, INVALID_REQUEST,
                                  INVALID_DEFINITION_NAME, INVALID_DEFINITION, CONFLICT,
                                  FORBIDDEN, meanings={
                           403: "the role is not admin, or the definition is shared "
                                "and the token is one tenant's",
                           409: "the name has used every version number, or another "
                                "tenant holds it",
                           422: "an invalid name, spec or input_schema, naming every "
                                "fault"})})
async def put_definition(request: Request, name: DefinitionName) -> Response:
    """Register a version: 201 (a new version), 200 (the same body as the current
    version), 403 (a shared name, one tenant's token), 409 (another tenant's name), 413,
    422 (every fault named), 503."""
    hw = accepting(request)
    try:
        check_name(name)
    except DefinitionRefError as e:
        raise Problem(422, "Invalid definition name", str(e), errors=[f"name: {e}"]) from e
    body = _body(await read_limited(request, hw.settings.max_body_bytes))
    await _validate(request, name, body)
    stored = await _store(hw).put(name, body.workflow, body.input_schema, principal(request))
    doc = {"name": name, "version": stored.version, "digest": stored.digest,
           "created_at": _iso(stored.created_at), "links": links(name, stored.version)}
    return _json(doc, 201 if stored.created else 200,
                 {"Location": links(name, stored.version)["self"]})


@router.api_route("/v1/definitions/", methods=["PUT", "DELETE"], include_in_schema=False)
async def definition_without_name() -> Response:
    """``PUT`` or ``DELETE /v1/definitions/`` (an empty name): 422 naming the missing
    name, rather than a redirect to the list, which takes neither method."""
    raise missing_name("/v1/definitions/{name}")


def missing_name(template: str) -> Problem:
    """The 422 of a path whose ``{name}`` is empty (``template``: the route)."""
    return Problem(422, "Invalid definition name", f"the definition's name is missing "
                   f"from the path: {template}", errors=["name: missing (empty)"])


@router.get("/v1/definitions", responses={
    200: json_answer("the latest version of each definition not deleted, by name",
                     DEFINITIONS_LIST_SCHEMA), **problems(*READS, INVALID_REQUEST)})
async def get_definitions(request: Request,
                          limit: Annotated[int, Query(ge=1, le=500)] = 100,
                          cursor: str | None = None) -> Response:
    """The latest version of each definition that is not deleted and that the principal
    sees (its tenant's and the shared ones), by name, paged by ``cursor`` (the previous
    page's ``next_cursor``); ``paused``: the definition's pause, or null."""
    rows = await runtime(request).pool.fetch(
        "select d.name, d.version, d.digest, d.created_at from definition_heads h"
        " join definitions d on d.name = h.name and d.version = h.version"
        " where not h.deleted and ($1::text is null or h.name > $1)"
        " and ($3::text is null or h.tenant is null or h.tenant = $3)"
        " order by h.name limit $2", cursor, limit + 1, tenant_of(principal(request)))
    paused = await pauses_of(runtime(request).pool, [r["name"] for r in rows[:limit]])
    items = [{"name": r["name"], "version": r["version"], "digest": r["digest"],
              "created_at": _iso(r["created_at"]), "paused": paused.get(r["name"]),
              "links": links(r["name"], r["version"])}
             for r in rows[:limit]]
    return _json({"items": items,
                  "next_cursor": rows[limit - 1]["name"] if len(rows) > limit else None})


@router.get("/v1/definitions/{name}", responses={
    200: json_answer("one version of the definition", DEFINITION_SCHEMA),
    **problems(*READS, NOT_FOUND, DEFINITION_DELETED, INVALID_REQUEST, meanings={
        **_NOT_FOUND, 410: "the definition is deleted (?version=N still reads a version)"})})
async def get_definition(request: Request, name: DefinitionName,
                         version: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
                         ) -> Response:
    """One version (default: the latest) with its spec and input schema, and ``paused``
    (the definition's pause: ``{since, by, reason}``, or null); 404 unknown
    (or another tenant's; naming the closest names the principal sees); 410 deleted,
    unless ``version`` is given."""
    pool = runtime(request).pool
    head = await head_of(pool, name, principal(request))
    if head is None:
        raise await unknown_named(pool, name, principal(request))
    if head["deleted"] and version is None:
        raise Problem(410, DELETED, f"definition {name} was deleted (its last version is "
                      f"{head['version']}); read a version with ?version=N",
                      definition=name, version=head["version"])
    wanted = head["version"] if version is None else version
    latest = await pool.fetchval("select max(version) from definitions where name = $1",
                                 name)
    row = await pool.fetchrow("select spec, input_schema, digest, created_at from definitions"
                              " where name = $1 and version = $2", name, wanted)
    if row is None:
        raise Problem(404, "Not found", f"definition {name} has no version {wanted} (its "
                      f"latest is {head['version']})", definition=name)
    paused = await pauses_of(pool, [name])
    return _json({"name": name, "version": wanted, "current": head["version"],
                  "latest": max(latest or 0, head["version"]), "deleted": head["deleted"],
                  "paused": paused.get(name), "digest": row["digest"],
                  "created_at": _iso(row["created_at"]), "workflow": row["spec"],
                  "input_schema": row["input_schema"], "links": links(name, wanted)})


@router.delete("/v1/definitions/{name}", status_code=204, responses={
    204: {"description": "deleted (or already deleted): no new runs; runs started go on"},
    **problems(*WRITES, NOT_FOUND, FORBIDDEN, meanings={
        **_NOT_FOUND, 403: "the role is not admin, or the definition is shared and the "
                           "token is one tenant's"})})
async def delete_definition(request: Request, name: DefinitionName) -> Response:
    """Delete a definition: 204 (deleting it again too); new runs of it get 410, runs
    already started go on; its versions stay readable (``?version=N``); 404 unknown (or
    another tenant's); 403 a shared one with one tenant's token."""
    hw = accepting(request)
    await _store(hw).delete(name, principal(request))
    return Response(status_code=204)


@router.post("/v1/definitions/{name}/rollback", openapi_extra=json_body(
    DEFINITION_ROLLBACK_SCHEMA, required=False), responses={
    200: json_answer("the version now current (changed: false when it was already)",
                     DEFINITION_ROLLED_BACK_SCHEMA),
    **problems(*WRITES, NOT_FOUND, FORBIDDEN, CONFLICT, INVALID_REQUEST, meanings={
        404: "no such definition or version",
        403: "the role is not admin, or the definition is shared and the token is one "
             "tenant's",
        409: "the definition is deleted, or has no version before the current one"})})
async def rollback_definition(request: Request, name: DefinitionName) -> Response:
    """Make an earlier version current: ``{"to": N}``, or no body for the version
    before the current one. New runs of the name use it; runs already started keep the
    version they recorded. 200 with the version now current; 404 no such name or
    version; 409 deleted, or no earlier version."""
    hw = accepting(request)
    raw = await read_limited(request, hw.settings.max_body_bytes)
    body = parse_body(RollbackRequest, raw) if raw.strip() else RollbackRequest()
    done = await _store(hw).rollback(name, body.to, principal(request))
    return _json({"name": name, "version": done.version, "previous": done.previous,
                  "latest": done.latest, "changed": done.changed,
                  "links": links(name, done.version)})
