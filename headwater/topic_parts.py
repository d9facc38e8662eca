"""The parts of a dispatch topic's name that stand for a name of any text: a queue or a
workflow in a lane's name (``Topics.lane``), a code version, the tags of a selector
topic (``Topics.needs``).

Kafka takes letters, digits, ``.``, ``_`` and ``-`` in a topic's name, at most 249 of
them, and takes ``.`` and ``_`` for the same character; a workflow's name or a tag may
be any text. Each part here is written so that two names never share one, so that the
name can be read back from it (``unescaped``, ``unescaped_tag``: a worker learns which
lane serves which workflow from the topics it finds), and so that one too long is cut
and ends in a digest of the whole. ``headwater.topics`` puts the parts together.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

TAGS_DIGEST_CHARS = 32
"""Hex digits of the SHA-256 of a set of tags that name its selector topic when its
tags do not fit (``Topics.needs``)."""
VERSION_DIGEST_CHARS = 16
"""Hex digits of the SHA-256 of a code version that name its lane."""
_KEPT = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.")
LONG_NAME_MARK = "-z"
"""What a workflow part cut short ends in, before the digest of the whole name: never
an escape (``-`` is followed by two lowercase hex digits there)."""


def unescaped(part: str) -> str | None:
    """The name a part written by ``lane_part`` stands for; None for a part cut short
    (``LONG_NAME_MARK``) or one ``lane_part`` does not write."""
    out, i = bytearray(), 0
    while i < len(part):
        if part[i] != "-":
            if part[i] not in _KEPT:
                return None
            out.append(ord(part[i]))
            i += 1
            continue
        hh = part[i + 1:i + 3]
        if len(hh) != 2 or hh.strip("0123456789abcdef") or chr(int(hh, 16)) in _KEPT:
            return None
        out.append(int(hh, 16))
        i += 3
    try:
        return out.decode()
    except UnicodeDecodeError:
        return None


def version_digest(code_version: str) -> str:
    """The part of a lane's name that stands for ``code_version``: SHA-256,
    ``VERSION_DIGEST_CHARS`` hex digits (a version may be 200 characters of anything)."""
    return hashlib.sha256(code_version.encode()).hexdigest()[:VERSION_DIGEST_CHARS]


def lane_part(workflow: str, room: int) -> str:
    """The part of a lane's name that stands for ``workflow`` (or for its queue), at
    most ``room`` characters: the name itself when it is letters, digits and dots, else
    with every other byte of its UTF-8 written ``-hh`` (``-`` and ``_`` too: a lane's
    name then holds no ``_`` after the prefix, and Kafka refuses topics whose names
    differ only by ``.`` and ``_``). Two names never share a part; a part over ``room``
    is cut and ends in ``LONG_NAME_MARK`` and a digest of the whole name."""
    part = "".join(chr(b) if chr(b) in _KEPT else f"-{b:02x}" for b in workflow.encode())
    if len(part) <= room:
        return part
    digest = hashlib.sha256(workflow.encode()).hexdigest()[:VERSION_DIGEST_CHARS]
    head = part[:max(0, room - len(LONG_NAME_MARK) - len(digest))]
    return f"{head.rstrip('-')}{LONG_NAME_MARK}{digest}"


def tag_part(tag: str) -> str:
    """The part of a selector topic's name that stands for ``tag``: its letters and
    digits as they are, every other byte of its UTF-8 written ``-hh`` (so no ``.`` in
    it, which separates the tags, and no ``_``, which Kafka reads like ``.``)."""
    return "".join(chr(b) if chr(b).isascii() and chr(b).isalnum() else f"-{b:02x}"
                   for b in tag.encode())


def tags_digest(tags: Iterable[str]) -> str:
    """The part of a selector topic's name that stands for a set of tags too long to
    be written out: ``TAGS_DIGEST_CHARS`` hex digits of the SHA-256 of the sorted tags,
    one a line."""
    text = "\n".join(sorted(set(tags)))
    return hashlib.sha256(text.encode()).hexdigest()[:TAGS_DIGEST_CHARS]


def unescaped_tag(part: str) -> str | None:
    """The tag a part written by ``tag_part`` stands for; None for a part it does not
    write."""
    out, i = bytearray(), 0
    while i < len(part):
        hh = part[i + 1:i + 3] if part[i] == "-" else ""
        if hh and len(hh) == 2 and not hh.strip("0123456789abcdef"):
            out.append(int(hh, 16))
            i += 3
        else:
            out.append(ord(part[i]) if part[i].isascii() else 0)
            i += 1
    try:
        found = out.decode()
    except UnicodeDecodeError:
        return None
    return found if found and tag_part(found) == part else None
