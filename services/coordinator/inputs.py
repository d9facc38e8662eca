"""Decode an input record and check it belongs on its topic; anything else is for the DLQ."""

from __future__ import annotations

import re
from collections.abc import Iterable

from headwater import codec
from headwater.core import events as ev
from headwater.errors import DecodeError
from headwater.topics import (
    CONTENT_TYPE_HEADER,
    JSON_CONTENT_TYPE,
    MAX_AT_MS,
    WORKFLOW_ID_PATTERN,
    Topics,
)
from services.common.kafka import header

_WORKFLOW_ID = re.compile(WORKFLOW_ID_PATTERN)
_ALLOWED: dict[str, tuple[type, ...]] = {
    "submissions": (ev.WorkflowSubmitted,),
    "control": (ev.CancelRequested, ev.TimerFired),
    "reports": (ev.TaskStarted, ev.TaskProgressed, ev.TaskHeartbeated, ev.TaskCheckpointed,
                ev.TaskOutputStreamed, ev.TaskSucceeded, ev.TaskFailed),
}


def decode_input(
    topics: Topics, topic: str, key: bytes | None, value: bytes | None,
    headers: Iterable[tuple[str, bytes]] | None,
) -> ev.Input:
    """Decode one record from an input topic.

    Args:
        topics: the deployment's topic names.
        topic: the record's topic.
        key: the record key, which must be the workflow id (UTF-8).
        value: the record value (Avro single-object, or JSON for submissions).
        headers: the record headers.

    Returns:
        The input event.

    Raises:
        DecodeError: undecodable, a record type that does not belong on ``topic``, or a
            key that differs from the record's workflow id.
    """
    kind = {topics.submissions: "submissions", topics.control: "control",
            topics.reports: "reports"}.get(topic)
    if kind is None:
        raise DecodeError(f"not an input topic: {topic}")
    content_type = (header(headers, CONTENT_TYPE_HEADER) or "").split(";")[0].strip().lower()
    if kind == "submissions" and content_type == JSON_CONTENT_TYPE:
        record = codec.decode_json_submission(value)
    else:
        record = codec.decode(value)
    if not isinstance(record, _ALLOWED[kind]):
        raise DecodeError(f"{type(record).__name__} does not belong on {topic}")
    if key is None or key.decode(errors="replace") != record.workflow_id:
        raise DecodeError(f"record key {key!r} is not the workflow id {record.workflow_id!r}")
    if not 0 <= record.at_ms <= MAX_AT_MS:
        raise DecodeError(f"at_ms {record.at_ms} is not a time between 1970 and 9999")
    if isinstance(record, ev.WorkflowSubmitted) and not _WORKFLOW_ID.fullmatch(record.workflow_id):
        raise DecodeError(f"workflow id {record.workflow_id[:80]!r} does not match "
                          f"{WORKFLOW_ID_PATTERN}")
    return record
