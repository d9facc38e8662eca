"""What a worker does with a task's values, for the in-process ``Environment``
(``services/worker/payloads.py`` is the worker's): references in an attempt's input and
checkpoint put back from the blob store before the task runs, and its output (a code
step's next decision too) made into the report a worker sends: through JSON, its large
parts by reference, refused when still over the output limit (docs/architecture.md §4k).
"""

from __future__ import annotations

import os
from typing import Any

import orjson

from headwater import blobs, codec
from headwater.codec import json_text
from headwater.core import events as ev
from headwater.errors import InputReferenceError
from headwater.workflows.instances import continued
from headwater.workflows.references import offload_decision

Where = tuple[str, str, int | None, int, int]
"""An attempt's workflow id, node, index, attempt and the time of its report (ms)."""


class Payloads:
    """The blob store of an ``Environment`` and what its worker does with values.

    Attributes:
        max_output_bytes: the largest encoded ``TaskSucceeded`` a worker sends.
        threshold: the most bytes of JSON a value keeps inline.
        blobs: each stored blob's JSON, by its digest.
    """

    def __init__(self, max_output_bytes: int, threshold: int | None = None) -> None:
        self.max_output_bytes = max_output_bytes
        self.threshold = threshold_from_env() if threshold is None else threshold
        self.blobs: dict[str, bytes] = {}

    def resolved(self, body: ev.TaskDispatched, where: Where) -> tuple[Any, Any] | ev.TaskFailed:
        """The input and checkpoint with real values, or the failure a worker reports when
        one cannot be resolved (a blob missing, a path its value has not)."""
        try:
            return blobs.resolve(body.input, self.blobs), blobs.resolve(body.checkpoint, self.blobs)
        except KeyError as e:
            return ev.TaskFailed(*where, f"blob {e.args[0]} is not in the blob store",
                                 "BlobMissingError", retryable=True)
        except blobs.BlobPathError as e:
            return ev.TaskFailed(*where, f"the task's input could not be resolved: {e}",
                                 InputReferenceError.__name__, retryable=False)

    def report(self, where: Where, output: Any, activation: bool, keep_instance: bool,
               units: int | None = None) -> ev.TaskSucceeded | ev.TaskFailed:
        """The report of an attempt that returned ``output``, as a worker makes it: its
        large values by reference (an activation's, its decision's), a non-retryable
        failure for an output that is not JSON or is still over ``max_output_bytes``
        encoded; with ``keep_instance``, a code step's carries the function's next
        decision when the run's instance is kept (``instances.continued``, given the
        real output), as a worker's does."""
        try:
            output = through_json(output)
        except TypeError as e:
            return ev.TaskFailed(*where, f"output is not JSON: {e}", "TypeError",
                                 retryable=False)
        carried = continued(*where[:3], output, where[4]) if keep_instance else None
        if carried is not None:
            carried["decision"] = self.offload(carried["decision"], True)
        output = self.offload(output, activation)
        report = ev.TaskSucceeded(*where, output=output, continuation=carried, units=units)
        if carried is not None and len(codec.encode(report)) > self.max_output_bytes:
            report = ev.TaskSucceeded(*where, output=output, units=units)  # as a worker does
        size = len(codec.encode(report))
        if size > self.max_output_bytes:
            return ev.TaskFailed(*where, f"output is {size} bytes, over the limit of "
                                 f"{self.max_output_bytes} (HEADWATER_MAX_OUTPUT_BYTES)",
                                 "OutputTooLargeError", retryable=False)
        return report

    def offload(self, value: Any, decision: bool = False) -> Any:
        """``value`` (a decision's values, with ``decision``) with its large parts by
        reference, their JSON kept in ``blobs``."""
        if decision and isinstance(value, dict):
            value, found = offload_decision(value, self.threshold)
        else:
            value, found = blobs.offload(value, self.threshold)
        self.blobs.update(found)
        return value


def threshold_from_env() -> int:
    """``HEADWATER_BLOB_THRESHOLD_BYTES`` as a worker reads it.

    Raises:
        ValueError: not a whole number of bytes, or negative.
    """
    raw = os.environ.get("HEADWATER_BLOB_THRESHOLD_BYTES", "").strip()
    value = int(raw) if raw else blobs.DEFAULT_THRESHOLD_BYTES
    if value < 0:
        raise ValueError("HEADWATER_BLOB_THRESHOLD_BYTES must be at least 0")
    return value


def through_json(value: Any) -> Any:
    """A copy of ``value`` as JSON gives it back.

    Raises:
        TypeError: ``value`` is not JSON (``codec.json_text``).
    """
    return orjson.loads(json_text(value))
