"""Reference checks of a workflow spec: every ``${...}`` a node's templates (input,
``over``, a sleep's ``until``, ``when``, a limit's key and units, a cache's key) or the workflow's
output use must name a node upstream of it, and the special references (``${item}``,
``${index}``, ``${error}``) appear only where they are defined. ``spec.parse_spec``
calls ``check_refs`` once the nodes and their needs are known.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from headwater.core.caching import KEY as CACHE_KEY
from headwater.core.caching import CacheSpec
from headwater.core.conditions import condition_refs
from headwater.core.graph import GraphNode, upstream_among
from headwater.core.kinds.sleep.records import SleepSpec
from headwater.core.limits import CONCURRENCY, CONCURRENCY_KEY, RATE_KEY, LimitSpec
from headwater.core.refs import Ref, iter_refs
from headwater.core.suggest import did_you_mean

_ITEM_FIELDS = ("input", CONCURRENCY_KEY, RATE_KEY, CACHE_KEY)
"""The fields of a map node resolved per item, where ``${item}`` and ``${index}`` are
defined."""
ERROR_KEYS = ("node", "index", "attempts", "type", "message")
"""The keys of ``${error}`` (``state.error_object``)."""


class RefNode(GraphNode, Protocol):
    """What the checks read of a node (``spec.NodeSpec`` has it)."""

    @property
    def input(self) -> Any:
        """The node's input template."""

    @property
    def over(self) -> str | None:
        """The list it fans out over, if any."""

    @property
    def sleep(self) -> SleepSpec | None:
        """A sleep's fields (its ``until`` may be a reference)."""

    @property
    def when(self) -> str | None:
        """Its condition, if any."""

    @property
    def limits(self) -> Sequence[LimitSpec]:
        """Its ``concurrency`` and ``rate_limit``, whose key and units may be references."""

    @property
    def cache(self) -> CacheSpec | None:
        """Its ``cache``, whose key may be a reference."""

    @property
    def fans_out(self) -> bool:
        """Whether it runs once per item of ``over``."""


def node_refs(n: RefNode) -> list[tuple[str, str, Ref | str]]:
    """``(field, raw, parsed)`` of every reference a node's templates hold: its input,
    ``over``, a sleep's ``until``, its limits' keys and units (resolved when an attempt
    is held, as its input is: ``machine/holds.py``), its cache's key
    (``machine/lookups.py``) and its ``when``, in that order."""
    templates: list[tuple[str, Any]] = [("input", n.input)]
    if n.over is not None:
        templates.append(("over", n.over))
    if n.sleep is not None and n.sleep.until is not None:
        templates.append(("until", n.sleep.until))
    for limit in n.limits:
        name = CONCURRENCY_KEY if limit.kind == CONCURRENCY else RATE_KEY
        templates += [(name, limit.key), (name, limit.units)]
    if n.cache is not None and n.cache.key is not None:
        templates.append((CACHE_KEY, n.cache.key))
    refs = [(field_name, raw, ref) for field_name, template in templates
            for raw, ref in iter_refs(template)]
    if n.when is not None:
        refs.extend(("when", raw, ref) for raw, ref in condition_refs(n.when))
    return refs


def check_refs(nodes: Sequence[RefNode], output: Any, faults: list[str],
               declared: Collection[str] = ()) -> None:
    """Append a fault for each reference that may not be used where it is (``declared``:
    ids of nodes refused for faults of their own, which a reference may name)."""
    ids = {n.id for n in nodes}
    needs = {n.id: n.needs for n in nodes}
    source_of = {n.on_error: n.id for n in nodes if n.on_error}
    for n in nodes:
        refs = node_refs(n)
        named = {ref.node for _, _, ref in refs if isinstance(ref, Ref) and ref.node in ids}
        # A handler sees what its source could see: the nodes upstream of the source.
        source = source_of.get(n.id)
        upstream = named & set(n.needs)  # most references name a direct dependency
        if named - upstream:
            upstream |= upstream_among(needs, source or n.id, named - upstream)
        for field_name, raw, ref in refs:
            scope = _Scope(in_map=n.fans_out and field_name in _ITEM_FIELDS,
                           handler=source is not None and field_name in ("input", "when"),
                           node=n.id, source=source)
            fault = _ref_fault(ref, ids, upstream, scope, declared)
            if fault:
                faults.append(f"node {n.id!r}: {field_name}: {raw}: {fault}")
    for raw, ref in iter_refs(output):
        fault = _ref_fault(ref, ids, ids, _Scope(), declared)
        if fault:
            faults.append(f"output: {raw}: {fault}")


@dataclass(frozen=True)
class _Scope:
    """Which special references a template may use."""

    in_map: bool = False  # ${item}, ${index}: a map node's input
    handler: bool = False  # ${error}: an error handler's input
    node: str = ""  # the node whose template it is
    source: str | None = None  # the node whose errors it handles (its needs are the handler's)


def _ref_fault(ref: Ref | str, ids: set[str], upstream: set[str], scope: _Scope,
               declared: Collection[str]) -> str | None:
    """Why a reference may not be used here, or None (``ref`` as a string: it did not
    parse, and says why)."""
    if isinstance(ref, str):
        return ref
    if ref.root in ("item", "index") and not scope.in_map:
        return f"${{{ref.root}}} is only defined in a map node's input"
    if ref.root == "error":
        return _error_ref_fault(ref, scope)
    if ref.root == "nodes" and ref.node is not None:
        if ref.node not in ids:
            return (None if ref.node in declared else
                    f"unknown reference to node {ref.node!r}{did_you_mean(ref.node, ids)}")
        if ref.node not in upstream:
            return f"node {ref.node!r} is not upstream{_add_to_needs(ref.node, scope)}"
    return None


def _add_to_needs(node_id: str, scope: _Scope) -> str:
    """What to do about a reference to a node that is not upstream: add it to the needs
    of the referring node, or, for an error handler (which has no needs), of its
    source."""
    if scope.source is not None:
        return (f" of {scope.source!r}, whose errors this node handles: add {node_id!r} to "
                f"the needs of node {scope.source!r}")
    return f": add {node_id!r} to the needs of node {scope.node!r}"


def _error_ref_fault(ref: Ref, scope: _Scope) -> str | None:
    if not scope.handler:
        return "${error} is only defined in the input of an error handler (an on_error target)"
    if ref.path and ref.path[0] not in ERROR_KEYS:
        return f"an error has the keys {', '.join(ERROR_KEYS)}, not {ref.path[0]!r}"
    return None
