"""Registered definitions for the rest of the gateway: resolve a reference to a version,
check an input against its ``input_schema``, and inline the definitions that ``kind:
workflow`` nodes name.

The registry's tables (``definitions``, ``definition_heads``; ``services.common.db``)
are read here; ``definitions.store`` writes them and ``definitions.projector`` rebuilds
them from the ``definitions`` topic. Input schemas are JSON Schema, checked by
jsonschema-rs (drafts 4, 6, 7, 2019-09 and 2020-12, by the schema's ``$schema``; 2020-12
without one); a reference (``$ref``) to anything outside the schema is refused, never
fetched.

What a principal reads is scoped by tenant (``headwater.core.definitions.visible``): its
own definitions and the shared ones; another tenant's is answered as one that does not
exist (404, the same document).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import asyncpg
import jsonschema_rs
import orjson

from headwater.core.definitions import DefinitionRefError, parse_ref, visible
from headwater.core.spec import MAX_NODES
from headwater.core.suggest import closest, did_you_mean
from services.common.auth.tokens import OPEN, Principal
from services.gateway.edge.jsoncheck import format_path
from services.gateway.edge.problems import Problem

MAX_INLINE_DEPTH = 8
"""The deepest chain of definitions naming definitions that a spec may inline (as deep
as ``headwater.core.kinds.workflow.records.MAX_CHILD_DEPTH`` lets inline children nest)."""
MAX_INLINED_NODES = MAX_NODES
"""The most nodes a spec may hold with every definition its ``kind: workflow`` nodes name
inlined, counting the nodes of every inline child at every depth: as many as one spec
may hold (``headwater.core.spec.MAX_NODES``, 10,000). Definitions naming definitions
multiply: five levels of ten children are 100,000 nodes."""
MAX_INPUT_ERRORS = 20
"""The most faults of an input a 422 lists."""
META_SCHEMAS = frozenset({
    "http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#",
    "http://json-schema.org/draft-07/schema#",
    "https://json-schema.org/draft/2019-09/schema", "https://json-schema.org/draft/2020-12/schema",
})
"""The ``$schema`` values an input schema may name (the drafts jsonschema-rs knows
without fetching anything; with or without the trailing ``#``)."""
MAX_SUGGESTED_FROM = 10_000
"""The most registered names a 404 compares an unknown name with (``unknown_named``)."""
DELETED = "Definition deleted"
"""The title of the 410 problem of a deleted definition."""


@dataclass(frozen=True)
class Resolved:
    """One version of a definition.

    Attributes:
        name: the definition's name.
        version: the version, from 1.
        spec: its workflow spec (as registered: ``kind: workflow`` nodes may still name
            definitions; ``inline_children`` resolves them).
        input_schema: the JSON Schema its input must match, or None (any input).
    """

    name: str
    version: int
    spec: dict[str, Any]
    input_schema: dict[str, Any] | None


def tenant_of(me: Principal) -> str | None:
    """The tenant whose definitions ``me`` reads and writes: None for a principal of
    every tenant (``auth.OPEN`` when auth is off)."""
    return None if me.every_tenant else me.tenant


def unknown(name: str, names: Iterable[str] = ()) -> Problem:
    """The 404 of a definition that does not exist (or is another tenant's), naming the
    closest of ``names`` in its detail and its ``did_you_mean`` member (none when no name
    is close): ``no definition refnud (did you mean 'refund'?)``."""
    likely = closest(name, names)
    suggested: dict[str, Any] = {"did_you_mean": likely} if likely else {}
    return Problem(404, "Not found", f"no definition {name}{did_you_mean(name, likely)}",
                   definition=name, **suggested)


async def unknown_named(pool: Any, name: str, me: Principal) -> Problem:
    """``unknown`` with the names of the definitions ``me`` sees that are not deleted
    (at most ``MAX_SUGGESTED_FROM`` of them, by name) to suggest from."""
    rows = await pool.fetch(
        "select name from definition_heads where not deleted and ($1::text is null or"
        " tenant is null or tenant = $1) order by name limit $2", tenant_of(me),
        MAX_SUGGESTED_FROM)
    return unknown(name, [r["name"] for r in rows])


async def head_of(pool: Any, name: str, me: Principal) -> Any:
    """The ``definition_heads`` row of ``name`` (``version``, ``deleted``, ``tenant``),
    or None when there is none or ``me`` may not see it."""
    head = await pool.fetchrow("select version, deleted, tenant from definition_heads"
                               " where name = $1", name)
    if head is None or not visible(head.get("tenant"), tenant_of(me)):
        return None
    return head


def bad_ref(ref: Any, error: DefinitionRefError, field: str = "definition") -> Problem:
    """The 422 of a malformed reference, naming ``field``."""
    return Problem(422, "Invalid definition reference", str(error), errors=[f"{field}: {error}"],
                   definition=ref if isinstance(ref, str) else None)


async def resolve(pool: asyncpg.Pool, ref: str, me: Principal = OPEN) -> Resolved:
    """The version ``ref`` names (``"name"``: the current; ``"name@3"``: version 3) of a
    definition that is not deleted and that ``me`` sees.

    Args:
        pool: the projection's pool.
        ref: the reference.
        me: who asks: another tenant's definition is unknown to it.

    Returns:
        The version.

    Raises:
        Problem: 422 a malformed reference, 404 no such name (naming the closest names
            ``me`` sees) or version (or another tenant's), 410 the definition is
            deleted (no new runs, whichever version is named).
    """
    try:
        parsed = parse_ref(ref)
    except DefinitionRefError as e:
        raise bad_ref(ref, e) from e
    head = await head_of(pool, parsed.name, me)
    if head is None:
        raise await unknown_named(pool, parsed.name, me)
    if head["deleted"]:
        raise Problem(410, DELETED, f"definition {parsed.name} was deleted (its last version "
                      f"is {head['version']}): it starts no new runs; runs already started "
                      "go on", definition=parsed.name)
    version = head["version"] if parsed.version is None else parsed.version
    row = await pool.fetchrow("select spec, input_schema from definitions"
                              " where name = $1 and version = $2", parsed.name, version)
    if row is None:
        raise Problem(404, "Not found", f"definition {parsed.name} has no version {version} "
                      f"(its current is {head['version']})", definition=parsed.name)
    return Resolved(parsed.name, version, row["spec"], row["input_schema"])


def _refuse_remote(uri: str) -> Any:
    raise ValueError(f"references outside the schema are not fetched ({uri})")


@lru_cache(maxsize=256)
def _validator(schema_json: bytes) -> Any:
    """The compiled validator of an input schema (its JSON text), cached."""
    return jsonschema_rs.validator_for(orjson.loads(schema_json), retriever=_refuse_remote)


def schema_faults(schema: Any) -> list[str]:
    """Why ``schema`` is not a JSON Schema an input can be checked against (empty: it is).

    It must be an object, name a known draft in ``$schema`` (or none), be valid against
    that draft's meta-schema, and refer to nothing outside itself.

    Args:
        schema: the ``input_schema`` of a definition.

    Returns:
        Faults, each ``"input_schema<path>: <what>"``.
    """
    if not isinstance(schema, dict):
        return ["input_schema: must be a JSON Schema object, or null"]
    meta = schema.get("$schema")
    if meta is not None and (not isinstance(meta, str) or
                             meta.rstrip("#") not in {m.rstrip("#") for m in META_SCHEMAS}):
        return [f"input_schema.$schema: {meta!r} is not a draft this registry knows "
                f"(one of {sorted(META_SCHEMAS)}, or none for 2020-12)"]
    try:
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as e:
        return [f"{_path('input_schema', e.instance_path)}: {e.message}"]
    try:
        _validator(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))
    except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError) as e:
        return [f"input_schema: {str(e).splitlines()[0]}"]
    return []


