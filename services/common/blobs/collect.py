"""The collection of blobs no run refers to any more.

A blob stays while a ``blob_refs`` row names it: the row of each run that stored it or
passed it on (``store.PgBlobStore.put``, the gateway's ``adopt``). Projection retention
deletes a run's ``blob_refs`` rows with its other rows (``services/projector/retention.py``,
``RUN_TABLES``); the same periodic job then deletes the blobs that no row names and that
were last stored more than ``HEADWATER_BLOB_GRACE_S`` seconds ago (3600 by default), their
chunks with them (``on delete cascade``).

The grace period is for a blob stored before anything refers to it in the projection:
a worker stores its output's blob (and notes it as its run's) before the report that
carries the reference is projected, and the run's rows may be purged and the
reference still travel in a record for a while (a rerun of it being submitted). A blob
stored again, or adopted by another run, starts its grace period anew, under its row's
lock, so a collection at the same moment never deletes a blob a writer just took.

With the S3 store (``s3.py``) a blob's bytes are an object in a bucket: each batch's
objects are deleted (``drop``) after its rows and before that deletion commits, while
the statement still holds the rows' locks, so a writer of the same digest waits for the
commit and then uploads anew (it never finds a row whose object is about to go). A crash
between the two leaves the rows without their objects, unreferenced and past their
grace: the next collection deletes them, and a put of the same value before then
uploads the object again (``S3BlobStore.put`` looks at the object, not the row).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import asyncpg

from services.common.settings import env_float

__all__ = ["BATCH", "DEFAULT_GRACE_S", "collect_once", "collect_statement", "grace_from_env"]

DEFAULT_GRACE_S = 3600.0
"""How long an unreferenced blob is kept after it was last stored, seconds."""
BATCH = 1000
"""Most blobs one statement deletes; the job goes on until none is left."""


def grace_from_env() -> float:
    """``HEADWATER_BLOB_GRACE_S``: seconds an unreferenced blob is kept.

    Raises:
        ValueError: not a number, or negative.
    """
    seconds = env_float("BLOB_GRACE_S", DEFAULT_GRACE_S)
    if not seconds >= 0:
        raise ValueError("HEADWATER_BLOB_GRACE_S must be at least 0")
    return seconds


def collect_statement() -> str:
    """One statement that deletes up to ``$2`` blobs that no ``blob_refs`` row names and
    that were last stored more than ``$1`` seconds ago; it returns their digests and
    sizes. Rows a writer holds are skipped (``skip locked``), and a row stored again
    since the statement's snapshot is checked again under its lock, so it stays."""
    doomed = ("select digest from blobs b where b.created_at < now() - $1::float8 * "
              "interval '1 second' and not exists (select 1 from blob_refs r where "
              "r.digest = b.digest) order by b.created_at limit $2 for update skip locked")
    return (f"with doomed as ({doomed}) delete from blobs where digest in "
            "(select digest from doomed) returning digest, size")


ORPHANS = (
    "delete from blob_refs r where r.created_at < now() - $1::float8 * interval '1 second'"
    " and not exists (select 1 from workflows w where w.workflow_id = r.workflow_id)")
"""Forget the references of ids no run holds, older than the grace period: a writer that
stored a blob for an id and never got its run accepted (a gateway that died between
storing a submission's input and its claim; a claim given back after Kafka refused the
record; a worker whose run was never projected). Without this their blobs would stay for
good, readable by whoever is given the id next. A run accepted but not projected within
the grace period gets its references again from the projector (``INSERT_BLOB_REFS``)."""


async def collect_once(conn: asyncpg.Connection, grace_s: float,
                       drop: Callable[[list[str]], Awaitable[None]] | None = None,
                       ) -> tuple[int, int]:
    """Delete every blob unreferenced for more than ``grace_s`` seconds, ``BATCH`` at a
    time; first forget the references of ids no run holds (``ORPHANS``).

    Args:
        conn: a connection to the projection's database.
        grace_s: how long an unreferenced blob is kept after it was last stored.
        drop: deletes the bytes kept outside the database of the digests it is given
            (the S3 store's ``delete``), before their rows' deletion commits.

    Returns:
        How many blobs were deleted, and their bytes.
    """
    await conn.execute(ORPHANS, grace_s)
    count = size = 0
    statement = collect_statement()
    while True:
        async with conn.transaction():
            rows = await conn.fetch(statement, grace_s, BATCH)
            if rows and drop is not None:
                await drop([str(r["digest"]) for r in rows])
        count += len(rows)
        size += sum(int(r["size"]) for r in rows)
        if len(rows) < BATCH:
            return count, size
