"""Idempotent submission (``headwater.core.idempotency``)."""

from __future__ import annotations

from machine_harness import run, spec, submit, task

from headwater.core import events as ev
from headwater.core.idempotency import body_hash, conflict

DOC = spec(task("a"), task("b", "a"))


def test_the_hash_is_of_canonical_json_key_order_does_not_matter() -> None:
    assert body_hash({"a": 1, "b": [1, 2]}, {"y": 2, "x": 1}, None) == body_hash(
        {"b": [1, 2], "a": 1}, {"x": 1, "y": 2}, None)
    assert body_hash(DOC, {"x": 1}, None) != body_hash(DOC, {"x": 2}, None)
    assert body_hash(DOC, None, "t1") != body_hash(DOC, None, "t2")


def test_a_new_id_and_a_duplicate_delivery_are_no_conflict() -> None:
    first = submit(DOC, {"x": 1})
    assert conflict(None, first) is None
    state = run([first]).state
    again = ev.WorkflowSubmitted(first.workflow_id, {**DOC}, {"x": 1}, first.at_ms + 5,
                                 first.tenant)
    assert conflict(state, again) is None


def test_another_body_under_the_same_id_is_a_conflict_that_changes_nothing() -> None:
    state = run([submit(DOC, {"x": 1})]).state
    assert state is not None
    before = state.seq
    other = submit(DOC, {"x": 2})
    why = conflict(state, other)
    assert why is not None and "already used by a different submission" in why
    assert run([other], state).history == []  # the state machine ignores it too
    assert state.seq == before and state.input == {"x": 1}
