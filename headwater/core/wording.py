"""How the readers of the history word an event, the parts a node kind declares with its
events (``registry.KindUnit.describe`` and ``follow``): ``short`` values and the
``FollowNote`` of the live view (``ops/cli/follow.py``). Pure; instants are worded by
``instants.iso_text`` and ``instants.seconds_text``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

DETAIL_CHARS = 80
"""The longest detail of a timeline line (``short``)."""


def short(value: Any, limit: int = DETAIL_CHARS) -> str:
    """``value`` as compact JSON (a string as it is), cut to ``limit`` characters."""
    text = value if isinstance(value, str) else orjson.dumps(
        value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    return text if len(text) <= limit else text[:limit - 1] + "…"


def where(data: Mapping[str, Any]) -> str:
    """``node`` or ``node[index]`` of an event's JSON data."""
    index = data.get("index")
    return str(data.get("node", "")) + (f"[{index}]" if index is not None else "")


@dataclass(frozen=True)
class FollowNote:
    """What one event changes in the live view of a workflow, and the line it prints.

    Attributes:
        line: printed under the view.
        detail: the node's new "now" text (None: unchanged).
        running: the node is running from now on.
        total: the node's new number of items (a map's), or None: unchanged.
    """

    line: str
    detail: str | None = None
    running: bool = False
    total: int | None = None


Describe = Callable[[Any], str]
"""An event's timeline detail: what the body says beyond its type and task
(``ops history``)."""

Follow = Callable[[Mapping[str, Any]], "FollowNote | None"]
"""An event's ``FollowNote``, from its JSON data (the SSE ``data:`` field); None when
it changes nothing and prints nothing."""
