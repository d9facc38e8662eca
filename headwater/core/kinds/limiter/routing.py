"""What one history event sends between attempts held for a permit and their limiters:
the inputs the coordinator produces (``services/coordinator/permits.py``: a request and
a release on ``control`` keyed by the limiter's id, a grant or a denial on ``reports``
keyed by the attempt's workflow id) and the in-process ``Environment`` applies
(docs/architecture.md §4n).

Pure: each input is made from the event alone, so a batch carried out again sends the
same records, which the rules on either side take as copies.
"""

from __future__ import annotations

from headwater.core import events as ev
from headwater.core.ids import dispatch_id, parse_dispatch_id
from headwater.core.limits import is_rate


def permit_inputs(body: ev.Body) -> list[ev.Input]:
    """A request for ``TaskHeld``, a grant for ``PermitIssued``, a denial for
    ``PermitRefused``, a release per limiter for ``PermitsReturned``; nothing for any
    other event."""
    wid = body.workflow_id
    if isinstance(body, ev.TaskHeld):
        return [ev.PermitRequested(
            body.limiter, dispatch_id(wid, body.node, body.index, body.attempt), body.kind,
            body.key, body.limit, body.window_ms, body.units, body.at_ms)]
    if isinstance(body, ev.PermitIssued):
        holder = parse_dispatch_id(body.holder)
        return [] if holder is None else [ev.PermitGranted(*holder, wid, body.at_ms)]
    if isinstance(body, ev.PermitRefused):
        holder = parse_dispatch_id(body.holder)
        return [] if holder is None else [ev.PermitDenied(*holder, wid, body.bound,
                                                          body.at_ms)]
    if isinstance(body, ev.PermitsReturned):
        ended = dispatch_id(wid, body.node, body.index, body.attempt)
        return [ev.PermitReleased(lid, ended, body.at_ms,
                                  units=body.units if is_rate(lid) else None)
                for lid in body.limiters]
    return []
