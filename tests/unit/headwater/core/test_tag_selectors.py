"""Selectors (``headwater.core.selectors``): what a tag is, a node's ``requires`` as the
spec parser takes it, a worker's ``HEADWATER_WORKER_TAGS``, and the subset rule."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.core.selectors import (
    MAX_TAGS,
    missing,
    parse_requires,
    parse_tag_list,
    satisfies,
    tag_fault,
)
from headwater.core.spec import parse_spec, read_spec
from headwater.errors import SpecError


def _spec(**node: Any) -> dict[str, Any]:
    return {"name": "s", "nodes": [{"id": "a", "task": "t", **node}]}


@pytest.mark.parametrize("tag", ["gpu", "a100", "llama-3.1-8b", "org/model:v2", "A_b+c",
                                 "x" * 64])
def test_tags(tag: str) -> None:
    assert tag_fault(tag) is None


@pytest.mark.parametrize("tag", ["", "-gpu", "a b", "gpu,tpu", "é", "x" * 65, 3, None])
def test_no_tags(tag: Any) -> None:
    assert "is no tag" in str(tag_fault(tag))


def test_requires_is_kept_sorted_and_once() -> None:
    faults: list[str] = []
    assert parse_requires(["gpu", "a100", "gpu"], "node 'a'", faults) == ("a100", "gpu")
    assert faults == [] and parse_requires(None, "w", faults) == ()


@pytest.mark.parametrize(("value", "fault"), [
    ([], "requires must be a non-empty list of tags"),
    ("gpu", "requires must be a non-empty list of tags"),
    (["gpu", "a b"], "requires: 'a b' is no tag"),
    ([f"t{i}" for i in range(MAX_TAGS + 1)], f"at most {MAX_TAGS} tags"),
])
def test_bad_requires_names_the_node(value: Any, fault: str) -> None:
    with pytest.raises(SpecError) as e:
        parse_spec(_spec(requires=value))
    assert any(f.startswith("node 'a': ") and fault in f for f in e.value.faults), e.value.faults


def test_task_and_map_nodes_take_requires() -> None:
    spec = parse_spec({"name": "s", "nodes": [
        {"id": "a", "task": "t", "requires": ["gpu", "a100"]},
        {"id": "m", "kind": "map", "task": "t", "over": "${input.xs}", "requires": ["gpu"]},
        {"id": "b", "task": "t"}]})
    assert [n.requires for n in spec.nodes] == [("a100", "gpu"), ("gpu",), ()]
    assert read_spec({"name": "s", "nodes": [{"id": "b", "task": "t"}]}).nodes[0].requires == ()


@pytest.mark.parametrize("node", [
    {"id": "w", "kind": "sleep", "duration": 1},
    {"id": "w", "kind": "wait", "signal": "go"},
    {"id": "w", "kind": "loop", "decide": "d", "tools": ["t"], "max_steps": 2},
])
def test_other_kinds_do_not_take_requires(node: dict[str, Any]) -> None:
    with pytest.raises(SpecError, match="'requires' does not apply"):
        parse_spec({"name": "s", "nodes": [{**node, "requires": ["gpu"]}]})


def test_worker_tags_from_a_list() -> None:
    assert parse_tag_list(" gpu, a100,,gpu ", "HEADWATER_WORKER_TAGS") == ("a100", "gpu")
    assert parse_tag_list("", "HEADWATER_WORKER_TAGS") == ()
    with pytest.raises(ValueError, match=r"HEADWATER_WORKER_TAGS: 'a b' is no tag"):
        parse_tag_list("gpu,a b", "HEADWATER_WORKER_TAGS")
    with pytest.raises(ValueError, match=f"at most {MAX_TAGS} tags"):
        parse_tag_list(",".join(f"t{i}" for i in range(MAX_TAGS + 1)), "X")


def test_a_worker_satisfies_what_it_has_all_of() -> None:
    assert satisfies(("a100", "gpu"), ("gpu",)) and satisfies((), ())
    assert satisfies(("gpu",), ())
    assert not satisfies(("gpu",), ("a100", "gpu")) and not satisfies((), ("gpu",))
    assert missing(("gpu",), ("a100", "gpu", "tpu")) == ("a100", "tpu")
