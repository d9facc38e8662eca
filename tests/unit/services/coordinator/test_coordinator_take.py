"""The input agent's batch take (``services/coordinator/faust_seam/take.py``, the faust
seam's workaround 13) on a real faust stream over an in-memory channel: what faust's
``take_events`` does on an idle stream (the reason for the take; when this test fails,
the take can go), and the take's own batches and acknowledgements."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import faust
import pytest

from services.coordinator.faust_seam import take


class Stream:
    """A real faust stream on an in-memory channel; its acks and its waits recorded."""

    def __init__(self) -> None:
        self.app = faust.App("unit-take", broker="kafka://127.0.0.1:1", web_enabled=False)
        self.app.flow_control.resume()
        self.channel = self.app.channel(key_type=bytes, value_type=bytes, maxsize=100)
        self.stream: Any = self.channel.stream()
        self.acked: list[bytes] = []
        self.waits = 0
        wait_for_stopped = self.stream.wait_for_stopped

        async def ack(event: Any) -> bool:
            self.acked.append(event.value)
            return True

        async def counted(*coros: Any, timeout: Any = None) -> bool:
            self.waits += 1
            result: bool = await wait_for_stopped(*coros, timeout=timeout)
            return result

        self.stream.ack = ack  # type: ignore[method-assign]
        self.stream.wait_for_stopped = counted  # type: ignore[method-assign]

    async def send(self, *values: bytes) -> None:
        for value in values:
            await self.channel.send(value=value)


@pytest.fixture
async def stream() -> AsyncIterator[Stream]:
    s = Stream()
    yield s
    await s.stream.stop()


async def _idle_waits(stream: Stream, batches: Any) -> int:
    """How many times ``batches`` waited on the stream in 0.2 s with no event."""
    first = asyncio.ensure_future(batches.__anext__())
    await asyncio.sleep(0.2)
    waits = stream.waits
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)
    return waits


async def test_fausts_take_events_wakes_every_window_with_no_event(stream: Stream) -> None:
    """The library's behaviour the take answers: 0.2 s of a 2 ms window, nothing sent,
    and ``take_events`` waited again and again (some 100 times on an idle machine)."""
    assert await _idle_waits(stream, stream.stream.take_events(10, 0.002)) > 20


async def test_the_take_waits_for_a_first_event_without_waking(stream: Stream) -> None:
    assert await _idle_waits(stream, take.batches(stream.stream, 10, 0.002)) == 1


async def test_a_batch_is_handed_out_a_window_after_its_first_event(stream: Stream) -> None:
    batches = take.batches(stream.stream, 10, 0.3)
    first = asyncio.ensure_future(batches.__anext__())
    await asyncio.sleep(0.5)  # longer than the window: it counts from the first event
    assert not first.done()
    sent = asyncio.get_running_loop().time()
    await stream.send(b"a", b"b")
    batch = await asyncio.wait_for(first, 5.0)
    waited = asyncio.get_running_loop().time() - sent
    assert [e.value for e in batch] == [b"a", b"b"]
    assert 0.25 <= waited < 3.0, waited
    await batches.aclose()


async def test_a_full_batch_goes_at_once_and_holds_the_rest_back(stream: Stream) -> None:
    batches = take.batches(stream.stream, 3, 30.0)
    first = asyncio.ensure_future(batches.__anext__())
    await asyncio.sleep(0.05)
    await stream.send(b"a", b"b", b"c", b"d", b"e")
    batch = await asyncio.wait_for(first, 5.0)  # not the 30 s window
    assert [e.value for e in batch] == [b"a", b"b", b"c"] and stream.acked == []
    second = asyncio.ensure_future(batches.__anext__())
    await asyncio.sleep(0.05)
    assert stream.acked == [b"a", b"b", b"c"]  # the first acked once the second is asked for
    assert not second.done()  # d and e wait out the window
    second.cancel()
    await asyncio.gather(second, return_exceptions=True)
    await batches.aclose()


async def test_a_batch_is_acked_only_once_the_generator_is_closed(stream: Stream) -> None:
    batches = take.batches(stream.stream, 2, 30.0)
    first = asyncio.ensure_future(batches.__anext__())
    await asyncio.sleep(0.05)
    await stream.send(b"a", b"b")
    batch = await asyncio.wait_for(first, 5.0)
    assert [e.value for e in batch] == [b"a", b"b"] and stream.acked == []
    await batches.aclose()
    assert stream.acked == [b"a", b"b"]
    assert stream.stream.enable_acks  # the stream's own acks are back on


async def test_a_batch_whose_loop_body_raised_is_acked(stream: Stream) -> None:
    """As with ``take_events``: the consumer must end the process before the ack."""
    batches = take.batches(stream.stream, 2, 30.0)
    first = asyncio.ensure_future(batches.__anext__())
    await asyncio.sleep(0.05)
    await stream.send(b"a", b"b")
    await asyncio.wait_for(first, 5.0)
    with pytest.raises(RuntimeError):
        await batches.athrow(RuntimeError("half-way"))
    assert stream.acked == [b"a", b"b"]


async def test_events_sent_while_a_batch_is_out_make_the_next_batch(stream: Stream) -> None:
    batches = take.batches(stream.stream, 10, 0.05)
    first = asyncio.ensure_future(batches.__anext__())
    await asyncio.sleep(0.05)
    await stream.send(b"a")
    assert [e.value for e in await asyncio.wait_for(first, 5.0)] == [b"a"]
    await stream.send(b"b", b"c")
    await asyncio.sleep(0.1)  # the stream waits while "a" is out
    second = await asyncio.wait_for(batches.__anext__(), 5.0)
    assert [e.value for e in second] == [b"b", b"c"] and stream.acked == [b"a"]
    await batches.aclose()
    assert stream.acked == [b"a", b"b", b"c"]
