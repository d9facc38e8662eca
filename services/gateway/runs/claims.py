"""A claimed id: how a submission of an id already taken is answered.

The gateway claims an id with a ``workflows`` row (status ``accepted``, ``seq`` 0) before
it produces the submission (``submit``). A submission of an id taken already is the
same run when its request is the one the row keeps (``request_hash``; ``body_hash`` for
a run submitted straight on Kafka), answered from the row, and its claim produced again
while the run has not started; otherwise 409. An id whose rows projection retention
deleted stays taken (``retired_ids``): the same request is that run, another 409, and a
claim never takes it again (``UNRETIRED``), since the coordinator keeps the id too.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Protocol

import asyncpg

from headwater.core import events as ev
from headwater.core.idempotency import body_hash
from services.common.clock import now_ms
from services.gateway.edge.problems import DATABASE_UNAVAILABLE, RETRY_AFTER_S, Problem
from services.gateway.pauses.definitions import paused_by

log = logging.getLogger("headwater.gateway")

CLAIMED = "accepted"
"""The status of a workflow row the gateway claimed (``seq`` 0) before the coordinator
accepted the workflow: not a ``WorkflowStatus``, whose first value is ``running``."""
CANCEL_REQUESTED = "cancel_requested"
"""The status a cancel request is answered with (the workflow's own changes later)."""


@dataclass(frozen=True)
class Accepted:
    """Outcome of a submission: ``created`` is False when the id already had this run;
    ``warnings``: the queues it needs that have no live worker now
    (``queues.marks.submission_warnings``)."""

    workflow_id: str
    created: bool
    status: str
    warnings: tuple[str, ...] = ()


class Submits(Protocol):
    """Where a claim's submission is produced again (``outlet.Outlet``)."""

    async def submission(self, record: ev.WorkflowSubmitted) -> None: ...


CLAIM_COLUMNS = ("status", "seq", "body_hash", "request_hash", "spec", "input", "tenant",
                 "definition", "definition_version", "rerun", "parent_id", "parent_node",
                 "parent_index", "parent_attempt")
"""The columns of a claim's row that answer a submission of its id (``existing``)."""
LOOKUP = (
    "select " + ", ".join(f"w.{c}" for c in CLAIM_COLUMNS) + ", r.status as retired_status,"
    " r.request_hash as retired_request_hash, r.body_hash as retired_body_hash"
    " from (select $1::text as workflow_id) k"
    " left join workflows w on w.workflow_id = k.workflow_id"
    " left join retired_ids r on r.workflow_id = k.workflow_id")
"""The claim's row of id ``$1`` and its ``retired_ids`` row, in one round trip: always
one row, ``status`` null when no claim holds the id, ``retired_status`` null when it
was never retired."""


@dataclass(frozen=True)
class Taken:
    """What holds an id a submission names (``lookup``): ``row``, the claim's row (its
    ``CLAIM_COLUMNS``), or ``answer``, that of a retired id's run; neither: it is free."""

    row: Any = None
    answer: Accepted | None = None

    @property
    def held(self) -> bool:
        """Whether a claim or a retired run holds the id."""
        return self.row is not None or self.answer is not None


FREE = Taken()
"""An id no claim holds and no run retired."""


async def lookup(pool: asyncpg.Pool, workflow_id: str, digest: str) -> Taken:
    """Whether ``workflow_id`` is taken, and by what: a claim (its row, which wins: a
    claim never takes a retired id, ``UNRETIRED``), or a run whose projection rows
    retention deleted (``retired_ids``): that run, not created again, when the request
    (its hash ``digest``) is its own. One query.

    Raises:
        Problem: 409, the id was retired from another body's run.
    """
    row = await pool.fetchrow(LOOKUP, workflow_id)
    if row is None:
        return FREE
    if row["status"] is not None:
        return Taken(row=row)
    if row.get("retired_status") is None:
        return FREE
    return Taken(answer=_retired(workflow_id, digest, row["retired_status"],
                                 row["retired_request_hash"], row["retired_body_hash"]))


UNRETIRED = "where not exists (select 1 from retired_ids where workflow_id = $1)"
"""A claim never takes the id of a run whose rows retention deleted (``retired_ids``)."""
CLAIM = (
    "insert into workflows (workflow_id, name, tenant, status, seq, spec, input,"
    " body_hash, request_hash, created_at, updated_at, definition, definition_version,"
    " rerun, parent_id, parent_node, parent_index, parent_attempt)"
    " select $1, $2, $3, $4, 0, $5, $6, $7, $7, $8, $8, $9, $10, $11, $12, $13, $14, $15"
    f" {UNRETIRED} on conflict (workflow_id) do nothing returning 1")
"""Claim an id: its row with the request's hash (``body_hash`` too, until the projector
sets that of the body accepted), the spec it resolved to, its definition, a rerun's
document and a ``ctx.call``'s link (``callers.link_columns``); 1, or None when the id
is taken."""


def _retired(workflow_id: str, digest: str, status: str, request_hash: str | None,
             hashed_body: str | None) -> Accepted:
    """The answer to a submission of a retired id (its ``retired_ids`` row's ``status``
    and hashes): the same run when ``digest`` is one of its hashes, else 409."""
    if digest in (request_hash, hashed_body):
        return Accepted(workflow_id, False, status)
    raise Problem(409, "Conflict", f"workflow id {workflow_id} was used by a different "
                  "submission (a run that ended and whose details retention has deleted)",
                  workflow_id=workflow_id)


def same_run(row: Any, digest: str) -> bool:
    """Whether the request whose hash as given is ``digest`` names the run of ``row``.

    The gateway's claim keeps the request's hash (``request_hash``), so a request by name,
    or one whose nodes admission placed, is the same run whatever the definitions and
    workers are by now. A row without one (a run submitted straight on Kafka, or
    claimed by a gateway of an older version; the projector clears it when the body
    accepted is not the claim's) is compared by the hash of the body that runs
    (``same_run_of`` hashes it in a worker thread).
    """
    kept = _kept_hash(row)
    existing = kept if kept is not None else body_hash(row["spec"], row["input"], row["tenant"])
    return bool(existing == digest)


def _kept_hash(row: Any) -> str | None:
    """The hash ``same_run`` compares that ``row`` keeps (its request's, else its body's),
    or None when the body's must be computed."""
    claimed: str | None = row.get("request_hash")
    if claimed is not None:
        return claimed
    return row["body_hash"] or None


async def same_run_of(row: Any, digest: str) -> bool:
    """``same_run`` of ``row``: on the event loop when it is a comparison of hashes the
    row keeps, in a worker thread when the hash of the row's body must be computed (its
    spec and input may be large, and the event loop answers /health meanwhile)."""
    if _kept_hash(row) is not None:
        return same_run(row, digest)
    return await asyncio.to_thread(same_run, row, digest)


async def existing(out: Submits, row: Any, workflow_id: str, same_run: bool,
                   pool: Any = None) -> Accepted:
    """The answer to a submission of an id already claimed (``row``, its claim's row,
    ``lookup``; ``same_run``: ``same_run`` of it): the same run (its claim produced again while the
    workflow has not started: paused when its definition is, as ``pool`` says), or 409."""
    if row is None:  # claimed and released again (Kafka failed) in between
        raise Problem(409, "Conflict", f"workflow {workflow_id} is being submitted; retry",
                      headers={"Retry-After": RETRY_AFTER_S})
    if not same_run:
        raise Problem(409, "Conflict", f"workflow id {workflow_id} is already used by a "
                      "different submission", workflow_id=workflow_id)
    if row["status"] == CLAIMED and row["seq"] == 0:
        # Not started yet: perhaps its record was never produced (the gateway that claimed
        # the id died first). Producing it again, from the claim (the spec and definition
        # version it resolved to), is harmless if it was.
        record = ev.WorkflowSubmitted(workflow_id, row["spec"], row["input"], now_ms(),
                                      row["tenant"], definition=row.get("definition"),
                                      definition_version=row.get("definition_version"),
                                      rerun=row.get("rerun"), parent=_caller(row),
                                      paused_by=await paused_by(pool, row.get("definition"))
                                      if pool is not None else None)
        await out.submission(record)
    return Accepted(workflow_id, False, row["status"])


RELEASE = (
    "with gone as (delete from workflows where workflow_id = $1 and seq = 0 returning 1)"
    " delete from blob_refs where workflow_id = $1 and exists (select 1 from gone)")
"""Delete claim ``$1`` (a row no accepted record updated) and, if it was, its blob_refs."""


async def release(pool: asyncpg.Pool, workflow_id: str) -> None:
    """Give a claimed id back after its record could not be produced, with the blobs its
    input stored noted as the id's (``blob_refs``): left, they would be read through the
    run of whoever claims the id next, another tenant maybe, and never collected."""
    try:
        await pool.execute(RELEASE, workflow_id)
    except DATABASE_UNAVAILABLE as e:
        # The claim stays; the next submission of the same id and body produces again.
        log.warning("could not release the claim on %s: %r", workflow_id, e)


def _caller(row: Any) -> dict[str, Any] | None:
    """The ``ctx.call`` link a claim holds (its ``parent_*`` columns, written with the
    claim: ``submit``), for the submission produced again from it; None without one."""
    if not row.get("parent_id"):
        return None
    return {"workflow_id": row["parent_id"], "node": row["parent_node"],
            "index": row["parent_index"], "attempt": row["parent_attempt"]}
