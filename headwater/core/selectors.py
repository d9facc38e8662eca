"""Selectors: the tags a worker announces (``gpu``, ``a100``, a model's name) and the
tags a node requires of the worker that runs its task.

A node's ``requires`` is a set of tags; a worker satisfies it when it announces every
one of them (``satisfies``). What a tag may be is checked here, once, for the spec
parser, the worker's ``HEADWATER_WORKER_TAGS`` and the SDK: a tag names part of a topic
(``headwater.topics.Topics.needs``), so it is short and of a few characters, and the
same set of tags is always written the same way (``normalized``: sorted, each once).
Pure, as the core is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

TAG_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/+-]{0,63}$")
"""What a tag must match: 1-64 characters, letters, digits and ``_.:/+-``, starting
with a letter or digit (so ``a100``, ``gpu``, ``llama-3.1-8b``, ``org/model:v2``)."""
MAX_TAGS = 12
"""The most tags a worker announces, or a node requires. A worker reads the selector
topic of every subset of its tags that exists (``Topics.needs_of``), 4,095 names at
most."""


def tag_fault(tag: Any) -> str | None:
    """What is wrong with ``tag``; None when it is a tag."""
    if not isinstance(tag, str) or not TAG_PATTERN.fullmatch(tag):
        shown = repr(tag)[:80]
        return f"{shown} is no tag (it must match {TAG_PATTERN.pattern})"
    return None


def normalized(tags: Iterable[str]) -> tuple[str, ...]:
    """``tags`` sorted, each once: how a set of tags is recorded and named."""
    return tuple(sorted(set(tags)))


def parse_requires(value: Any, where: str, faults: list[str]) -> tuple[str, ...]:
    """A node's ``requires``: a list of 1 to ``MAX_TAGS`` tags, normalized; ``()`` when
    absent or invalid (a fault appended, naming ``where``)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not value:
        faults.append(f"{where}: requires must be a non-empty list of tags, such as "
                      "[gpu, a100]")
        return ()
    bad = [fault for tag in value if (fault := tag_fault(tag)) is not None]
    if bad:
        faults.append(f"{where}: requires: {bad[0]}")
        return ()
    tags = normalized(value)
    if len(tags) > MAX_TAGS:
        faults.append(f"{where}: requires: at most {MAX_TAGS} tags, got {len(tags)}")
        return ()
    return tags


def parse_tag_list(text: str, source: str) -> tuple[str, ...]:
    """The tags of a comma-separated list (``HEADWATER_WORKER_TAGS=gpu,a100``),
    normalized; blanks around each are ignored, an empty list is no tags.

    Args:
        text: the list as given.
        source: where it came from, for the message (``"HEADWATER_WORKER_TAGS"``).

    Raises:
        ValueError: a part is no tag, or there are more than ``MAX_TAGS`` (the message
            names ``source`` and the part).
    """
    parts = [p.strip() for p in text.split(",")]
    tags = [p for p in parts if p]
    for tag in tags:
        fault = tag_fault(tag)
        if fault is not None:
            raise ValueError(f"{source}: {fault}")
    found = normalized(tags)
    if len(found) > MAX_TAGS:
        raise ValueError(f"{source}: at most {MAX_TAGS} tags, got {len(found)}")
    return found


def satisfies(tags: Iterable[str], requires: Iterable[str]) -> bool:
    """Whether a worker announcing ``tags`` may run a task requiring ``requires``:
    it has every required tag (no requirement: any worker)."""
    return set(requires) <= set(tags)


def missing(tags: Iterable[str], requires: Iterable[str]) -> tuple[str, ...]:
    """The required tags a worker announcing ``tags`` lacks, sorted."""
    return tuple(sorted(set(requires) - set(tags)))
