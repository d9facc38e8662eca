"""Signals for ``wait`` nodes: how they are addressed, and whether one is valid.

A signal names the ``signal:`` of one wait node (a spec gives each wait its own) and,
for a wait with ``over``, the item it is for (``index``). Its ``fields`` are a JSON
object holding the wait's declared fields: each required one present, each of its
declared type (JSON Schema's type names: ``integer`` is a number without a fraction,
``number`` any number, neither a boolean), no undeclared one. ``signal_fault`` is the
check the gateway (400) and the coordinator (dead letter) make before a signal reaches
the state machine, which then takes every signal it gets as valid.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from headwater.core import events as ev
from headwater.core.spec import NodeSpec, WorkflowSpec
from headwater.core.spec_kinds import SignalField
from headwater.core.state import WorkflowState


def signal_key(name: str, index: int | None) -> str:
    """Where a signal is kept until its wait takes it: ``name`` or ``name[index]``."""
    return name if index is None else f"{name}[{index}]"


def wait_node(spec: WorkflowSpec, name: str) -> NodeSpec | None:
    """The wait node that waits for signal ``name``, or None."""
    return next((n for n in spec.nodes if n.wait is not None and n.wait.signal == name),
                None)


def timeout_message(spec: NodeSpec, index: int | None) -> str:
    """Why a wait (item ``index``) failed when its timeout passed: ``no signal approval
    within 30 s`` (its error type is ``TimeoutError``)."""
    assert spec.wait is not None and spec.timeout is not None
    return f"no signal {signal_key(spec.wait.signal, index)} within {spec.timeout:g} s"


def signal_fault(state: WorkflowState, signal: ev.SignalSent) -> str | None:
    """Why ``signal`` cannot be taken by the running workflow ``state``, or None.

    Args:
        state: the workflow the signal is for.
        signal: the signal (its ``fields`` should be a JSON object; None counts as
            ``{}``).

    Returns:
        One message naming what is wrong: the workflow's spec is invalid; no wait node
        waits for that signal (the declared signals named); an index for a wait that
        is not per item, none for one that is, or one outside its list; the fields are
        not an object; a required field is missing; a field has the wrong type; a field
        is not declared. None when the signal is valid.
    """
    if state.spec_error:
        return "the workflow's spec is invalid; it waits for no signal"
    node = wait_node(state.spec, signal.name)
    if node is None:
        declared = sorted(n.wait.signal for n in state.spec.nodes if n.wait is not None)
        return (f"no wait node waits for signal {signal.name!r} (this workflow's signals: "
                f"{', '.join(declared) or 'none'})")
    fault = _index_fault(state, node, signal.index)
    if fault:
        return fault
    assert node.wait is not None
    return fields_fault(node.wait.fields, signal.fields, signal.name)


def _index_fault(state: WorkflowState, node: NodeSpec, index: Any) -> str | None:
    assert node.wait is not None
    name = node.wait.signal
    if not node.fans_out:
        if index is not None:
            return f"wait {node.id!r} is not per item: a signal {name!r} takes no index"
        return None
    if index is None:
        return (f"wait {node.id!r} waits once per item of its list: a signal {name!r} "
                "needs the item's index")
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        return f"index must be a non-negative integer, not {index!r}"
    total = state.nodes[node.id].total if node.id in state.nodes else None
    if total is not None and index >= total:
        return (f"index {index} is out of range: wait {node.id!r} waits for "
                f"{total} item{'s' if total != 1 else ''}")
    return None


def fields_fault(declared: tuple[SignalField, ...], fields: Any, name: str) -> str | None:
    """Why ``fields`` do not fit the declared fields of signal ``name``, or None.

    An optional field may be left out or null (the wait's output then holds null for it,
    ``with_optional``).

    Args:
        declared: the wait's declared fields.
        fields: the signal's fields (None counts as ``{}``).
        name: the signal's name, for the message.

    Returns:
        A message naming the field, or None.
    """
    if fields is None:
        fields = {}
    if not isinstance(fields, Mapping):
        return f"signal {name!r}: fields must be an object, not {_json_type(fields)}"
    by_name = {f.name: f for f in declared}
    for field in declared:
        if field.name not in fields:
            if field.required:
                return f"signal {name!r}: missing required field {field.name!r}"
            continue
        if fields[field.name] is None and not field.required:
            continue  # an optional field may be null, as if left out
        if not _CHECKS[field.type](fields[field.name]):
            return (f"signal {name!r}: field {field.name!r} must be {_A[field.type]}, not "
                    f"{_json_type(fields[field.name])}")
    extra = sorted(str(k) for k in fields if k not in by_name)
    if extra:
        known = ", ".join(sorted(by_name)) or "none"
        return f"signal {name!r}: unknown field {extra[0]!r} (declared: {known})"
    return None


def with_optional(declared: tuple[SignalField, ...], fields: Any) -> Any:
    """A valid signal's fields as a wait's output: every optional field it left out is
    there as null, so ``${nodes.<wait>.output.<field>}`` always resolves."""
    if not isinstance(fields, Mapping):
        return {} if fields is None else fields
    return {**{f.name: None for f in declared if not f.required}, **fields}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "number": _is_number,
    "integer": lambda v: _is_number(v) and float(v).is_integer(),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, Mapping),
    "array": lambda v: isinstance(v, list | tuple),
    "any": lambda v: True,
}
"""Declared type -> whether a JSON value is of it (``spec_kinds.SIGNAL_FIELD_TYPES``)."""
_A = {"string": "a string", "number": "a number", "integer": "an integer",
      "boolean": "true or false", "object": "an object", "array": "an array", "any": "any"}


def _json_type(value: Any) -> str:
    """The JSON type of a value, as a message names it."""
    if value is None:
        return "null"
    kinds: list[tuple[type | tuple[type, ...], str]] = [
        (bool, "a boolean"), ((int, float), "a number"), (str, "a string"),
        (Mapping, "an object"), ((list, tuple), "an array")]
    return next((name for kind, name in kinds if isinstance(value, kind)),
                type(value).__name__)
