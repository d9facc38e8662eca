"""The coordinator's input topics through faust: one agent of concurrency 1 that applies
their records in batches (``add_input_agent``, ``consume_batches``), where each assigned
partition starts (``start_offsets``), and the offset-continuity checks hooked to the
consumer (``InputWatch``, ``on_rebalance``). The workarounds are numbered as in the
package's docstring (1, 2, 4, 5).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from services.common.finishing import Unfinished, finish
from services.common.kafka.client import committed_offsets
from services.coordinator.continuity import OffsetContinuity, offset_ranges
from services.coordinator.faust_seam import take
from services.coordinator.faust_seam.app import FaustApp, end_process
from services.coordinator.records import InputRecord
from services.coordinator.settings import Settings
from services.coordinator.shutdown import exit_now

log = logging.getLogger("headwater.coordinator")


async def start_offsets(app: Any, settings: Settings,
                        assigned: list[Any]) -> dict[tuple[str, int], int]:
    """Where each assigned input partition's records must start: the group's committed
    offset; for a partition without one (or at 0), its first offset, sought to here.

    aiokafka's ``seek_to_committed`` and faust's ``perform_seek`` both take a committed
    offset of 0 for none and do not seek such a partition, which then goes on from
    wherever the fetcher stood: records at its head were seen skipped in the fault suite
    (a coordinator started at offset 42 of a partition nobody had committed).

    faust's own idea of the committed offsets is set to the group's too: faust records
    a commit as done even when it failed (``Consumer.commit`` updates
    ``_committed_offset`` whatever ``_commit`` returned), and a failed commit that ends
    after a rebalance leaves an offset the group never committed; faust then never
    commits the redelivered records below it, and the partition is never idle again
    (seen in the fault suite with the broker SIGKILLed: 5 runs of 20 hung, 0 of 13 with
    this).
    """
    committed = await committed_offsets(settings, settings.topics.coordinator_app_id,
                                        [(tp.topic, tp.partition) for tp in assigned])
    known = app.consumer._committed_offset
    for tp in assigned:
        offset = committed.get((tp.topic, tp.partition), 0)
        known[tp] = offset if offset > 0 else None
    unset = [tp for tp in assigned if committed.get((tp.topic, tp.partition), 0) <= 0]
    if unset:
        for tp, offset in (await app.consumer.earliest_offsets(*unset)).items():
            await app.consumer.seek(tp, offset)
            committed[(tp.topic, tp.partition)] = offset
    return committed


class InputWatch:
    """``OffsetContinuity`` hooked to faust: partitions revoked and assigned, each batch's
    events, and the consumer's log ends. A skip or a stall ends the process
    (``end_process``) before the batch is acknowledged.

    Args:
        app: the faust app.
        settings: the coordinator's settings (input topics, the group's offsets).
        stall_s: how long a record may wait in an input partition, past the last one
            applied, with none applied meanwhile, seconds (``OffsetContinuity.stalled``).
    """

    def __init__(self, app: Any, settings: Settings, stall_s: float) -> None:
        self.app = app
        self.settings = settings
        self.stall_s = stall_s
        self.inputs = settings.topics.inputs
        self.continuity = OffsetContinuity()

    def revoked(self, partitions: Iterable[Any]) -> None:
        """Partitions revoked: another process may move them on meanwhile."""
        self.continuity.forget((tp.topic, tp.partition) for tp in partitions)

    async def assigned(self) -> None:
        """After a rebalance, before the streams resume: where each assigned input
        partition must start (``start_offsets``)."""
        assigned = [tp for tp in self.app.consumer.assignment() if tp.topic in self.inputs]
        try:
            start = await start_offsets(self.app, self.settings, assigned)
        except Exception as e:  # a safeguard: go on without it this time, and say so
            log.warning("cannot read the committed offsets (%s: %s)", type(e).__name__, e)
            return
        log.info("assigned %s; starting at %s", sorted(assigned), start)
        self.continuity.expect(start)

    def admit(self, events: list[Any]) -> list[InputRecord]:
        """The records of a batch of faust events, once their offsets are checked (a
        skip ends the process)."""
        offsets = [(e.message.topic, e.message.partition, e.message.offset) for e in events]
        skipped = self.continuity.check(offsets)
        if skipped:
            end_process(self.app, f"input records were skipped ({skipped})")
        if log.isEnabledFor(logging.INFO):  # HEADWATER_LOG_LEVEL=info
            log.info("batch: %s", offset_ranges(offsets))
        return [InputRecord(m.topic, m.partition, m.offset, m.key, m.value,
                            list(m.headers or ())) for m in (e.message for e in events)]

    async def check_stalled(self) -> None:
        """End the process when an input partition stalled (a record lost on its way to
        the stream with nothing after it); nothing while rebalancing."""
        if self.app.rebalancing:
            return
        ends: dict[tuple[str, int], int | None] = {}
        for tp in self.app.consumer.assignment():
            if tp.topic in self.inputs:
                ends[(tp.topic, tp.partition)] = self.app.consumer.highwater(tp)
        why = self.continuity.stalled(ends, self.stall_s)
        if why is not None:
            end_process(self.app, f"input records stalled ({why})")


def on_rebalance(app: FaustApp, reset: Callable[[], None], watch: InputWatch) -> None:
    """After every rebalance call ``reset`` and then ``watch.assigned`` (one receiver,
    in this order); tell ``watch`` of revoked partitions."""

    async def _on_revoked(sender: Any, revoked: Any = (), **kwargs: Any) -> None:
        watch.revoked(revoked)

    async def _on_rebalance(sender: Any, **kwargs: Any) -> None:
        reset()
        await watch.assigned()

    app.on_partitions_revoked.connect(_on_revoked)  # type: ignore[arg-type]
    app.on_rebalance_complete.connect(_on_rebalance)  # type: ignore[arg-type]


def add_input_agent(app: FaustApp, settings: Settings, watch: InputWatch,
                    apply: Callable[[list[InputRecord]], Awaitable[None]],
                    grace_s: float) -> None:
    """Apply the input topics' records in batches (``settings.batch_max`` records, waiting
    at most ``settings.batch_window_s`` after a batch's first: ``take.batches``) with
    ``apply``, one batch at a time (``consume_batches``)."""
    inputs = app.topic(*settings.topics.inputs, key_serializer="raw", value_serializer="raw")

    # Concurrency 1: faust-streaming can commit past in-flight events above 1 (issue 606).
    @app.agent(inputs, concurrency=1)
    async def coordinate(stream: Any) -> None:
        batches = take.batches(stream, settings.batch_max, settings.batch_window_s)
        stream._active_agens.add(batches)  # closed by the stream's stop, as take_events' are
        await consume_batches(app, batches, watch, apply, grace_s)


async def consume_batches(app: Any, batches: Any, watch: InputWatch,
                          apply: Callable[[list[InputRecord]], Awaitable[None]],
                          grace_s: float) -> None:
    """Apply each batch of the generator ``batches`` (``take.batches``), then close it.

    The generator acknowledges a batch in a ``finally``, even when the loop body raised
    or was cancelled: a batch that failed half-way must never be committed, so such a
    failure ends the process at once (its inputs are then redelivered to whoever takes
    the partitions over), and a cancel (the coordinator stopping) lets the batch finish
    first, for up to ``grace_s`` seconds; past that the process exits.
    """
    try:
        async for batch in batches:
            records = watch.admit(batch)
            try:
                await finish(apply(records), grace_s)
            except Unfinished as e:
                exit_now(f"the batch in hand could not be finished: {e}")
            except Exception:
                log.exception("a batch failed half-way")
                end_process(app, "a batch failed half-way")
    finally:
        await batches.aclose()  # acknowledges a finished batch now, not at collection
