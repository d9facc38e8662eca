"""The input agent's batches (workaround 13 of the package): a stream's events taken
``max_`` at a time, as faust's ``Stream.take_events`` takes them, but waiting for a
batch's first event without a timeout.

``take_events(max_, within)`` wakes every ``within`` seconds whether or not an event came:
at the coordinator's 2 ms window, 500 times a second, each wake-up a ``wait_first`` with
its tasks and futures. An idle coordinator spent about 2 of its 2.9 CPU seconds in 30
on it (0.9 with the window at 50 ms), and every idle coordinator of a deployment (or a
test suite) pays that. ``batches`` waits for the first event with no timeout, then at
most ``within`` for the batch to fill: the window counts from the batch's first event.

What a batch's consumer relies on is ``take_events``' (the package's workaround 2): the
stream's acks are off while the generator runs; a batch's events are acknowledged when
the generator moves past it or is closed (``aclose``), also after the loop body raised;
no event joins a batch while it is out, and a full buffer holds the stream back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from typing import Any

from mode.utils.futures import notify

log = logging.getLogger("headwater.coordinator")


class _Buffer:
    """The events of the batch being filled, added by the stream's processor ``add``."""

    def __init__(self, stream: Any, max_: int) -> None:
        self.stream = stream
        self.max = max_
        self.events: list[Any] = []
        self.begun = asyncio.Event()  # the batch has its first event
        self.full = asyncio.Event()  # the batch has ``max`` events
        self.consumed = asyncio.Event()  # a full batch was taken: the stream may go on
        self.out: asyncio.Future[None] | None = None  # set while a batch is out

    async def add(self, value: Any) -> Any:
        """The stream's processor: add the current event to the batch (after the batch
        out, if one is); when the batch is full, hold the stream until it is taken."""
        try:
            if self.out is not None:
                try:
                    await self.out
                finally:
                    self.out = None
            event = self.stream.current_event
            if event is None:
                raise RuntimeError("the take's buffer found no current event")
            self.events.append(event)
            self.begun.set()
            if len(self.events) >= self.max:
                self.full.set()
                self.consumed.clear()
                await self.stream.wait(self.consumed)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.exception("adding to the input batch failed: %r", e)
            await self.stream.crash(e)
        return value

    async def taken(self) -> None:
        """Acknowledge the batch that was out and let the stream add to the next one."""
        for event in self.events:
            await self.stream.ack(event)
        self.events.clear()
        notify(self.out)
        self.begun.clear()
        self.full.clear()
        self.consumed.set()


async def batches(stream: Any, max_: int, within_s: float) -> AsyncGenerator[list[Any], None]:
    """Batches of up to ``max_`` of ``stream``'s events: each handed out once full, or
    ``within_s`` seconds after its first event came; none while no event comes.

    The stream's own acks are off until the generator is closed, and each batch is
    acknowledged when the generator moves past it or is closed (so close it with
    ``aclose`` rather than leaving it to be collected).
    """
    buffer = _Buffer(stream, max_)
    acks_were = stream.enable_acks
    stream.enable_acks = False
    stream.add_processor(buffer.add)
    stream._enable_passive(stream.channel.__aiter__())
    try:
        while not stream.should_stop:
            await stream.wait_for_stopped(buffer.begun)
            if not buffer.full.is_set():
                await stream.wait_for_stopped(buffer.full, timeout=within_s)
            if buffer.events:
                buffer.out = stream.loop.create_future()
                try:
                    yield list(buffer.events)
                finally:
                    await buffer.taken()
    finally:
        stream.enable_acks = acks_were
        stream._processors.remove(buffer.add)
