"""Where blobs live: PostgreSQL by default (the projection's database, no new component),
one row per blob and its JSON in chunks of ``CHUNK_BYTES``.

Tables (``services/common/schema.py``): ``blobs`` (digest, size, when first stored),
``blob_chunks`` (digest, chunk number, bytes) and ``blob_refs`` (which run stored or
passed which blob; what the tenant scope of ``GET .../blobs/{digest}`` and the collection
of unreferenced blobs read). A blob is content-addressed: storing the same JSON twice
(a retried attempt, two runs with one input) keeps one copy and adds a reference.
``s3.py`` keeps the bytes in an S3 bucket instead, the rows here
(``HEADWATER_BLOB_STORE=s3``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

import asyncpg

__all__ = ["BLOBS_SCHEMA", "BLOB_REFS_SCHEMA", "CHUNK_BYTES", "BlobStore", "PgBlobStore"]

BLOBS_SCHEMA = """
create table if not exists blobs (
    digest text primary key,
    size bigint not null,
    created_at timestamptz not null default now()  -- when last stored or adopted
);
create table if not exists blob_chunks (
    digest text not null references blobs (digest) on delete cascade,
    n integer not null,
    data bytea not null,
    primary key (digest, n)
);
"""
BLOB_REFS_SCHEMA = """
create table if not exists blob_refs (
    workflow_id text not null,
    digest text not null,
    primary key (workflow_id, digest)
);
create index if not exists blob_refs_by_digest on blob_refs (digest);
do $$ begin
    if not exists (select 1 from information_schema.columns where table_schema =
                   current_schema() and table_name = 'blob_refs' and column_name = 'created_at')
    then
        alter table blob_refs add column created_at timestamptz not null default now();
    end if;
end $$;
"""
"""The blob store's tables, created with the projection's (``db.connect_pool``) but not
part of it: no event fills them, so a projection rebuild leaves them as they are
(``rebuild.KEPT_APART``). ``blob_chunks.data`` is stored by PostgreSQL out of line
(TOAST) and compressed when that helps; ``blob_refs`` rows go with their run's rows
(projection retention, ``RUN_TABLES``), and a blob no row refers to is collected
(``services/common/blobs/collect.py``). ``BLOB_REFS_SCHEMA`` is apart: a projection
rebuild's copy has a ``blob_refs`` too, since the projector writes one row per reference
an event carries (``services/projector/statements.py``), which the rebuild then drops
(the live table has the same rows)."""

CHUNK_BYTES = 1024 * 1024
"""The size of one stored chunk: what a reader holds at once while it streams a blob."""


class BlobStore(Protocol):
    """What the services need of a blob store."""

    async def put(self, digest: str, data: bytes, workflow_id: str) -> None:
        """Store ``data`` under ``digest`` (once) and note that ``workflow_id`` refers
        to it; returns once both are durable."""

    async def get(self, digest: str) -> bytes:
        """The blob's bytes.

        Raises:
            KeyError: no blob under ``digest``.
        """

    def chunks(self, digest: str) -> AsyncIterator[bytes]:
        """The blob's bytes in order, a chunk at a time (``KeyError`` before the first
        if there is no such blob)."""

    async def size(self, digest: str) -> int | None:
        """The blob's size in bytes, None if it is not stored."""

    async def close(self) -> None:
        """Let go of what the store opened for itself (not a pool it was given)."""


class PgBlobStore:
    """Blobs in PostgreSQL, through a pool of the services' (``db.connect_pool``)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def put(self, digest: str, data: bytes, workflow_id: str) -> None:
        async with self.pool.acquire() as conn, conn.transaction():
            # A second writer of the same digest waits here for the first's commit, so
            # once this returns the chunks are there, whoever wrote them. Storing a blob
            # again restarts its grace period under the row's lock: a collection of it
            # at the same moment (``collect.py``) either deleted it first (then it is
            # written anew) or sees it fresh and keeps it.
            fresh = await conn.fetchval(
                "insert into blobs (digest, size) values ($1, $2) on conflict (digest) "
                "do update set created_at = now() returning xmax = 0", digest, len(data))
            if fresh:
                await conn.copy_records_to_table(
                    "blob_chunks", columns=("digest", "n", "data"),
                    records=[(digest, i // CHUNK_BYTES, data[i:i + CHUNK_BYTES])
                             for i in range(0, max(len(data), 1), CHUNK_BYTES)])
            await conn.execute(
                "insert into blob_refs (workflow_id, digest) values ($1, $2) "
                "on conflict do nothing", workflow_id, digest)

    async def get(self, digest: str) -> bytes:
        return b"".join([chunk async for chunk in self.chunks(digest)])

    async def chunks(self, digest: str) -> AsyncIterator[bytes]:
        async with self.pool.acquire() as conn, conn.transaction():
            size = await conn.fetchval("select size from blobs where digest = $1", digest)
            if size is None:
                raise KeyError(digest)
            async for row in conn.cursor(
                    "select data from blob_chunks where digest = $1 order by n", digest,
                    prefetch=4):
                yield bytes(row["data"])

    async def size(self, digest: str) -> int | None:
        value = await self.pool.fetchval("select size from blobs where digest = $1", digest)
        return None if value is None else int(value)

    async def close(self) -> None:
        """Nothing: the pool is its owner's."""
