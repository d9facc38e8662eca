"""Payloads by reference (the claim check): a value too large for a record travels as a
reference to its JSON, stored once in a blob store under the digest of that JSON.

A reference is a JSON object of exactly these keys::

    {"$blob": "sha256:<64 hex digits>", "bytes": <size of the stored JSON>}

and, where the gateway serves one, ``"href"`` (the URL that streams it). Whoever holds a
large value (a worker with an output, a checkpoint or a chunk; the gateway with an input
or a signal's payload) replaces it by references before it goes on a record
(:func:`offload`), stores the blobs it returns, and whoever needs the value (a worker
calling a task, the client, the UI) puts the stored JSON back (:func:`resolve`). The
coordinator and the core only pass references along: a reference is a small JSON value
like any other, and a run's table entry never holds what it names.

Which parts are replaced: the whole value, when its JSON is over the threshold, after the
same is done to each of its items and fields: a dict with one large field keeps its small
fields inline (``${nodes.x.output.small}`` still selects them) and the large one becomes a
reference; a list of a thousand small items over the threshold together becomes one. A
stored blob may hold references itself (its large parts'): :func:`resolve` follows them.

This module is pure (``hashlib`` and ``orjson``): the stores are in
``services/common/blobs``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import orjson

__all__ = ["DEFAULT_THRESHOLD_BYTES", "REF_KEY", "digest_of", "is_ref", "make_ref",
           "offload", "refs_in", "resolve", "valid_digest", "without_hrefs"]

REF_KEY = "$blob"
"""The key that marks a reference."""
DEFAULT_THRESHOLD_BYTES = 256 * 1024
"""The JSON size above which a value goes by reference unless a setting says otherwise
(``HEADWATER_BLOB_THRESHOLD_BYTES``): a quarter of the worker's output limit, so that a
report with a few references and its other fields stays far below a record."""
_PREFIX = "sha256:"
_HEX = frozenset("0123456789abcdef")


def digest_of(data: bytes) -> str:
    """The content address of ``data``: ``"sha256:"`` and its SHA-256 in hex."""
    return _PREFIX + hashlib.sha256(data).hexdigest()


def valid_digest(digest: Any) -> bool:
    """Whether ``digest`` is a content address as :func:`digest_of` writes one."""
    return (isinstance(digest, str) and len(digest) == len(_PREFIX) + 64
            and digest.startswith(_PREFIX) and set(digest[len(_PREFIX):]) <= _HEX)


def make_ref(digest: str, size: int) -> dict[str, Any]:
    """The reference to a blob of ``size`` bytes stored under ``digest``."""
    return {REF_KEY: digest, "bytes": size}


def is_ref(value: Any) -> bool:
    """Whether ``value`` is a reference: a dict of ``$blob`` (a valid digest) and
    ``bytes`` (an int, at least 0), and optionally ``href``; nothing else."""
    if not isinstance(value, dict) or REF_KEY not in value:
        return False
    keys = value.keys() - {"href"}
    return (keys == {REF_KEY, "bytes"} and valid_digest(value[REF_KEY])
            and isinstance(value["bytes"], int) and not isinstance(value["bytes"], bool)
            and value["bytes"] >= 0)


def offload(value: Any, threshold: int) -> tuple[Any, dict[str, bytes]]:
    """``value`` with its parts over ``threshold`` bytes of JSON replaced by references
    (see the module's doc), and the blobs to store, by digest.

    Args:
        value: a JSON value (as ``orjson`` encodes it).
        threshold: the most bytes of JSON a value may keep inline; 0 or less: no limit
            (nothing is replaced).

    Returns:
        ``(value, {})`` when its JSON is within ``threshold`` (the same object), else the
        value with references and the JSON of each blob they name.

    Raises:
        TypeError: ``value`` is not JSON (``orjson``'s ``JSONEncodeError``).
    """
    blobs: dict[str, bytes] = {}
    if threshold <= 0:
        return value, blobs
    data = orjson.dumps(value)
    if len(data) <= threshold:
        return value, blobs
    return _offload(value, data, threshold, blobs), blobs


def _offload(value: Any, data: bytes, threshold: int, blobs: dict[str, bytes]) -> Any:
    """``value`` (whose JSON, ``data``, is over ``threshold``) by reference, after its
    large parts."""
    if is_ref(value):
        return value  # already one (a value passed along): never a reference to a reference
    if isinstance(value, dict):
        value = {k: _part(v, threshold, blobs) for k, v in value.items()}
        data = orjson.dumps(value)
    elif isinstance(value, list):
        value = [_part(v, threshold, blobs) for v in value]
        data = orjson.dumps(value)
    if len(data) <= threshold:
        return value
    digest = digest_of(data)
    blobs[digest] = data
    return make_ref(digest, len(data))


def _part(value: Any, threshold: int, blobs: dict[str, bytes]) -> Any:
    if not isinstance(value, dict | list | str):
        return value  # a number, a bool or null is never large
    if isinstance(value, str) and len(value) * 6 + 2 <= threshold:
        return value  # at most 6 bytes of JSON per character (\u0000) and 2 quotes
    data = orjson.dumps(value)
    return value if len(data) <= threshold else _offload(value, data, threshold, blobs)


def refs_in(value: Any) -> Iterator[dict[str, Any]]:
    """Every reference in ``value``, depth first (not those inside the blobs)."""
    if is_ref(value):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from refs_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from refs_in(item)


def resolve(value: Any, fetch: Callable[[str], bytes] | Mapping[str, bytes]) -> Any:
    """``value`` with every reference replaced by the JSON value it names, following the
    references inside blobs.

    Args:
        value: a JSON value that may hold references.
        fetch: the blobs' JSON by digest (a mapping, or a function that raises
            ``KeyError`` for a digest it does not have).

    Raises:
        KeyError: a blob is missing.
    """
    get = fetch.__getitem__ if isinstance(fetch, Mapping) else fetch
    if is_ref(value):
        return resolve(orjson.loads(get(value[REF_KEY])), get)
    if isinstance(value, dict):
        return {k: resolve(v, get) for k, v in value.items()} if _has_ref(value) else value
    if isinstance(value, list):
        return [resolve(v, get) for v in value] if _has_ref(value) else value
    return value


def _has_ref(value: Any) -> bool:
    return next(refs_in(value), None) is not None


def without_hrefs(value: Any) -> Any:
    """``value`` with the ``href`` of each reference dropped (what a record carries)."""
    if is_ref(value):
        return make_ref(value[REF_KEY], value["bytes"])
    if isinstance(value, dict):
        return {k: without_hrefs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_hrefs(v) for v in value]
    return value
