"""Compare the projection's tables in two PostgreSQL schemas, row by row.

Every column is compared except what only the gateway writes: ``workflows.body_hash``
and ``request_hash`` (its idempotency digests: the rebuilt copy has no request's) and
the gateway's claims (``workflows`` rows with ``seq`` 0: an id taken for a submission the
coordinator has not accepted yet), which exist in the live tables only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import asyncpg

KEYS: dict[str, tuple[str, ...]] = {
    "workflows": ("workflow_id",),
    "nodes": ("workflow_id", "node"),
    "tasks": ("workflow_id", "task_key"),
    "events": ("workflow_id", "seq"),
    "waits": ("workflow_id", "wait_key"),
    "signals": ("workflow_id", "seq"),
    "loop_steps": ("workflow_id", "node", "step"),
    "schedules": ("workflow_id",),
    "limiters": ("workflow_id",),
    "caches": ("workflow_id",),
}
"""The projection's tables and their primary keys."""
GATEWAY_COLUMNS: dict[str, frozenset[str]] = {
    "workflows": frozenset({"body_hash", "request_hash"})}
CLAIMS = "seq > 0"
"""Filters out the gateway's claims (``workflows`` rows with ``seq`` 0)."""

ONLY_LIVE = "only in the live tables"
ONLY_REBUILT = "only in the rebuilt copy"
DIFFERENT = "different"


def ident(name: str) -> str:
    """``name`` quoted as a PostgreSQL identifier."""
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class RowDifference:
    """One row that is not the same in both schemas.

    Attributes:
        table: the table.
        key: the row's primary key values.
        kind: ``ONLY_LIVE``, ``ONLY_REBUILT`` or ``DIFFERENT``.
        columns: for ``DIFFERENT``, ``(column, live value, rebuilt value)`` per column.
    """

    table: str
    key: tuple[Any, ...]
    kind: str
    columns: tuple[tuple[str, Any, Any], ...] = ()

    def describe(self) -> str:
        """One line for people."""
        where = f"{self.table} {'/'.join(map(str, self.key))}"
        if self.kind != DIFFERENT:
            return f"{where}: {self.kind}"
        cols = "; ".join(f"{c}: live {_short(a)}, rebuilt {_short(b)}"
                         for c, a, b in self.columns)
        return f"{where}: {cols}"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"table": self.table, "key": [str(k) for k in self.key], "kind": self.kind,
                "columns": [{"column": c, "live": str(a), "rebuilt": str(b)}
                            for c, a, b in self.columns],
                "message": self.describe()}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


async def columns(conn: asyncpg.Connection, schema: str, table: str,
                  every: bool = False) -> list[str]:
    """The columns of ``schema.table`` in table order: the compared ones, or ``every``."""
    rows = await conn.fetch(
        "select column_name from information_schema.columns where table_schema = $1"
        " and table_name = $2 order by ordinal_position", schema, table)
    skip = frozenset() if every else GATEWAY_COLUMNS.get(table, frozenset())
    return [r["column_name"] for r in rows if r["column_name"] not in skip]


async def compare(conn: asyncpg.Connection, live: str, rebuilt: str,
                  limit: int = 200) -> list[RowDifference]:
    """The rows that differ between the tables of schemas ``live`` and ``rebuilt``.

    Args:
        conn: a connection that decodes ``jsonb`` (``db.init_connection``).
        live: the live tables' schema.
        rebuilt: the rebuilt copy's schema.
        limit: at most this many differing rows per table and side.

    Returns:
        The differences, by table and key (empty: the tables hold the same rows).
    """
    found: list[RowDifference] = []
    for table in KEYS:
        found += await _compare_table(conn, table, live, rebuilt, limit)
    return found


async def _compare_table(conn: asyncpg.Connection, table: str, live: str, rebuilt: str,
                         limit: int) -> list[RowDifference]:
    """``compare`` for one table, on the columns of the rebuilt copy's."""
    key, cols = KEYS[table], await columns(conn, rebuilt, table)
    select = ", ".join(ident(c) for c in cols)
    where = f" where {CLAIMS}" if table == "workflows" else ""
    a = f"select {select} from {ident(live)}.{ident(table)}{where}"
    b = f"select {select} from {ident(rebuilt)}.{ident(table)}"
    rows = await conn.fetch(
        f"(select 'live' as side, * from ({a} except all {b}) x limit $1) union all "
        f"(select 'rebuilt' as side, * from ({b} except all {a}) y limit $1)", limit)
    sides: dict[str, dict[tuple[Any, ...], asyncpg.Record]] = {"live": {}, "rebuilt": {}}
    for r in rows:
        sides[r["side"]][tuple(r[k] for k in key)] = r
    out: list[RowDifference] = []
    for k in sorted(sides["live"].keys() | sides["rebuilt"].keys(), key=repr):
        old, new = sides["live"].get(k), sides["rebuilt"].get(k)
        if old is None:
            out.append(RowDifference(table, k, ONLY_REBUILT))
        elif new is None:
            out.append(RowDifference(table, k, ONLY_LIVE))
        else:
            out.append(RowDifference(table, k, DIFFERENT, tuple(
                (c, old[c], new[c]) for c in cols if old[c] != new[c])))
    return out
