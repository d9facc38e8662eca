"""The ``workflow`` kind's records: its child (the inline spec, and the registered
definition that spec was resolved from) and its events (``ChildSubmitted``, the input
that starts a child; ``ParentLinked``, the child's link to its parent's attempt, with how
it reads: ``DESCRIBE``, its timeline detail, and ``FOLLOW``, its live-view line).

A child is always run from an inline spec (``workflow:``), validated with its parent's.
A node may also name a registered definition (``definition: "name"`` or ``"name@3"``);
the gateway resolves it before the submission reaches Kafka, replacing it by the inline
spec and adding ``definition_version``, so the core never looks a definition up. A
``definition`` without an inline ``workflow`` has not been resolved: a spec fault (such a
spec came straight to Kafka, or from a client that skipped the gateway).

Like ``spec.fields``, the parser appends what is wrong to ``faults`` (``"<where>:
<what>"``) and returns a usable value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from headwater.core.definitions import DefinitionRefError, check_name
from headwater.core.ids import task_key
from headwater.core.wording import Describe, Follow, FollowNote, where

MAX_CHILD_DEPTH = 8
"""The deepest nesting of inline child workflows a spec may hold (each is validated
with its parent, recursively)."""
UNRESOLVED = ("definition references are resolved by the gateway: submit through HTTP, or "
              "give the child inline")
"""The fault of a ``definition`` that came without its inline ``workflow``."""
DEFINITION_REF = re.compile(r"^(?P<name>[^@\s]{1,200})(?:@(?P<version>[1-9][0-9]{0,9}))?$")
"""A definition reference: its name (1-200 characters, neither ``@`` nor white space),
optionally ``@`` and its version (a positive integer). The registry's own rules for a
name are checked where it stores one; this only tells a reference from garbage."""
MAX_VERSION = 2**31 - 1
"""The highest definition version (an Avro ``int``)."""


@dataclass(frozen=True)
class ChildSpec:
    """A workflow node's child.

    Attributes:
        workflow: the child's inline spec document (validated when the parent's spec is).
        definition: the name of the registered definition ``workflow`` was resolved
            from (without ``@<version>``), or None for a child given inline.
        definition_version: that definition's version (from 1), or None when unknown.
    """

    workflow: Any = None
    definition: str | None = None
    definition_version: int | None = None


def parse_child(raw: Mapping[str, Any], where: str, validate: Callable[[Any], list[str]],
                faults: list[str]) -> ChildSpec:
    """The child of the ``workflow`` node ``raw``.

    Args:
        raw: the node's mapping (``workflow``, ``definition``, ``definition_version``).
        where: names the node in faults.
        validate: the faults of a child's spec document (``[]`` when it is valid).
        faults: appended to.

    Returns:
        The child: its inline spec and the definition (name, version) it names, if any.
    """
    workflow = raw.get("workflow")
    name, version = _definition(raw, where, faults)
    if workflow is None:
        if raw.get("definition") is not None:
            faults.append(f"{where}: definition: {UNRESOLVED}")
        else:
            faults.append(f"{where}: a workflow node needs 'workflow:', the child's spec")
        return ChildSpec(definition=name, definition_version=version)
    if _child_depth(workflow) > MAX_CHILD_DEPTH:
        faults.append(f"{where}: workflow: inline children nest more than "
                      f"{MAX_CHILD_DEPTH} deep")
    else:
        faults.extend(f"{where}: workflow: {fault}" for fault in validate(workflow))
    return ChildSpec(workflow=workflow, definition=name, definition_version=version)


def _definition(raw: Mapping[str, Any], where: str,
                faults: list[str]) -> tuple[str | None, int | None]:
    """``(name, version)`` of the node's ``definition`` and ``definition_version``: the
    version is ``definition_version``, else the reference's ``@N``; the two must agree.
    ``(None, None)`` without a definition."""
    ref, given = raw.get("definition"), raw.get("definition_version")
    if given is not None and (type(given) is not int or not 1 <= given <= MAX_VERSION):
        faults.append(f"{where}: definition_version must be an integer from 1 to "
                      f"{MAX_VERSION}")
        given = None
    if ref is None:
        if raw.get("definition_version") is not None:
            faults.append(f"{where}: definition_version needs 'definition'")
        return None, None
    match = DEFINITION_REF.fullmatch(ref) if isinstance(ref, str) else None
    if match is None:
        faults.append(f"{where}: definition must be a definition's name, or name@version "
                      "(such as \"billing\" or \"billing@3\")")
        return None, None
    try:
        check_name(match["name"])
    except DefinitionRefError as e:
        faults.append(f"{where}: definition: {e}")
        return None, None
    version = int(match["version"]) if match["version"] else None
    if version is not None and given is not None and version != given:
        faults.append(f"{where}: definition {ref!r} names version {version}, "
                      f"definition_version {given}")
    if version is not None and version > MAX_VERSION:
        faults.append(f"{where}: definition: a version is at most {MAX_VERSION}")
        version = None
    return match["name"], given if given is not None else version


def _child_depth(doc: Any) -> int:
    """How deep inline children nest in a spec document (1: it has none), found
    without recursion (stopping once past the bound)."""
    deepest = 0
    stack = [(doc, 1)]
    while stack and deepest <= MAX_CHILD_DEPTH:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        nodes = item.get("nodes") if isinstance(item, Mapping) else None
        for node in nodes if isinstance(nodes, list) else ():
            if isinstance(node, Mapping) and isinstance(node.get("workflow"), Mapping):
                stack.append((node["workflow"], depth + 1))
    return deepest


@dataclass(frozen=True)
class ChildSubmitted:
    """A child workflow, started by attempt ``attempt`` of the ``workflow`` node ``node``
    (item ``index``) of workflow ``parent_id`` (the parent's coordinator, on
    ``submissions``, keyed by the child's id ``ids.child_id``). ``definition`` and
    ``definition_version`` name the registered definition the node's inline spec was
    resolved from (its ``ChildSpec``), or None."""

    workflow_id: str
    parent_id: str
    node: str
    index: int | None
    attempt: int
    spec: Any
    input: Any
    at_ms: int
    tenant: str | None = None
    definition: str | None = None
    definition_version: int | None = None


@dataclass(frozen=True)
class ParentLinked:
    """History: the workflow is the child of attempt ``attempt`` of node ``node`` (item
    ``index``) of ``parent_id``; its end is reported to that attempt."""

    workflow_id: str
    parent_id: str
    node: str
    index: int | None
    attempt: int
    at_ms: int


DESCRIBE: dict[type[Any], Describe] = {
    ParentLinked: lambda b: (f"child of {b.parent_id} "
                             f"({task_key(b.node, b.index)} attempt {b.attempt})"),
}
"""The event's timeline detail."""

FOLLOW: dict[type[Any], Follow | None] = {
    ParentLinked: lambda data: FollowNote(f"child of {data.get('parent_id')} ({where(data)} "
                                          f"attempt {data.get('attempt')})"),
}
"""The event's line in the live view (``ops/cli/follow.py``)."""
