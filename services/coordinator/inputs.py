"""Decode an input record and check it belongs on its topic; anything else is for the DLQ."""

from __future__ import annotations

from collections.abc import Iterable

from headwater import codec
from headwater import events as ev
from headwater.errors import DecodeError
from headwater.topics import CONTENT_TYPE_HEADER, JSON_CONTENT_TYPE, Topics
from services.common.kafka import header

_ALLOWED: dict[str, tuple[type, ...]] = {
    "submissions": (ev.WorkflowSubmitted,),
    "control": (ev.CancelRequested, ev.TimerFired),
    "reports": (ev.TaskStarted, ev.TaskProgressed, ev.TaskSucceeded, ev.TaskFailed),
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
    content_type = header(headers, CONTENT_TYPE_HEADER)
    if kind == "submissions" and content_type == JSON_CONTENT_TYPE:
        record = codec.decode_json_submission(value)
    else:
        record = codec.decode(value)
    if not isinstance(record, _ALLOWED[kind]):
        raise DecodeError(f"{type(record).__name__} does not belong on {topic}")
    if key is None or key.decode(errors="replace") != record.workflow_id:
        raise DecodeError(f"record key {key!r} is not the workflow id {record.workflow_id!r}")
    return record