def check_input(resolved: Resolved, workflow_input: Any) -> None:
    """Check a submission's input against the definition's ``input_schema`` (none:
    any input).

    Args:
        resolved: the definition's version.
        workflow_input: the submission's ``input``.

    Raises:
        Problem: 422 naming each field that does not match (at most
            ``MAX_INPUT_ERRORS``), e.g. ``input.customer.age: "x" is not of type
            "integer"``.
    """
    if resolved.input_schema is None:
        return
    validator = _validator(orjson.dumps(resolved.input_schema, option=orjson.OPT_SORT_KEYS))
    faults = [f"{_path('input', e.instance_path)}: {e.message}"
              for _, e in zip(range(MAX_INPUT_ERRORS), validator.iter_errors(workflow_input),
                              strict=False)]
    if faults:
        raise Problem(422, "Input does not match the definition",
                      f"the input does not match the input_schema of definition "
                      f"{resolved.name}@{resolved.version}: {'; '.join(faults)}",
                      errors=faults, definition=resolved.name, version=resolved.version)


def _path(root: str, parts: Any) -> str:
    """``input.a[3]`` from jsonschema-rs's instance path (keys and indexes)."""
    link: Any = None
    for part in parts:
        link = (link, part)
    return format_path(root, link)


async def inline_children(pool: asyncpg.Pool, spec: dict[str, Any],
                          chain: tuple[str, ...] = (), max_bytes: int | None = None,
                          me: Principal = OPEN) -> dict[str, Any]:
    """``spec`` with each ``kind: workflow`` node that names a ``definition`` given the
    resolved version's spec inline (``workflow``) and ``definition_version``, the
    definition's name without ``@<version>``, recursively (in inline children too).

    A spec without such nodes is returned as it is, without a query. The size is
    counted as the children are inlined, and inlining stops at the first child that
    takes it over a limit, so a small spec that would expand to millions of nodes is
    refused after reading at most the limit.

    Args:
        pool: the projection's pool.
        spec: a workflow spec document.
        chain: the definitions being inlined around ``spec`` (outermost first), to find
            a definition that names itself.
        max_bytes: the most bytes of spec JSON the result may hold (``spec``'s own and
            each inlined definition's, once per time it is inlined), or None for no
            limit beyond ``MAX_INLINED_NODES``.
        me: who asks: the definitions it sees (``resolve``).

    Returns:
        The spec with every child definition inline: ``spec`` itself when it has no
        child node (``has_children``), else a new document (``spec`` is left unchanged).

    Raises:
        Problem: 422 naming the node, for a malformed reference, an unknown or deleted
            definition or version (another tenant's is unknown), a definition that
            names itself, a chain deeper
            than ``MAX_INLINE_DEPTH``, or a result over ``MAX_INLINED_NODES`` nodes or
            ``max_bytes`` bytes.
    """
    inliner = _Inliner(pool, max_bytes, me)
    if max_bytes is not None:
        inliner.add_bytes(len(orjson.dumps(spec)), "workflow")
    inlined: dict[str, Any] = await inliner.spec(spec, chain, "")
    return inlined


