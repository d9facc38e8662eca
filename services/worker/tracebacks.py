"""A failed attempt's traceback as the history keeps it (``TaskFailed.traceback``).

Task code's frames come first: the frames of the worker's own machinery above the task
function (this package, asyncio, concurrent.futures, threading) are left out of every
exception of the chain. Chained causes and contexts are kept, as Python prints them.
The text is bounded by ``MAX_TRACEBACK_CHARS``: when it is longer, the outer frames
and earlier exceptions go first, with a line saying how many were left out; the
innermost frames and the exception line stay.

Pure functions of the exception: no I/O, no clock.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import traceback
from pathlib import Path

MAX_TRACEBACK_CHARS = 8_000
"""The longest traceback a ``TaskFailed`` carries, characters."""

_MACHINERY = tuple(str(p) for p in (
    Path(__file__).resolve().parent,  # services/worker: the runner, calls, the attempt
    Path(asyncio.__file__).resolve().parent,
    Path(concurrent.futures.__file__).resolve().parent,
    Path(threading.__file__).resolve(),
))
_HEADER = "Traceback (most recent call last):\n"


def is_machinery(filename: str) -> bool:
    """Whether a frame of ``filename`` is the worker's machinery, not task code."""
    try:
        path = str(Path(filename).resolve())
    except (OSError, ValueError):
        return False
    return path.startswith(_MACHINERY)


def format_traceback(error: BaseException, limit: int = MAX_TRACEBACK_CHARS) -> str:
    """``error``'s traceback, task code's frames first, at most about ``limit`` characters.

    Args:
        error: what task code raised, with its ``__traceback__`` (and its chain).
        limit: the most characters to return (the note of what was left out included).

    Returns:
        The text Python would print for ``error`` (causes and contexts included), with
        the worker's frames above the task function left out; "" when formatting fails.
    """
    try:
        summary = traceback.TracebackException.from_exception(error, capture_locals=False)
        _strip(summary)
        chunks = list(summary.format(chain=True))
    except Exception:  # a broken __str__ or a strange traceback: say nothing rather than fail
        return ""
    return bounded(chunks, limit)


def _strip(summary: traceback.TracebackException) -> None:
    """Leave out the leading machinery frames of every exception of the chain (all of
    them kept when nothing else is left: then the machinery itself raised)."""
    seen: set[int] = set()
    todo: list[traceback.TracebackException | None] = [summary]
    while todo:
        te = todo.pop()
        if te is None or id(te) in seen:
            continue
        seen.add(id(te))
        frames = list(te.stack)
        first = next((i for i, f in enumerate(frames) if not is_machinery(f.filename)), None)
        if first:
            te.stack = traceback.StackSummary.from_list(frames[first:])
        todo += [te.__cause__, te.__context__, *(getattr(te, "exceptions", None) or [])]


def bounded(chunks: list[str], limit: int = MAX_TRACEBACK_CHARS) -> str:
    """The formatted ``chunks`` (``TracebackException.format``'s: a header, one per
    frame, the exception lines) joined, cut to about ``limit`` characters.

    When too long, the last exception's lines are kept (each cut to a quarter of the
    limit), then as many of the innermost frames as fit, after the header and a note of
    how many frames and characters were left out.
    """
    whole = "".join(chunks)
    if len(whole) <= limit:
        return whole
    last_frame = max((i for i, c in enumerate(chunks) if c.startswith("  File ")), default=-1)
    tail = [_clip(c, limit // 4) for c in chunks[last_frame + 1:]]
    budget = limit - sum(map(len, tail)) - len(_HEADER) - 90  # the note
    kept: list[str] = []
    for chunk in reversed(chunks[:last_frame + 1]):
        if len(chunk) > budget:
            break
        kept.append(chunk)
        budget -= len(chunk)
    kept.reverse()
    left = chunks[:last_frame + 1 - len(kept)]
    frames = sum(1 for c in left if c.startswith("  File "))
    note = (f"  [... {frames} outer frame{'s' if frames != 1 else ''} and earlier exceptions, "
            f"{sum(map(len, left))} characters, left out ...]\n") if left else ""
    head = "" if not left or (kept and kept[0] == _HEADER) else _HEADER
    text = head + note + "".join(kept) + "".join(tail)
    return text if len(text) <= limit else text[len(text) - limit:]


def _clip(chunk: str, most: int) -> str:
    if len(chunk) <= most:
        return chunk
    return f"{chunk[:most]}... ({len(chunk) - most} more characters)\n"
