"""An attempt's log (``services.worker.task_logs``): what task code logs (``ctx.log``, any
logger) and prints, in the body and in its threads, goes to its own attempt's log and to
no other; the worker's own lines never do; bounds; batches sent before the outcome."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from worker_fakes import (
    QUEUE,
    TP0,
    FakeConsumer,
    FakeProducer,
    dispatch,
    outcomes,
    records,
    serving,
    wait_until,
)
from worker_fakes import settings as worker_settings

from headwater import codec, task
from headwater.context import TaskContext
from headwater.core import events as ev
from headwater.log_lines import LogLine, TaskLogLines
from services.worker.app import Worker
from services.worker.task_logs import capture
from services.worker.task_logs.attempt_log import AttemptLog, Limits, cut

KEY = ("wf", "n", None, 1)


class Shipped(list[TaskLogLines]):
    """The batches an attempt's log sent."""

    async def __call__(self, lines: TaskLogLines) -> None:
        self.append(lines)

    def lines(self) -> list[LogLine]:
        numbered = [(b.first_line + i, line) for b in self for i, line in enumerate(b.lines)]
        assert [n for n, _ in numbered] == list(range(1, len(numbered) + 1))
        return [line for _, line in numbered]

    def messages(self) -> list[tuple[str, str, str]]:
        return [(x.stream, x.logger, x.message) for x in self.lines()]


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """The capture installed, the root logger at INFO (inside a test: pytest puts its own
    sys.stdout back between a fixture and the test)."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.INFO)
    uninstall = capture.install()
    try:
        yield
    finally:
        uninstall()
        root.setLevel(level)


def test_a_long_line_is_cut_with_a_note() -> None:
    assert cut("short", 10) == "short"
    assert cut("é" * 10, 5) == "éé… [cut: 16 more bytes]"  # 20 bytes, 4 kept


async def test_lines_are_bounded_and_the_last_says_what_was_dropped() -> None:
    shipped = Shipped()
    attempt_log = AttemptLog(KEY, Limits(line_bytes=8, max_lines=3, batch_lines=2), shipped)
    attempt_log.start()
    for i in range(5):
        attempt_log.add("INFO", "log", "x", f"line {i} is long")
    await attempt_log.close()
    attempt_log.add("INFO", "log", "x", "after the end")  # not kept
    messages = [m for _, _, m in shipped.messages()]
    assert messages[:3] == ["line 0 i… [cut: 6 more bytes]", "line 1 i… [cut: 6 more bytes]",
                            "line 2 i… [cut: 6 more bytes]"]
    assert messages[3].startswith("2 more lines (28 bytes) dropped")
    assert len(messages) == 4 and [len(b.lines) for b in shipped] == [2, 2]

    by_bytes = Shipped()
    small = AttemptLog(KEY, Limits(max_bytes=10), by_bytes)
    small.add("INFO", "log", "x", "123456")
    small.add("INFO", "log", "x", "123456")
    await small.close()
    assert next(m for _, _, m in by_bytes.messages()) == "123456"
    assert by_bytes.messages()[1][2].startswith("1 more lines (6 bytes) dropped")


async def test_writes_become_lines_at_their_line_ends() -> None:
    shipped = Shipped()
    attempt_log = AttemptLog(KEY, Limits(), shipped)
    attempt_log.write("stdout", "a")
    attempt_log.write("stdout", "b\r\nc\n\nd")
    attempt_log.write("stderr", "oops\n")
    await attempt_log.close()
    assert [(x.stream, x.level, x.message) for x in shipped.lines()] == [
        ("stdout", "INFO", "ab"), ("stdout", "INFO", "c"), ("stdout", "INFO", ""),
        ("stderr", "ERROR", "oops"), ("stdout", "INFO", "d")]


async def test_a_batch_goes_out_while_the_attempt_runs() -> None:
    shipped = Shipped()
    attempt_log = AttemptLog(KEY, Limits(flush_s=0.05), shipped)
    attempt_log.start()
    attempt_log.add("INFO", "log", "x", "early")
    await wait_until(lambda: len(shipped) == 1, 2)
    await attempt_log.close()
    assert shipped.messages() == [("log", "x", "early")]


async def test_capture_routes_by_attempt_across_tasks_and_threads() -> None:
    logs = {name: (AttemptLog((name, "n", None, 1), Limits(), Shipped()))
            for name in ("a", "b")}
    executor = ThreadPoolExecutor(2)

    def in_thread(name: str) -> None:
        logging.getLogger("lib.thread").warning("from %s's thread", name)
        print(f"{name} printed in a thread")

    async def body(name: str) -> None:
        capture.CURRENT.set(logs[name])
        for i in range(3):
            logging.getLogger("lib").info("%s says %d", name, i)
            print(f"{name} prints {i}")
            print(f"{name} complains", file=sys.stderr)
            logging.getLogger("headwater.worker").info("the worker's own line")
            await asyncio.sleep(0)
        ctx = contextvars.copy_context()
        await asyncio.wrap_future(executor.submit(ctx.run, in_thread, name))
        try:
            raise ValueError("bad")
        except ValueError:
            logging.getLogger("lib").exception("%s failed", name)

    with installed():
        logging.getLogger("lib").warning("outside any attempt")
        await asyncio.gather(asyncio.create_task(body("a")), asyncio.create_task(body("b")))
    executor.shutdown()
    for name, attempt_log in logs.items():
        await attempt_log.close()
        shipped = attempt_log._ship
        assert isinstance(shipped, Shipped)
        got = shipped.messages()
        other = "b" if name == "a" else "a"
        assert all(other not in m.split(" ")[0] for _, _, m in got), got
        assert ("log", "lib", f"{name} says 2") in got
        assert ("stdout", "", f"{name} prints 1") in got
        assert ("stderr", "", f"{name} complains") in got
        assert ("log", "lib.thread", f"from {name}'s thread") in got
        assert ("stdout", "", f"{name} printed in a thread") in got
        failed = [m for s, lg, m in got if m.startswith(f"{name} failed")]
        assert len(failed) == 1 and "Traceback" in failed[0] and "ValueError: bad" in failed[0]
        assert not any("worker's own" in m or "outside" in m for _, _, m in got)
        assert len(got) == 3 * 3 + 3


@task(name="unit.logs.noisy", queue=QUEUE)
def noisy(ctx: TaskContext, n: int) -> None:
    """Log with ``ctx.log`` and a logger, print to both streams, then fail."""
    ctx.log.info("step %d", n)
    logging.getLogger("unit.lib").warning("careful")
    print("to stdout")
    print("to stderr", file=sys.stderr)
    raise RuntimeError("no luck")


async def test_the_worker_sends_an_attempts_lines_before_its_outcome() -> None:
    consumer = FakeConsumer({TP0: records(dispatch("unit.logs.noisy", {"n": 7},
                                                   workflow_id="w7"))})
    producer = FakeProducer()
    worker = Worker(worker_settings(concurrency=1))
    with installed():
        async with serving(worker, consumer, producer):
            await wait_until(lambda: "w7" in outcomes(producer))
    sent = [(t, codec.decode(v), k) for t, v, k in producer.sent]
    logs = [(t, r, k) for t, r, k in sent if isinstance(r, TaskLogLines)]
    assert {t for t, _, _ in logs} == {"t.logs"} and {k for _, _, k in logs} == {b"w7"}
    lines = [line for _, r, _ in logs for line in r.lines]
    assert [(x.level, x.stream, x.logger, x.message) for x in lines] == [
        ("INFO", "log", "headwater.task", "step 7"),
        ("WARNING", "log", "unit.lib", "careful"),
        ("INFO", "stdout", "", "to stdout"),
        ("ERROR", "stderr", "", "to stderr")]
    outcome_at = next(i for i, (_, r, _) in enumerate(sent) if isinstance(r, ev.TaskFailed))
    last_line = max(i for i, (_, r, _) in enumerate(sent)
                    if isinstance(r, TaskLogLines) and r.lines)
    assert last_line < outcome_at
    assert sum(r.last for _, r, _ in logs) == 1


@task(name="unit.logs.chatty", queue=QUEUE)
def chatty(n: int) -> int:
    """Print and log ``n`` a few times, yielding the thread in between."""
    for i in range(5):
        print(f"attempt {n} says {i}")
        logging.getLogger("unit.chatty").info("attempt %d logs %d", n, i)
        time.sleep(0.01)
    return n


async def test_concurrent_sync_attempts_keep_to_their_own_lines() -> None:
    consumer = FakeConsumer({TP0: records(*(dispatch("unit.logs.chatty", {"n": n},
                                                     workflow_id=f"c{n}") for n in (1, 2, 3)))})
    producer = FakeProducer()
    worker = Worker(worker_settings(concurrency=3))
    with installed():
        async with serving(worker, consumer, producer):
            await wait_until(lambda: {"c1", "c2", "c3"} <= set(outcomes(producer))
                             and not worker.running)  # each log's end acknowledged
    batches = [codec.decode(v) for t, v, _ in producer.sent if t == "t.logs"]
    for n in (1, 2, 3):
        mine = [b for b in batches if b.workflow_id == f"c{n}"]
        assert mine[-1].last and all(not b.last for b in mine[:-1])
        messages = [x.message for b in mine for x in b.lines]
        assert sorted(messages) == sorted([f"attempt {n} says {i}" for i in range(5)]
                                          + [f"attempt {n} logs {i}" for i in range(5)])


async def test_a_line_with_a_lone_surrogate_is_kept_encodable_with_the_lines_beside_it(
        ) -> None:
    shipped = Shipped()
    attempt_log = AttemptLog(KEY, Limits(), shipped)
    attempt_log.write("stdout", "before\n\udc80bad\nafter\n")
    attempt_log.add("INFO", "log", "x", "logged \ud800")
    await attempt_log.close()
    assert [x.message for x in shipped.lines()] == ["before", "?bad", "after", "logged ?"]
    for batch in shipped:
        codec.decode(codec.encode(batch))  # every batch encodes (none dropped)


async def test_a_long_printed_line_is_one_line_not_two() -> None:
    """``print`` of a line over the bound writes the text, then its end: the text is kept
    (cut) when it passes the bound, and its end makes no empty line after it."""
    shipped = Shipped()
    attempt_log = AttemptLog(KEY, Limits(line_bytes=8), shipped)
    for _ in range(3):
        attempt_log.write("stdout", "x" * 20)
        attempt_log.write("stdout", "\n")
    attempt_log.write("stdout", "short\n\n")
    await attempt_log.close()
    assert [x.message for x in shipped.lines()] == (
        ["xxxxxxxx… [cut: 12 more bytes]"] * 3 + ["short", ""])


async def test_closing_while_a_batch_is_being_sent_loses_none_of_its_records() -> None:
    """The flusher sends a flush's records one at a time; ``close`` stopping it between
    two of them must not lose the rest (the last record says the log is whole)."""
    gate = asyncio.Event()
    shipped = Shipped()

    async def slow(lines: TaskLogLines) -> None:
        await gate.wait()
        shipped.append(lines)

    attempt_log = AttemptLog(KEY, Limits(batch_lines=2, flush_s=0.0), slow)
    attempt_log.start()
    for i in range(6):
        attempt_log.add("INFO", "log", "x", f"line {i}")
    await asyncio.sleep(0.05)  # the flusher took the six lines and waits on its first send
    closing = asyncio.create_task(attempt_log.close())
    await asyncio.sleep(0.05)
    gate.set()
    await closing  # the batch on its way acknowledged first
    assert [m for _, _, m in shipped.messages()] == [f"line {i}" for i in range(6)]
    await attempt_log.sent()  # no line was left for close: its end went alone
    assert shipped[-1].last and sum(b.last for b in shipped) == 1


def test_task_code_closing_sys_stdout_closes_nothing() -> None:
    with installed():
        proxy = sys.stdout
        assert isinstance(proxy, capture.StreamProxy)
        proxy.close()
        assert not proxy.original.closed
        print("still writable")


class HeldEnd(Shipped):
    """Ships at once, but holds a record saying the log is whole until ``gate`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()

    async def __call__(self, lines: TaskLogLines) -> None:
        if lines.last:
            await self.gate.wait()
        self.append(lines)


async def test_with_no_line_left_the_end_goes_alone_and_close_does_not_wait_for_it() -> None:
    shipped = HeldEnd()
    attempt_log = AttemptLog(KEY, Limits(), shipped)
    attempt_log.start()
    await asyncio.wait_for(attempt_log.close(), 1)  # the end is held, close returns
    waiting = asyncio.create_task(attempt_log.sent())
    await asyncio.sleep(0.05)
    assert not waiting.done() and list(shipped) == []
    shipped.gate.set()
    await asyncio.wait_for(waiting, 1)
    assert [(b.first_line, b.lines, b.last) for b in shipped] == [(1, (), True)]


async def test_lines_left_for_close_carry_the_end_and_close_waits_for_them() -> None:
    shipped = HeldEnd()
    attempt_log = AttemptLog(KEY, Limits(flush_s=10.0), shipped)
    attempt_log.start()
    for i in range(3):  # they wait for close
        attempt_log.add("INFO", "log", "x", f"line {i}")
    closing = asyncio.create_task(attempt_log.close())
    await asyncio.sleep(0.05)
    assert not closing.done()  # its last lines are not acknowledged yet
    shipped.gate.set()
    await asyncio.wait_for(closing, 1)
    await asyncio.wait_for(attempt_log.sent(), 0.1)  # nothing went alone
    assert [(b.first_line, len(b.lines), b.last) for b in shipped] == [(1, 3, True)]


class HeldEnds(FakeProducer):
    """A broker that acknowledges no record saying a log is whole, sent without lines,
    until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    async def send_and_wait(self, topic: str, value: bytes | None = None,
                            key: bytes | None = None, partition: int | None = None,
                            timestamp_ms: int | None = None, headers: Any = None) -> None:
        record = codec.decode(value) if value is not None else None
        if isinstance(record, TaskLogLines) and record.last and not record.lines:
            await self.release.wait()
        await super().send_and_wait(topic, value, key, partition, timestamp_ms, headers)


async def test_an_attempt_that_logged_nothing_reports_before_its_logs_end_is_acknowledged(
        ) -> None:
    """Its outcome does not wait for the end of its log; its slot does."""
    consumer = FakeConsumer({TP0: records(dispatch("unit.ok", workflow_id="a"),
                                          dispatch("unit.ok", workflow_id="b"))})
    producer = HeldEnds()
    worker = Worker(worker_settings(concurrency=1))
    with installed():
        async with serving(worker, consumer, producer):
            await wait_until(lambda: "a" in outcomes(producer))
            await asyncio.sleep(0.1)
            assert "b" not in outcomes(producer)  # the slot waits for a's end
            assert not [v for t, v, _ in producer.sent if t == "t.logs"]
            producer.release.set()
            await wait_until(lambda: "b" in outcomes(producer) and not worker.running)
    ends = [codec.decode(v) for t, v, _ in producer.sent if t == "t.logs"]
    assert [(b.workflow_id, b.first_line, b.lines, b.last) for b in ends] == [
        ("a", 1, (), True), ("b", 1, (), True)]
