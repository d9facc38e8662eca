"""Payloads by reference (the claim check): a value too large for a record travels as a
reference to its JSON, stored once in a blob store under the digest of that JSON.

A reference is a JSON object of these keys::

    {"$blob": "sha256:<64 hex digits>", "bytes": <size of the stored JSON>}

and, where they apply, ``"items"`` (the stored value is a list of that many items:
:func:`offload` says so of each list it stores, so that a map can fan out over it
without its values), ``"path"`` (the reference names a part of the stored value: the
keys and list indexes that lead to it, :func:`select`) and, where the gateway serves
one, ``"href"`` (the URL that streams it). Whoever holds a
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

A part of a stored value is named by a reference with a ``path``: the core selects
``${nodes.x.output.a.b}`` through a reference into ``{"$blob": d, "bytes": N, "path":
["a", "b"]}`` without reading the blob, and a map over a reference with ``items`` gives
item ``i`` as the path ``[i]``. Whoever resolves it loads the blob and walks the path
(:func:`pick`); a path the value does not have is a :class:`BlobPathError`.

This module is pure (``hashlib`` and ``orjson``): the stores are in
``services/common/blobs``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import orjson

__all__ = ["DEFAULT_THRESHOLD_BYTES", "ITEMS_KEY", "MAX_PATH", "PATH_KEY", "REF_KEY",
           "BlobPathError", "digest_of", "is_ref", "make_ref", "offload", "pick", "refs_in",
           "resolve", "select", "substitute", "valid_digest", "valid_path",
           "without_hrefs"]

REF_KEY = "$blob"
"""The key that marks a reference."""
PATH_KEY = "path"
"""The key of a reference's path: the part of the stored value it names."""
ITEMS_KEY = "items"
"""The key of a reference's item count: the stored value is a list of that many."""
MAX_PATH = 64
"""The most keys and indexes a reference's path holds."""
MAX_PATH_KEY = 1024
"""The longest key (characters) a reference's path holds."""
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


def make_ref(digest: str, size: int, items: int | None = None) -> dict[str, Any]:
    """The reference to a blob of ``size`` bytes stored under ``digest`` (a list of
    ``items`` items, when given)."""
    ref: dict[str, Any] = {REF_KEY: digest, "bytes": size}
    if items is not None:
        ref[ITEMS_KEY] = items
    return ref


_KEYS = frozenset({REF_KEY, "bytes", ITEMS_KEY, PATH_KEY})


def is_ref(value: Any) -> bool:
    """Whether ``value`` is a reference: a dict of ``$blob`` (a valid digest) and
    ``bytes`` (an int, at least 0), optionally ``items`` (an int, at least 0), ``path``
    (:func:`valid_path`) and ``href``; nothing else. Anything else is plain data."""
    if not isinstance(value, dict) or REF_KEY not in value:
        return False
    keys = value.keys() - {"href"}
    return (keys <= _KEYS and "bytes" in keys and valid_digest(value[REF_KEY])
            and _count(value["bytes"])
            and (ITEMS_KEY not in keys or _count(value[ITEMS_KEY]))
            and (PATH_KEY not in keys or valid_path(value[PATH_KEY])))


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def valid_path(path: Any) -> bool:
    """Whether ``path`` is a reference's path: a list of 1 to ``MAX_PATH`` keys (strings
    of at most ``MAX_PATH_KEY`` characters) and list indexes (ints, at least 0)."""
    return (isinstance(path, list) and 0 < len(path) <= MAX_PATH
            and all(_count(k) or (isinstance(k, str) and len(k) <= MAX_PATH_KEY)
                    for k in path))


def select(ref: dict[str, Any], keys: list[str | int]) -> dict[str, Any]:
    """The reference to the part of what ``ref`` names found at ``keys`` below it: its
    digest and size, its path extended (no ``items``: the part's count is not known,
    and no ``href``). The blob is not read: a path it does not have fails where the
    reference is resolved.

    Raises:
        ValueError: the path would be longer than ``MAX_PATH`` or hold a bad key.
    """
    path = [*ref.get(PATH_KEY, []), *keys]
    if not valid_path(path):
        raise ValueError(f"a path of {len(path)} keys into a value stored by reference "
                         f"(at most {MAX_PATH}, each key at most {MAX_PATH_KEY} characters)")
    return {REF_KEY: ref[REF_KEY], "bytes": ref["bytes"], PATH_KEY: path}


class BlobPathError(LookupError):
    """Raised when a reference's path is not in the value its blob holds.

    Attributes:
        digest: the blob.
        path: the reference's path.
        at: how many of its keys were found before the missing one.
    """

    def __init__(self, digest: str, path: list[str | int], at: int, why: str) -> None:
        shown = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path)
        super().__init__(f"no {shown.lstrip('.')} in the value stored by reference as blob "
                         f"{digest}: {why}")
        self.digest, self.path, self.at = digest, path, at


def pick(value: Any, path: list[str | int] | None, digest: str) -> Any:
    """The part of ``value`` (a blob's value, its references resolved) at ``path``
    (None or empty: ``value``). A key reads an object's field or, written in digits, a
    list's item (as ``${...}`` selects one inline); an int reads a list's item only.

    Raises:
        BlobPathError: ``value`` has no such part.
    """
    for at, key in enumerate(path or ()):
        if isinstance(key, int):
            if not isinstance(value, list) or key >= len(value):
                raise BlobPathError(digest, list(path or ()), at, _lacks(value, key))
            value = value[key]
        elif isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and len(key) < 10 \
                and int(key) < len(value):
            value = value[int(key)]
        else:
            raise BlobPathError(digest, list(path or ()), at, _lacks(value, key))
    return value


def _lacks(value: Any, key: str | int) -> str:
    """What ``value`` is, where ``key`` was wanted."""
    if isinstance(value, list):
        return f"a list of {len(value)} items has no item {key!r}"
    if isinstance(value, dict):
        return f"no key {key!r}"
    return f"{type(value).__name__} has no key {key!r}"


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
    return make_ref(digest, len(data), len(value) if isinstance(value, list) else None)


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
    """``value`` with every reference replaced by the JSON value it names (the part at
    its path, for one with a path), following the references inside blobs.

    Args:
        value: a JSON value that may hold references.
        fetch: the blobs' JSON by digest (a mapping, or a function that raises
            ``KeyError`` for a digest it does not have).

    Raises:
        KeyError: a blob is missing.
        BlobPathError: a reference's path is not in its blob's value.
    """
    get = fetch.__getitem__ if isinstance(fetch, Mapping) else fetch

    def part(ref: dict[str, Any]) -> Any:
        return pick(resolve(orjson.loads(get(ref[REF_KEY])), get), ref.get(PATH_KEY),
                    ref[REF_KEY])

    return substitute(value, part)


def substitute(value: Any, part: Callable[[dict[str, Any]], Any]) -> Any:
    """``value`` with each reference ``ref`` in it replaced by ``part(ref)`` (the parts
    without a reference are the same objects)."""
    if is_ref(value):
        return part(value)
    if isinstance(value, dict):
        return {k: substitute(v, part) for k, v in value.items()} if _has_ref(value) \
            else value
    if isinstance(value, list):
        return [substitute(v, part) for v in value] if _has_ref(value) else value
    return value


def _has_ref(value: Any) -> bool:
    return next(refs_in(value), None) is not None


def without_hrefs(value: Any) -> Any:
    """``value`` with the ``href`` of each reference dropped (what a record carries)."""
    if is_ref(value):
        return {k: v for k, v in value.items() if k != "href"}
    if isinstance(value, dict):
        return {k: without_hrefs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_hrefs(v) for v in value]
    return value
