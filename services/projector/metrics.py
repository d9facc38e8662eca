"""The projector's Prometheus metrics: history events written into PostgreSQL, the time a
batch takes, and how far behind the events topic the projection is.

Inside the coordinator (``HEADWATER_PROJECTION=on``) they are served on the coordinator's
endpoint; alone (``python -m services.projector``) on the projector's own
(``HEADWATER_METRICS_PORT``, 9182 by default: ``serve_from_env``).

The lag is read from what the consumer already knows, at no cost: for each partition of
a fetch, the high watermark the broker sent with it less the offset after its last
record; summed over the partitions this projector holds. It is as fresh as the last
fetch that returned records (an idle projector has none to fetch: its lag stays 0).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from prometheus_client import Counter, Gauge, Histogram

from services.common import metrics
from services.common.metrics import LATENCY_BUCKETS_S

EVENTS = Counter("headwater_projector_events_total",
                 "History events projected into PostgreSQL (committed to the projection).")
BATCH_SECONDS = Histogram(
    "headwater_projector_batch_seconds", "Seconds to project one batch of history events "
    "(retries included).", buckets=LATENCY_BUCKETS_S)
LAG = Gauge("headwater_projector_lag_events", "History events on the events topic not "
            "projected yet, on the partitions this projector holds (as of its last fetch).")

_lag: dict[Any, int] = {}
"""Partition -> its lag as of the last fetch that returned records from it."""


class Consumer(Protocol):
    """What the lag is read from (``aiokafka.AIOKafkaConsumer``)."""

    def highwater(self, partition: Any) -> int | None:
        """The partition's high watermark as of the last fetch (None: not known)."""

    def assignment(self) -> set[Any]:
        """The partitions assigned."""


def serve_from_env() -> int | None:
    """Serve the process's metrics on ``HEADWATER_METRICS_PORT`` (9182 by default) unless
    they are served already (inside the coordinator: its port).

    Raises:
        ValueError: the port is not a port number.
    """
    return metrics.serve(metrics.port_from_env("projector"), metrics.host_from_env())


def projected(count: int, started_s: float) -> None:
    """Count a batch of ``count`` events projected, begun at ``time.perf_counter()``
    ``started_s``."""
    EVENTS.inc(count)
    BATCH_SECONDS.observe(time.perf_counter() - started_s)


def fetched(consumer: Consumer, batches: Mapping[Any, Sequence[Any]]) -> None:
    """Update the lag from a fetch: ``batches`` maps a partition to its records (with
    ``offset``), as ``getmany`` returns them."""
    for tp, records in batches.items():
        end = consumer.highwater(tp)
        if records and end is not None:
            _lag[tp] = max(0, end - records[-1].offset - 1)
    held = consumer.assignment()
    for tp in [tp for tp in _lag if tp not in held]:
        del _lag[tp]
    LAG.set(sum(_lag.values()))
