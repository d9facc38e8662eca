"""How golden histories are written and read: records as ``{"type", "fields"}``, events
with their ``seq``, and the final state as a plain document.

The encoding is independent of the Avro codec and of the table's snapshot format, so a
change to either does not disturb the golden files; only a change to what the machine
decides, or to how ``evolve`` folds it, does. The three accessors say where the core
keeps the records, ``step``, ``evolve`` and ``task_timers``: the one thing to change when
they move.
"""

from __future__ import annotations

import dataclasses
import types
from enum import Enum
from typing import Any


def events() -> types.ModuleType:
    """The module of the input and history records."""
    from headwater.core import events as ev
    return ev


def machine() -> types.ModuleType:
    """The module with ``step`` (the machine package exports it)."""
    from headwater.core import machine as m
    return m


def state() -> types.SimpleNamespace:
    """``evolve`` (``headwater.core.evolve``) and ``task_timers``
    (``headwater.core.state``), as attributes of one object."""
    from headwater.core.evolve import evolve
    from headwater.core.state import task_timers
    return types.SimpleNamespace(evolve=evolve, task_timers=task_timers)


# Record fields added after the golden files were written, with their defaults: left
# out while at them, so the files stay as they are.
_LATER_FIELDS: dict[str, Any] = {"definition": None, "definition_version": None,
                                 "traceback": "", "rerun": None, "continued": False,
                                 "continuation": None, "units": None,
                                 "cache_refresh": False, "parent": None}


def dump_record(record: Any) -> dict[str, Any]:
    """An input or event body as ``{"type": class name, "fields": {...}}``."""
    fields = {k: v for k, v in dataclasses.asdict(record).items()
              if not (k in _LATER_FIELDS and v == _LATER_FIELDS[k])}
    if type(record).__name__ == "WorkflowRestarted" and not fields.get("continued"):
        fields.pop("input", None)  # a restart's: only a continue-as-new has one
    return {"type": type(record).__name__, "fields": fields}


def load_record(doc: dict[str, Any]) -> Any:
    """The record ``dump_record`` wrote."""
    return getattr(events(), doc["type"])(**doc["fields"])


def dump_event(event: Any) -> dict[str, Any]:
    """A ``HistoryEvent`` as its body's ``dump_record`` plus ``seq``."""
    return {"seq": event.seq, **dump_record(event.body)}


def load_event(doc: dict[str, Any]) -> Any:
    """The ``HistoryEvent`` ``dump_event`` wrote."""
    body = load_record(doc)
    return events().HistoryEvent(body.workflow_id, doc["seq"], body)


# WorkflowState fields that are the table's bookkeeping or caches, not the workflow's state.
_NOT_STATE = {"dirty", "applied", "generation_seq"}
"""Left out: storage bookkeeping, and ``generation_seq`` (an index the fold derives, the
seq of the latest ``WorkflowRestarted``, which histories recorded before it was kept
cannot state)."""


# Fields added with the node kinds beyond tasks and maps (waits, sleeps, conditions,
# children, loops, schedules, restarts): left out while at their default, so the golden
# files written before them stay as they are.
_LATER = {"branch_skipped", "transcript", "spent", "steps", "decision", "signals",
          "signal_ids", "parent", "definition", "definition_version", "next_fire_ms",
          "last_fire_ms", "paused", "generation", "attempt_floor", "rerun", "code",
          "continued", "requires", "limits", "limiter", "waiting_for", "limiters",
          "cache", "cache_refresh", "deadline_at_ms", "caller", "calls", "pause",
          "recalled"}


def _default_of(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def state_doc(value: Any) -> Any:
    """A workflow state (or any part of it) as plain JSON data: dataclass fields by name
    (leaving out private ones, storage bookkeeping and the later fields at their
    default), enums by value."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: state_doc(getattr(value, f.name)) for f in dataclasses.fields(value)
                if not f.name.startswith("_") and f.name not in _NOT_STATE
                and not (f.name in _LATER and getattr(value, f.name) == _default_of(f))}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): state_doc(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [state_doc(v) for v in value]
    return value
