"""The ``href`` of each reference a document of the gateway shows.

A run's document (``GET /v1/workflows/{id}``, its tasks', its event stream) holds the
values the projection holds, where a large one is a reference ``{"$blob", "bytes"}``
(``headwater/blobs.py``). Before it is sent, each reference gets an ``href``: the path
of ``GET /v1/workflows/{id}/blobs/{digest}`` under the run being shown, which streams
its JSON to whoever may read that run. A reference with a ``path`` (a part of a stored
value: a map's item, a selected field) keeps it: its ``href`` streams the whole blob,
and the reader walks the path (the client does). The check is cheap for a document without one:
its JSON is encoded anyway, and only one holding the ``"$blob"`` key is walked.
"""

from __future__ import annotations

from typing import Any

import orjson

from headwater import blobs

__all__ = ["blob_href", "dumps", "with_hrefs"]

_MARK = b'"' + blobs.REF_KEY.encode() + b'"'
"""How a reference's key reads in JSON (a string value ``"$blob"`` matches too: then the
walk finds nothing to add, which is only slower)."""


def blob_href(workflow_id: str, digest: str) -> str:
    """The path that streams blob ``digest`` as a part of run ``workflow_id``'s values
    (workflow ids are URL-safe: ``topics.WORKFLOW_ID_PATTERN``)."""
    return f"/v1/workflows/{workflow_id}/blobs/{digest}"


def with_hrefs(value: Any, workflow_id: str) -> Any:
    """``value`` with each reference given its ``href`` under ``workflow_id`` (a new
    value where one is found; the parts without a reference are the same objects)."""
    if blobs.is_ref(value):  # its path and count kept: the href streams the whole blob
        return {**blobs.without_hrefs(value),
                "href": blob_href(workflow_id, value[blobs.REF_KEY])}
    if isinstance(value, dict):
        return {k: with_hrefs(v, workflow_id) for k, v in value.items()}
    if isinstance(value, list):
        return [with_hrefs(v, workflow_id) for v in value]
    return value


def dumps(doc: Any, workflow_id: str) -> bytes:
    """``doc`` as JSON, its references with their ``href`` (``with_hrefs``); encoded
    once when it holds none."""
    data = orjson.dumps(doc)
    if _MARK not in data:
        return data
    return orjson.dumps(with_hrefs(doc, workflow_id))
