"""``PUT /v1/limits/{key}``: a limit of a key defined apart from the specs that name it
(docs/specs.md, "Concurrency keys and rate limits"; docs/architecture.md §4n).

The body holds ``concurrency: {limit}`` and/or ``rate_limit: {per_second | per_minute |
limit + window_s}``, each checked as a spec's would be (``headwater.core.limits``); a
field given as null takes that kind's definition back. Each becomes a ``LimitDefined``
produced to ``control`` keyed by its limiter's id, so it is part of the limiter's history
and governs its next grants. A key is shared by every tenant's runs: defining its limit
takes a principal of every tenant (an operator's token, or auth off).
"""

from __future__ import annotations

from typing import Any

import orjson

from headwater.core import events as ev
from headwater.core.limits import (
    CONCURRENCY,
    CONCURRENCY_KEY,
    MAX_KEY_CHARS,
    RATE,
    RATE_KEY,
    limiter_id,
    parse_limits,
)
from services.common.auth.tokens import Principal
from services.common.clock import now_ms
from services.gateway.edge.problems import Problem
from services.gateway.outlet import Outlet

EVERY_TENANT = "a token for every tenant"
"""What a tenant's principal lacks to define a limit (the 403's ``needs``)."""


def definitions(key: str, body: bytes, me: Principal) -> list[ev.LimitDefined]:
    """The ``LimitDefined`` records of a request.

    Raises:
        Problem: 403 for a tenant's principal; 422 naming every fault (the key, a body
            that is no object, no field, an unknown field, a bad limit).
    """
    if not me.every_tenant:
        raise Problem(403, "Forbidden", "a limit's key is shared by every tenant's runs: "
                      f"defining it takes {EVERY_TENANT}", role=me.role, needs=EVERY_TENANT)
    faults: list[str] = []
    if not key or len(key) > MAX_KEY_CHARS or "${" in key:
        faults.append(f"key: 1 to {MAX_KEY_CHARS} characters, no ${{...}} reference")
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise Problem(422, "Invalid request", f"body: not JSON: {e}",
                      errors=[f"body: not JSON: {e}"]) from e
    if not isinstance(doc, dict) or not doc or set(doc) - {CONCURRENCY_KEY, RATE_KEY}:
        faults.append(f"body: an object with {CONCURRENCY_KEY} and/or {RATE_KEY}, such as "
                      "{\"concurrency\": {\"limit\": 3}}")
        raise Problem(422, "Invalid request", "; ".join(faults), errors=faults)
    raw = {f: {**v, "key": key} for f, v in doc.items() if isinstance(v, dict)}
    faults += [f"{f}: must be an object or null" for f, v in doc.items()
               if v is not None and not isinstance(v, dict)]
    limits = parse_limits(raw, "body", faults)
    if faults:
        raise Problem(422, "Invalid request", "; ".join(faults), errors=faults)
    at = now_ms()
    out = [ev.LimitDefined(limiter_id(lim.kind, key), lim.kind, key, lim.limit, lim.window_ms,
                           at) for lim in limits]
    out += [ev.LimitDefined(limiter_id(kind, key), kind, key, 0, 0, at)
            for f, kind in ((CONCURRENCY_KEY, CONCURRENCY), (RATE_KEY, RATE))
            if f in doc and doc[f] is None]
    return out


async def define(out: Outlet, records: list[ev.LimitDefined]) -> dict[str, Any]:
    """Produce each record to ``control``; the answer's document."""
    for record in records:
        await out.control(record, "limit")
    return {"key": records[0].key, "limits": [
        {"limiter": r.workflow_id, "kind": r.kind, "limit": r.limit or None,
         "window_s": r.window_ms / 1000 if r.kind == RATE and r.limit else None,
         "links": {"history": f"/v1/workflows/{r.workflow_id}"}} for r in records]}
