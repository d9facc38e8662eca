"""``GET /v1/workflows/{id}/blobs/{digest}``: the JSON of a value a run holds by
reference (``headwater/blobs.py``), streamed a stored chunk at a time.

A run's document shows each reference with its ``href`` to this path (``hrefs``). The
blob is served only to whoever may read the run (its tenant, as ``GET
/v1/workflows/{id}`` is scoped: another tenant's run is 404), and only when a run of
that tenant refers to the blob (``blob_refs``): a digest is a content address, not a
permission, so knowing one reads nothing another tenant holds. Anything else is 404,
the same answer whether the blob is stored or not; a digest of the wrong form is 400.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Path, Request
from starlette.responses import Response, StreamingResponse

from headwater import blobs
from services.gateway.auth.scope import not_found, principal
from services.gateway.edge.problems import BAD_DIGEST, NOT_FOUND, Problem
from services.gateway.lifetime import runtime
from services.gateway.openapi.bodies import WORKFLOW_ID_DOC
from services.gateway.openapi.problems import READS, problems

__all__ = ["REFERRED", "router"]

router = APIRouter()
WorkflowId = Annotated[str, Path(json_schema_extra=WORKFLOW_ID_DOC)]
Digest = Annotated[str, Path(
    description="the blob's content address, as a reference's $blob names it",
    json_schema_extra={"pattern": "^sha256:[0-9a-f]{64}$"})]
REFERRED = (
    "select b.size from blobs b where b.digest = $1 and exists (select 1 from blob_refs r"
    " join workflows w on w.workflow_id = r.workflow_id where r.digest = $1"
    " and w.tenant is not distinct from $2)")
"""The size of blob ``$1`` when a run of tenant ``$2`` refers to it, else no row."""


@router.get("/v1/workflows/{workflow_id}/blobs/{digest}",
            responses={200: {"description": "the value's JSON, streamed (Content-Length: "
                                            "its size, as the reference's bytes)",
                             "content": {"application/json": {"schema": {
                                 "description": "any JSON value (the one the reference "
                                                "stands for)"}}}},
                       **problems(*READS, BAD_DIGEST, NOT_FOUND, meanings={
                           404: "no such workflow, or no run of its tenant refers to "
                                "the blob"})})
async def get_blob(request: Request, workflow_id: WorkflowId, digest: Digest) -> Response:
    """The JSON a reference ``{"$blob": digest, "bytes": N}`` names, as the run's
    documents link it (``href``); it may hold references itself (its own large parts),
    fetched the same way. 400 a malformed digest; 404 unknown run (or another
    tenant's), or a blob no run of the run's tenant refers to."""
    hw = runtime(request)
    if not blobs.valid_digest(digest):
        raise Problem(400, "Bad digest", f"{digest!r} is not a blob's digest: sha256: and "
                      "64 lowercase hex digits")
    tenant = await hw.pool.fetchrow("select tenant from workflows where workflow_id = $1",
                                    workflow_id)
    if tenant is None or not principal(request).sees(tenant["tenant"]):
        raise not_found(workflow_id)
    size = await hw.pool.fetchval(REFERRED, digest, tenant["tenant"])
    if size is None or hw.claims is None:
        raise _no_blob(workflow_id, digest)
    chunks = (await hw.claims.store()).chunks(digest)
    try:
        first = await anext(chunks)
    except KeyError:  # collected since
        raise _no_blob(workflow_id, digest) from None
    except StopAsyncIteration:
        first = b""
    return StreamingResponse(_stream(first, chunks), media_type="application/json",
                             headers={"Content-Length": str(size)})


async def _stream(first: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    yield first
    async for chunk in rest:
        yield chunk


def _no_blob(workflow_id: str, digest: str) -> Problem:
    return Problem(404, "Not found", f"no blob {digest} in workflow {workflow_id}")
