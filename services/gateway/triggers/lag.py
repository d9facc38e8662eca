"""How far each trigger's consumer group is behind its topic: per partition, the end
offset, the committed one and the lag between them. ``GET /v1/queues`` lists it
(``triggers``), ``GET /v1/triggers/{name}`` shows its trigger's, and the gauge
``headwater_trigger_lag_records`` holds it per trigger and partition, set at each scrape
of the gateway's ``/metrics``.

A partition the group has committed nothing for yet counts from the log's start for a
trigger that starts at the ``earliest`` record, and as no lag for one that starts at the
``latest`` (it reads only what comes next).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from prometheus_client import Gauge

from headwater.topics import Topics
from headwater.trigger_records import TriggerStored, trigger_key
from services.common.topic_reader import TopicReader

log = logging.getLogger("headwater.gateway.triggers")

READ_S = 3.0
"""How long a read of the figures may take, seconds (Kafka unreachable: none)."""

LAG = Gauge("headwater_trigger_lag_records", "Records of a trigger's topic its consumer "
            "group has not committed yet, by trigger (<tenant>/<name>, - without a "
            "tenant) and partition.", ["trigger", "partition"])
_shown: set[tuple[str, str]] = set()
"""The label values the gauge holds now."""


async def trigger_lag(reader: TopicReader, topics: Topics,
                      record: TriggerStored) -> dict[str, Any]:
    """One trigger's figures: ``{trigger, name, tenant, topic, group, lag, partitions:
    [{partition, end, committed, lag}]}`` (``partitions`` empty while its topic does not
    exist).

    Raises:
        KafkaError: the broker could not answer.
    """
    settings = record.settings
    topic, group = settings["topic"], topics.trigger_group(record.tenant, record.name)
    partitions = await reader.partitions(topic)
    rows: list[dict[str, Any]] = []
    if partitions:
        end = await reader.end_offsets(topic, partitions)
        committed = await reader.committed(group, topic, partitions)
        begin = await reader.beginning_offsets(topic, [p for p in partitions
                                                       if p not in committed])
        for p in partitions:
            start = committed.get(p)
            if start is None:
                start = begin[p] if settings.get("start") == "earliest" else end[p]
            rows.append({"partition": p, "end": end[p], "committed": committed.get(p),
                         "lag": max(0, end[p] - start)})
    return {"trigger": trigger_key(record.tenant, record.name), "name": record.name,
            "tenant": record.tenant, "topic": topic, "group": group,
            "lag": sum(r["lag"] for r in rows), "partitions": rows}


async def lags(reader: TopicReader, topics: Topics,
               records: list[TriggerStored]) -> list[dict[str, Any]]:
    """Every trigger's figures (``trigger_lag``), in ``records``' order.

    Raises:
        KafkaError: the broker could not answer.
        TimeoutError: not within ``READ_S``.
    """
    async def every() -> list[dict[str, Any]]:
        return [await trigger_lag(reader, topics, r) for r in records]

    return await asyncio.wait_for(every(), READ_S)


async def refresh(records: list[TriggerStored], reader: TopicReader, topics: Topics) -> None:
    """Set the lag gauge to the figures of ``records`` (the live triggers), read now;
    Kafka not answering within ``READ_S`` leaves it as it was (logged)."""
    try:
        set_gauges(await lags(reader, topics, records))
    except Exception as e:  # the scrape must answer: the other metrics still count
        log.warning("metrics: the triggers' lag could not be read: %r", e)


def set_gauges(figures: list[dict[str, Any]]) -> None:
    """Set the lag gauge to ``figures`` (``lags``), and drop the series of triggers and
    partitions no longer there."""
    now: set[tuple[str, str]] = set()
    for figure in figures:
        for row in figure["partitions"]:
            labels = (figure["trigger"], str(row["partition"]))
            LAG.labels(*labels).set(row["lag"])
            now.add(labels)
    for gone in _shown - now:
        LAG.remove(*gone)
    _shown.clear()
    _shown.update(now)