class _Inliner:
    """One ``inline_children`` call: resolves each reference once, counts the nodes
    and bytes inlined so far."""

    def __init__(self, pool: asyncpg.Pool, max_bytes: int | None = None,
                 me: Principal = OPEN) -> None:
        self.pool, self.me = pool, me
        self.found: dict[str, Resolved] = {}
        self.sizes: dict[tuple[str, int], int] = {}
        self.max_bytes = max_bytes
        self.nodes = self.bytes = 0

    def add_bytes(self, size: int, where: str) -> None:
        """Count ``size`` bytes more; 422 naming ``where`` past ``max_bytes``."""
        self.bytes += size
        if self.max_bytes is not None and self.bytes > self.max_bytes:
            raise _too_large(where, f"the spec with its child definitions inlined is over "
                             f"{self.max_bytes} bytes (HEADWATER_MAX_BODY_BYTES)")

    async def spec(self, spec: Any, chain: tuple[str, ...], where: str, depth: int = 0) -> Any:
        """``spec`` with its children inlined; ``depth``: how deep it is nested."""
        nodes = spec.get("nodes") if isinstance(spec, Mapping) else None
        if isinstance(nodes, list):
            self.nodes += len(nodes)
            if self.nodes > MAX_INLINED_NODES and where:  # one spec's own: parse_spec
                raise _too_large(where.removesuffix(".") or "nodes", "the spec with its "
                                 f"child definitions inlined holds over {MAX_INLINED_NODES} "
                                 "nodes (MAX_INLINED_NODES, counting every child's)")
        if depth > MAX_INLINE_DEPTH or not has_children(spec):
            return spec  # deeper than a spec may nest: parse_spec names the fault
        out = []
        for i, node in enumerate(spec["nodes"]):
            if _is_child(node):
                at = f"{where}nodes[{i}]" if not isinstance(node.get("id"), str) else (
                    f"{where}nodes.{node['id']}")
                node = await self.node(node, chain, at, depth)
            out.append(node)
        return {**spec, "nodes": out}

    async def node(self, node: Mapping[str, Any], chain: tuple[str, ...], where: str,
                   depth: int) -> dict[str, Any]:
        """A child node with its definition (and its children's) inline."""
        ref = node.get("definition")
        if ref is None:
            return {**node, "workflow": await self.spec(node["workflow"], chain,
                                                        f"{where}.workflow.", depth + 1)}
        resolved = await self._resolve(ref, where)
        if resolved.name in chain:
            raise _child_fault(where, f"definition {resolved.name} names itself "
                               f"({' -> '.join((*chain, resolved.name))})")
        if len(chain) >= MAX_INLINE_DEPTH:
            raise _child_fault(where, f"definitions name definitions more than "
                               f"{MAX_INLINE_DEPTH} deep")
        if self.max_bytes is not None:
            key = (resolved.name, resolved.version)
            if key not in self.sizes:
                self.sizes[key] = len(orjson.dumps(resolved.spec))
            self.add_bytes(self.sizes[key], where)
        child = await self.spec(resolved.spec, (*chain, resolved.name), f"{where}.workflow.",
                                depth + 1)
        return {**node, "definition": resolved.name, "definition_version": resolved.version,
                "workflow": child}

    async def _resolve(self, ref: Any, where: str) -> Resolved:
        if not isinstance(ref, str):
            raise _child_fault(where, "definition must be a string: name or name@version")
        if ref not in self.found:
            try:
                self.found[ref] = await resolve(self.pool, ref, self.me)
            except Problem as e:
                raise _child_fault(where, e.detail) from e
        return self.found[ref]


def has_children(spec: Any) -> bool:
    """Whether ``spec`` has a child workflow node (``kind: workflow``, naming a definition
    or holding a spec): a spec without one is its own inlined form."""
    nodes = spec.get("nodes") if isinstance(spec, Mapping) else None
    return isinstance(nodes, list) and any(_is_child(n) for n in nodes)


def _is_child(node: Any) -> bool:
    """A ``kind: workflow`` node naming a definition or holding an inline spec."""
    return (isinstance(node, Mapping) and node.get("kind") == "workflow"
            and (node.get("definition") is not None or isinstance(node.get("workflow"),
                                                                   Mapping)))


def _too_large(where: str, what: str) -> Problem:
    fault = f"{where}: {what}"
    return Problem(422, "Workflow spec too large", fault, errors=[fault])


def _child_fault(where: str, what: str) -> Problem:
    fault = f"{where}: definition: {what}"
    return Problem(422, "Invalid workflow spec", fault, errors=[fault])
