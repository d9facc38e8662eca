"""The values of recently resolved blobs, by digest, kept so that one blob is loaded once
for many uses (``headwater/blobs.py``).

A map over a list stored by reference gives each of its children a reference to its own
item (``{"$blob": d, "bytes": N, "path": [i]}``): without a cache, a worker running 5,000
of them would fetch and decode the same blob 5,000 times. ``BlobCache`` keeps each
blob's value (its own references resolved) for the next use, least recently used first
out, bounded by the bytes of JSON it was decoded from (a blob larger than the bound is
used once and not kept). Loads of one digest at the same moment share one fetch: the
first of a map's children to come starts it, the others wait for it.

What it hands out is shared: the caller copies the part it gives to task code
(``Claims.resolve``), so that code changing its input does not change the next one's.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["DEFAULT_CACHE_BYTES", "BlobCache", "Loaded"]

log = logging.getLogger("headwater.blobs")

DEFAULT_CACHE_BYTES = 64 * 1024 * 1024
"""The bytes of JSON a worker's cache keeps values of unless ``HEADWATER_BLOB_CACHE_BYTES``
says otherwise (a value decoded takes several times its JSON in memory)."""

Loaded = tuple[Any, int]
"""A blob's value, its references resolved, and the bytes of JSON it came from (its own
and those of the blobs inside it)."""


class BlobCache:
    """Resolved blobs by digest, least recently used out first.

    Args:
        max_bytes: the most bytes of JSON the values kept came from (0: keep none).

    Attributes:
        loads: how many blobs were loaded (fetched and decoded) through it.
        hits: how many uses found a blob kept, or being loaded by another.
    """

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.loads = 0
        self.hits = 0
        self._kept: OrderedDict[str, Loaded] = OrderedDict()
        self._loading: dict[str, asyncio.Future[Loaded]] = {}

    def __contains__(self, digest: str) -> bool:
        return digest in self._kept

    async def get(self, digest: str, load: Callable[[str], Awaitable[Loaded]]) -> Loaded:
        """Blob ``digest``'s value and size: the one kept, the one another caller is
        loading, or ``load(digest)``'s (kept when it fits).

        Raises:
            Exception: what ``load`` raised (for every caller waiting on it).
        """
        while True:
            kept = self._kept.get(digest)
            if kept is not None:
                self._kept.move_to_end(digest)
                self.hits += 1
                return kept
            pending = self._loading.get(digest)
            if pending is None:
                return await self._load(digest, load)
            try:
                found = await asyncio.shield(pending)
            except asyncio.CancelledError:
                if pending.cancelled() and not _cancelling():
                    continue  # its loader was cancelled, not this caller: load it here
                raise
            self.hits += 1
            return found

    async def _load(self, digest: str, load: Callable[[str], Awaitable[Loaded]]) -> Loaded:
        pending: asyncio.Future[Loaded] = asyncio.get_running_loop().create_future()
        self._loading[digest] = pending
        try:
            found = await load(digest)
        except asyncio.CancelledError:
            pending.cancel()
            raise
        except BaseException as e:
            pending.set_exception(e)
            pending.exception()  # retrieved: none may be waiting
            raise
        finally:
            self._loading.pop(digest, None)
        pending.set_result(found)
        self.loads += 1
        kept = self._keep(digest, found)
        log.info("blob %s loaded: %d bytes of JSON%s", digest, found[1],
                 ", kept" if kept else f", not kept (over {self.max_bytes})")
        return found

    def _keep(self, digest: str, found: Loaded) -> bool:
        """Keep ``found`` if it fits, dropping the least recently used to make room."""
        size = found[1]
        if size > self.max_bytes:
            return False
        while self._kept and self.size + size > self.max_bytes:
            _, (_, dropped) = self._kept.popitem(last=False)
            self.size -= dropped
        self._kept[digest] = found
        self.size += size
        return True


def _cancelling() -> bool:
    """Whether the running task is being cancelled."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
