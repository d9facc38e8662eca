"""Inputs deferred until their workflow's submission, kept in the coordinator's table.

A cancel sent right after a submission travels on ``control`` while the submission is
on ``submissions``; the coordinator may read the cancel first. The machine defers it
(``Step.deferred``), and it is kept here, under the workflow's ``DEFERRED`` part, until
the submission arrives and ``machine.start`` applies both (``decide`` refuses one past
``MAX_DEFERRED``, or one with which the entry would not fit a table entry, as
``effects`` measures it). The entry also holds the applied offsets of the inputs it
keeps, so that one delivered again after a crash is not kept twice; it is written
through the batch's intent like every other entry, and emptied (an empty value) once
the submission has consumed it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson

from headwater.core import events as ev
from headwater.errors import DecodeError
from services.coordinator.keys import DEFERRED, table_entry_key

_KINDS: dict[str, type[Any]] = {"CancelRequested": ev.CancelRequested,
                                 "SignalSent": ev.SignalSent,
                                 "PauseRequested": ev.PauseRequested,
                                 "ResumeRequested": ev.ResumeRequested}
"""The input types that can be deferred (those ``step`` defers)."""


def deferrable(event: ev.Input) -> bool:
    """Whether ``event`` is of a type ``step`` may defer (and this entry keeps)."""
    return isinstance(event, tuple(_KINDS.values()))


def deferred_key(workflow_id: str) -> bytes:
    """The table key of the workflow's deferred inputs."""
    return table_entry_key(workflow_id, DEFERRED)


def dump(inputs: list[ev.Input], applied: dict[str, int]) -> bytes:
    """The entry for ``inputs`` (in arrival order) and the workflow's applied offsets
    (input topic -> offset); empty bytes when nothing is deferred."""
    if not inputs:
        return b""
    return orjson.dumps({
        "v": 1, "applied": applied,
        "inputs": [{"type": type(i).__name__, "fields": dataclasses.asdict(i)}
                   for i in inputs],
    })


def load(raw: bytes | None) -> tuple[list[ev.Input], dict[str, int]]:
    """The inputs and applied offsets of an entry written by ``dump`` (none for a
    missing or empty entry).

    Raises:
        DecodeError: the entry is malformed or names an input type that cannot be deferred.
    """
    if not raw:
        return [], {}
    try:
        doc = orjson.loads(raw)
        inputs = [_KINDS[i["type"]](**i["fields"]) for i in doc["inputs"]]
        return inputs, {str(k): int(v) for k, v in doc["applied"].items()}
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as e:
        raise DecodeError(f"bad waiting inputs entry: {e}") from e
