"""What one history event sends between attempts and their caches: the inputs the
coordinator produces (``services/coordinator/lookups.py``: a lookup and a release on
``control`` keyed by the cache's id, an answer on ``reports`` keyed by the attempt's
workflow id) and the in-process ``Environment`` applies (docs/architecture.md §4o).

Pure: each input is made from the event alone, so a batch carried out again sends the
same records, which the rules on either side take as copies.
"""

from __future__ import annotations

from headwater.core import events as ev
from headwater.core.ids import dispatch_id, parse_dispatch_id


def cache_inputs(body: ev.Body) -> list[ev.Input]:
    """A lookup for ``TaskLookedUp``, an answer for ``CacheServed``, a release for
    ``CacheReturned``; nothing for any other event."""
    wid = body.workflow_id
    if isinstance(body, ev.TaskLookedUp):
        return [ev.CacheLookedUp(body.cache, dispatch_id(wid, body.node, body.index,
                                                         body.attempt),
                                 body.task, body.key, body.ttl_ms, body.refresh,
                                 body.at_ms)]
    if isinstance(body, ev.CacheServed):
        holder = parse_dispatch_id(body.holder)
        if holder is None:
            return []
        return [ev.CacheAnswered(*holder, wid, body.hit, body.at_ms, body.output,
                                 body.source, body.saved_ms, body.units)]
    if isinstance(body, ev.CacheReturned):
        source = {"workflow_id": wid, "node": body.node, "index": body.index,
                  "attempt": body.attempt}
        return [ev.CacheReleased(body.cache, dispatch_id(wid, body.node, body.index,
                                                         body.attempt),
                                 body.at_ms, body.stored, body.output,
                                 source if body.stored else None, body.saved_ms,
                                 body.units)]
    return []
