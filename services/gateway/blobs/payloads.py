"""A submission's input and a signal's fields by reference, before they go on a record.

The gateway offloads (``headwater.blobs.offload``) what a client sends with one
``Claims`` (``services/common/blobs/claims.py``) opened in its lifetime over its own
PostgreSQL pool: each part over ``HEADWATER_BLOB_THRESHOLD_BYTES`` is stored, noted as
the run's (``blob_refs``), and replaced by its reference, all before the claim's row is
written and the record produced, so that no record, and no row a retry would produce
again, names a blob that is not stored.

A value may hold references already: a rerun's input is its source's as the projection
holds it, and a client may pass on a reference it was shown. Such a reference is taken
only when the blob is the submitter's to read (``readable``: a run of its tenant
refers to it; otherwise it is refused as unknown, 422, since a digest is no
permission), and the new run is noted as referring to it and to the blobs inside it
(``adopt``), so that it outlives the run it came from.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import asyncpg
import orjson

from headwater import blobs
from services.common.auth.tokens import OPEN, Principal
from services.common.blobs.claims import Claims, store_opener, threshold_from_env
from services.common.blobs.s3 import S3Settings
from services.common.blobs.store import BlobStore
from services.gateway.edge.cpu import run_check
from services.gateway.edge.problems import Problem

__all__ = ["Owner", "adopt", "adopt_reused", "claims_over", "input_of", "offload", "readable",
           "refuse_in_spec"]

READABLE = (
    "select distinct r.digest from blob_refs r join workflows w on w.workflow_id = r.workflow_id"
    " where r.digest = any($1::text[]) and ($2::boolean or w.tenant is not distinct from $3)")
"""Which of digests ``$1`` a run of tenant ``$3`` refers to (``$2``: any tenant's)."""
ADOPT = (
    "with touched as (update blobs set created_at = now() where digest = any($2::text[])"
    " returning digest), noted as (insert into blob_refs (workflow_id, digest)"
    " select $1, digest from touched on conflict do nothing) select digest from touched")
"""Note run ``$1`` as referring to blobs ``$2``; returns those stored. The update takes
each blob's row lock and restarts its grace period, so a collection running at the same
moment (``services/common/blobs/collect.py``) either deleted it before (then it is not
returned) or keeps it."""


def claims_over(pool: asyncpg.Pool, threshold: int | None = None,
                s3: S3Settings | None = None) -> Claims:
    """The gateway's ``Claims``: the blob store with its rows over the gateway's pool, its
    bytes there too or in the bucket of ``s3`` (``store_from_env``; ``threshold``: None,
    ``HEADWATER_BLOB_THRESHOLD_BYTES``)."""
    async def rows() -> asyncpg.Pool:
        return pool

    return Claims(store_opener(s3, rows),
                  threshold_from_env() if threshold is None else threshold)


def _offloaded(value: Any, threshold: int) -> tuple[Any, dict[str, bytes], list[str]]:
    """``blobs.offload`` of ``value``, and the digests of the references it held
    already. Runs in a worker thread unless it is a small body's (a large value takes a
    while to encode)."""
    passed = list(dict.fromkeys(ref[blobs.REF_KEY] for ref in blobs.refs_in(value)))
    value = blobs.without_hrefs(value) if passed else value
    offloaded, found = blobs.offload(value, threshold)
    return offloaded, found, passed


async def readable(pool: asyncpg.Pool, me: Principal, tenant: str | None,
                   digests: list[str]) -> set[str]:
    """Which of ``digests`` a run of ``tenant`` refers to (of any tenant for a principal
    of every tenant, or with auth off)."""
    if not digests:
        return set()
    every = me is OPEN or me.every_tenant
    rows = await pool.fetch(READABLE, digests, every, tenant)
    return {str(r["digest"]) for r in rows}


async def adopt(store: BlobStore, pool: asyncpg.Pool, workflow_id: str,
                digests: list[str], where: str = "input") -> None:
    """Note ``workflow_id`` as referring to blobs ``digests`` and to every blob inside
    them (read from the store, the large ones' JSON scanned only when it holds a
    reference).

    Raises:
        Problem: 422 when one of them is no longer stored (collected meanwhile).
    """
    seen: set[str] = set()
    todo = list(digests)
    while todo:
        batch = [d for d in dict.fromkeys(todo) if d not in seen]
        todo = []
        if not batch:
            return
        seen.update(batch)
        stored = {str(r["digest"]) for r in await pool.fetch(ADOPT, workflow_id, batch)}
        gone = [d for d in batch if d not in stored]
        if gone:
            raise _unknown(gone, where)
        for digest in batch:
            data = await store.get(digest)
            if blobs.REF_KEY.encode() in data:
                inner = await asyncio.to_thread(orjson.loads, data)
                todo.extend(ref[blobs.REF_KEY] for ref in blobs.refs_in(inner))


async def adopt_reused(claims: Claims | None, pool: asyncpg.Pool, workflow_id: str,
                       document: Any) -> None:
    """Note a rerun as referring to the blobs of the outputs it reuses (its rerun
    document's, the source's as the projection holds them): the new run holds those
    references as its own, and must keep them readable, and stored, once the source's
    rows are purged. No check of the tenant: the source is a run the caller may read.

    Raises:
        Problem: 422 when one of them is no longer stored.
    """
    digests = list(dict.fromkeys(ref[blobs.REF_KEY] for ref in blobs.refs_in(document)))
    if claims is None or not digests:
        return
    await adopt(await claims.store(), pool, workflow_id, digests, "rerun")


def refuse_in_spec(spec: Any) -> None:
    """Refuse a spec holding a reference (``{"$blob": ...}`` in a node's literal input,
    say): a spec's values are not checked as an input's are (``readable``), so the run's
    tasks would read any tenant's blob whose digest its author knows.

    Raises:
        Problem: 422 naming the reference's path in the spec.
    """
    found = _first_ref(spec, "workflow")
    if found is not None:
        fault = (f"{found}: a reference to a blob ({blobs.REF_KEY}) in a spec; pass a value "
                 "held by reference in the run's input")
        raise Problem(422, "Invalid workflow spec", fault, errors=[fault])


def _first_ref(value: Any, path: str) -> str | None:
    """The path of the first reference in ``value`` (depth first), or None."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if blobs.is_ref(item):
            return where
        if isinstance(item, dict):
            stack.extend((v, f"{where}.{k}") for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]") for i, v in reversed(list(enumerate(item))))
    return None


def _unknown(digests: list[str], where: str) -> Problem:
    fault = (f"{where}: a reference to a blob this tenant's runs do not hold "
             f"({digests[0]}{', ...' if len(digests) > 1 else ''}); pass the value itself")
    return Problem(422, "Invalid request", fault, errors=[fault])


@dataclass(frozen=True)
class Owner:
    """Whose value is offloaded: the run it goes to (``workflow_id``, its ``tenant``) and
    who sends it (``me``: whose references it may pass on, ``readable``)."""

    workflow_id: str
    tenant: str | None
    me: Principal = OPEN


async def input_of(claims: Claims | None, pool: asyncpg.Pool, value: Any,
                   owner: Owner, inline: bool = False) -> Any:
    """A submission's input as its claim and record hold it: ``offload``-ed, before the
    claim is written, so that neither the claim nor the record it produces (again, when
    healed) names a blob that is not stored; the projector compares the claim's input
    with the accepted record's, so both hold this form. ``value`` as it is without
    ``claims``; ``inline``: a small body's, walked on the event loop (``offload``)."""
    return value if claims is None else await offload(claims, pool, value, owner,
                                                      inline=inline)


async def offload(claims: Claims, pool: asyncpg.Pool, value: Any, owner: Owner,
                  where: str = "input", inline: bool = False) -> Any:
    """``value`` as a record carries it: its large parts stored (as ``workflow_id``'s)
    and replaced by references, the references it held already checked and adopted;
    ``value`` itself when it is small and holds none.

    Args:
        claims: the gateway's way to the blob store.
        pool: the projection's pool.
        value: the JSON value (a submission's input, a signal's fields).
        owner: the run it goes to, and who sends it.
        where: what the value is, for a fault's path.
        inline: the value is a small body's (``edge.cpu.inline_for``): walked on the
            event loop, not in a worker thread.

    Raises:
        Problem: 422 a reference the sender may not pass on (``readable``).
    """
    if value is None or isinstance(value, bool | int | float):
        return value
    offloaded, found, passed = await run_check(inline, _offloaded, value, claims.threshold)
    if not found and not passed:
        return value
    if passed:
        allowed = await readable(pool, owner.me, owner.tenant, passed)
        if missing := [d for d in passed if d not in allowed]:
            raise _unknown(missing, where)
    store = await claims.store()
    for digest, data in found.items():
        await store.put(digest, data, owner.workflow_id)
    if passed:
        await adopt(store, pool, owner.workflow_id, passed)
    return offloaded
