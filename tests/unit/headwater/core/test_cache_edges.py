"""Task result caching at its edges: keys resolved through a map over a list stored by
reference, and keys that are a number or a text of the same digits."""

from __future__ import annotations

from typing import Any

from headwater.blobs import make_ref
from headwater.core import events as ev
from headwater.core.caching import cache_id
from headwater.core.machine import step

T0 = 1_700_000_000_000
DIGEST = "sha256:" + "cd" * 32


def _bodies(spec: dict[str, Any], data: Any) -> list[Any]:
    result = step(None, ev.WorkflowSubmitted("w1", spec, data, T0, "acme"))
    return [e.body for e in result.events]


def test_a_cached_map_over_a_list_stored_by_reference_looks_each_item_up() -> None:
    spec = {"name": "m", "nodes": [
        {"id": "m", "kind": "map", "task": "t", "over": "${input.docs}",
         "input": {"doc": "${item}"}, "cache": {"key": "${item}"}}]}
    bodies = _bodies(spec, {"docs": make_ref(DIGEST, 1000, items=3)})
    assert not [b for b in bodies if isinstance(b, ev.WorkflowFailed)], bodies
    looked = [b for b in bodies if isinstance(b, ev.TaskLookedUp)]
    assert [b.index for b in looked] == [0, 1, 2]
    # each item's key names its part of the blob: the same item of the same blob is the
    # same key in any run, two items never share one
    assert len({b.cache for b in looked}) == 3
    assert all(DIGEST in b.key and f"[{b.index}]" in b.key for b in looked)


def test_a_cached_maps_key_through_an_item_stored_by_reference() -> None:
    spec = {"name": "m", "nodes": [
        {"id": "m", "kind": "map", "task": "t", "over": "${input.docs}",
         "input": {"doc": "${item}"}, "cache": {"key": "${item.id}"}}]}
    bodies = _bodies(spec, {"docs": make_ref(DIGEST, 1000, items=2)})
    looked = [b for b in bodies if isinstance(b, ev.TaskLookedUp)]
    assert [b.index for b in looked] == [0, 1], bodies
    assert '"path":[1,"id"]' in looked[1].key


KEYED = {"name": "k", "nodes": [{"id": "a", "task": "t", "input": {"n": "${input.n}"},
                                 "cache": {"key": "${input.n}"}}]}


def _cache_of(n: Any) -> str:
    (looked,) = [b for b in _bodies(KEYED, {"n": n}) if isinstance(b, ev.TaskLookedUp)]
    return looked.cache


def test_a_number_and_a_text_of_the_same_digits_are_different_keys() -> None:
    # the task gets 1 or "1" as its input: one's output is not the other's
    assert _cache_of(1) != _cache_of("1")
    assert _cache_of(True) != _cache_of("true")
    assert _cache_of({"a": 1}) != _cache_of('{"a":1}')
    assert _cache_of([1, 2]) != _cache_of("[1,2]")
    # the same value is the same key, whatever order its fields came in
    assert _cache_of({"a": 1, "b": 2}) == _cache_of({"b": 2, "a": 1})
    assert _cache_of("doc-1") == cache_id("acme", "t", "doc-1")  # a text's id as before


def test_a_key_into_an_item_that_lacks_it_fails_the_item_naming_the_cache() -> None:
    spec = {"name": "m", "nodes": [
        {"id": "m", "kind": "map", "task": "t", "over": "${input.docs}",
         "input": {"doc": "${item}"}, "cache": {"key": "${item.x}"},
         "continue_on_error": True}]}
    bodies = _bodies(spec, {"docs": [{"x": 1}, {"y": 2}]})
    (failed,) = [b for b in bodies if isinstance(b, ev.TaskFailed) and b.index == 1]
    assert failed.error == "m[1]: cache: key ${item.x}: no key 'x'", failed
    assert [b.index for b in bodies if isinstance(b, ev.TaskLookedUp)] == [0]
