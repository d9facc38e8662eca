"""Rebuild the PostgreSQL projection from the events topic (docs/architecture.md §1: it
can be dropped and rebuilt from the log at any time).

``python -m services.projector.rebuild [--check] [--keep] [--force] [--json]``, also
run by ``headwater projection rebuild`` (the ``headwater`` package never imports
``services``, so the command line starts this module as a process).

How, safe while the live projector runs (it is never stopped):

1. Create a schema ``rebuild_<ms>`` with the projection's tables and project the events
   topic into it from the beginning with the projector's own code (``project``), up
   to a first mark: the live projector's committed offsets (``--check``) or the log's end.
2. Take a lock on the live tables: ``SHARE`` for ``--check`` (the live projector waits,
   readers go on), ``ACCESS EXCLUSIVE`` for a rebuild (readers wait too).
3. Project the events from the first mark to a final one, read under the lock: the live
   projector's committed offsets, once they stop moving (``--check``: the live tables
   then hold exactly the events below them, since the projector commits after each
   projected batch and cannot project another one past the lock; a projector that
   stopped between projecting a batch and committing it shows as differences until it
   runs again), or the log's end (a rebuild: at least everything the live tables hold).
4. ``--check``: compare the copy with the live tables, row by row (``compare``), release
   the lock and drop the copy (``--keep`` keeps it). Exit 1 on any difference.
   Rebuild: keep what only the gateway writes (``body_hash``, ``request_hash``, claims
   of ids not yet accepted), drop the live tables and move the copy's tables into their
   schema, in the same transaction. The live projector's next batch then goes to the new tables;
   its statements are idempotent, so events it projects again change nothing.

A rebuild refuses (exit 2), unless ``--force``, when the log cannot give the whole
projection back: the events topic is missing (a wrong ``HEADWATER_TOPIC_PREFIX``), its
start was deleted by retention, or a workflow of the live tables is missing from the copy.
Every projected batch sends ``NOTIFY headwater_events`` like the live projector's, so a
gateway's open streams may re-read their workflows; they find them unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import asyncpg
from aiokafka.errors import KafkaError

from services.common.blobs.store import BLOB_REFS_SCHEMA
from services.common.clock import now_ms
from services.common.db import connect as pg_connect
from services.common.db import init_connection
from services.common.schema import SCHEMA
from services.common.settings import CommonSettings
from services.projector.compare import (
    KEYS,
    ONLY_LIVE,
    RowDifference,
    columns,
    compare,
    ident,
)
from services.projector.eventlog import EventLog, Offsets
from services.projector.writer import project

log = logging.getLogger("headwater.rebuild")
EXIT_DIFFERENT, EXIT_REFUSED, EXIT_UNREACHABLE = 1, 2, 3
LOCK_TIMEOUT = "60s"


class Refused(Exception):
    """Raised when a rebuild would lose data the log cannot give back."""


@dataclass
class RebuildResult:
    """What a rebuild or a check did.

    Attributes:
        schema: the copy's schema.
        live_schema: the live tables' schema.
        events: events projected into the copy.
        differences: rows that differ between the live tables and the copy (for a
            rebuild: what it changed, which includes rows the live projector had not
            reached yet; at most ``compare``'s limit per table and side).
        notes: remarks.
        swapped: whether the copy replaced the live tables.
        kept: whether the copy's schema was kept.
    """

    schema: str
    live_schema: str = ""
    events: int = 0
    differences: list[RowDifference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    swapped: bool = False
    kept: bool = False


async def connect(dsn: str, schema: str | None = None) -> asyncpg.Connection:
    """A connection to the projection's database, with ``search_path`` = ``schema``."""
    settings = {"search_path": schema} if schema else None
    conn = await pg_connect(dsn, timeout=30, server_settings=settings)
    await init_connection(conn)
    return conn


async def rebuild(settings: CommonSettings, check: bool, keep: bool = False,
                  force: bool = False, say: Callable[[str], None] = print) -> RebuildResult:
    """Rebuild the projection (or, with ``check``, compare a rebuilt copy with it).

    Args:
        settings: bootstrap, topic prefix and DSN.
        check: only compare; leave the live tables as they are.
        keep: keep the copy's schema after a check (or a refused rebuild).
        force: rebuild even when the log cannot give everything back.
        say: where progress lines go.

    Returns:
        What was done and found.

    Raises:
        Refused: a rebuild would lose data (without ``force``).
    """
    result = RebuildResult(f"rebuild_{now_ms()}")
    live = await connect(settings.pg_dsn)
    copy: asyncpg.Connection | None = None
    try:
        result.live_schema = str(await live.fetchval("select current_schema()"))
        await live.execute(f"create schema {ident(result.schema)}")
        copy = await connect(settings.pg_dsn, result.schema)
        await copy.execute(SCHEMA)
        await copy.execute(BLOB_REFS_SCHEMA)  # the projector writes references there
        async with EventLog(settings) as events:
            await _build(settings, events, live, copy, result, _Options(check, force, say))
    finally:
        if copy is not None:
            await copy.close()
        result.kept = keep and not result.swapped
        if not result.swapped and not keep:
            await live.execute(f"drop schema if exists {ident(result.schema)} cascade")
        await live.close()
    return result


@dataclass(frozen=True)
class _Options:
    """How ``rebuild`` was asked to run (its arguments of the same names)."""

    check: bool
    force: bool
    say: Callable[[str], None]


async def _build(settings: CommonSettings, events: EventLog, live: asyncpg.Connection,
                 copy: asyncpg.Connection, result: RebuildResult, options: _Options) -> None:
    check, force, say = options.check, options.force, options.say
    if not events.exists:
        raise Refused(f"there is no topic {events.topic}; is HEADWATER_TOPIC_PREFIX right?")
    truncated = {p: o for p, o in (await events.beginning()).items() if o > 0}
    if truncated:
        note = (f"the events topic no longer holds its first records (partition: first "
                f"offset {truncated}); workflows that began before are incomplete")
        if not check and not force:
            raise Refused(note)
        result.notes.append(note)
    group = settings.topics.projection_group
    end = await events.end()
    first = _bounded(await events.committed(group), end) if check else end
    result.events += await _project_range(events, copy, {}, first, say)
    say(f"projected {result.events} events into {result.schema}; locking the live tables")
    tables = await _live_tables(live, result.live_schema)
    async with live.transaction():
        await live.execute(f"set local lock_timeout = '{LOCK_TIMEOUT}'")
        if tables:
            mode = "share" if check else "access exclusive"
            await live.execute(f"lock table {', '.join(tables)} in {mode} mode")
        final = await _settled(events, group, end, result) if check else await events.end()
        result.events += await _project_range(events, copy, first, _at_least(final, first),
                                               say)
        if tables:
            result.differences = await compare(live, result.live_schema, result.schema)
        if check:
            return
        lost = [d for d in result.differences if d.table == "workflows" and d.kind == ONLY_LIVE]
        if lost and not force:
            raise Refused(f"{len(lost)} workflow(s) of the live tables are not in the log "
                          f"(e.g. {lost[0].key[0]}); a rebuild would lose them")
        await _swap(live, result.live_schema, result.schema, tables)
        result.swapped = True


def _bounded(committed: Offsets, end: Offsets) -> Offsets:
    return {p: min(committed.get(p, e), e) for p, e in end.items()}


def _at_least(offsets: Offsets, floor: Offsets) -> Offsets:
    return {p: max(o, floor.get(p, 0)) for p, o in offsets.items()}


async def _settled(events: EventLog, group: str, end: Offsets, result: RebuildResult) -> Offsets:
    """The live projector's committed offsets once they stop moving (it may still commit
    the batch it projected just before the lock); the log's end where it has none."""
    committed = await events.committed(group)
    for _ in range(10):
        await asyncio.sleep(0.3)
        again = await events.committed(group)
        if again == committed:
            break
        committed = again
    now = await events.end()
    missing = sorted(p for p, e in now.items() if p not in committed and e > 0)
    if missing:
        result.notes.append(f"the live projector ({group}) has committed nothing on "
                             f"partitions {missing}; compared with the log's end there")
    return {p: committed.get(p, e) for p, e in now.items()}


async def _project_range(events: EventLog, copy: asyncpg.Connection, start: Offsets,
                         stop: Offsets, say: Callable[[str], None]) -> int:
    """Project the events between two marks into the copy; return how many."""
    done = 0
    async for batch in events.read(start, stop):
        batch.sort(key=lambda e: (e.workflow_id, e.seq))  # the live projector's order
        await project(copy, batch)
        done += len(batch)
        if done // 10_000 != (done - len(batch)) // 10_000:
            say(f"  {done} events")
    return done


KEPT_APART = ("retired_ids", "task_logs", "task_log_ends", "signal_receipts", "blob_refs",
              "blob_chunks", "blobs")
"""Tables of the projection's database that no event fills, so a rebuild leaves them as
they are: the ids of runs whose rows projection retention deleted (``retention.py``),
the task logs (the ``logs`` topic's, ``task_logs.py``), the signals the gateway
accepted and those the coordinator refused, and the blob store
(``services/common/blobs/store.py``: its tables are not in ``SCHEMA``, so the copy has
none, and the live ones are never locked, dropped or moved)."""
LOCK_ORDER = ("events", "workflows", "tasks", "nodes", "waits", "signals", "loop_steps",
              "schedules", "limiters", "caches")
"""The order in which the projector's statements take their locks (``STATEMENTS``):
taking ours in the same order cannot deadlock with it."""


async def _live_tables(conn: asyncpg.Connection, schema: str) -> list[str]:
    """The projection's tables that exist in ``schema``, qualified and quoted, in
    ``LOCK_ORDER``."""
    found = []
    for table in LOCK_ORDER:
        name = f"{ident(schema)}.{ident(table)}"
        if await conn.fetchval("select to_regclass($1)", name) is not None:
            found.append(name)
    return found


async def _swap(conn: asyncpg.Connection, live: str, copy: str, tables: list[str]) -> None:
    """Keep the gateway's own data, then replace the live tables by the copy's."""
    lv, cp = ident(live), ident(copy)
    if f"{lv}.{ident('workflows')}" in tables:
        await conn.execute(
            f"update {cp}.workflows r set body_hash = coalesce(l.body_hash, r.body_hash),"
            f" request_hash = l.request_hash from {lv}.workflows l"
            " where r.workflow_id = l.workflow_id"
            " and (l.body_hash is not null or l.request_hash is not null)")
        cols = ", ".join(ident(c) for c in await columns(conn, copy, "workflows", every=True))
        await conn.execute(
            f"insert into {cp}.workflows ({cols}) select {cols} from {lv}.workflows l"
            " where l.seq = 0 and not exists (select 1 from"
            f" {cp}.workflows r where r.workflow_id = l.workflow_id)")
    if tables:
        await conn.execute(f"drop table {', '.join(tables)}")
    for table in KEYS:
        await conn.execute(f"alter table {cp}.{ident(table)} set schema {lv}")
    for table in KEPT_APART:  # the live one stays; the copy's, empty, goes
        await conn.execute(f"drop table if exists {cp}.{ident(table)}")
    await conn.execute(f"drop schema {cp}")


def to_json(result: RebuildResult) -> dict[str, Any]:
    """The result as one JSON-ready document."""
    return {"schema": result.schema, "live_schema": result.live_schema,
            "events": result.events, "swapped": result.swapped, "kept": result.kept,
            "notes": result.notes, "differences": [d.to_json() for d in result.differences]}


def main(argv: list[str] | None = None) -> int:
    """Run a rebuild or a check with the ``HEADWATER_*`` settings; return the exit status:
    0 done (no difference), 1 differences (``--check``), 2 refused, 3 unreachable."""
    parser = argparse.ArgumentParser(prog="python -m services.projector.rebuild",
                                     description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--check", action="store_true",
                        help="compare a rebuilt copy with the live tables; change nothing")
    parser.add_argument("--keep", action="store_true", help="keep the copy's schema")
    parser.add_argument("--force", action="store_true",
                        help="rebuild even if the log cannot give everything back")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    settings = CommonSettings(**CommonSettings.common_from_env())
    say: Callable[[str], None] = (lambda line: None) if args.json else print
    try:
        result = asyncio.run(rebuild(settings, args.check, args.keep, args.force, say))
    except Refused as e:
        print(f"refused: {e} (--force to rebuild anyway)", file=sys.stderr)
        return EXIT_REFUSED
    except (OSError, asyncpg.PostgresError, KafkaError, TimeoutError) as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_UNREACHABLE
    report(result, args.check, args.json)
    return EXIT_DIFFERENT if args.check and result.differences else 0


def report(result: RebuildResult, check: bool, as_json: bool) -> None:
    """Print the result."""
    if as_json:
        print(json.dumps(to_json(result), indent=2))
        return
    for note in result.notes:
        print(f"note: {note}")
    verb = "differs" if check else "changed"
    for d in result.differences:
        print(f"{verb}: {d.describe()}")
    if check:
        print(f"{len(result.differences)} difference(s) between the live tables and a copy "
              f"rebuilt from {result.events} events" + (f" (kept in schema {result.schema})"
                                                         if result.kept else ""))
    else:
        print(f"rebuilt the projection in schema {result.live_schema} from {result.events} "
              f"events; {len(result.differences)} row(s) changed (repaired, or not reached "
              "by the live projector yet)")


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
