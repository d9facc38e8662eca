"""The ``code`` kind's records: its spec fields (``CodeSpec``). It has no history
events of its own: an activation's decision is its attempt's ``TaskSucceeded``, a step's
result its task's (or its timer's ``TimerFired``, or its ``SignalConsumed``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_MAX_EVENTS = 20_000
"""The most history events a code workflow's run may record before it fails with
``HistoryTooLong`` (``wf.continue_as_new`` starts a fresh run instead)."""
MAX_EVENTS_LIMIT = 1_000_000
"""The largest ``max_events`` a spec may give."""


PATH_PATTERN = re.compile(r"^/[A-Za-z0-9_\-./]{1,200}$")
"""The form of a code workflow's HTTP path (``@workflow(path=...)``; never under
``/v1/``, which is the API's)."""


def path_fault(path: object) -> str | None:
    """Why ``path`` cannot be a code workflow's HTTP path, or None: not of
    ``PATH_PATTERN``'s form, under ``/v1/``, or holding a ``.`` or ``..`` segment (a
    client sends ``/a/../b`` as ``/b``: no request could reach it)."""
    if (not isinstance(path, str) or not PATH_PATTERN.fullmatch(path)
            or path.startswith("/v1/")):
        return (f"path {path!r} must start with / (not /v1/) and use letters, digits and "
                "_-./")
    if any(part in (".", "..") for part in path.split("/")):
        return f"path {path!r} must have no . or .. segment (a client would remove it)"
    return None


MAX_CODE_VERSION_CHARS = 200
"""The longest ``code_version`` a spec may give."""


@dataclass(frozen=True)
class CodeSpec:
    """A code node (its ``task`` is the ``@workflow`` its activations run).

    Attributes:
        max_events: the most events its run may record.
        code_version: the version of the function's code the definition was announced
            with (a digest of its source unless the worker named one), or None: what a
            run records of the code it started on.
        path: the HTTP path the gateway serves the definition at (``POST <path>``), or
            None.
    """

    max_events: int = DEFAULT_MAX_EVENTS
    code_version: str | None = None
    path: str | None = None
