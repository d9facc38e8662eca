"""A spec's ``${input...}`` references that a given input cannot resolve, found before
the run starts: the gateway refuses such a submission (422) rather than start a run
whose node fails on it later. Submissions produced straight to Kafka are not checked:
the coordinator resolves references as it always has, failing the node that cannot.

Only what the input alone decides is judged, under the rules the run resolves by
(``refs.step``): a key an object lacks, an index beyond a list, a step into a value that
is neither (``${input.a.b}`` where ``a`` is a string), and a fan-out's ``over`` that
resolves to something other than a list (a list stored by reference counts as one when
its reference has its ``items``; what lies inside one is not judged). A reference is
judged only where it is certainly resolved once the nodes upstream succeed: the ``when``
of a node that starts (no needs, or one need taken), the input, ``over`` and ``until``
of a node that is taken (it starts and has no ``when``), and the workflow's output. A node behind a
``when`` may be skipped by it, an error handler runs only when its source fails, and a
node whose needs are all such may be skipped too: their references are not judged, so
an optional input used only on a branch is no fault. A child workflow's own references
are to its own input, which its parent computes: not judged either.
"""

from __future__ import annotations

from collections.abc import Mapping
from graphlib import TopologicalSorter
from typing import Any

from headwater.blobs import ITEMS_KEY, is_ref
from headwater.core.refs import Ref, iter_refs, step
from headwater.core.spec import WorkflowSpec
from headwater.core.spec.refs import node_refs
from headwater.core.suggest import did_you_mean

MOST_KEYS = 10
"""The most keys of an object a fault lists (then how many more there are)."""


def input_faults(spec: WorkflowSpec, workflow_input: Any) -> list[str]:
    """Each ``${input...}`` reference of ``spec`` that ``workflow_input`` cannot resolve
    where it is certainly resolved (see the module), and what the input has there.

    Args:
        spec: a valid spec (``parse_spec``'s).
        workflow_input: the submission's input (JSON-like; None when it has none).

    Returns:
        Faults in the spec's order, each ``"node 'a': input: ${input.cuont}: the input
        has no key 'cuont' (did you mean 'count'?); it has count, name"``; empty when
        every judged reference resolves.
    """
    faults: list[str] = []
    starts, taken = _certain(spec)
    for n in spec.nodes:
        seen: set[tuple[str, str]] = set()
        for field_name, raw, ref in node_refs(n):
            judged = n.id in taken or (field_name == "when" and n.id in starts)
            if not judged or not isinstance(ref, Ref) or ref.root != "input":
                continue
            if (field_name, raw) in seen:
                continue
            seen.add((field_name, raw))
            fault = _fault(workflow_input, ref.path, field_name == "over" and n.fans_out)
            if fault:
                faults.append(f"node {n.id!r}: {field_name}: {raw}: {fault}")
    for raw, ref in iter_refs(spec.output):
        if isinstance(ref, Ref) and ref.root == "input":
            fault = _fault(workflow_input, ref.path, False)
            if fault:
                faults.append(f"output: {raw}: {fault}")
    return faults


def _certain(spec: WorkflowSpec) -> tuple[set[str], set[str]]:
    """``(starts, taken)``: the nodes that certainly start once their upstream succeeds
    (not an error handler; no needs, or one need taken), and those of them that are not
    skipped by a ``when`` (they have none)."""
    by_id = {n.id: n for n in spec.nodes}
    handlers = {n.on_error for n in spec.nodes if n.on_error}
    starts: set[str] = set()
    taken: set[str] = set()
    for node_id in TopologicalSorter({n.id: n.needs for n in spec.nodes}).static_order():
        n = by_id[node_id]
        if node_id not in handlers and (not n.needs or any(d in taken for d in n.needs)):
            starts.add(node_id)
            if n.when is None:
                taken.add(node_id)
    return starts, taken


def _fault(value: Any, path: tuple[str, ...], needs_list: bool) -> str | None:
    """Why ``${input.<path>}`` cannot resolve against the input ``value`` (or, with
    ``needs_list``, resolves to something other than a list), or None."""
    where = "the input"
    for i, key in enumerate(path):
        if is_ref(value):
            return None  # a part of a value stored by reference: its task resolves it
        found, inner = step(value, key)
        if not found:
            return _missing(where, value, key)
        value, where = inner, f"input.{'.'.join(path[:i + 1])}"
    if needs_list and is_ref(value) and ITEMS_KEY not in value:
        return f"{where} is stored by reference with no item count, not a list to fan out over"
    if needs_list and not isinstance(value, list) and not is_ref(value):
        return f"{where} is {_kind(value)}, not a list to fan out over"
    return None


def _missing(where: str, value: Any, key: str) -> str:
    """What ``where`` (holding ``value``) has instead of ``key``."""
    if isinstance(value, Mapping):
        keys = sorted(str(k) for k in value)
        if not keys:
            return f"{where} has no key {key!r}; it is an empty object"
        listed = ", ".join(keys[:MOST_KEYS])
        more = f" and {len(keys) - MOST_KEYS} more" if len(keys) > MOST_KEYS else ""
        return f"{where} has no key {key!r}{did_you_mean(key, keys)}; it has {listed}{more}"
    if isinstance(value, list):
        if not value:
            return f"{where} is an empty list, no item {key!r}"
        span = "index 0" if len(value) == 1 else f"indexes 0 to {len(value) - 1}"
        return f"{where} is a list of {len(value)} ({span}), no item {key!r}"
    if value is None and where == "the input":
        return f"the submission has no input (null), so no key {key!r}"
    return f"{where} is {_kind(value)}, not an object with key {key!r}"


def _kind(value: Any) -> str:
    """The JSON type of ``value``, with its article."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"
