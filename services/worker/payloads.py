"""The worker's side of payloads by reference (``headwater/blobs.py``): large values go
to the blob store before they go on a report, and references are resolved before task
code sees a value.

Offloaded, each stored (and acknowledged by the store) before its report is produced,
under the dispatch's workflow id: a task's output (``runner``), a checkpoint and a
stream chunk (``attempt``). An activation's output is a decision the coordinator reads,
so only its values go by reference (each step's input, the finish output, the input of
a ``continue_as_new``, each chunk), never its structure (:func:`offload_decision`,
``headwater/workflows/references.py``).

Resolved before the call (``runner``): the dispatch's input (for an activation, the
journal attached to it: step results, signal payloads and the workflow's input, so that
a replayed function sees real values) and the checkpoint an attempt resumes from. A
step's worker continuing the function it holds gives it the step's real output, as a
replay would (``runner._succeeded``).

A small value pays one JSON encoding, which the caller has already made to check that
the value is JSON: it is compared with the threshold and nothing else happens. A large
one is encoded again in a pool thread (``blobs.offload``), off the event loop.

A reference with a path (``{"$blob": d, "bytes": N, "path": [...]}``: a selection
through a value stored by reference, an item of a map over a list stored by reference)
resolves to the part of the blob's value at that path. The worker's ``Claims`` keeps the
values of the blobs it resolved (``services/common/blobs/cache.py``), so the children of
one map load its list once.

Failures: a blob that is not in the store (:class:`BlobMissingError`) and a store that
cannot be reached or fails (:class:`BlobStoreError`) fail the attempt as retryable (a
store outage can pass); a path the blob's value has not (:class:`PathMissingError`)
fails it for good, as a reference to a missing key fails a node when the value is
inline.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from headwater import blobs
from headwater.workflows.references import offload_decision as offload_decision_values
from services.common.blobs.claims import Claims

__all__ = ["BlobMissingError", "BlobStoreError", "PathMissingError", "offload",
           "offload_decision", "resolve", "store"]

class BlobStoreError(Exception):
    """Raised when the blob store cannot be reached or fails while a value is stored or
    fetched: the attempt fails, retryable."""


class BlobMissingError(BlobStoreError):
    """Raised when a reference names a blob that is not in the store."""

    def __init__(self, digest: str) -> None:
        super().__init__(f"blob {digest} is not in the blob store (a value passed by "
                         "reference whose blob was deleted, or never stored)")
        self.digest = digest


class PathMissingError(Exception):
    """Raised when a reference's path is not in the value its blob holds (a field or an
    item the workflow selected through a value stored by reference): the attempt fails,
    not retryable, as the node would for a missing key inline."""

    error_type = "InputReferenceError"
    """The error type its failure reports: the one a missing key gives inline."""


def over(claims: Claims | None, data: bytes) -> bool:
    """Whether a value whose JSON is ``data`` goes by reference."""
    return claims is not None and 0 < claims.threshold < len(data)


async def store(claims: Claims, found: dict[str, bytes], workflow_id: str) -> None:
    """Store the blobs ``blobs.offload`` found, noted as ``workflow_id``'s; returns once
    the store has acknowledged every one.

    Raises:
        BlobStoreError: the store cannot be reached, or failed.
    """
    if not found:
        return
    try:
        where = await claims.store()
        for digest, data in found.items():
            await where.put(digest, data, workflow_id)
    except Exception as e:
        raise BlobStoreError(f"could not store a value by reference: "
                             f"{type(e).__name__}: {e}") from e


async def offload(claims: Claims | None, value: Any, data: bytes, workflow_id: str) -> Any:
    """``value`` with its parts over the threshold by reference, once their blobs are
    stored; ``value`` itself when its JSON, ``data``, is within the threshold.

    Args:
        claims: the worker's way to the store (None: nothing goes by reference).
        value: a JSON value.
        data: its JSON (what the caller encoded to check it).
        workflow_id: the run the blobs are noted as referred to by.

    Raises:
        BlobStoreError: the store cannot be reached, or failed.
    """
    if claims is None or not over(claims, data):
        return value
    # A copy, decoded from the JSON checked: task code may still hold the value.
    value, found = await asyncio.to_thread(_offload_copy, data, claims.threshold)
    await store(claims, found, workflow_id)
    return value


def _offload_copy(data: bytes, threshold: int) -> tuple[Any, dict[str, bytes]]:
    return blobs.offload(orjson.loads(data), threshold)


async def offload_decision(claims: Claims | None, decision: Any, data: bytes | None,
                           workflow_id: str) -> Any:
    """An activation's decision with its values over the threshold by reference (each
    step's input, ``finish``, ``continue_as_new``, each chunk): the decision itself,
    its steps and their other fields stay inline, for the coordinator reads them.

    Args:
        claims: the worker's way to the store (None: nothing goes by reference).
        decision: the decision (a dict; anything else is returned as it is, for the
            coordinator to refuse).
        data: its JSON if the caller has it (None: encoded here).
        workflow_id: the run.

    Raises:
        BlobStoreError: the store cannot be reached, or failed.
    """
    if claims is None or not isinstance(decision, dict):
        return decision
    if data is None:
        data = orjson.dumps(decision)
    if not over(claims, data):
        return decision
    decision, found = await asyncio.to_thread(_decision_copy, data, claims.threshold)
    await store(claims, found, workflow_id)
    return decision


def _decision_copy(data: bytes, threshold: int) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The decision decoded from ``data`` with its values by reference, and the blobs."""
    return offload_decision_values(orjson.loads(data), threshold)


async def resolve(claims: Claims | None, value: Any) -> Any:
    """``value`` with every reference replaced by what it names (the references inside
    blobs too); ``value`` itself when it holds none (nothing is fetched).

    Raises:
        BlobMissingError: a blob is not in the store.
        BlobStoreError: the store cannot be reached, or failed.
        PathMissingError: a reference's path is not in its blob's value.
    """
    if next(blobs.refs_in(value), None) is None:
        return value
    if claims is None:
        raise BlobStoreError("a value passed by reference, and this worker has no blob "
                             "store")
    try:
        return await claims.resolve(value)
    except KeyError as e:
        raise BlobMissingError(str(e.args[0]) if e.args else "?") from e
    except blobs.BlobPathError as e:
        raise PathMissingError(str(e)) from e
    except Exception as e:
        raise BlobStoreError(f"could not fetch a value passed by reference: "
                             f"{type(e).__name__}: {e}") from e
