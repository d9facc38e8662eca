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
from services.common.blobs.cache import DEFAULT_CACHE_BYTES, BlobCache, Loaded
from services.common.blobs.s3 import S3BlobStore, S3Settings, open_s3, s3_settings_from_env
from services.common.blobs.store import BlobStore, PgBlobStore
from services.common.db import connect_pool
from services.common.settings import CommonSettings, env_int, env_str

__all__ = ["STORES", "Claims", "cache_bytes_from_env", "store_from_env", "store_opener",
           "threshold_from_env"]

DECODE_IN_THREAD_BYTES = 1024 * 1024
"""A blob of more JSON than this is decoded in a pool thread, off the event loop."""

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


def cache_bytes_from_env() -> int:
    """``HEADWATER_BLOB_CACHE_BYTES``: the most bytes of JSON a worker keeps the values
    of resolved blobs for (``cache.DEFAULT_CACHE_BYTES`` by default; 0: none kept).

    Raises:
        ValueError: not an integer, or negative.
    """
    value = env_int("BLOB_CACHE_BYTES", DEFAULT_CACHE_BYTES)
    if value < 0:
        raise ValueError("HEADWATER_BLOB_CACHE_BYTES must be at least 0")
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
        cache: where the values of resolved blobs are kept for the next use (a worker's:
            the children of a map over one list stored by reference each resolve their
            item of the same blob); None: each resolution fetches what it needs.
    """

    def __init__(self, opener: Callable[[], Awaitable[BlobStore]], threshold: int,
                 cache: BlobCache | None = None) -> None:
        self._opener = opener
        self.threshold = threshold
        self.cache = cache
        self._store: BlobStore | None = None
        self._lock = asyncio.Lock()

    @classmethod
    def from_settings(cls, settings: CommonSettings) -> Claims:
        """The store that ``HEADWATER_BLOB_STORE`` names (``postgresql``, the default:
        the projection's database; ``s3``: a bucket, ``HEADWATER_S3_*``), its rows in a
        pool of its own, with the threshold and a cache of
        ``HEADWATER_BLOB_CACHE_BYTES`` from the environment (a worker's).

        Raises:
            ValueError: an unknown store, a bad S3 setting, a bad threshold or cache size.
        """
        async def pool() -> asyncpg.Pool:
            return await connect_pool(settings.pg_dsn, max_size=4, auth=settings.pg_auth)

        return cls(store_opener(store_from_env(), pool), threshold_from_env(),
                   BlobCache(cache_bytes_from_env()))

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
        blobs too; the part at its path for a reference with one); ``value`` itself when
        it holds none. With a cache, a blob kept is not fetched again, and each part
        handed out is a copy of the value kept.

        Raises:
            KeyError: a blob is missing from the store.
            blobs.BlobPathError: a reference's path is not in its blob's value.
        """
        refs = list(blobs.refs_in(value))
        if not refs:
            return value
        if self.cache is None:
            return blobs.resolve(value, await self._fetch({r[blobs.REF_KEY] for r in refs}))
        cache = self.cache
        wholes: dict[str, Any] = {}
        shared: set[str] = set()
        for ref in refs:
            digest = ref[blobs.REF_KEY]
            if digest in wholes:
                continue
            if ref["bytes"] > cache.max_bytes:  # never kept: loaded for this use alone
                wholes[digest] = (await self._load(digest))[0]
            else:
                wholes[digest] = (await cache.get(digest, self._load))[0]
                shared.add(digest)
        used: set[str] = set()

        def part(ref: dict[str, Any]) -> Any:
            digest = ref[blobs.REF_KEY]
            found = blobs.pick(wholes[digest], ref.get(blobs.PATH_KEY), digest)
            fresh = digest not in shared and digest not in used
            used.add(digest)
            return found if fresh else _copy(found)

        return blobs.substitute(value, part)

    async def _fetch(self, wanted: set[str]) -> dict[str, bytes]:
        """The JSON of blobs ``wanted`` and of every blob inside them, by digest.

        Raises:
            KeyError: a blob is missing from the store.
        """
        store = await self.store()
        fetched: dict[str, bytes] = {}
        while wanted:
            digest = wanted.pop()
            data = await store.get(digest)
            fetched[digest] = data
            if blobs.REF_KEY.encode() in data:
                wanted |= {ref[blobs.REF_KEY] for ref in blobs.refs_in(orjson.loads(data))
                           if ref[blobs.REF_KEY] not in fetched}
        return fetched

    async def _load(self, digest: str) -> Loaded:
        """Blob ``digest``'s value, the blobs inside it resolved, and the bytes of JSON
        it came from (decoded in a pool thread when large).

        Raises:
            KeyError: a blob is missing from the store.
        """
        fetched = await self._fetch({digest})
        size = sum(len(data) for data in fetched.values())
        whole = blobs.make_ref(digest, size)
        if size > DECODE_IN_THREAD_BYTES:
            return await asyncio.to_thread(blobs.resolve, whole, fetched), size
        return blobs.resolve(whole, fetched), size


def _copy(value: Any) -> Any:
    """A copy of a JSON value that task code may change (a string or a number as it is)."""
    if isinstance(value, dict | list):
        return orjson.loads(orjson.dumps(value))
    return value
