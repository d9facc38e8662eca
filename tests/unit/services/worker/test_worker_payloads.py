"""Payloads by reference on the worker (``services/worker/payloads.py``): outputs,
checkpoints and chunks over the threshold go on reports as references, their blobs
stored first under the run's id; inputs and resumed checkpoints are resolved before task
code sees them; a blob that cannot be fetched or stored fails the attempt, retryable.
The store is an in-memory one (a unit test opens no database)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
import pytest
from worker_fakes import QUEUE, Sent, dispatch, make_attempt

from headwater import TaskContext, blobs, task
from headwater.core import events as ev
from services.common.blobs.claims import Claims
from services.common.blobs.store import BlobStore
from services.worker import payloads, reports
from services.worker.attempt import Attempt
from services.worker.lifecycle import live
from services.worker.runner import run_attempt

THRESHOLD = 1000
BIG = "x" * 5000
PROBE: dict[str, Any] = {}


class MemoryStore:
    """A blob store in a dict, noting who stored what, and in which order."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.refs: set[tuple[str, str]] = set()
        self.log: list[str] = []

    async def put(self, digest: str, data: bytes, workflow_id: str) -> None:
        self.data.setdefault(digest, data)
        self.refs.add((workflow_id, digest))
        self.log.append(f"put {digest}")

    async def get(self, digest: str) -> bytes:
        return self.data[digest]

    async def chunks(self, digest: str) -> AsyncIterator[bytes]:
        yield self.data[digest]

    async def size(self, digest: str) -> int | None:
        data = self.data.get(digest)
        return None if data is None else len(data)


class Down:
    """A store that cannot be reached."""

    async def open(self) -> BlobStore:
        raise OSError("connection refused")


def claims_of(store: MemoryStore, threshold: int = THRESHOLD) -> Claims:
    async def opener() -> BlobStore:
        store.log.append("opened")
        return store
    return Claims(opener, threshold)


class Logged(Sent):
    """Sent reports, noted in the store's log as they go out (what came first)."""

    def __init__(self, store: MemoryStore) -> None:
        super().__init__()
        self.store = store

    async def __call__(self, report: ev.Report) -> bool:
        self.store.log.append(f"sent {type(report).__name__}")
        return await super().__call__(report)


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(2) as executor:
        yield executor


def attempt_with(d: ev.TaskDispatched, pool: ThreadPoolExecutor, claims: Claims | None,
                 sent: Sent | None = None, max_output_bytes: int = 1024 * 1024) -> Attempt:
    attempt = make_attempt(d, pool, sent, max_output_bytes)
    attempt.claims = claims
    return attempt


@task(name="unit.claims.echo", queue=QUEUE)
def echo(value: Any) -> Any:
    return value


@task(name="unit.claims.length", queue=QUEUE)
def length(doc: Any) -> int:
    return len(doc)


@task(name="unit.claims.save", queue=QUEUE)
def save(ctx: TaskContext) -> Any:
    ctx.checkpoint({"big": BIG, "n": 1})
    return ctx.last_checkpoint


@task(name="unit.claims.resume", queue=QUEUE)
def resume(ctx: TaskContext) -> int:
    return len(ctx.last_checkpoint["big"])


@task(name="unit.claims.stream", queue=QUEUE)
def stream() -> Iterator[Any]:
    yield "small"
    yield BIG


def ref_to(value: Any, store: MemoryStore, workflow_id: str = "wf") -> dict[str, Any]:
    data = orjson.dumps(value)
    digest = blobs.digest_of(data)
    store.data[digest] = data
    store.refs.add((workflow_id, digest))
    return blobs.make_ref(digest, len(data))


async def test_a_small_output_stays_inline_and_opens_no_store(
        pool: ThreadPoolExecutor) -> None:
    store = MemoryStore()
    out = await run_attempt(attempt_with(dispatch("unit.claims.echo", {"value": "hi"}),
                                         pool, claims_of(store)))
    assert isinstance(out, ev.TaskSucceeded) and out.output == "hi"
    assert store.log == []  # the store was never opened


