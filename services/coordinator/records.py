"""The coordinator's records: an input as consumed, an output encoded for its topic, and a
dead letter; outputs are checked against the record limit before they reach an intent."""

from __future__ import annotations

from dataclasses import dataclass

from headwater import codec
from headwater.core import events as ev
from headwater.topics import Topics

RECORD_MARGIN_BYTES = 4096
"""Room left in ``max_bytes`` for what a produced record holds besides its key and value:
aiokafka refuses a record whose batch (header, record framing, headers) exceeds
``max_request_size`` (``DefaultRecordBatchBuilder.estimate_size_in_bytes``). A record
accepted here and refused there would be written into an intent it could never leave."""


@dataclass(frozen=True)
class InputRecord:
    """One record from an input topic, as consumed."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]


@dataclass(frozen=True)
class Outgoing:
    """An encoded record to publish on ``topic``.

    Attributes:
        key: the record's key: the workflow id, except for a dispatch, keyed by its
            dispatch id so that one workflow's tasks spread over every partition of
            their queue (and so over every worker of its consumer group).
        workflow_id: whose record it is (which intent it belongs to); empty for a record
            read back from an intent, which is only published again.
    """

    topic: str
    key: bytes
    value: bytes
    workflow_id: str = ""


@dataclass(frozen=True)
class DeadLetter:
    """A record that could not be applied, and why."""

    record: InputRecord
    reason: str


def encode_outputs(topics: Topics, events: list[ev.HistoryEvent],
                   max_bytes: int) -> list[Outgoing]:
    """Encode history events for ``events``; each dispatch once more for its queue's
    topic (keyed by its dispatch id), and each cancelled attempt once more for
    ``worker-control`` (workers stop it).

    Raises:
        ValueError: a record does not fit its schema, or its key and value exceed
            ``max_bytes`` less ``RECORD_MARGIN_BYTES``.
    """
    out: list[Outgoing] = []
    for event in events:
        wid = event.workflow_id
        key = wid.encode()
        out.append(Outgoing(topics.events, key, codec.encode(event), wid))
        if isinstance(event.body, ev.TaskDispatched):
            out.append(Outgoing(topics.tasks(event.body.queue),
                                event.body.dispatch_id.encode(), codec.encode(event.body), wid))
        elif isinstance(event.body, ev.TaskCancelled):
            out.append(Outgoing(topics.worker_control, key, codec.encode(event.body), wid))
    for o in out:
        if len(o.key) + len(o.value) > max_bytes - RECORD_MARGIN_BYTES:
            raise ValueError(f"a record of {len(o.key) + len(o.value)} bytes exceeds the "
                             f"limit of {max_bytes} (HEADWATER_MAX_MESSAGE_BYTES) less "
                             f"{RECORD_MARGIN_BYTES} for its framing")
    return out


def misplaced(topic: str, partition: int, workflow_id: str, home: int) -> str:
    """The dead-letter reason of an input on another partition than its workflow's."""
    return (f"{topic}[{partition}] holds a record of workflow {workflow_id!r}, "
            f"whose records belong on partition {home}: produce them keyed by the workflow "
            "id with Kafka's murmur2 partitioner (the Java client's default; librdkafka: "
            "partitioner=murmur2_random)")
