"""Where the gateway's records go: the Kafka producer it holds once connected
(``lifetime.Runtime.outlet``), with the topics, the acknowledgement timeout and the
headers every record carries. Submissions (``runs.submit``, a schedule's generations),
cancels and signals (``control.send``), pauses (``pauses.send``) and limits
(``limits.define``) are all produced here, one record at a time keyed by its workflow id,
so every route answers Kafka's failures alike: 413 for a record Kafka will never take,
503 with ``Retry-After`` for one it did not take now.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import MessageSizeTooLargeError

from headwater import codec
from headwater.core import events as ev
from headwater.topics import Topics
from services.common import tracing
from services.common.blobs.claims import Claims
from services.common.kafka.client import AVRO_HEADERS
from services.gateway.edge.problems import RETRY_AFTER_S, Problem

Headers = Sequence[tuple[str, bytes]]
"""Kafka headers: the gateway's ``authorization`` for its submissions (``auth_settings``)."""


@dataclass(frozen=True)
class Outlet:
    """Where submissions go: ``produce``'s arguments (``lifetime.Runtime.outlet``).

    Attributes:
        producer: the Kafka producer.
        topics: the topic names.
        timeout_s: longest wait for Kafka's acknowledgement, seconds.
        auth: headers a submission, cancel or signal carries besides Avro's content type
            and the trace: the gateway's token when auth is on (the coordinator checks
            it).
        claims: where a submission's input and a signal's fields put their large parts
            (``blobs.payloads``); None: they go as they are.
        cache_refresh: its submissions bypass cache hits (``?cache=refresh``; not hashed).
    """

    producer: AIOKafkaProducer
    topics: Topics
    timeout_s: float
    auth: Headers = ()
    claims: Claims | None = None
    cache_refresh: bool = False

    def with_cache(self, cache: str | None) -> Outlet:
        """This outlet for a request's ``?cache=`` (``refresh``, or None: as it is)."""
        return self if cache is None else dataclasses.replace(self, cache_refresh=True)

    async def submission(self, record: ev.WorkflowSubmitted) -> None:
        """Produce ``record`` to ``submissions`` (``produce``)."""
        record = dataclasses.replace(record, cache_refresh=self.cache_refresh)
        await produce(self.producer, self.topics.submissions, record, self.timeout_s,
                      "submission", self.auth)

    async def control(self, record: ev.CancelRequested | ev.SignalSent | ev.LimitDefined
                      | ev.PauseRequested | ev.ResumeRequested, what: str) -> None:
        """Produce ``record`` to ``control`` (``produce``; ``what``: ``"cancel"``)."""
        await produce(self.producer, self.topics.control, record, self.timeout_s, what,
                      self.auth)


async def produce(producer: AIOKafkaProducer, topic: str, record: Any, timeout_s: float,
                  what: str, auth: Headers = ()) -> None:
    """Produce one record keyed by its workflow id and wait for Kafka's acknowledgement.

    Args:
        producer: the Kafka producer.
        topic: where to.
        record: a ``headwater.events`` record with a ``workflow_id``.
        timeout_s: longest wait, seconds.
        what: what the record is, for the problem's detail (``"submission"``).
        auth: more headers (``submit``'s ``auth``).

    Raises:
        Problem: 413 (no ``Retry-After``: the same record is refused again) naming the
            record's size and the limit when it is larger than the producer's
            ``max_request_size`` (``HEADWATER_MAX_MESSAGE_BYTES``) or the broker's
            ``message.max.bytes``; 503 with ``Retry-After`` when Kafka fails otherwise
            or does not acknowledge in time.
    """
    workflow_id: str = record.workflow_id
    retry = {"Retry-After": RETRY_AFTER_S}
    value = codec.encode(record)
    try:
        # asyncio.timeout, not wait_for: the send is awaited here, not in a task of its
        # own (one scheduling round and a task fewer per record).
        with tracing.producing(topic, workflow_id.encode()):
            async with asyncio.timeout(timeout_s):
                await producer.send_and_wait(
                    topic, value, key=workflow_id.encode(),
                    headers=tracing.with_context([*AVRO_HEADERS, *auth]))
    except TimeoutError as e:
        raise Problem(503, "Kafka unavailable", f"Kafka did not acknowledge the {what} within "
                      f"{timeout_s:g} s; it may still be stored, and retrying it is safe",
                      headers=retry, workflow_id=workflow_id) from e
    except MessageSizeTooLargeError as e:
        limit = getattr(producer, "_max_request_size", None)  # aiokafka keeps no public one
        within = f"{limit} bytes, " if isinstance(limit, int) else ""
        raise Problem(413, "Record too large", f"the {what} is {len(value)} bytes as a "
                      f"Kafka record, more than Kafka takes ({within}HEADWATER_MAX_MESSAGE_BYTES"
                      " or the broker's message.max.bytes); make its spec or input smaller",
                      workflow_id=workflow_id, record_bytes=len(value),
                      max_record_bytes=limit if isinstance(limit, int) else None) from e
    except Exception as e:
        raise Problem(503, "Kafka unavailable", f"the {what} was not stored: {e}",
                      headers=retry, workflow_id=workflow_id) from e