async def test_a_large_output_goes_by_reference_stored_under_the_run(
        pool: ThreadPoolExecutor) -> None:
    store = MemoryStore()
    value = {"doc": BIG, "label": "a"}
    d = dispatch("unit.claims.echo", {"value": value}, workflow_id="wf-big")
    out = await run_attempt(attempt_with(d, pool, claims_of(store)))
    assert isinstance(out, ev.TaskSucceeded)
    assert out.output["label"] == "a" and blobs.is_ref(out.output["doc"])
    digest = out.output["doc"]["$blob"]
    assert ("wf-big", digest) in store.refs
    assert blobs.resolve(out.output, store.data) == value
    report, data = reports.prepare(out, 1024 * 1024)
    assert report is out and len(data) < THRESHOLD


async def test_no_claims_no_references(pool: ThreadPoolExecutor) -> None:
    out = await run_attempt(attempt_with(dispatch("unit.claims.echo", {"value": BIG}),
                                         pool, None))
    assert isinstance(out, ev.TaskSucceeded) and out.output == BIG


async def test_an_input_by_reference_is_resolved_before_the_call(
        pool: ThreadPoolExecutor) -> None:
    store = MemoryStore()
    d = dispatch("unit.claims.length", {"doc": ref_to(BIG, store)})
    out = await run_attempt(attempt_with(d, pool, claims_of(store)))
    assert isinstance(out, ev.TaskSucceeded) and out.output == len(BIG)


async def test_a_whole_input_by_reference_is_resolved(pool: ThreadPoolExecutor) -> None:
    store = MemoryStore()
    d = dispatch("unit.claims.length", ref_to({"doc": [1, 2, 3]}, store))
    out = await run_attempt(attempt_with(d, pool, claims_of(store)))
    assert isinstance(out, ev.TaskSucceeded) and out.output == 3


async def test_a_missing_blob_fails_the_attempt_retryable_naming_it(
        pool: ThreadPoolExecutor) -> None:
    store = MemoryStore()
    ref = ref_to(BIG, store)
    del store.data[ref["$blob"]]
    out = await run_attempt(attempt_with(dispatch("unit.claims.length", {"doc": ref}),
                                         pool, claims_of(store)))
    assert isinstance(out, ev.TaskFailed)
    assert out.retryable and out.error_type == "BlobMissingError"
    assert ref["$blob"] in out.error


async def test_an_unreachable_store_fails_the_attempt_retryable(
        pool: ThreadPoolExecutor) -> None:
    ref = blobs.make_ref("sha256:" + "1" * 64, 10)
    out = await run_attempt(attempt_with(dispatch("unit.claims.length", {"doc": ref}),
                                         pool, Claims(Down().open, THRESHOLD)))
    assert isinstance(out, ev.TaskFailed) and out.retryable
    assert out.error_type == "BlobStoreError" and "connection refused" in out.error
    out = await run_attempt(attempt_with(dispatch("unit.claims.echo", {"value": BIG}),
                                         pool, Claims(Down().open, THRESHOLD)))
    assert isinstance(out, ev.TaskFailed) and out.retryable
    assert "could not be stored by reference" in out.error


async def test_what_does_not_fit_even_by_reference_fails_saying_so(
        pool: ThreadPoolExecutor) -> None:
    store = MemoryStore()
    value = {"doc": BIG, "rest": "y" * 800}  # the rest stays inline (under the threshold)
    out = await run_attempt(attempt_with(dispatch("unit.claims.echo", {"value": value}),
                                         pool, claims_of(store)))
    assert isinstance(out, ev.TaskSucceeded)
    assert not blobs.is_ref(out.output) and blobs.is_ref(out.output["doc"])
    failed, _ = reports.prepare(out, 700)
    assert isinstance(failed, ev.TaskFailed) and failed.error_type == "OutputTooLargeError"
    assert "even with its parts over HEADWATER_BLOB_THRESHOLD_BYTES stored by reference" \
        in failed.error


