"""Accept a submission: validate, claim the id in the projection, produce to Kafka.

The id is claimed (a row with status ``accepted`` and ``seq`` 0) before the record is
produced, so an id that was just answered 202 is never 404, and of concurrent
submissions of one id exactly one claims it. A claim whose record was never produced
(the gateway died in between) is healed by the next submission of the same id and body
while the workflow has not started: it produces the record again, which is harmless if
it had been produced, since the coordinator ignores a submission for a workflow it has.

Cancels and signals are produced to ``control`` for a workflow the projection knows and
that has not ended; a signal only when one of the workflow's waits can take it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg
from aiokafka import AIOKafkaProducer

from headwater import codec
from headwater.core import events as ev
from headwater.core.idempotency import body_hash
from headwater.core.signals import signal_fault
from headwater.core.spec import parse_spec
from headwater.core.state import new_state
from headwater.errors import SpecError
from headwater.topics import Topics
from services.common import faults
from services.common.clock import now_ms
from services.common.kafka import AVRO_HEADERS
from services.gateway.body import require_storable
from services.gateway.models import SignalRequest, SubmitRequest
from services.gateway.problems import DATABASE_UNAVAILABLE, RETRY_AFTER_S, Problem
from services.gateway.stream import TERMINAL_STATUSES

log = logging.getLogger("headwater.gateway")

CLAIMED = "accepted"
"""The status of a workflow row the gateway claimed (``seq`` 0) before the coordinator
accepted the workflow: not a ``WorkflowStatus``, whose first value is ``running``."""
CANCEL_REQUESTED = "cancel_requested"
"""The status a cancel request is answered with (the workflow's own changes later)."""


@dataclass(frozen=True)
class Accepted:
    """Outcome of a submission: ``created`` is False when the id already had this run."""

    workflow_id: str
    created: bool
    status: str


async def submit(pool: asyncpg.Pool, producer: AIOKafkaProducer, topics: Topics,
                 request: SubmitRequest, produce_timeout_s: float) -> Accepted:
    """Validate and submit a workflow.

    Args:
        pool: the projection's pool.
        producer: the Kafka producer.
        topics: the topic names.
        request: the parsed body.
        produce_timeout_s: longest wait for Kafka's acknowledgement, seconds.

    Returns:
        The outcome: created (202) or the same run again (200).

    Raises:
        Problem: 422 for a value PostgreSQL or Kafka cannot hold or an invalid spec
            (every fault in ``errors``), 409 when the id is taken by a different body,
            503 when Kafka does not acknowledge within ``produce_timeout_s``.
    """
    if request.definition is not None:
        raise Problem(422, "Unsupported field", "named definitions are not available in "
                      "this version; send the spec in 'workflow'", errors=["definition"])
    spec = request.workflow
    if spec is None:
        raise Problem(422, "Invalid request", "'workflow' (the spec) is required",
                      errors=["workflow: required"])
    # A large spec takes a while to check: off the event loop, so /health stays prompt.
    digest = await asyncio.to_thread(_validate, request, spec)
    workflow_id = request.id or f"wf-{uuid.uuid4().hex}"
    at_ms = now_ms()
    now = datetime.fromtimestamp(at_ms / 1000, tz=UTC)
    claimed = await pool.fetchval(
        "insert into workflows (workflow_id, name, tenant, status, seq, spec, input, body_hash,"
        " created_at, updated_at) values ($1, $2, $3, $4, 0, $5, $6, $7, $8, $8)"
        " on conflict (workflow_id) do nothing returning 1",
        workflow_id, str(spec.get("name", "")), request.tenant, CLAIMED, spec, request.input,
        digest, now,
    )
    record = ev.WorkflowSubmitted(workflow_id, spec, request.input, at_ms, request.tenant)
    if not claimed:
        return await _existing(pool, producer, topics, record, digest, produce_timeout_s)
    try:
        await produce(producer, topics.submissions, record, produce_timeout_s, "submission")
    except Exception:
        await _release(pool, workflow_id)
        raise
    faults.point("gateway.after_produce")
    return Accepted(workflow_id, True, CLAIMED)


def _validate(request: SubmitRequest, spec: dict[str, Any]) -> str:
    """Check the values and the spec; return the body hash. Runs in a worker thread."""
    require_storable({"workflow": spec, "input": request.input, "tenant": request.tenant})
    try:
        parse_spec(spec)
    except SpecError as e:
        raise Problem(422, "Invalid workflow spec", str(e), errors=e.faults) from e
    return body_hash(spec, request.input, request.tenant)


async def _release(pool: asyncpg.Pool, workflow_id: str) -> None:
    """Give a claimed id back after its record could not be produced."""
    try:
        await pool.execute("delete from workflows where workflow_id = $1 and seq = 0",
                           workflow_id)
    except DATABASE_UNAVAILABLE as e:
        # The claim stays; the next submission of the same id and body produces again.
        log.warning("could not release the claim on %s: %r", workflow_id, e)


async def _existing(pool: asyncpg.Pool, producer: AIOKafkaProducer, topics: Topics,
                    record: ev.WorkflowSubmitted, digest: str,
                    produce_timeout_s: float) -> Accepted:
    workflow_id = record.workflow_id
    row = await pool.fetchrow(
        "select status, seq, body_hash, spec, input, tenant from workflows"
        " where workflow_id = $1", workflow_id)
    if row is None:  # claimed and released again (Kafka failed) in between
        raise Problem(409, "Conflict", f"workflow {workflow_id} is being submitted; retry",
                      headers={"Retry-After": RETRY_AFTER_S})
    existing = row["body_hash"] or body_hash(row["spec"], row["input"], row["tenant"])
    if existing != digest:
        raise Problem(409, "Conflict", f"workflow id {workflow_id} is already used by a "
                      "different submission", workflow_id=workflow_id)
    if row["status"] == CLAIMED and row["seq"] == 0:
        # Not started yet: perhaps its record was never produced (the gateway that claimed
        # the id died first). Producing it again is harmless if it was.
        await produce(producer, topics.submissions, record, produce_timeout_s, "submission")
    return Accepted(workflow_id, False, row["status"])


async def produce(producer: AIOKafkaProducer, topic: str, record: Any, timeout_s: float,
                  what: str) -> None:
    """Produce one record keyed by its workflow id and wait for Kafka's acknowledgement.

    Args:
        producer: the Kafka producer.
        topic: where to.
        record: a ``headwater.events`` record with a ``workflow_id``.
        timeout_s: longest wait, seconds.
        what: what the record is, for the problem's detail (``"submission"``).

    Raises:
        Problem: 503 with ``Retry-After`` when Kafka fails or does not acknowledge in time.
    """
    workflow_id: str = record.workflow_id
    retry = {"Retry-After": RETRY_AFTER_S}
    try:
        await asyncio.wait_for(
            producer.send_and_wait(topic, codec.encode(record), key=workflow_id.encode(),
                                   headers=AVRO_HEADERS), timeout_s)
    except TimeoutError as e:
        raise Problem(503, "Kafka unavailable", f"Kafka did not acknowledge the {what} within "
                      f"{timeout_s:g} s; it may still be stored, and retrying it is safe",
                      headers=retry, workflow_id=workflow_id) from e
    except Exception as e:
        raise Problem(503, "Kafka unavailable", f"the {what} was not stored: {e}",
                      headers=retry, workflow_id=workflow_id) from e


async def request_cancel(pool: asyncpg.Pool, producer: AIOKafkaProducer, topics: Topics,
                         workflow_id: str, reason: str, produce_timeout_s: float) -> None:
    """Produce a ``CancelRequested`` for a workflow that is not terminal.

    Args:
        pool: the projection's pool.
        producer: the Kafka producer.
        topics: the topic names.
        workflow_id: the workflow to cancel.
        reason: recorded in the history.
        produce_timeout_s: longest wait for Kafka's acknowledgement, seconds.

    Raises:
        Problem: 404 unknown id, 409 already terminal, 503 Kafka unavailable or slow.
    """
    status = await pool.fetchval("select status from workflows where workflow_id = $1",
                                 workflow_id)
    if status is None:
        raise Problem(404, "Not found", f"no workflow {workflow_id}")
    if status in TERMINAL_STATUSES:
        raise Problem(409, "Conflict", f"workflow {workflow_id} is already {status}",
                      status_now=status)
    record = ev.CancelRequested(workflow_id, now_ms(), reason)
    await produce(producer, topics.control, record, produce_timeout_s, "cancel")


def signal_record(workflow_id: str, name: str, request: SignalRequest) -> ev.SignalSent:
    """The ``SignalSent`` of a signal request: without a ``signal_id`` it gets a random
    one (UUID4, hex).

    Args:
        workflow_id: the workflow to signal.
        name: the signal's name (a wait node's ``signal:``).
        request: the parsed body.
    """
    return ev.SignalSent(workflow_id, name, now_ms(), request.index,
                         request.signal_id or uuid.uuid4().hex, request.fields)


async def send_signal(pool: asyncpg.Pool, producer: AIOKafkaProducer, topics: Topics,
                      signal: ev.SignalSent, produce_timeout_s: float) -> None:
    """Produce a ``SignalSent`` that a wait of a workflow that has not ended can take.

    The workflow's spec and status are read from the projection, as ``GET`` reads them,
    and the signal is checked against them (``signals.signal_fault``), so that a
    signal no wait can take is refused here rather than dead-lettered by the
    coordinator. A signal for a wait not started yet is kept until it starts. A signal
    whose ``signal_id`` the workflow recorded is answered as accepted even once the
    workflow has ended (a sender retrying after a lost answer), and is not sent again.

    Args:
        pool: the projection's pool.
        producer: the Kafka producer.
        topics: the topic names.
        signal: the signal (``signal_record``).
        produce_timeout_s: longest wait for Kafka's acknowledgement, seconds.

    Raises:
        Problem: 404 unknown id, 409 the workflow has ended (and did not record this
            signal), 400 no wait takes the
            signal (the fault in ``detail`` and ``errors``), 503 Kafka unavailable or
            slow.
    """
    workflow_id = signal.workflow_id
    async with pool.acquire() as conn:
        row = await conn.fetchrow("select status, spec, input, tenant from workflows"
                                  " where workflow_id = $1", workflow_id)
        if row is None:
            raise Problem(404, "Not found", f"no workflow {workflow_id}")
        if row["status"] in TERMINAL_STATUSES:
            if await conn.fetchval("select 1 from signals where workflow_id = $1 and"
                                   " signal_id = $2", workflow_id, signal.signal_id):
                return  # sent again after a lost answer: it was recorded; nothing to do
            raise Problem(409, "Conflict", f"workflow {workflow_id} has already ended: "
                          f"{row['status']}", status_now=row["status"])
        totals = {r["node"]: r["total"] for r in await conn.fetch(
            "select node, total from nodes where workflow_id = $1 and total is not null",
            workflow_id)}
    # A large spec takes a while to parse: off the event loop, as for a submission.
    fault = await asyncio.to_thread(_signal_fault, row, totals, signal)
    if fault is not None:
        raise Problem(400, "Invalid signal", fault, errors=[fault], signal=signal.name)
    await produce(producer, topics.control, signal, produce_timeout_s, "signal")


def _signal_fault(row: Any, totals: dict[str, int], signal: ev.SignalSent) -> str | None:
    """Why no wait of the workflow in ``row`` (a ``workflows`` row) can take ``signal``,
    or None. Its state is rebuilt from the spec, with the item counts of its expanded
    nodes (``totals``) so that an index can be checked. Runs in a worker thread."""
    state = new_state(ev.WorkflowAccepted(signal.workflow_id, signal.at_ms, row["spec"],
                                          row["input"], row["tenant"]))
    if state.spec_error:  # cannot run at all: it fails as soon as it is accepted
        return f"the workflow's spec is invalid: {state.spec_error}"
    for node, total in totals.items():
        if node in state.nodes:
            state.nodes[node].total = total
    return signal_fault(state, signal)
