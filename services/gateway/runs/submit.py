"""Accept a submission: validate, claim the id in the projection, produce to Kafka.

The id is claimed (a row with status ``accepted`` and ``seq`` 0) before the record is
produced, so an id that was just answered 202 is never 404, and of concurrent
submissions of one id exactly one claims it. A claim whose record was never produced
(the gateway died in between, or Kafka did not acknowledge it: it may be stored all the
same) is healed by the next submission of the same id and body while the workflow has
not started: it produces the record again, which is harmless if it had been produced,
since the coordinator ignores a submission for a workflow it has. Only a record Kafka
refused (413) gives the id back. Records reach Kafka through ``outlet.Outlet``; cancels
and signals are in ``control.send``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg

from headwater.core import events as ev
from headwater.core.idempotency import body_hash
from headwater.core.spec import WorkflowSpec, parse_spec
from headwater.core.spec.input_refs import input_faults
from headwater.errors import SpecError
from services.common import faults
from services.common.auth.tokens import OPEN, Principal
from services.common.clock import now_ms
from services.gateway.blobs import payloads
from services.gateway.definitions.registry import (
    MAX_INPUT_ERRORS,
    check_input,
    has_children,
    inline_children,
    resolve,
)
from services.gateway.edge.body import require_storable
from services.gateway.edge.cpu import inline_for, run_check
from services.gateway.edge.problems import Problem
from services.gateway.outlet import Outlet
from services.gateway.pauses.definitions import paused_by
from services.gateway.queues.admission import admit, needed_queues
from services.gateway.queues.marks import submission_warnings
from services.gateway.runs.callers import caller_of, link_columns
from services.gateway.runs.claims import (
    CLAIM,
    CLAIMED,
    Accepted,
    Taken,
    existing,
    lookup,
    release,
    same_run_of,
)
from services.gateway.runs.models import SubmitRequest
from services.gateway.runs.stream import TERMINAL_STATUSES

log = logging.getLogger("headwater.gateway")

def viewer(me: Principal, tenant: str | None) -> Principal:
    """Whose definitions a submission by ``me`` for ``tenant`` may name: ``me``'s, or,
    for a principal of every tenant submitting for one (a worker's ``ctx.call``, an
    operator), that tenant's: a tenant's run never resolves another tenant's
    definition, whoever submits it. Auth off (``auth.OPEN``), everything."""
    if me is OPEN or not me.every_tenant or tenant is None:
        return me
    return Principal(tenant, me.role, me.subject)


async def submit(pool: asyncpg.Pool, out: Outlet, request: SubmitRequest,
                 me: Principal = OPEN, body_bytes: int | None = None) -> Accepted:
    """Validate and submit a workflow: a spec (``workflow``) or a registered definition
    (``definition``, ``"name"`` or ``"name@3"``).

    A definition is resolved to its version here, its input checked against its
    ``input_schema``, and the definitions its ``kind: workflow`` nodes name (in an inline
    spec too) are inlined (``definitions.registry.inline_children``): the record carries the full
    spec and the definition's name and version. The id's claim holds the hash of the
    request as given (``request_hash``: a retry of the same id and body is the same run,
    whatever the definitions and workers are by then) and the spec it resolved to (what
    a healed claim produces again).

    Args:
        pool: the projection's pool.
        out: where the record goes.
        request: the parsed body, its ``tenant`` the principal's (``auth.scope.submission``).
        me: who submits (``auth.scope.principal``): the definitions it may name.
        body_bytes: the size of the request's body, bytes, when the request is one
            (None: not known): a small body's checks run on the event loop
            (``edge.cpu.inline_for``), a large one's in a worker thread.

    Returns:
        The outcome: created (202) or the same run again (200).

    Raises:
        Problem: 422 for a value PostgreSQL or Kafka cannot hold, an invalid spec or
            reference, or an input that does not match the definition's input schema
            (every fault in ``errors``), 404 an unknown definition or version, 410 a
            deleted definition, 409 when the id is taken by a different body, 503 when
            Kafka does not acknowledge within ``out.timeout_s``.
    """
    return await _claim(pool, out, request, _given(request, body_bytes),
                        viewer(me, request.tenant))


async def submit_rerun(pool: asyncpg.Pool, out: Outlet, request: SubmitRequest,
                       pinned: tuple[str | None, int | None], rerun: dict[str, Any],
                       new_input_of: Principal | None = None) -> Accepted:
    """Submit a rerun (``services/gateway/reruns``): ``request.workflow`` is the source's
    spec as it ran (inlined already), ``pinned`` the definition and version it was
    resolved from, ``rerun`` the document of what the new run reuses. The id's claim
    hashes the request as given, ``{"rerun": {"of", "reset"}}`` with the input and tenant,
    and keeps the document, so a retry of the same id is the same run and a healed claim
    produces the same record.

    A new input (``new_input_of``: who gives it) is checked as a submission's is: against
    the pinned definition's ``input_schema`` (when the definition's version is still
    there), or against an inline spec's ``${input...}`` references.

    Raises:
        Problem: as ``submit`` does (400/429 of admission, 409, 413, 422, 503).
    """
    assert request.workflow is not None
    given = _Given({"rerun": {"of": rerun["of"], "reset": rerun.get("reset")}})
    claim = _Claim(request.workflow, *pinned)
    if new_input_of is not None:
        await _check_new_input(pool, claim, request.input, new_input_of)
    return await _claim(pool, out, request, given, new_input_of or OPEN, rerun=(claim, rerun))


async def _check_new_input(pool: asyncpg.Pool, claim: _Claim, workflow_input: Any,
                           me: Principal) -> None:
    """Check a rerun's new input as a submission's (``submit_rerun``)."""
    if claim.definition is None:
        spec = await asyncio.to_thread(_check_spec, claim.spec)
        await asyncio.to_thread(_check_input_refs, spec, workflow_input)
        return
    try:
        resolved = await resolve(pool, f"{claim.definition}@{claim.version}", me)
    except Problem as e:
        if e.status in (404, 410):
            return  # the version is gone: the run's pinned spec runs all the same
        raise
    await asyncio.to_thread(check_input, resolved, workflow_input)


@dataclass(frozen=True)
class _Given:
    """The request as given: what its hash covers besides its input and tenant
    (``doc``), and whether its body is small enough for its checks to run on the event
    loop (``inline``: ``edge.cpu.inline_for``)."""

    doc: dict[str, Any]
    inline: bool = False


def _given(request: SubmitRequest, body_bytes: int | None = None) -> _Given:
    """What the request's hash covers besides its input and tenant: the spec as given
    or ``{"definition": ref}``, with the request's ``priority`` set in it if given;
    ``body_bytes``: the size of its body (``submit``).

    Raises:
        Problem: 422 for neither or both of ``workflow`` and ``definition``.
    """
    if request.definition is not None:
        if request.workflow is not None:
            raise Problem(422, "Invalid request", "give either 'workflow' (a spec) or "
                          "'definition' (a registered definition), not both",
                          errors=["definition: not with workflow"])
        return _Given(request.prioritized({"definition": request.definition}),
                      inline_for(body_bytes))
    if request.workflow is None:
        raise Problem(422, "Invalid request", "'workflow' (the spec) or 'definition' (a "
                      "registered definition's name) is required",
                      errors=["workflow: required (or definition)"])
    return _Given(request.prioritized(request.workflow), inline_for(body_bytes))


@dataclass(frozen=True)
class _Claim:
    """What a claim stores: the full spec, the definition's name and version (None: an
    inline spec)."""

    spec: dict[str, Any]
    definition: str | None = None
    version: int | None = None


async def _resolved(pool: asyncpg.Pool, request: SubmitRequest,
                    given: _Given, me: Principal = OPEN) -> _Claim:
    """The spec ``request`` runs (``given``: its ``_given``): its definition resolved
    (its priority the request's, if given) and its input checked against its schema,
    the definitions its children name inlined, checked. Only definitions ``me`` sees
    are resolved (its tenant's and the shared ones): another tenant's is unknown.

    The checks of a spec that is the request's own (no child inlined) run on the event
    loop when ``given.inline`` (a small body: ``edge.cpu.inline_for``); those of a spec or
    schema read from the registry, whose size the body does not bound, in a worker
    thread.

    Raises:
        Problem: 422, 404 or 410 (``submit``).
    """
    ref = request.definition
    if ref is None:  # ``given`` is the spec
        own = given.inline and not has_children(given.doc)  # all of it is the body's
        full = await inline_children(pool, given.doc, me=me)
        spec = await run_check(own, _check_spec, full)
        await run_check(own, _check_input_refs, spec, request.input)
        return _Claim(full)
    resolved = await resolve(pool, ref, me)
    await asyncio.to_thread(check_input, resolved, request.input)
    full = await inline_children(pool, request.prioritized(resolved.spec), (resolved.name,), me=me)
    await asyncio.to_thread(_check_spec, full)
    return _Claim(full, resolved.name, resolved.version)


async def _claim(pool: asyncpg.Pool, out: Outlet, request: SubmitRequest,
                 given: _Given, me: Principal = OPEN,
                 rerun: tuple[_Claim, dict[str, Any]] | None = None) -> Accepted:
    """Claim the id with the resolved spec, then produce the submission.

    A retry of an id already claimed is answered from its row (the same run, or 409)
    before the request is resolved or admitted: its run was admitted once, and refusing
    the retry (400, 429; 404 or 410 for a definition changed or deleted since) would
    leave its sender unsure whether it runs. Large inputs: ``payloads.input_of``.
    A small body's checks run on the event loop (``given.inline``, ``edge.cpu``)."""
    # A large spec takes a while to check: off the event loop, so /health stays prompt.
    digest = await run_check(given.inline, _storable, request, given.doc)
    if request.id is not None:
        taken = await lookup(pool, request.id, digest)  # a claim or a retired run
        if taken.held:
            return await _answered(out, pool, taken, request.id, digest)
    caller = caller_of(request.parent)  # a ctx.call's link; 422 for a malformed one
    claim = await _resolved(pool, request, given, me) if rerun is None else rerun[0]
    spec = await admit(claim.spec, request.queue_anyway)  # placed queues; 400/429 (admission)
    workflow_id = request.id or f"wf-{uuid.uuid4().hex}"
    workflow_input = await payloads.input_of(out.claims, pool, request.input,
                                             payloads.Owner(workflow_id, request.tenant, me),
                                             inline=given.inline)
    await payloads.adopt_reused(out.claims, pool, workflow_id, rerun[1] if rerun else None)
    at_ms = now_ms()
    now = datetime.fromtimestamp(at_ms / 1000, tz=UTC)
    values = (workflow_id, str(spec.get("name", "")), request.tenant, CLAIMED, spec,
              workflow_input, digest, now)
    # body_hash too holds the request's hash until the projector sets that of the body
    # accepted (what a gateway of an older version compares).
    document = rerun[1] if rerun is not None else None
    claimed = await pool.fetchval(CLAIM, *values, claim.definition, claim.version, document,
                                  *link_columns(caller))
    if not claimed:  # claimed meanwhile by a concurrent submission of the same id
        return await _answered(out, pool, await lookup(pool, workflow_id, digest),
                               workflow_id, digest)  # or retired meanwhile
    record = ev.WorkflowSubmitted(workflow_id, spec, workflow_input, at_ms, request.tenant,
                                  definition=claim.definition,
                                  definition_version=claim.version, rerun=document,
                                  parent=caller,
                                  paused_by=await paused_by(pool, claim.definition))
    try:
        await out.submission(record)
    except Problem as e:
        # 413: Kafka refused the record, so nothing was stored and the id is free again.
        # Otherwise (503) it may have been stored: the claim stays, as its run may be
        # starting, and a retry of the same id and body produces it again (harmless).
        if e.status == 413:
            await release(pool, workflow_id)
        raise
    faults.point("gateway.after_produce")
    return _warned(Accepted(workflow_id, True, CLAIMED), spec)


async def _answered(out: Outlet, pool: asyncpg.Pool, taken: Taken, workflow_id: str,
                    digest: str) -> Accepted:
    """The answer to a submission (its request's hash ``digest``) of an id that ``taken``
    says is held (``claims.lookup``): the retired run's, or the claim's (the same run, its
    claim produced again while it has not started; or 409: ``claims.existing``)."""
    if taken.answer is not None:
        return taken.answer
    row = taken.row
    same = row is not None and await same_run_of(row, digest)
    return _warned(await existing(out, row, workflow_id, same, pool),
                   row["spec"] if row is not None else None)


def _warned(accepted: Accepted, spec: Any) -> Accepted:
    """``accepted`` with the warnings of the queues its spec (placed) needs that have
    no live worker now, unless the run has ended (``queues.marks``)."""
    if accepted.status in TERMINAL_STATUSES or not isinstance(spec, dict):
        return accepted
    found = submission_warnings(needed_queues(spec)).get("warnings", [])
    return dataclasses.replace(accepted, warnings=tuple(found)) if found else accepted


def _storable(request: SubmitRequest, hashed: Any) -> str:
    """Check the values; return the hash of the request as given (``hashed``: the spec,
    ``{"definition": ref}`` or a rerun's ``{"rerun": ...}``). Runs in a worker thread
    for a large body (``edge.cpu``).

    It hashes the input as sent, not the form with references the claim and record
    hold: a retry is the same run whatever ``HEADWATER_BLOB_THRESHOLD_BYTES`` was at
    each try, compared with what its client sent, all it knows."""
    given = ({"workflow": hashed} if request.definition is None
             else {"definition": request.definition})
    require_storable({**given, "input": request.input, "tenant": request.tenant})
    return body_hash(hashed, request.input, request.tenant)


def _check_spec(spec: dict[str, Any]) -> WorkflowSpec:
    """Check the (resolved) spec; return it parsed. Runs in a worker thread unless the
    spec is a small body's own (``_resolved``)."""
    payloads.refuse_in_spec(spec)
    try:
        return parse_spec(spec)
    except SpecError as e:
        raise Problem(422, "Invalid workflow spec", str(e), errors=e.faults) from e


def _check_input_refs(spec: WorkflowSpec, workflow_input: Any) -> None:
    """Refuse an inline spec whose ``${input...}`` references the input cannot resolve
    (``core.spec.input_refs``; a definition's input is checked by its ``input_schema``).
    Runs where ``_check_spec`` does.

    Raises:
        Problem: 422 naming each reference (at most ``MAX_INPUT_ERRORS``) and what the
            input has there.
    """
    faults = input_faults(spec, workflow_input)
    if faults:
        more = len(faults) - MAX_INPUT_ERRORS
        listed = faults[:MAX_INPUT_ERRORS] + ([f"and {more} more"] if more > 0 else [])
        raise Problem(422, "Input lacks what the spec references", "; ".join(listed),
                      errors=listed)
