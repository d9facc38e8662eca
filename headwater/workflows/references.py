"""An activation's decision with its values by reference (``headwater/blobs.py``).

A decision is read by the coordinator (``headwater/core/kinds/code/decision.py``): its
structure, each step's op, name and options, stays inline. What the function handed
over goes by reference when large: each step's input, each chunk, the ``finish`` output
and the input of a ``continue_as_new``, each by ``blobs.offload``'s rule. A worker
(``services/worker/payloads.py``) and the test environment (``headwater.testing``) use
it alike.

Pure: the caller stores the blobs returned.
"""

from __future__ import annotations

from typing import Any

from headwater import blobs

__all__ = ["VALUE_KEYS", "offload_decision"]

VALUE_KEYS = ("finish", "continue_as_new")
"""The keys of a decision that hold a value of the function's (besides steps' inputs
and chunks)."""


def offload_decision(decision: dict[str, Any],
                     threshold: int) -> tuple[dict[str, Any], dict[str, bytes]]:
    """``decision`` with its values over ``threshold`` bytes of JSON by reference, and
    the blobs to store, by digest.

    Args:
        decision: a decision, as JSON gives it back (changed in place and returned).
        threshold: the most bytes of JSON a value may keep inline (0: no limit).

    Returns:
        The decision and the blobs; ``(decision, {})`` when nothing is large.
    """
    found: dict[str, bytes] = {}

    def part(value: Any) -> Any:
        value, more = blobs.offload(value, threshold)
        found.update(more)
        return value

    steps = decision.get("steps")
    if isinstance(steps, list):
        for step in steps:
            if isinstance(step, dict) and step.get("input") is not None:
                step["input"] = part(step["input"])
    chunks = decision.get("chunks")
    if isinstance(chunks, list):
        decision["chunks"] = [part(chunk) for chunk in chunks]
    for key in VALUE_KEYS:
        if decision.get(key) is not None:
            decision[key] = part(decision[key])
    return decision, found
