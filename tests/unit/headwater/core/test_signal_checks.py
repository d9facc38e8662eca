"""``signal_fault``: what the gateway (400) and the coordinator (dead letter) refuse,
each fault named; and the addressing of signals."""

from __future__ import annotations

from typing import Any

import pytest
from machine_harness import T0, WF, ok, run, spec, submit, task

from headwater.core import events as ev
from headwater.core.kinds.wait.records import SignalField
from headwater.core.signals import fields_fault, signal_fault, signal_key
from headwater.core.state import WorkflowState

FIELDS = {"approved": "boolean", "count": "integer", "score": "number", "who": "string",
          "meta": "object", "tags": "array", "extra": "any",
          "note": {"type": "string", "required": False}}
VALID = {"approved": True, "count": 3, "score": 0.5, "who": "ann", "meta": {"k": 1},
         "tags": ["a"], "extra": None}
DOC = spec(task("list"),
           {"id": "approve", "kind": "wait", "signal": "approval", "fields": FIELDS},
           {"id": "per_item", "kind": "wait", "signal": "review", "needs": ["list"],
            "over": "${nodes.list.output}"})


def state(expanded: bool = False) -> WorkflowState:
    inputs: list[ev.Input] = [submit(DOC)]
    if expanded:
        inputs.append(ok("list", ["x", "y"]))
    result = run(inputs)
    assert result.state is not None
    return result.state


def sig(name: str = "approval", fields: Any = None, index: Any = None,
        sid: str = "s1") -> ev.SignalSent:
    return ev.SignalSent(WF, name, T0, index, sid, VALID if fields is None else fields)


def without(key: str) -> dict[str, Any]:
    return {k: v for k, v in VALID.items() if k != key}


FAULTS: list[tuple[str, ev.SignalSent, bool, str | None]] = [
    ("valid", sig(), False, None),
    ("valid, the optional field given", sig(fields={**VALID, "note": "ok"}), False, None),
    ("valid per item", sig("review", {}, index=1), True, None),
    ("valid per item before the list exists", sig("review", {}, index=7), False, None),
    ("undeclared signal", sig("nope"), False,
     "no wait node waits for signal 'nope' (this workflow's signals: approval, review)"),
    ("missing required field", sig(fields=without("approved")), False,
     "signal 'approval': missing required field 'approved'"),
    ("wrong type: boolean", sig(fields={**VALID, "approved": "yes"}), False,
     "signal 'approval': field 'approved' must be true or false, not a string"),
    ("wrong type: integer with a fraction", sig(fields={**VALID, "count": 1.5}), False,
     "field 'count' must be an integer, not a number"),
    ("wrong type: a boolean is no number", sig(fields={**VALID, "score": True}), False,
     "field 'score' must be a number, not a boolean"),
    ("wrong type: string", sig(fields={**VALID, "who": 7}), False,
     "field 'who' must be a string, not a number"),
    ("wrong type: object", sig(fields={**VALID, "meta": []}), False,
     "field 'meta' must be an object, not an array"),
    ("wrong type: array", sig(fields={**VALID, "tags": "a"}), False,
     "field 'tags' must be an array, not a string"),
    ("wrong type: optional string", sig(fields={**VALID, "note": 3}), False,
     "field 'note' must be a string, not a number"),
    ("null for an optional field", sig(fields={**VALID, "note": None}), False, None),
    ("undeclared field", sig(fields={**VALID, "colour": "red"}), False,
     "signal 'approval': unknown field 'colour' (declared: approved, count, extra, meta, "
     "note, score, tags, who)"),
    ("fields not an object", sig(fields=[1]), False,
     "signal 'approval': fields must be an object, not an array"),
    ("index on a wait that is not per item", sig(index=0), False,
     "wait 'approve' is not per item: a signal 'approval' takes no index"),
    ("no index on a per-item wait", sig("review", {}), True,
     "wait 'per_item' waits once per item of its list: a signal 'review' needs the "
     "item's index"),
    ("index out of range", sig("review", {}, index=2), True,
     "index 2 is out of range: wait 'per_item' waits for 2 items"),
    ("negative index", sig("review", {}, index=-1), False,
     "index must be a non-negative integer, not -1"),
    ("boolean index", sig("review", {}, index=True), False,
     "index must be a non-negative integer, not True"),
    # -- what PostgreSQL and the projection must be able to hold -----------------------
    ("no signal id", sig(sid=""), False, None),
    ("a signal id of 200 characters", sig(sid="x" * 200), False, None),
    ("a signal id of letters of any script", sig(sid="mail-42 ✓ é"), False, None),
    ("a signal id over 200 characters", sig(sid="x" * 100_000), False,
     "signal_id must be at most 200 characters, not 100000"),
    ("a signal id with U+0000", sig(sid="a\x00b"), False,
     "signal_id must not contain control characters (U+0000 at 1)"),
    ("a signal id with a newline", sig(sid="a\nb"), False,
     "signal_id must not contain control characters (U+000A at 1)"),
    ("a signal id with an escape", sig(sid="\x1b[31m"), False,
     "signal_id must not contain control characters (U+001B at 0)"),
    ("a signal id with a C1 control", sig(sid="a\x85"), False, "(U+0085 at 1)"),
    ("a signal id with a lone surrogate", sig(sid="a\ud800"), False,
     "signal_id must not contain a lone surrogate (U+D800 at 1)"),
    ("a name with U+0000", sig("appr\x00oval"), False,
     "signal name must not contain control characters (U+0000 at 4)"),
    ("a field with U+0000", sig(fields={**VALID, "who": "a\x00"}), False,
     "signal 'approval': fields.who: contains U+0000 (PostgreSQL cannot store it)"),
    ("a field with U+0000 deep inside", sig(fields={**VALID, "meta": {"k": [1, {"x": "\x00"}]}}),
     False, "fields.meta.k[1].x: contains U+0000"),
    ("a field name with U+0000", sig(fields={**VALID, "a\x00": 1}), False,
     "signal 'approval': fields: a key contains U+0000"),
    ("a nested key with U+0000", sig(fields={**VALID, "extra": {"\x00": 1}}), False,
     "fields.extra: a key contains U+0000"),
]


