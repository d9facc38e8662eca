"""A child started by ``wf.call`` of a ``@workflow`` records the code version this
process names for it (``activation.CODE_VERSION``, which a worker fills with the rule of
its announcements), so that its activations travel in that version's lane; a child named
by a definition keeps the spec the gateway gave. A history whose child step recorded no
version (written before children were pinned), or another one, still replays: a replay
compares a step by its op and name."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from headwater import WorkflowContext, workflow
from headwater.errors import NondeterminismError
from headwater.workflows import activation, instances
from headwater.workflows.decorator import WorkflowInfo, info_of

KID_SPEC = {"name": "tests.pin.spec", "nodes": [
    {"id": "d", "task": "wt.double", "input": {"x": "${input.v}"}}]}


@workflow(name="tests.pin.kid")
async def kid(wf: WorkflowContext, x: int) -> int:
    return int(await wf.run("wt.double", x=x))


@workflow(name="tests.pin.parent")
async def parent(wf: WorkflowContext, how: str) -> Any:
    if how == "function":
        return await wf.call(kid, {"x": 1})
    if how == "name":
        return await wf.call("tests.pin.kid", {"x": 1})
    if how == "definition":
        return await wf.call("tests.pin.spec", {"v": 1})
    raise ValueError(how)


@workflow(name="tests.pin.other_kid")
async def other_kid(wf: WorkflowContext) -> str:
    return "other"


@workflow(name="tests.pin.two")
async def two(wf: WorkflowContext) -> list[Any]:
    """A child, then another child, then the end."""
    return [await wf.call(kid, {"x": 2}), await wf.call(other_kid)]


def _info(fn: Any) -> WorkflowInfo:
    info = info_of(fn)
    assert info is not None
    return info


@pytest.fixture
def pinned() -> Iterator[None]:
    """This process names ``v-<workflow>`` for each ``@workflow``, as a worker does."""
    activation.CODE_VERSION[:] = [lambda info: f"v-{info.name}"]
    try:
        yield
    finally:
        activation.CODE_VERSION.clear()


async def _resolve(name: str) -> tuple[dict[str, Any], int | None]:
    assert name == "tests.pin.spec"
    return dict(KID_SPEC), 4


def _first(how: str) -> dict[str, Any]:
    """The child step activation 0 of ``tests.pin.parent`` decides."""
    payload = {"workflow_id": f"pin-{how}", "input": {"how": how}, "activation": 0,
               "times": [0], "through": [0], "steps": [], "results": []}
    decision = asyncio.run(instances.activate(_info(parent), payload, resolve=_resolve,
                                               cache=False))
    [step] = decision["steps"]
    assert step["op"] == "child", decision
    return dict(step)


def _code_node(spec: dict[str, Any]) -> dict[str, Any]:
    [node] = spec["nodes"]
    return dict(node)


@pytest.mark.parametrize("how", ["function", "name"])
def test_a_child_of_a_workflow_records_the_version_named_for_it(pinned: None,
                                                                how: str) -> None:
    step = _first(how)
    assert step["workflow"] == _info(kid).spec("v-tests.pin.kid")
    assert _code_node(step["workflow"])["code_version"] == "v-tests.pin.kid"
    assert step["definition"] == "tests.pin.kid" and "definition_version" not in step


def test_without_a_rule_a_child_records_no_version() -> None:
    assert activation.CODE_VERSION == []
    step = _first("function")
    assert step["workflow"] == _info(kid).spec()
    assert "code_version" not in _code_node(step["workflow"])


def test_a_child_named_by_a_definition_keeps_the_gateway_s_spec(pinned: None) -> None:
    step = _first("definition")
    assert step["workflow"] == KID_SPEC
    assert (step["definition"], step["definition_version"]) == ("tests.pin.spec", 4)


def _second(recorded: dict[str, Any]) -> dict[str, Any]:
    """Activation 1 of ``tests.pin.two`` over a history whose activation 0 issued the
    child step ``recorded``, which gave 2."""
    payload = {"workflow_id": "pin-two", "input": {}, "activation": 1,
               "times": [0, 1_000], "through": [0, 1], "steps": [{**recorded, "act": 0}],
               "results": [[0, {"value": 2}]]}
    return asyncio.run(instances.activate(_info(two), payload, cache=False))


@pytest.mark.parametrize("version", [None, "an-older-version"])
def test_a_child_recorded_without_this_version_still_replays(pinned: None,
                                                            version: str | None) -> None:
    recorded = {"op": "child", "name": "tests.pin.kid", "input": {"x": 2},
                "workflow": _info(kid).spec(version), "definition": "tests.pin.kid",
                "step": 0}
    decision = _second(recorded)
    [step] = decision["steps"]
    assert (step["op"], step["name"], step["step"]) == ("child", "tests.pin.other_kid", 1)
    assert _code_node(step["workflow"])["code_version"] == "v-tests.pin.other_kid"


def test_a_replay_still_sees_another_child(pinned: None) -> None:
    recorded = {"op": "child", "name": "tests.pin.other_kid", "input": None,
                "workflow": _info(other_kid).spec(), "definition": "tests.pin.other_kid"}
    with pytest.raises(NondeterminismError):
        _second(recorded)
