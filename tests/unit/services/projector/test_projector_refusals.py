"""The projector reads the refused signals back from ``dlq``: a dead letter from
``control`` whose value is a ``SignalSent`` becomes a ``signal_receipts`` refusal with
its ``reason`` header; any other dead letter (another topic, another record, no value,
undecodable, no signal id) is skipped."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aiokafka import ConsumerRecord

from headwater import codec
from headwater.core import events as ev
from headwater.topics import REASON_HEADER, SOURCE_TOPIC_HEADER, Topics
from services.projector.refusals import MAX_REASON_CHARS, refusal_row, refusal_rows

TOPICS = Topics("p")
SIGNAL = ev.SignalSent("wf-1", "approval", 1_000, None, "s-1", {"ok": True})
REASON = "SignalSent for workflow wf-1 refused: the workflow has already ended (succeeded)"


def dead(value: bytes | None, source: str = TOPICS.control, reason: str = REASON,
         ts: int = 1_700_000_000_000) -> Any:
    headers = [(REASON_HEADER, reason.encode()), (SOURCE_TOPIC_HEADER, source.encode())]
    return ConsumerRecord(TOPICS.dlq, 0, 0, ts, 0, b"wf-1", value, None, 0, 0, headers)


def test_a_refused_signal_becomes_a_refusal_row() -> None:
    row = refusal_row(TOPICS, dead(codec.encode(SIGNAL)))
    assert row == ("wf-1", "s-1", "approval", None, REASON,
                   datetime.fromtimestamp(1_700_000_000, UTC))


def test_other_dead_letters_are_skipped() -> None:
    report = ev.TaskStarted("wf-1", "a", None, 1, 1_000, "w")
    skipped = [
        dead(codec.encode(SIGNAL), source=TOPICS.submissions),
        dead(codec.encode(report), source=TOPICS.control),
        dead(None),
        dead(b"\xc3\x01 not avro"),
        dead(codec.encode(ev.SignalSent("wf-1", "approval", 1_000, None, "", {}))),
    ]
    assert refusal_rows(TOPICS, [*skipped, dead(codec.encode(SIGNAL))]) == [
        refusal_row(TOPICS, dead(codec.encode(SIGNAL)))]


def test_a_long_reason_is_cut() -> None:
    row = refusal_row(TOPICS, dead(codec.encode(SIGNAL), reason="x" * 5000))
    assert row is not None and len(row[4]) == MAX_REASON_CHARS
