"""Opaque listing cursors: base64url of ``["<created_at ISO 8601>", "<workflow id>"]``.

The decoder is strict: a cursor reaches a SQL query, so anything this API could not
have returned (NUL in the id, a date PostgreSQL or Python cannot represent, extra
members) is a 400, never a database error.
"""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime

import orjson

from headwater.topics import WORKFLOW_ID_PATTERN
from services.gateway.edge.problems import Problem

_WORKFLOW_ID = re.compile(WORKFLOW_ID_PATTERN)
MAX_CURSOR_CHARS = 1000


def encode_cursor(created_at: datetime, workflow_id: str) -> str:
    """An opaque cursor after ``(created_at, workflow_id)``.

    Args:
        created_at: the row's creation time, timezone-aware.
        workflow_id: the row's id.
    """
    return base64.urlsafe_b64encode(orjson.dumps([created_at.isoformat(), workflow_id])).decode()


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """Inverse of ``encode_cursor``.

    Returns:
        ``(created_at in UTC, workflow_id)``.

    Raises:
        Problem: 400 for anything ``encode_cursor`` could not have produced.
    """
    try:
        return _decode(cursor)
    except (ValueError, OverflowError, TypeError) as e:
        raise Problem(400, "Bad cursor", "the cursor is not one this API returned") from e


def _decode(cursor: str) -> tuple[datetime, str]:
    if len(cursor) > MAX_CURSOR_CHARS:
        raise ValueError("too long")
    doc = orjson.loads(base64.b64decode(cursor.encode("ascii"), altchars=b"-_", validate=True))
    if not (isinstance(doc, list) and len(doc) == 2
            and isinstance(doc[0], str) and isinstance(doc[1], str)):
        raise ValueError("not [created_at, workflow_id]")
    created_text, workflow_id = doc
    if not _WORKFLOW_ID.fullmatch(workflow_id):
        raise ValueError("not a workflow id")
    created = datetime.fromisoformat(created_text)
    if created.tzinfo is None:
        raise ValueError("no time zone")
    return created.astimezone(UTC), workflow_id  # OverflowError beyond years 1..9999 UTC
