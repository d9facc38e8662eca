"""The records between cached attempts and their caches (docs/architecture.md §4o; the
rules are the core's: ``headwater/core/machine/lookups.py`` and
``headwater/core/kinds/cache/``, the records ``kinds/cache/routing.py``).

An attempt's ``TaskLookedUp`` looks its key up (``CacheLookedUp`` on ``control``, keyed
by the cache's id, so the cache's coordinator applies it whatever partition the
attempt's workflow is on); the end of an attempt that looked up and was not answered a
hit (``CacheReturned``, recorded after its ``TaskSucceeded``, ``TaskFailed`` or
``TaskCancelled``) releases the cache (``CacheReleased``, with the output when it
succeeded); a cache's ``CacheServed`` answers the attempt (``CacheAnswered`` on
``reports``, keyed by the attempt's workflow id). All of them go through the batch's
intent with its history, like the permits (``permits.py``), so a batch carried out
again sends them again, and the cache's and the attempt's rules take a copy as nothing.
"""

from __future__ import annotations

from headwater.core import events as ev
from headwater.core.kinds.cache.routing import cache_inputs
from headwater.topics import Topics
from services.coordinator.permits import Permit, routed


def lookup_records(topics: Topics, body: ev.Body) -> list[Permit]:
    """The cache records one history event gives rise to (none for most)."""
    return routed(topics, body, cache_inputs(body))
