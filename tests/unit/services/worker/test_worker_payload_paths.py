"""References with a path on the worker: an item of a map over a list stored by
reference, or a field selected through a value stored by reference, resolves to that
part of the blob's value; a path the value has not fails the attempt for good, naming
the path and the blob; the worker's cache (``services/common/blobs/cache.py``) loads a
blob once for many uses, within its bound. The store is an in-memory one."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
import pytest
from test_worker_payloads import MemoryStore, attempt_with
from worker_fakes import QUEUE, dispatch

from headwater import blobs, task
from headwater.core import events as ev
from services.common.blobs.cache import DEFAULT_CACHE_BYTES, BlobCache, Loaded
from services.common.blobs.claims import Claims, cache_bytes_from_env
from services.common.blobs.store import BlobStore
from services.worker.runner import run_attempt

THRESHOLD = 1000
TEXTS = [{"text": f"text {i}", "tags": ["a"]} for i in range(500)]


class Counting(MemoryStore):
    """A store counting the fetches of each blob, each one taking a moment (so that
    attempts running at once overlap)."""

    def __init__(self) -> None:
        super().__init__()
        self.gets: dict[str, int] = {}

    async def get(self, digest: str) -> bytes:
        self.gets[digest] = self.gets.get(digest, 0) + 1
        await asyncio.sleep(0.01)
        return await super().get(digest)


def claims_of(store: MemoryStore, cache: BlobCache | None = None) -> Claims:
    async def opener() -> BlobStore:
        return store
    return Claims(opener, THRESHOLD, cache)


def stored(value: Any, store: MemoryStore) -> dict[str, Any]:
    """``value`` offloaded as a worker does, its blobs in ``store``: its reference."""
    ref, found = blobs.offload(value, THRESHOLD)
    store.data.update(found)
    assert blobs.is_ref(ref)
    return ref


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(2) as executor:
        yield executor


@task(name="unit.paths.text", queue=QUEUE)
def text(text: str) -> str:
    return text


@task(name="unit.paths.spoil", queue=QUEUE)
def spoil(item: dict[str, Any]) -> dict[str, Any]:
    before = copy.deepcopy(item)
    item["text"] = "changed"
    item["tags"].append("changed")
    return before


def item_dispatch(ref: dict[str, Any], *path: str | int, task: str = "unit.paths.text",
                  key: str = "text") -> ev.TaskDispatched:
    return dispatch(task, {key: blobs.select(ref, list(path))})


@pytest.mark.parametrize("cached", [False, True])
async def test_an_item_of_a_list_stored_by_reference_is_resolved_to_its_part(
        pool: ThreadPoolExecutor, cached: bool) -> None:
    store = MemoryStore()
    ref = stored(TEXTS, store)
    assert ref["items"] == len(TEXTS)
    claims = claims_of(store, BlobCache() if cached else None)
    out = await run_attempt(attempt_with(item_dispatch(ref, 7, "text"), pool, claims))
    assert isinstance(out, ev.TaskSucceeded) and out.output == "text 7"
    out = await run_attempt(attempt_with(item_dispatch(ref, "12", "text"), pool, claims))
    assert isinstance(out, ev.TaskSucceeded) and out.output == "text 12"


@pytest.mark.parametrize("cached", [False, True])
async def test_a_path_the_value_has_not_fails_the_attempt_for_good_naming_it(
        pool: ThreadPoolExecutor, cached: bool) -> None:
    store = MemoryStore()
    ref = stored(TEXTS, store)
    claims = claims_of(store, BlobCache() if cached else None)
    out = await run_attempt(attempt_with(item_dispatch(ref, 3, "title"), pool, claims))
    assert isinstance(out, ev.TaskFailed)
    assert not out.retryable and out.error_type == "InputReferenceError"
    assert out.error == ("the task's input could not be resolved: no [3].title in the value "
                         f"stored by reference as blob {ref['$blob']}: no key 'title'")
    out = await run_attempt(attempt_with(item_dispatch(ref, 500), pool, claims))
    assert isinstance(out, ev.TaskFailed) and not out.retryable
    assert "a list of 500 items has no item 500" in out.error


async def test_the_items_of_one_map_load_its_blob_once(pool: ThreadPoolExecutor) -> None:
    store = Counting()
    ref = stored(TEXTS, store)
    cache = BlobCache()
    claims = claims_of(store, cache)
    outs = await asyncio.gather(*(
        run_attempt(attempt_with(item_dispatch(ref, i, "text"), pool, claims))
        for i in range(100)))
    assert [o.output for o in outs if isinstance(o, ev.TaskSucceeded)] == [
        f"text {i}" for i in range(100)]
    assert store.gets == {ref["$blob"]: 1}
    assert cache.loads == 1 and cache.hits == 99


async def test_without_a_cache_each_item_fetches_the_blob(pool: ThreadPoolExecutor) -> None:
    store = Counting()
    ref = stored(TEXTS, store)
    claims = claims_of(store)
    for i in range(3):
        out = await run_attempt(attempt_with(item_dispatch(ref, i, "text"), pool, claims))
        assert isinstance(out, ev.TaskSucceeded)
    assert store.gets == {ref["$blob"]: 3}


async def test_task_code_changing_its_item_does_not_change_the_value_kept(
        pool: ThreadPoolExecutor) -> None:
    store = MemoryStore()
    ref = stored(TEXTS, store)
    claims = claims_of(store, BlobCache())
    for _ in range(2):
        out = await run_attempt(attempt_with(
            item_dispatch(ref, 4, task="unit.paths.spoil", key="item"), pool, claims))
        assert isinstance(out, ev.TaskSucceeded)
        assert out.output == {"text": "text 4", "tags": ["a"]}


async def test_a_path_through_the_references_inside_a_blob() -> None:
    store = MemoryStore()
    value = {f"k{i}": {"text": "z" * 2000, "n": i} for i in range(20)}
    ref = stored(value, store)
    assert len(store.data) == 2  # the object, and the string its fields share
    for cache in (None, BlobCache()):
        claims = claims_of(store, cache)
        assert await claims.resolve(blobs.select(ref, ["k3", "text"])) == "z" * 2000
        assert await claims.resolve(blobs.select(ref, ["k3"])) == value["k3"]


async def test_the_same_blob_twice_in_one_input_gives_two_values() -> None:
    store = MemoryStore()
    ref = stored(TEXTS, store)
    for cache in (None, BlobCache()):
        got = await claims_of(store, cache).resolve(
            {"a": blobs.select(ref, [1]), "b": blobs.select(ref, [1]), "all": ref})
        assert got["a"] == got["b"] == TEXTS[1] and got["all"] == TEXTS
        assert got["a"] is not got["b"]


async def test_a_blob_over_the_bound_is_loaded_for_each_use_and_not_kept() -> None:
    store = Counting()
    ref = stored(TEXTS, store)
    cache = BlobCache(ref["bytes"] - 1)
    claims = claims_of(store, cache)
    for i in range(2):
        assert await claims.resolve(blobs.select(ref, [i, "text"])) == f"text {i}"
    assert store.gets == {ref["$blob"]: 2} and cache.size == 0


def loader(sizes: dict[str, int], calls: list[str]) -> Any:
    async def load(digest: str) -> Loaded:
        calls.append(digest)
        await asyncio.sleep(0)
        return {"d": digest}, sizes[digest]
    return load


async def test_the_cache_keeps_within_its_bound_least_recently_used_out_first() -> None:
    calls: list[str] = []
    load = loader({"a": 40, "b": 40, "c": 40, "big": 101}, calls)
    cache = BlobCache(100)
    await cache.get("a", load)
    await cache.get("b", load)
    await cache.get("a", load)  # a is the most recently used now
    await cache.get("c", load)  # b goes
    assert "a" in cache and "c" in cache and "b" not in cache and cache.size == 80
    await cache.get("big", load)  # over the bound: used, never kept
    assert "big" not in cache and cache.size == 80
    await cache.get("b", load)
    assert calls == ["a", "b", "c", "big", "b"]
    assert cache.loads == 5 and cache.hits == 1
    assert BlobCache().max_bytes == DEFAULT_CACHE_BYTES == 64 * 1024 * 1024


async def test_a_failed_load_fails_each_caller_waiting_on_it_and_is_not_kept() -> None:
    attempts: list[int] = []

    async def load(digest: str) -> Loaded:
        attempts.append(1)
        await asyncio.sleep(0.01)
        raise KeyError(digest)

    cache = BlobCache()
    results = await asyncio.gather(*(cache.get("x", load) for _ in range(3)),
                                   return_exceptions=True)
    assert all(isinstance(r, KeyError) for r in results) and len(attempts) == 1
    with pytest.raises(KeyError):
        await cache.get("x", load)
    assert len(attempts) == 2 and "x" not in cache


async def test_a_cancelled_load_leaves_its_waiters_to_load_it_themselves() -> None:
    started = asyncio.Event()

    async def load(digest: str) -> Loaded:
        started.set()
        await asyncio.sleep(0.05)
        return "v", 1

    cache = BlobCache()
    first = asyncio.create_task(cache.get("x", load))
    await started.wait()
    second = asyncio.create_task(cache.get("x", load))
    await asyncio.sleep(0)
    first.cancel()
    assert await second == ("v", 1)
    with pytest.raises(asyncio.CancelledError):
        await first


def test_the_cache_bound_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEADWATER_BLOB_CACHE_BYTES", raising=False)
    assert cache_bytes_from_env() == DEFAULT_CACHE_BYTES
    monkeypatch.setenv("HEADWATER_BLOB_CACHE_BYTES", "0")
    assert cache_bytes_from_env() == 0
    for bad in ("-1", "lots"):
        monkeypatch.setenv("HEADWATER_BLOB_CACHE_BYTES", bad)
        with pytest.raises(ValueError, match="HEADWATER_BLOB_CACHE_BYTES"):
            cache_bytes_from_env()


def test_a_reference_with_a_path_is_json_as_it_goes() -> None:
    ref = blobs.select(blobs.make_ref("sha256:" + "2" * 64, 9, items=3), [1, "text"])
    assert orjson.loads(orjson.dumps(ref)) == ref and blobs.is_ref(ref)
