"""How a service hands large values to the blob store and takes them back
(``headwater/blobs.py`` says what a reference is and which parts become one).

A worker offloads a task's output, checkpoints and chunks before they go on a report,
and resolves the references in a dispatch's input before it calls the task; the gateway
offloads a submission's input and a signal's payload before they go on a record, and
streams a blob to whoever may read the run. ``Claims`` opens its store on first use: a
service that never meets a large value never connects to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import orjson

from headwater import blobs
from services.common.blobs.s3 import S3BlobStore, S3Settings, open_s3, s3_settings_from_env
from services.common.blobs.store import BlobStore, PgBlobStore
from services.common.db import connect_pool
from services.common.settings import CommonSettings, env_int, env_str

__all__ = ["STORES", "Claims", "store_from_env", "store_opener", "threshold_from_env"]

STORES = ("postgresql", "s3")
"""What ``HEADWATER_BLOB_STORE`` may name."""


def threshold_from_env() -> int:
    """``HEADWATER_BLOB_THRESHOLD_BYTES``: the most bytes of JSON a value keeps inline
    (``blobs.DEFAULT_THRESHOLD_BYTES`` by default; 0: never by reference).

    Raises:
        ValueError: not an integer, or negative.
    """
    value = env_int("BLOB_THRESHOLD_BYTES", blobs.DEFAULT_THRESHOLD_BYTES)
    if value < 0:
        raise ValueError("HEADWATER_BLOB_THRESHOLD_BYTES must be at least 0")
    return value


def store_from_env() -> S3Settings | None:
    """``HEADWATER_BLOB_STORE``: None for ``postgresql`` (the default), the
    ``HEADWATER_S3_*`` settings for ``s3``. Read when a service starts, so that a bad
    setting stops it there rather than at its first large value.

    Raises:
        ValueError: an unknown store or a bad S3 setting (the message names the variable).
    """
    kind = env_str("BLOB_STORE", "postgresql").strip().lower()
    if kind not in STORES:
        raise ValueError(f"HEADWATER_BLOB_STORE={kind!r}: {' or '.join(STORES)}")
    return s3_settings_from_env() if kind == "s3" else None


def store_opener(s3: S3Settings | None,
                 pool: Callable[[], Awaitable[asyncpg.Pool]]) -> Callable[[], Awaitable[BlobStore]]:
    """What opens the store ``store_from_env`` chose, its rows in the database of the
    pool ``pool`` gives (called once, on first use)."""
    async def open_store() -> BlobStore:
        rows = await pool()
        if s3 is None:
            return PgBlobStore(rows)
        return S3BlobStore(rows, await open_s3(s3))

    return open_store


class Claims:
    """A service's way to the blob store.

    Args:
        opener: opens the store (called once, on first use).
        threshold: the most bytes of JSON a value keeps inline (0: no limit).
    """

    def __init__(self, opener: Callable[[], Awaitable[BlobStore]], threshold: int) -> None:
        self._opener = opener
        self.threshold = threshold
        self._store: BlobStore | None = None
        self._lock = asyncio.Lock()

    @classmethod
    def from_settings(cls, settings: CommonSettings) -> Claims:
        """The store that ``HEADWATER_BLOB_STORE`` names (``postgresql``, the default:
        the projection's database; ``s3``: a bucket, ``HEADWATER_S3_*``), its rows in a
        pool of its own, with the threshold from the environment.

        Raises:
            ValueError: an unknown store, a bad S3 setting or a bad threshold.
        """
        async def pool() -> asyncpg.Pool:
            return await connect_pool(settings.pg_dsn, max_size=4, auth=settings.pg_auth)

        return cls(store_opener(store_from_env(), pool), threshold_from_env())

    async def store(self) -> BlobStore:
        """The store, opened on the first call."""
        if self._store is None:
            async with self._lock:
                if self._store is None:
                    self._store = await self._opener()
        return self._store

    async def close(self) -> None:
        """Close the store if it was opened (an S3 store's client)."""
        if self._store is not None:
            await self._store.close()

    async def offload(self, value: Any, workflow_id: str) -> Any:
        """``value`` with its large parts by reference, once their blobs are stored
        (and noted as ``workflow_id``'s); ``value`` itself when it is small.

        Raises:
            TypeError: ``value`` is not JSON.
        """
        value, found = blobs.offload(value, self.threshold)
        if found:
            store = await self.store()
            for digest, data in found.items():
                await store.put(digest, data, workflow_id)
        return value

    async def resolve(self, value: Any) -> Any:
        """``value`` with every reference replaced by what it names (references inside
        blobs too); ``value`` itself when it holds none.

        Raises:
            KeyError: a blob is missing from the store.
        """
        wanted = {ref[blobs.REF_KEY] for ref in blobs.refs_in(value)}
        if not wanted:
            return value
        store = await self.store()
        fetched: dict[str, bytes] = {}
        while wanted:
            digest = wanted.pop()
            data = await store.get(digest)
            fetched[digest] = data
            wanted |= {ref[blobs.REF_KEY] for ref in blobs.refs_in(orjson.loads(data))
                       if ref[blobs.REF_KEY] not in fetched}
        return blobs.resolve(value, fetched)
