"""The ``${...}`` references of a trigger's ``input`` and ``id``, over a record's view
``{value, key, headers, topic, partition, offset, timestamp}`` (``formats.view``).

As in a spec (``headwater.core.refs``), a string that is exactly one reference is
replaced by the value it names (any JSON type), and references are not replaced inside
a longer string of the input; the run id is text, so there each reference is replaced by
its value's text (a string or an integer) wherever it stands. A path's steps are object
keys, or list indexes in digits (``${value.items.0.sku}``). Filters name a part of the
record by a JSON pointer instead (RFC 6901: ``/value/kind``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from headwater.core.refs import step

ROOTS = ("value", "key", "headers", "topic", "partition", "offset", "timestamp")
"""What a reference may start with: the parts of a record's view."""
_EXACT = re.compile(r"^\$\{\s*([A-Za-z_][\w.\-]*)\s*\}$")
_ANY = re.compile(r"\$\{\s*([^}]*?)\s*\}")
_PATH = re.compile(r"^[A-Za-z_][\w.\-]*$")


class MappingError(Exception):
    """Raised when a record cannot be mapped: a reference names what the record lacks,
    or the id it gives is no workflow id. The message names the field and the fault."""


def reference_faults(template: Any, interpolated: bool = False) -> list[str]:
    """The malformed references in ``template`` (``interpolated``: the id's, replaced
    wherever they stand), e.g. ``"${val.x}": unknown root 'val' (roots: value, ...)``."""
    faults: list[str] = []
    stack = [template]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and "${" in item:
            paths = _ANY.findall(item) if interpolated else _exact_paths(item)
            if paths is None:
                faults.append(f"{item[:80]!r}: a reference must be the whole string, "
                              "such as \"${value.order}\"")
                continue
            faults += [f"{item[:80]!r}: {f}" for p in paths if (f := _path_fault(p))]
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return faults


def _exact_paths(text: str) -> list[str] | None:
    match = _EXACT.fullmatch(text)
    return None if match is None else [match.group(1)]


def _path_fault(path: str) -> str | None:
    if not _PATH.fullmatch(path):
        return f"malformed reference ${{{path}}}"
    root = path.split(".")[0]
    if root not in ROOTS:
        return f"unknown root {root!r} (roots: {', '.join(ROOTS)})"
    return None


def lookup(view: Mapping[str, Any], path: str) -> Any:
    """The value ``path`` (``value.order.id``) names in a record's view.

    Raises:
        MappingError: a step the record lacks, named.
    """
    parts = path.split(".")
    value: Any = view
    for at, key in enumerate(parts):
        found, value = step(value, key)
        if not found:
            where = ".".join(parts[:at]) or "the record"
            raise MappingError(f"${{{path}}}: {where} has no {key!r}")
    return value


def render(template: Any, view: Mapping[str, Any]) -> Any:
    """``template`` with each reference replaced by the value it names (a run's input).

    Raises:
        MappingError: a reference names what the record lacks.
    """
    if isinstance(template, str):
        match = _EXACT.fullmatch(template)
        return template if match is None else lookup(view, match.group(1))
    if isinstance(template, Mapping):
        return {k: render(v, view) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, view) for v in template]
    return template


def interpolate(template: str, view: Mapping[str, Any]) -> str:
    """``template`` with each reference replaced by its value's text (a run id).

    Raises:
        MappingError: a reference names what the record lacks, or a value that is no
            string or integer.
    """
    def text(match: re.Match[str]) -> str:
        value = lookup(view, match.group(1))
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise MappingError(f"${{{match.group(1)}}}: a {type(value).__name__}, not a "
                               "string or an integer")
        return str(value)

    return _ANY.sub(text, template)


def at_pointer(view: Mapping[str, Any], pointer: str) -> tuple[bool, Any]:
    """``(True, value)`` at a JSON pointer (RFC 6901) in a record's view, or ``(False,
    None)`` when the record has nothing there."""
    value: Any = view
    for raw in pointer.split("/")[1:]:
        found, value = step(value, raw.replace("~1", "/").replace("~0", "~"))
        if not found:
            return False, None
    return True, value
