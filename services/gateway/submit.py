"""Accept a submission: validate, claim the id in the projection, produce to Kafka.

The id is claimed (a row with status ``accepted`` and ``seq`` 0) before the record is
produced, so an id that was just answered 202 is never 404, and concurrent submissions
of one id produce one record.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg
import orjson
from aiokafka import AIOKafkaProducer

from headwater import codec
from headwater import events as ev
from headwater.errors import SpecError
from headwater.spec import parse_spec
from headwater.topics import Topics
from services.common.kafka import AVRO_HEADERS
from services.gateway.models import SubmitRequest
from services.gateway.problems import Problem
from services.gateway.stream import TERMINAL_STATUSES


@dataclass(frozen=True)
class Accepted:
    """Outcome of a submission: ``created`` is False when the id already had this run."""

    workflow_id: str
    created: bool
    status: str


def body_hash(spec: Any, workflow_input: Any, tenant: str | None) -> str:
    """SHA-256 of the canonical JSON (sorted keys) of what defines a run."""
    doc = {"workflow": spec, "input": workflow_input, "tenant": tenant}
    return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()


async def submit(pool: asyncpg.Pool, producer: AIOKafkaProducer, topics: Topics,
                 request: SubmitRequest) -> Accepted:
    """Validate and submit a workflow.

    Raises:
        Problem: 422 for an invalid spec (every fault in ``errors``), 409 when the id is
            taken by a different body, 503 when Kafka does not acknowledge.
    """
    if request.definition is not None:
        raise Problem(422, "Unsupported field", "named definitions are not available in "
                      "this version; send the spec in 'workflow'", errors=["definition"])
    if request.workflow is None:
        raise Problem(422, "Invalid request", "'workflow' (the spec) is required",
                      errors=["workflow: required"])
    try:
        parse_spec(request.workflow)
    except SpecError as e:
        raise Problem(422, "Invalid workflow spec", str(e), errors=e.faults) from e
    workflow_id = request.id or f"wf-{uuid.uuid4().hex}"
    digest = body_hash(request.workflow, request.input, request.tenant)
    now_ms = int(time.time() * 1000)
    now = datetime.fromtimestamp(now_ms / 1000, tz=UTC)
    name = str(request.workflow.get("name", ""))
    claimed = await pool.fetchval(
        "insert into workflows (workflow_id, name, tenant, status, seq, spec, input, body_hash,"
        " created_at, updated_at) values ($1, $2, $3, 'accepted', 0, $4, $5, $6, $7, $7)"
        " on conflict (workflow_id) do nothing returning 1",
        workflow_id, name, request.tenant, request.workflow, request.input, digest, now,
    )
    if not claimed:
        return await _existing(pool, workflow_id, digest)
    record = ev.WorkflowSubmitted(workflow_id, request.workflow, request.input, now_ms,
                                  request.tenant)
    try:
        await producer.send_and_wait(topics.submissions, codec.encode(record),
                                     key=workflow_id.encode(), headers=AVRO_HEADERS)
    except Exception as e:
        await pool.execute("delete from workflows where workflow_id = $1 and seq = 0",
                           workflow_id)
        raise Problem(503, "Kafka unavailable", f"the submission was not stored: {e}",
                      headers={"Retry-After": "1"}) from e
    return Accepted(workflow_id, True, "accepted")


async def _existing(pool: asyncpg.Pool, workflow_id: str, digest: str) -> Accepted:
    row = await pool.fetchrow(
        "select status, body_hash, spec, input, tenant from workflows where workflow_id = $1",
        workflow_id)
    if row is None:  # claimed and released again (Kafka failed) in between
        raise Problem(409, "Conflict", f"workflow {workflow_id} is being submitted; retry",
                      headers={"Retry-After": "1"})
    existing = row["body_hash"] or body_hash(row["spec"], row["input"], row["tenant"])
    if existing != digest:
        raise Problem(409, "Conflict", f"workflow id {workflow_id} is already used by a "
                      "different submission", workflow_id=workflow_id)
    return Accepted(workflow_id, False, row["status"])


async def request_cancel(pool: asyncpg.Pool, producer: AIOKafkaProducer, topics: Topics,
                         workflow_id: str, reason: str) -> None:
    """Produce a ``CancelRequested`` for a workflow that is not terminal.

    Raises:
        Problem: 404 unknown id, 409 already terminal, 503 Kafka unavailable.
    """
    status = await pool.fetchval("select status from workflows where workflow_id = $1",
                                 workflow_id)
    if status is None:
        raise Problem(404, "Not found", f"no workflow {workflow_id}")
    if status in TERMINAL_STATUSES:
        raise Problem(409, "Conflict", f"workflow {workflow_id} is already {status}",
                      status_now=status)
    record = ev.CancelRequested(workflow_id, int(time.time() * 1000), reason)
    try:
        await producer.send_and_wait(topics.control, codec.encode(record),
                                     key=workflow_id.encode(), headers=AVRO_HEADERS)
    except Exception as e:
        raise Problem(503, "Kafka unavailable", f"the cancel was not stored: {e}",
                      headers={"Retry-After": "1"}) from e
