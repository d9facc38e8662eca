"""Read-side listing of workflows over the projection (``GET /v1/workflows``): its
filters, read from the query parameters, and its pages, newest first with cursor
paging."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NoReturn

import asyncpg

from headwater.core.instants import RFC3339_HINT, parse_instant
from headwater.core.kinds.workflow.records import DEFINITION_REF, MAX_VERSION
from headwater.core.labels import KEY_HINT, MAX_LABELS, VALUE_HINT, parse_selector
from services.gateway.edge.problems import Problem
from services.gateway.runs.cursor import decode_cursor, encode_cursor
from services.gateway.runs.facts import TERMINAL, definition_of, links, paused_view


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


@dataclass(frozen=True)
class ListFilter:
    """What ``GET /v1/workflows`` filters by (None: no filter on that column).

    Attributes:
        definition: a registered definition's name; with ``version``, that version only.
        created_after: only workflows created after this instant (exclusive).
        created_before: only workflows created before this instant (exclusive).
        labels: ``(key, value)`` pairs every workflow listed carries (value None: the
            key with any value).
        paused: only the runs paused now (True) or only the others (False); a run that
            has ended is not paused, as its document says (``facts.paused_view``).
    """

    status: str | None = None
    name: str | None = None
    tenant: str | None = None
    definition: str | None = None
    version: int | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    labels: tuple[tuple[str, str | None], ...] = ()
    paused: bool | None = None


def list_filter(status: str | None = None, name: str | None = None, tenant: str | None = None,
                definition: str | None = None, created_after: str | None = None,
                created_before: str | None = None) -> ListFilter:
    """The filter of ``GET /v1/workflows`` from its query parameters.

    Args:
        definition: ``"name"`` or ``"name@version"``.
        created_after, created_before: RFC 3339 date-times with a UTC offset
            (``headwater.core.instants``), to the millisecond.

    Raises:
        Problem: 422 naming the parameter (``errors``: ``["query.<name>: <why>"]``) when
            a value is malformed, as for the other query parameters.
    """
    ref = None if definition is None else DEFINITION_REF.fullmatch(definition)
    if definition is not None and (ref is None or int(ref["version"] or 1) > MAX_VERSION):
        _bad_query("definition", "a definition's name, or name@version (such as billing@3)")
    return ListFilter(
        status=status, name=name, tenant=tenant,
        definition=ref["name"] if ref else None,
        version=int(ref["version"]) if ref and ref["version"] else None,
        created_after=_instant("created_after", created_after),
        created_before=_instant("created_before", created_before))


def label_selectors(texts: list[str]) -> tuple[tuple[str, str | None], ...]:
    """The ``?label=`` selectors as ``(key, value)`` pairs (value None: any value).

    Raises:
        Problem: 422 naming ``query.label`` for a selector of neither form, or more
            than ``MAX_LABELS`` of them.
    """
    if len(texts) > MAX_LABELS:
        _bad_query("label", f"given at most {MAX_LABELS} times (got {len(texts)})")
    out = []
    for text in texts:
        selector = parse_selector(text)
        if selector is None:
            _bad_query("label", f"key:value or key (the key {KEY_HINT}; the value "
                       f"{VALUE_HINT}), not {text[:80]!r}")
        out.append(selector)
    return tuple(out)


def label_clauses(labels: tuple[tuple[str, str | None], ...],
                  args: list[object]) -> list[str]:
    """The SQL conditions of label selectors over ``workflows.labels`` (its GIN index
    serves both: containment for ``key:value``, key existence for ``key``), their
    arguments appended to ``args``."""
    wanted = {k: v for k, v in labels if v is not None}
    clauses = []
    if wanted:
        args.append(wanted)  # the pool's jsonb codec writes it (db.init_connection)
        clauses.append(f"labels @> ${len(args)}::jsonb")
    for key in dict.fromkeys(k for k, v in labels if v is None):
        args.append(key)
        clauses.append(f"labels ? ${len(args)}")
    return clauses


def paused_filter(text: str | None) -> bool | None:
    """The ``?paused=`` filter: ``true`` (the runs paused now), ``false`` (the others)
    or absent (None: no filter).

    Raises:
        Problem: 422 naming ``query.paused`` for any other value.
    """
    if text is None:
        return None
    if text not in ("true", "false"):
        _bad_query("paused", f"true or false, not {text[:80]!r}")
    return text == "true"


def paused_clause(paused: bool | None) -> list[str]:
    """The SQL condition of the ``paused`` filter over ``workflows`` (none for None).

    A run is paused while ``workflows.paused`` is set and it has not ended: a run that
    ended while paused keeps its column (no resume clears it) but its document shows
    ``paused: null`` (``facts.paused_view``), and the filter agrees with the document.
    ``workflows_paused`` (partial: the rows with a pause) serves ``true``.
    """
    if paused is None:
        return []
    ended = ", ".join(f"'{s}'" for s in TERMINAL)
    if paused:
        return [f"(paused is not null and status not in ({ended}))"]
    return [f"(paused is null or status in ({ended}))"]


def _instant(parameter: str, text: str | None) -> datetime | None:
    if text is None:
        return None
    ms = parse_instant(text)
    if ms is None:
        _bad_query(parameter, RFC3339_HINT)
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _bad_query(parameter: str, what: str) -> NoReturn:
    error = f"query.{parameter}: must be {what}"
    raise Problem(422, "Invalid request", error, errors=[error])


_LIST_COLUMNS = (("status", "="), ("name", "="), ("tenant", "="), ("definition", "="),
                 ("definition_version", "="), ("created_at", ">"), ("created_at", "<"))


def filter_clauses(filters: ListFilter, args: list[object]) -> list[str]:
    """The SQL conditions over ``workflows`` of ``filters`` (``true`` first, so never
    empty), their arguments appended to ``args``; the listing's and a bulk operation's
    (``operations.matching``)."""
    where: list[str] = ["true"]
    values = (filters.status, filters.name, filters.tenant, filters.definition,
              filters.version, filters.created_after, filters.created_before)
    for (column, op), value in zip(_LIST_COLUMNS, values, strict=True):
        if value is not None:
            args.append(value)
            where.append(f"{column} {op} ${len(args)}")
    return where + label_clauses(filters.labels, args) + paused_clause(filters.paused)


async def list_view(pool: asyncpg.Pool, filters: ListFilter, limit: int,
                    cursor: str | None) -> dict[str, Any]:
    """Workflows newest first, filtered, ``limit`` per page, with ``next_cursor``.

    Every filter is served by an index with the listing's order (``services/common/db.py``):
    the cursor (the last row's ``(created_at, workflow_id)``) continues the same order
    under the same filters.
    """
    args: list[object] = []
    where = filter_clauses(filters, args)
    if cursor:
        created, wid = decode_cursor(cursor)
        args += [created, wid]
        where.append(f"(created_at, workflow_id) < (${len(args) - 1}, ${len(args)})")
    args.append(limit + 1)
    rows = await pool.fetch(
        "select workflow_id, name, tenant, status, seq, created_at, updated_at, error,"
        " definition, definition_version, paused, labels"
        f" from workflows where {' and '.join(where)}"
        f" order by created_at desc, workflow_id desc limit ${len(args)}", *args)
    items = [{"id": r["workflow_id"], "name": r["name"], "tenant": r["tenant"],
              "status": r["status"], "seq": r["seq"], "created_at": _iso(r["created_at"]),
              "updated_at": _iso(r["updated_at"]), "error": r["error"],
              "definition": definition_of(r), "paused": paused_view(r["paused"], r["status"]),
              "labels": r["labels"] or {},
              "links": links(r["workflow_id"])}
             for r in rows[:limit]]
    last = rows[limit - 1] if len(rows) > limit else None
    return {"items": items,
            "next_cursor": encode_cursor(last["created_at"], last["workflow_id"]) if last else None}