async def test_a_large_checkpoint_is_stored_before_its_report(
        pool: ThreadPoolExecutor) -> None:
    store = MemoryStore()
    sent = Logged(store)
    attempt = attempt_with(dispatch("unit.claims.save", workflow_id="wf-ck"), pool,
                           claims_of(store), sent)
    await live(attempt, "w", lambda: None)
    (checkpoint,) = sent.of(ev.TaskCheckpointed)
    assert checkpoint.checkpoint["n"] == 1 and blobs.is_ref(checkpoint.checkpoint["big"])
    digest = checkpoint.checkpoint["big"]["$blob"]
    assert store.log.index(f"put {digest}") < store.log.index("sent TaskCheckpointed")
    assert ("wf-ck", digest) in store.refs
    order = [type(r).__name__ for r in sent]
    assert order.index("TaskCheckpointed") < order.index("TaskSucceeded")


async def test_a_checkpoint_whose_blob_cannot_be_stored_fails_the_call(
        pool: ThreadPoolExecutor) -> None:
    attempt = attempt_with(dispatch("unit.claims.save"), pool,
                           Claims(Down().open, THRESHOLD))
    out = await run_attempt(attempt)
    assert isinstance(out, ev.TaskFailed) and out.error_type == "BlobStoreError"


async def test_a_resumed_checkpoint_by_reference_is_resolved(
        pool: ThreadPoolExecutor) -> None:
    store = MemoryStore()
    state = {"big": ref_to(BIG, store)}
    d = dispatch("unit.claims.resume", attempt=2, checkpoint=state)
    out = await run_attempt(attempt_with(d, pool, claims_of(store)))
    assert isinstance(out, ev.TaskSucceeded) and out.output == len(BIG)


async def test_a_large_chunk_is_stored_before_it_is_streamed(
        pool: ThreadPoolExecutor) -> None:
    store = MemoryStore()
    sent = Logged(store)
    attempt = attempt_with(dispatch("unit.claims.stream"), pool, claims_of(store), sent)
    await live(attempt, "w", lambda: None)
    first, second = sent.of(ev.TaskOutputStreamed)
    assert first.chunk == "small" and blobs.is_ref(second.chunk)
    put = store.log.index(f"put {second.chunk['$blob']}")
    assert store.log[put + 1:].count("sent TaskOutputStreamed") == 1
    (done,) = sent.of(ev.TaskSucceeded)
    assert blobs.resolve(done.output, store.data) == ["small", BIG]


async def test_a_decision_keeps_its_shape_and_sends_its_values_by_reference() -> None:
    store = MemoryStore()
    decision = {"steps": [{"op": "task", "name": "t", "queue": "q", "step": 0,
                           "input": {"doc": BIG, "k": 1}},
                          {"op": "sleep", "seconds": 1.0, "step": 1}],
                "finish": [BIG], "chunks": ["c", BIG]}
    sent = await payloads.offload_decision(claims_of(store), decision, None, "wf")
    assert sent["steps"][0]["op"] == "task" and sent["steps"][0]["input"]["k"] == 1
    assert blobs.is_ref(sent["steps"][0]["input"]["doc"])
    assert sent["steps"][1] == decision["steps"][1]
    assert blobs.is_ref(sent["finish"][0]) and sent["chunks"][0] == "c"
    assert blobs.is_ref(sent["chunks"][1])
    assert blobs.resolve(sent, store.data) == decision
    small = {"steps": [], "finish": 1}
    assert await payloads.offload_decision(claims_of(store), small, None, "wf") is small


async def test_resolving_a_value_without_references_touches_no_store() -> None:
    value = {"a": [1, {"b": "c"}]}
    assert await payloads.resolve(Claims(Down().open, THRESHOLD), value) is value
    with pytest.raises(payloads.BlobStoreError):
        await payloads.resolve(None, {"a": blobs.make_ref("sha256:" + "2" * 64, 3)})


def test_checkpoints_from_the_loop_keep_their_order(pool: ThreadPoolExecutor) -> None:
    """A large checkpoint not awaited, then a small one: sent in that order."""
    async def main() -> list[Any]:
        store = MemoryStore()
        sent = Sent()
        attempt = attempt_with(dispatch("unit.claims.echo", {"value": 1}), pool,
                               claims_of(store), sent)
        first = attempt.checkpoint({"big": BIG})
        await attempt.checkpoint({"i": 2})
        await first
        await attempt.channel.close()
        return [r.checkpoint for r in sent.of(ev.TaskCheckpointed)]

    states = asyncio.run(main())
    assert blobs.is_ref(states[0]["big"]) and states[1] == {"i": 2}
