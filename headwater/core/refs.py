"""Input references: ``"${input.a}"``, ``"${nodes.x.output.b}"``, ``"${item}"``,
``"${index}"`` and, in an error handler's input, ``"${error}"``.

A string that is exactly one ``${...}`` is replaced by the referenced value (any JSON
type); references are not interpolated inside longer strings.

A value stored by reference (``headwater.blobs``: a large output or input on a record is
``{"$blob": ..., "bytes": N}``) is passed along, and never read: the core does not hold
what it names. Selecting through one (``${nodes.x.output.field}``, ``${item.text}`` of
a map over one) gives a reference with a path (``{"$blob": ..., "bytes": N, "path":
["field"]}``), the part of that value the task resolving it gets
(:func:`through_reference`); a missing part fails there. What must be compared here
(a ``when``) cannot be, and fails saying what to do (:func:`by_reference`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from headwater.blobs import is_ref, select
from headwater.errors import InputReferenceError

_INDEX = re.compile(r"^[0-9]{1,9}$")
_REF = re.compile(r"^\$\{\s*([A-Za-z_][\w.\-]*)\s*\}$")


@dataclass(frozen=True)
class Ref:
    """One parsed reference.

    Attributes:
        root: ``"input"``, ``"nodes"``, ``"item"``, ``"index"`` or ``"error"``.
        node: the node id when ``root == "nodes"``.
        path: the keys below the root (below ``output`` for nodes).
    """

    root: str
    node: str | None
    path: tuple[str, ...]


def parse_ref(value: str) -> Ref | str | None:
    """Parse a string that may be a reference.

    Returns:
        ``None`` when ``value`` is not a reference, a ``Ref`` when it is a valid one,
        or an error message (str) when it looks like a reference but is malformed.
    """
    match = _REF.fullmatch(value)
    if match is None:
        return "malformed reference" if "${" in value else None
    parts = match.group(1).split(".")
    root = parts[0]
    if root == "input":
        return Ref("input", None, tuple(parts[1:]))
    if root in ("item", "index", "error"):
        return Ref(root, None, tuple(parts[1:]))
    if root == "nodes":
        if len(parts) < 3 or parts[2] != "output":
            return f"expected ${{nodes.<id>.output...}}, got {value}"
        return Ref("nodes", parts[1], tuple(parts[3:]))
    return f"unknown reference root {root!r} in {value}"


def iter_refs(template: Any) -> Iterator[tuple[str, Ref | str]]:
    """Yield ``(raw, parsed)`` for every reference-like string inside ``template``."""
    stack = [template]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parsed = parse_ref(item)
            if parsed is not None:
                yield item, parsed
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def step(value: Any, key: str) -> tuple[bool, Any]:
    """One step of a reference's path: ``(True, value[key])`` for a key of an object or
    an index (digits) within a list, else ``(False, None)``."""
    if isinstance(value, Mapping) and key in value:
        return True, value[key]
    if isinstance(value, list) and _INDEX.fullmatch(key) and int(key) < len(value):
        return True, value[int(key)]
    return False, None


def by_reference(raw: str, value: Any) -> InputReferenceError:
    """The error for a reference ``raw`` whose value must be read here but is ``value``,
    a value stored by reference (a blob of ``value["bytes"]`` bytes, or a part of one):
    the coordinator cannot compare what it does not hold; what to do instead."""
    part = " (a part of it)" if value.get("path") else ""
    return InputReferenceError(
        f"{raw}: the value is stored by reference{part} ({value['bytes']} bytes of JSON, "
        f"blob {value['$blob']}), and the coordinator cannot compare what it does not "
        "hold: select inside a task and return the small result inline, or raise "
        "HEADWATER_BLOB_THRESHOLD_BYTES so that it stays inline")


def through_reference(ref: dict[str, Any], keys: tuple[str, ...] | list[str | int],
                      raw: str) -> dict[str, Any]:
    """The reference to the part of ``ref``'s value at ``keys`` (``blobs.select``):
    what ``raw`` gives when its path reaches a value stored by reference.

    Raises:
        InputReferenceError: the path would be too long for a reference.
    """
    try:
        return select(ref, list(keys))
    except ValueError as e:
        raise InputReferenceError(f"{raw}: {e}") from None


def item_of(items: Any, index: int) -> Any:
    """Item ``index`` of the list a fanned-out node's ``over`` gave: an element of an
    inline list, or the reference to that element of a list stored by reference."""
    if is_ref(items):
        return select(items, [index])
    return items[index]


def _walk(value: Any, path: tuple[str, ...], raw: str) -> Any:
    for at, key in enumerate(path):
        if is_ref(value):
            return through_reference(value, path[at:], raw)
        found, value = step(value, key)
        if not found:
            raise InputReferenceError(f"{raw}: no key {key!r}")
    return value


def resolve(
    template: Any,
    workflow_input: Any,
    outputs: Mapping[str, Any],
    item: Any = None,
    index: int | None = None,
    error: Any = None,
) -> Any:
    """Replace every reference in ``template`` by its value.

    Args:
        template: JSON-like value from the spec (dicts, lists, scalars).
        workflow_input: the workflow's input.
        outputs: node id -> output of succeeded nodes.
        item: the map item, for map children.
        index: the map index, for map children.
        error: the handled error, for an error handler.

    Returns:
        A new JSON-like value; ``template`` is not modified.

    Raises:
        InputReferenceError: a referenced key or node output is missing.
    """
    if isinstance(template, str):
        parsed = parse_ref(template)
        if parsed is None:
            return template
        if isinstance(parsed, str):
            raise InputReferenceError(parsed)
        scope = {"input": workflow_input, "item": item, "error": error}
        return _value_of(parsed, template, outputs, scope, index)
    if isinstance(template, Mapping):
        return {k: resolve(v, workflow_input, outputs, item, index, error)
                for k, v in template.items()}
    if isinstance(template, list):
        return [resolve(v, workflow_input, outputs, item, index, error) for v in template]
    return template


def _value_of(ref: Ref, raw: str, outputs: Mapping[str, Any], scope: Mapping[str, Any],
              index: int | None) -> Any:
    """The value ``ref`` (written ``raw``) names; ``scope`` holds the workflow input, the
    map item and the handled error by root (see ``resolve``)."""
    if ref.root == "index":
        return index
    if ref.root == "nodes":
        assert ref.node is not None
        if ref.node not in outputs:
            raise InputReferenceError(f"{raw}: node {ref.node!r} has no output")
        return _walk(outputs[ref.node], ref.path, raw)
    return _walk(scope[ref.root], ref.path, raw)
