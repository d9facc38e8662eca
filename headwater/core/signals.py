"""Signals for ``wait`` nodes: how they are addressed, and whether one is valid.

A signal names the ``signal:`` of one wait node (a spec gives each wait its own) and,
for a wait with ``over``, the item it is for (``index``). Its ``fields`` are a JSON
object holding the wait's declared fields: each required one present, each of its
declared type (JSON Schema's type names: ``integer`` is a number without a fraction,
``number`` any number, neither a boolean), no undeclared one. ``signal_fault`` is the
check the gateway (400) and the coordinator (dead letter) make before a signal reaches
the state machine, which then takes every signal it gets as valid.

What the history and the projection keep of a signal must be storable as sent
(``storable_fault``): its name and ``signal_id`` at most ``MAX_SIGNAL_ID`` characters,
without control characters (U+0000-U+001F, U+007F-U+009F) or lone surrogates, and no
string or key of its fields holding U+0000, which PostgreSQL's ``text`` and ``jsonb``
cannot hold (the gateway refuses the same for every JSON body it takes).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from headwater.blobs import is_ref
from headwater.core import events as ev
from headwater.core.kinds.schedule.cron import PAUSE_SIGNAL, RESUME_SIGNAL
from headwater.core.kinds.wait.records import SignalField
from headwater.core.spec import NodeSpec, WorkflowSpec
from headwater.core.state import WorkflowState

MAX_SIGNAL_ID = 200
"""Characters: the longest signal name or ``signal_id`` (as the gateway's
``SignalRequest`` takes it)."""
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]{0,59}")

# A path into the fields, built backwards: (parent link, key or index), or None.
_Link = tuple[Any, str | int] | None


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
        One message naming what is wrong: the signal cannot be stored as it is
            (``storable_fault``); the workflow's spec is invalid; a schedule's signal
        is not ``pause`` or ``resume``, or has an index or fields; a code workflow's
        has an index or fields that are no object; no wait node
        waits for that signal (the declared signals named); an index for a wait that
        is not per item, none for one that is, or one outside its list; the fields are
        not an object; a required field is missing; a field has the wrong type; a field
        is not declared. None when the signal is valid.
    """
    fault = storable_fault(signal)
    if fault:
        return fault
    if state.spec_error:
        return "the workflow's spec is invalid; it waits for no signal"
    own = _own_signal_rule(state.spec)
    if own is not None:  # a schedule's, a code workflow's
        return own(signal)
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


def _own_signal_rule(spec: WorkflowSpec) -> Callable[[ev.SignalSent], str | None] | None:
    """The check of a workflow whose signals are not its wait nodes': a schedule's
    (pause, resume), a code workflow's (any name); None for one of wait nodes."""
    if any(n.schedule is not None for n in spec.nodes):
        return _schedule_signal_fault
    if any(n.code is not None for n in spec.nodes):
        return code_signal_fault
    return None


def _schedule_signal_fault(signal: ev.SignalSent) -> str | None:
    """Why a signal cannot be taken by a schedule workflow: it takes ``pause`` and
    ``resume``, without an index or fields."""
    if signal.name not in (PAUSE_SIGNAL, RESUME_SIGNAL):
        return (f"a schedule takes the signals {PAUSE_SIGNAL} and {RESUME_SIGNAL}, not "
                f"{signal.name!r}")
    if signal.index is not None:
        return f"signal {signal.name!r} of a schedule takes no index"
    if signal.fields not in (None, {}):
        return f"signal {signal.name!r} of a schedule takes no fields"
    return None


def code_signal_fault(signal: ev.SignalSent) -> str | None:
    """Why a signal cannot be taken by a code workflow (any name its function may wait
    for with ``wf.signal``): it has an index, or fields that are not an object."""
    if signal.index is not None:
        return f"signal {signal.name!r} of a code workflow takes no index"
    if signal.fields is not None and not isinstance(signal.fields, dict):
        return f"the fields of signal {signal.name!r} must be an object"
    return None


def storable_fault(signal: ev.SignalSent) -> str | None:
    """Why ``signal`` cannot be recorded and projected as it is, or None.

    Args:
        signal: the signal, as decoded from its record or request.

    Returns:
        A message naming the part at fault, without repeating it: ``signal_id must be
        at most 200 characters, not 100000``, ``signal_id must not contain control
        characters (U+0000 at 1)``, ``signal 'go': fields.note: contains U+0000
        (PostgreSQL cannot store it)``.
    """
    fault = id_fault("signal name", signal.name) or id_fault("signal_id", signal.signal_id)
    if fault:
        return fault
    fault = _nul_fault(signal.fields)
    return None if fault is None else f"signal {signal.name!r}: {fault}"


def id_fault(what: str, text: Any) -> str | None:
    """Why ``text`` (a signal's name or id, named ``what`` in the message) cannot be
    kept as it is, or None: longer than ``MAX_SIGNAL_ID``, not a string, or holding a
    control character or a lone surrogate (its code point and position named)."""
    if not isinstance(text, str):
        return f"{what} must be a string, not {_json_type(text)}"
    if len(text) > MAX_SIGNAL_ID:
        return f"{what} must be at most {MAX_SIGNAL_ID} characters, not {len(text)}"
    for pattern, kind in ((_CONTROL, "control characters"), (_SURROGATE, "a lone surrogate")):
        found = pattern.search(text)
        if found:
            return (f"{what} must not contain {kind} (U+{ord(found.group()):04X} at "
                    f"{found.start()})")
    return None


def _nul_fault(fields: Any) -> str | None:
    """The first string or key of ``fields`` holding U+0000, in document order, by its
    path (``fields.a[2]: contains U+0000 ...``), or None. Iterative: any depth."""
    stack: list[tuple[Any, _Link]] = [(fields, None)]
    while stack:
        item, link = stack.pop()
        if isinstance(item, str) and "\x00" in item:
            return f"{_path(link)}: contains U+0000 (PostgreSQL cannot store it)"
        if isinstance(item, Mapping):
            if any(isinstance(k, str) and "\x00" in k for k in item):
                return f"{_path(link)}: a key contains U+0000 (PostgreSQL cannot store it)"
            stack.extend((v, (link, k)) for k, v in reversed(list(item.items())))
        elif isinstance(item, list | tuple):
            stack.extend((v, (link, i)) for i, v in reversed(list(enumerate(item))))
    return None


def _path(link: _Link) -> str:
    """``fields.a["b c"][3]`` from a link chain (keys that are not plain names quoted,
    cut to 60 characters)."""
    parts: list[str] = []
    while link is not None:
        link, key = link
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif _NAME.fullmatch(str(key)):
            parts.append(f".{key}")
        else:
            parts.append(f"[{str(key)[:60]!r}]")
    return "fields" + "".join(reversed(parts))


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
    ``with_optional``). A field sent by reference (``headwater/blobs.py``: the gateway
    stored a large one after it checked the value as sent) fits any declared type.

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
        if is_ref(fields[field.name]):
            continue
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
"""Declared type -> whether a JSON value is of it (``spec.kinds.SIGNAL_FIELD_TYPES``)."""
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
