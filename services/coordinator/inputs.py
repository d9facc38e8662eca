"""Decode an input record, check it belongs on its topic (anything else is for the DLQ)
and stamp it with the coordinator's clock.

JSON (``content-type: application/json``) is taken for the two inputs other systems
produce: a ``WorkflowSubmitted`` on ``submissions`` and a ``SignalSent`` on ``control``;
every other record is Avro.

Leases, deadlines and retry timers are measured on one clock, the coordinator's, from
when it applies the inputs (docs/architecture.md, "Time"): a worker, a gateway or any
other producer may run on a machine whose clock is minutes off, so the ``at_ms`` it
wrote is replaced by the coordinator's time before the state machine sees the input.
The history records the stamped time, so a replay folds the same state. A
``TimerFired`` is stamped too: ``headwater.control`` is open to any producer, and a
firing dated in the future would end a deadline early or date a retry past year 9999. A
firing that arrives before its timer is due changes nothing (``machine.timers``); the
timer loop fires it again.

A submission's ``tenant``, ``definition`` and ``definition_version`` are checked here,
for Avro and JSON alike (``submission_fault``), as the gateway checks them over HTTP,
and so is the length of the spec's ``name``: the projection indexes the tenant, the
definition and the name, and PostgreSQL refuses an index row over 2704 bytes, so one
9 KB tenant would stall the projection of every run.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable

from headwater import codec, json_records
from headwater.core import events as ev
from headwater.core.definitions import MAX_VERSION, DefinitionRefError, check_name
from headwater.core.spec.fields import MAX_NAME_CHARS
from headwater.errors import DecodeError
from headwater.topics import (
    CONTENT_TYPE_HEADER,
    JSON_CONTENT_TYPE,
    MAX_AT_MS,
    WORKFLOW_ID_PATTERN,
    Topics,
)
from services.common.clock import now_ms
from services.common.kafka.client import header

MAX_TENANT_CHARS = 200
"""Longest tenant, characters (as the gateway's ``SubmitRequest.tenant``)."""
_WORKFLOW_ID = re.compile(WORKFLOW_ID_PATTERN)
_JSON_DECODERS: dict[str, Callable[[bytes | None], ev.Input]] = {
    "submissions": json_records.decode_json_submission,
    "control": json_records.decode_json_signal,
}
_ALLOWED: dict[str, tuple[type, ...]] = {
    "submissions": (ev.WorkflowSubmitted, ev.ChildSubmitted),
    "control": (ev.CancelRequested, ev.TimerFired, ev.SignalSent, ev.PermitRequested,
                ev.PermitReleased, ev.LimitDefined, ev.CacheLookedUp, ev.CacheReleased,
                ev.PauseRequested, ev.ResumeRequested),
    "reports": (ev.TaskStarted, ev.TaskProgressed, ev.TaskHeartbeated, ev.TaskCheckpointed,
                ev.TaskOutputStreamed, ev.TaskSucceeded, ev.TaskFailed, ev.PermitGranted,
                ev.PermitDenied, ev.CacheAnswered, ev.CallLinked),
}


def decode_input(
    topics: Topics, topic: str, key: bytes | None, value: bytes | None,
    headers: Iterable[tuple[str, bytes]] | None, received_ms: int | None = None,
) -> ev.Input:
    """Decode one record from an input topic and stamp it (``stamped``).

    Args:
        topics: the deployment's topic names.
        topic: the record's topic.
        key: the record key, which must be the workflow id (UTF-8).
        value: the record value (Avro single-object, or JSON for a submission or a
            signal).
        headers: the record headers.
        received_ms: the coordinator's time as it takes the record into a batch, ms
            since the epoch; None: ``clock.now_ms()`` now.

    Returns:
        The input event, its ``at_ms`` the coordinator's.

    Raises:
        DecodeError: undecodable, a record type that does not belong on ``topic``, or a
            key that differs from the record's workflow id.
    """
    kind = {topics.submissions: "submissions", topics.control: "control",
            topics.reports: "reports"}.get(topic)
    if kind is None:
        raise DecodeError(f"not an input topic: {topic}")
    content_type = (header(headers, CONTENT_TYPE_HEADER) or "").split(";")[0].strip().lower()
    json_decoder = _JSON_DECODERS.get(kind) if content_type == JSON_CONTENT_TYPE else None
    record: ev.Input = codec.decode(value) if json_decoder is None else json_decoder(value)
    if not isinstance(record, _ALLOWED[kind]):
        raise DecodeError(f"{type(record).__name__} does not belong on {topic}")
    if key is None or key.decode(errors="replace") != record.workflow_id:
        raise DecodeError(f"record key {key!r} is not the workflow id {record.workflow_id!r}")
    if not 0 <= record.at_ms <= MAX_AT_MS:
        raise DecodeError(f"at_ms {record.at_ms} is not a time between 1970 and 9999")
    if (isinstance(record, ev.WorkflowSubmitted | ev.ChildSubmitted)
            and not _WORKFLOW_ID.fullmatch(record.workflow_id)):
        raise DecodeError(f"workflow id {record.workflow_id[:80]!r} does not match "
                          f"{WORKFLOW_ID_PATTERN}")
    if isinstance(record, ev.WorkflowSubmitted | ev.ChildSubmitted):
        fault = submission_fault(record)
        if fault is not None:
            raise DecodeError(fault)
    return stamped(record, now_ms() if received_ms is None else received_ms)


def submission_fault(record: ev.WorkflowSubmitted | ev.ChildSubmitted) -> str | None:
    """Why a submission may not be recorded, or None: a value the projection indexes
    that it could not hold, or a definition that is not one.

    Checks:
        ``tenant``: None, or a string of at most ``MAX_TENANT_CHARS`` characters.
        the spec's ``name``: at most ``spec.fields.MAX_NAME_CHARS`` characters as the
            projection stores it (a shorter bad name is a spec fault: the run fails).
        ``definition``: None, or a definition's name (``definitions.NAME_PATTERN``: no
            ``@version``, no control or bidirectional characters).
        ``definition_version``: None, or an integer from 1 to
            ``definitions.MAX_VERSION``, and only with a ``definition``.

    Returns:
        ``"<field>: <what is wrong>"``, or None when all are good.
    """
    tenant, definition, version = record.tenant, record.definition, record.definition_version
    if tenant is not None and (not isinstance(tenant, str) or len(tenant) > MAX_TENANT_CHARS):
        return f"tenant: must be null or a string of at most {MAX_TENANT_CHARS} characters"
    name = record.spec.get("name") if isinstance(record.spec, dict) else None
    if name is not None and len(name if isinstance(name, str) else str(name)) > MAX_NAME_CHARS:
        return f"spec: name: at most {MAX_NAME_CHARS} characters"
    return _definition_fault(definition, version)


def _definition_fault(definition: str | None, version: int | None) -> str | None:
    """Why a submission's ``definition`` and ``definition_version`` are bad, or None."""
    if definition is not None:
        try:
            check_name(definition)
        except DefinitionRefError as e:
            return f"definition: {str(e)[:300]}"
    if version is not None and definition is None:
        return "definition_version: given without a definition"
    if version is not None and (type(version) is not int or not 1 <= version <= MAX_VERSION):
        return f"definition_version: must be null or an integer from 1 to {MAX_VERSION}"
    return None


def stamped(record: ev.Input, received_ms: int) -> ev.Input:
    """``record`` at the coordinator's time ``received_ms``.

    Args:
        record: a decoded input; its ``at_ms`` is the producer's clock, not to be
            compared with this one.
        received_ms: the coordinator's time now, ms since the epoch.
    """
    if record.at_ms == received_ms:
        return record
    return dataclasses.replace(record, at_ms=received_ms)
