"""Restart on failure: the spec fields that make a lost attempt restart the whole run.

``restart_on_failure: true`` (top level of a spec) makes an attempt that is *lost* (its
worker sent no report within ``heartbeat_timeout``) restart the run as a new generation
of the same workflow, instead of retrying the lost task: every unfinished attempt is
cancelled and the root nodes start again with the workflow's input, the history going
on (``machine.restart``). It is meant for workflows whose tasks are idempotent, since
everything the earlier generations did is done again. ``max_restarts`` (default
``DEFAULT_MAX_RESTARTS``) bounds the generations: after that many restarts a lost
attempt is retried by its task's retry policy, as without the option. An attempt that
fails by its worker's report or by its deadline is retried as usual either way.

A workflow with a ``wait`` or ``schedule`` node cannot restart, nor one whose child
workflows (at any depth) have one: what a signal said, or the runs a schedule started,
would be lost with the generation (a restarted child is a new workflow, which a signal
sent to the old one never reaches).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from headwater.core.spec.fields import flag
from headwater.core.spec.kinds import NodeKind

RESTART_KEYS = ("restart_on_failure", "max_restarts")
"""The spec's top-level fields read here."""
DEFAULT_MAX_RESTARTS = 3
"""Restarts a run may make when ``max_restarts`` is not given."""
MAX_RESTARTS_LIMIT = 100
"""The most restarts a spec may allow."""
NO_RESTART_KINDS = (NodeKind.WAIT, NodeKind.SCHEDULE)
"""Node kinds whose workflow cannot restart."""


def parse_restarts(doc: Mapping[str, Any], kinds: Sequence[tuple[str, NodeKind, Any]],
                   faults: list[str]) -> int:
    """How many times a lost attempt may restart the run: 0 without
    ``restart_on_failure`` (or with ``false``), else ``max_restarts``.

    Args:
        doc: the spec document (a mapping).
        kinds: ``(node id, kind, child spec document or None)`` of each valid node.
        faults: faults found are appended here (``"<field>: <what>"``).

    Returns:
        The bound, 0 to ``MAX_RESTARTS_LIMIT`` (0 also when a field is invalid).
    """
    enabled = flag(doc.get("restart_on_failure"), "restart_on_failure", faults)
    raw = doc.get("max_restarts")
    bound = DEFAULT_MAX_RESTARTS
    if raw is not None:
        if type(raw) is not int or not 1 <= raw <= MAX_RESTARTS_LIMIT:
            faults.append(f"max_restarts must be an integer from 1 to {MAX_RESTARTS_LIMIT}")
            return 0
        if not enabled:
            faults.append("max_restarts: only with restart_on_failure: true")
            return 0
        bound = raw
    if not enabled:
        return 0
    blocking = _blocking_node(kinds)
    if blocking is not None:
        where, kind = blocking
        faults.append(f"restart_on_failure: node {where} is a {kind}; a workflow with a "
                      "wait or a schedule (or a child workflow with one) cannot restart "
                      "(what its signals said, or the runs it started, would be lost)")
        return 0
    return bound


def _blocking_node(kinds: Sequence[tuple[str, NodeKind, Any]]) -> tuple[str, str] | None:
    """``(where, kind)`` of the first wait or schedule node, at the top or in a child
    workflow's spec document at any depth (``'w' > 'ok'``: node ``ok`` of ``w``'s
    child), or None. Iterative, so a deep chain of children needs no recursion."""
    stack: list[tuple[str, str, Any]] = [(repr(i), k.value, c) for i, k, c in reversed(kinds)]
    while stack:
        where, kind, child = stack.pop()
        if kind in NO_RESTART_KINDS:
            return where, kind
        nodes = child.get("nodes") if isinstance(child, Mapping) else None
        for node in reversed(nodes if isinstance(nodes, list) else []):
            if isinstance(node, Mapping):
                stack.append((f"{where} > {node.get('id')!r}", str(node.get("kind", "task")),
                              node.get("workflow")))
    return None
