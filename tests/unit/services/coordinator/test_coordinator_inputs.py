"""Decoding coordinator input records and checking their topic and key (``decode_input``)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from headwater import codec
from headwater.core import events as ev
from headwater.errors import DecodeError
from headwater.topics import Topics
from services.coordinator.inputs import decode_input

TOPICS = Topics("unit-7")
WF = "wf-1"
KEY = WF.encode()
AT = 1_700_000_000_000
JSON_HEADERS = [("content-type", b"application/json")]
AVRO_HEADERS = [("content-type", b"application/vnd.apache.avro")]

BY_TOPIC: dict[str, list[Any]] = {
    TOPICS.submissions: [
        ev.WorkflowSubmitted(WF, {"name": "s", "nodes": []}, [1], AT, "t"),
        ev.ChildSubmitted(WF, "parent-1", "kid", None, 1, {"name": "c", "nodes": []},
                          {"v": 1}, AT, "t"),
    ],
    TOPICS.control: [ev.CancelRequested(WF, AT, "stop"), ev.TimerFired(WF, "retry:a:2", AT),
                     ev.SignalSent(WF, "approval", AT, 1, "sig-1", {"approved": True})],
    TOPICS.reports: [
        ev.TaskStarted(WF, "a", None, 1, AT, "w"),
        ev.TaskProgressed(WF, "m", 2, 1, AT, 0.5, "half"),
        ev.TaskSucceeded(WF, "a", None, 1, AT, {"o": 1}),
        ev.TaskFailed(WF, "m", 0, 3, AT, "boom", "E", False),
    ],
}
ALLOWED = [(topic, r) for topic, records in BY_TOPIC.items() for r in records]
OTHERS: list[Any] = [
    ev.TaskDispatched(WF, "a", None, 1, "t", "cpu", None, AT),
    ev.WorkflowAccepted(WF, AT, {}, None),
    ev.NodeFinished(WF, "a", "failed", AT),
    ev.HistoryEvent(WF, 1, ev.TaskSucceeded(WF, "a", None, 1, AT)),
]
MISPLACED = [
    (topic, r)
    for topic in TOPICS.inputs
    for r in [*OTHERS, *(rec for t, recs in BY_TOPIC.items() if t != topic for rec in recs)]
]


@pytest.mark.parametrize(("topic", "record"), ALLOWED,
                         ids=[f"{t}:{type(r).__name__}" for t, r in ALLOWED])
@pytest.mark.parametrize("headers", [None, [], AVRO_HEADERS])
def test_records_that_belong_on_their_topic(topic: str, record: Any,
                                            headers: list[tuple[str, bytes]] | None) -> None:
    assert decode_input(TOPICS, topic, KEY, codec.encode(record), headers,
                        received_ms=AT) == record


@pytest.mark.parametrize(("topic", "record"), MISPLACED,
                         ids=[f"{t}:{type(r).__name__}" for t, r in MISPLACED])
def test_record_type_on_the_wrong_topic(topic: str, record: Any) -> None:
    with pytest.raises(DecodeError, match=f"does not belong on {topic}"):
        decode_input(TOPICS, topic, KEY, codec.encode(record), None)


@pytest.mark.parametrize("key", [None, b"", b"wf-other", WF.upper().encode(), b"\xff\xfe"])
def test_key_must_be_the_workflow_id(key: bytes | None) -> None:
    data = codec.encode(ev.CancelRequested(WF, AT))
    with pytest.raises(DecodeError, match="is not the workflow id"):
        decode_input(TOPICS, TOPICS.control, key, data, None)


JSON_SUBMISSION = {"workflow_id": WF, "spec": {"name": "s", "nodes": [{"id": "a"}]},
                   "input": {"q": "ü"}, "at_ms": AT}


def test_json_submission_with_the_content_type_header() -> None:
    data = orjson.dumps(JSON_SUBMISSION)
    got = decode_input(TOPICS, TOPICS.submissions, KEY, data, [("x-trace", b"1"), *JSON_HEADERS],
                       received_ms=AT)
    assert got == ev.WorkflowSubmitted(WF, JSON_SUBMISSION["spec"], {"q": "ü"}, AT, None)


def test_json_submission_key_is_checked_too() -> None:
    with pytest.raises(DecodeError, match="is not the workflow id"):
        decode_input(TOPICS, TOPICS.submissions, b"other", orjson.dumps(JSON_SUBMISSION),
                     JSON_HEADERS)


@pytest.mark.parametrize(("topic", "headers"), [
    (TOPICS.submissions, None),  # JSON without the header is read as Avro
    (TOPICS.submissions, AVRO_HEADERS),
    (TOPICS.control, JSON_HEADERS),  # JSON is for submissions only
    (TOPICS.reports, JSON_HEADERS),
])
def test_json_is_accepted_only_on_submissions_with_the_header(
    topic: str, headers: list[tuple[str, bytes]] | None,
) -> None:
    with pytest.raises(DecodeError):
        decode_input(TOPICS, topic, KEY, orjson.dumps(JSON_SUBMISSION), headers)


@pytest.mark.parametrize("value", [None, b"", b"garbage", b"\xc3\x01" + b"\x00" * 20,
                                   codec.encode(ev.CancelRequested(WF, AT))[:-1]])
@pytest.mark.parametrize("topic", TOPICS.inputs)
def test_garbage_raises_decode_error(topic: str, value: bytes | None) -> None:
    with pytest.raises(DecodeError):
        decode_input(TOPICS, topic, KEY, value, None)


@pytest.mark.parametrize("value", [b"", b"{", b"[]", orjson.dumps({"workflow_id": WF})])
def test_bad_json_submission_raises_decode_error(value: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_input(TOPICS, TOPICS.submissions, KEY, value, JSON_HEADERS)


@pytest.mark.parametrize("topic", [TOPICS.events, TOPICS.dlq, "headwater.control",
                                   TOPICS.tasks("cpu")])
def test_records_from_other_topics_are_refused(topic: str) -> None:
    with pytest.raises(DecodeError, match="not an input topic"):
        decode_input(TOPICS, topic, KEY, codec.encode(ev.CancelRequested(WF, AT)), None)


@pytest.mark.parametrize("bad_id", ["wf/with/slash", "../../etc", "has space", "ünïcode",
                                    "x" * 201, "-starts-with-dash"])
def test_a_submission_with_an_id_outside_the_pattern_is_rejected(bad_id: str) -> None:
    record = ev.WorkflowSubmitted(bad_id, {"name": "s", "nodes": []}, None, AT)
    with pytest.raises(DecodeError, match="does not match"):
        decode_input(TOPICS, TOPICS.submissions, bad_id.encode(), codec.encode(record), [])


@pytest.mark.parametrize("at_ms", [-1, 253_402_300_800_000, 2**62])
def test_a_time_outside_1970_to_9999_is_rejected(at_ms: int) -> None:
    record = ev.TaskStarted(WF, "a", None, 1, at_ms, "w")
    with pytest.raises(DecodeError, match="at_ms"):
        decode_input(TOPICS, TOPICS.reports, KEY, codec.encode(record), [])


@pytest.mark.parametrize("value", [b"Application/JSON", b"application/json; charset=utf-8"])
def test_the_json_content_type_is_matched_as_a_media_type(value: bytes) -> None:
    doc = {"workflow_id": WF, "spec": {"name": "s"}, "input": None, "at_ms": AT}
    got = decode_input(TOPICS, TOPICS.submissions, KEY, orjson.dumps(doc),
                       [("content-type", value)])
    assert isinstance(got, ev.WorkflowSubmitted) and got.workflow_id == WF