@pytest.mark.parametrize(("name", "signal", "expanded", "fault"), FAULTS,
                         ids=[f[0] for f in FAULTS])
def test_signal_fault(name: str, signal: ev.SignalSent, expanded: bool,
                      fault: str | None) -> None:
    got = signal_fault(state(expanded), signal)
    if fault is None:
        assert got is None
    else:
        assert got is not None and fault in got, got


def test_a_workflow_with_an_invalid_spec_waits_for_no_signal() -> None:
    result = run([submit({"name": "bad", "nodes": []})])
    assert result.state is not None
    assert signal_fault(result.state, sig()) == (
        "the workflow's spec is invalid; it waits for no signal")


def test_no_fields_count_as_an_empty_object() -> None:
    declared = (SignalField("note", "string", required=False),)
    assert fields_fault(declared, None, "s") is None
    assert fields_fault((SignalField("ok", "boolean"),), None, "s") == (
        "signal 's': missing required field 'ok'")


def test_deeply_nested_fields_are_checked_without_recursion() -> None:
    deep: Any = "\x00"
    for _ in range(5000):
        deep = [deep]
    got = signal_fault(state(), sig(fields={**VALID, "extra": deep}))
    assert got is not None and got.endswith("contains U+0000 (PostgreSQL cannot store it)")


def test_signal_keys() -> None:
    assert signal_key("approval", None) == "approval"
    assert signal_key("approval", 3) == "approval[3]"


@pytest.mark.parametrize("kind", ["string", "number", "boolean", "array", "object"])
def test_a_field_sent_by_reference_fits_any_declared_type(kind: str) -> None:
    ref = {"$blob": "sha256:" + "a" * 64, "bytes": 300_000}
    assert fields_fault((SignalField("doc", kind),), {"doc": ref}, "s") is None
    # not a reference: checked as before
    assert fields_fault((SignalField("doc", "boolean"),), {"doc": {"$blob": 1}}, "s") is not None
