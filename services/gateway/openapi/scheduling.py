"""The documented schemas of what decides when and where a spec's work runs: the
run's ``priority`` (a spec's, a submission's, a schedule's) and a node's ``concurrency``,
``rate_limit``, ``requires`` and ``cache``.

Shapes only, as in ``openapi.bodies``: the core stays the authority (``priority``:
``headwater.core.priority.priority_fault``; the limits: ``headwater.core.limits.
parse_limits``, whose references are checked with the spec's; the tags:
``headwater.core.selectors``; the cache: ``headwater.core.caching``). Each schema
takes everything the core takes, so a submission the gateway accepts is never
documented as invalid; what a schema cannot say without a condition schemathesis fails
to merge with a node's (a rate limit's "exactly one of per_second, per_minute or
limit") is said in its description and left to the gateway's 422.
"""

from __future__ import annotations

from typing import Any

from headwater.core import caching
from headwater.core.limits import MAX_KEY_CHARS, MAX_LIMIT, MAX_WINDOW_S
from headwater.core.priority import DEFAULT, HIGHEST, LOWEST, NAMES
from headwater.core.selectors import MAX_TAGS, TAG_PATTERN


def or_null(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or ``null``: a field whose ``null`` means absent."""
    return {"anyOf": [schema, {"type": "null"}]}


_NAMED = ", ".join(f"{name} = {number}" for name, number in NAMES.items())
PRIORITY_SCHEMA: dict[str, Any] = {
    "anyOf": [{"type": "integer", "minimum": LOWEST, "maximum": HIGHEST},
              {"enum": list(NAMES)}],
    "description": f"how urgent the run's dispatches are among those waiting for a queue: "
                   f"{LOWEST}-{HIGHEST}, higher first, or a name ({_NAMED}); default "
                   f"{DEFAULT}. A low one that waited long enough still goes first "
                   "(HEADWATER_PRIORITY_AGING_S)",
    "examples": [8, "high", "low"],
}
"""A priority (``headwater.core.priority``): a spec's top-level ``priority``, and a
submission's or a schedule's, which replaces the spec's."""

_LIMIT_KEY: dict[str, Any] = {
    "type": "string", "minLength": 1, "maxLength": MAX_KEY_CHARS,
    "description": "the key each value of which is a limit of its own: a text, or "
                   "exactly one ${...} reference resolved per attempt (${input.customer}, "
                   "${item.model})",
    "examples": ["${input.customer}", "openai"]}
_COUNT: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}

CONCURRENCY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["key", "limit"],
    "additionalProperties": False,
    "description": "at most limit attempts of the node run at once per key, the rest "
                   "held in the coordinator in order (fair across keys); "
                   "PUT /v1/limits/{key} may set another limit",
    "properties": {"key": _LIMIT_KEY,
                   "limit": {**_COUNT, "description": "attempts at once"}},
    "examples": [{"key": "${input.customer}", "limit": 2}],
}
"""A task or map node's ``concurrency`` (``headwater.core.limits``)."""

RATE_LIMIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["key"],
    "additionalProperties": False,
    "description": "at most so many units granted per key in any window: exactly one of "
                   "per_second, per_minute, or limit with window_s; each attempt takes "
                   "units (default 1, e.g. model tokens); PUT /v1/limits/{key} may set "
                   "another limit",
    "properties": {
        "key": _LIMIT_KEY,
        "per_second": or_null({**_COUNT, "description": "units a second"}),
        "per_minute": or_null({**_COUNT, "description": "units a minute"}),
        "limit": or_null({**_COUNT, "description": "units per window_s"}),
        "window_s": or_null({"type": "number", "minimum": 0.001, "maximum": MAX_WINDOW_S,
                              "description": "the window of limit, seconds"}),
        "units": {"anyOf": [_COUNT, {"type": "string", "pattern": r"\$\{"}],
                  "description": "what one attempt takes: an integer, or one ${...} "
                                 "reference giving one; a task may report what it used",
                  "default": 1},
    },
    "examples": [{"key": "openai", "per_minute": 500},
                 {"key": "openai-tokens", "limit": 90000, "window_s": 60,
                  "units": "${input.max_tokens}"}],
}
"""A task or map node's ``rate_limit`` (``headwater.core.limits``)."""

REQUIRES_SCHEMA: dict[str, Any] = {
    "type": "array", "minItems": 1,
    "items": {"type": "string", "pattern": TAG_PATTERN.pattern},
    "description": f"the tags a worker must announce to run a task or map node's tasks "
                   f"(HEADWATER_WORKER_TAGS), at most {MAX_TAGS} different ones; a "
                   f"submission no live worker satisfies is 400 no-matching-worker (unless "
                   f"queue_anyway)",
    "examples": [["gpu", "a100"]],
}
"""A task or map node's ``requires`` (``headwater.core.selectors``; a tag given twice
counts once, so no ``maxItems``)."""

CACHE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "cache the task's result: an attempt whose key (per tenant and task) "
                   "has a live entry records its output without a dispatch, naming the "
                   "attempt that computed it; one attempt at a time computes a key (the "
                   "others wait for it); ?cache=refresh on a submission bypasses hits",
    "properties": {
        "key": {"type": "string", "minLength": 1, "maxLength": caching.MAX_KEY_CHARS,
                "description": "a text, or exactly one ${...} reference resolved per "
                               "attempt (any JSON value: a document is its canonical "
                               "JSON); absent: the attempt's input"},
        "ttl": {"anyOf": [
            {"type": "number", "exclusiveMinimum": 0,
             "maximum": caching.MAX_TTL_MS / 1000},
            {"type": "string", "pattern": caching.DURATION_PATTERN}],
            "description": "how long an entry lives: seconds, or a duration such as 30s, "
                           "15m, 12h, 7d (at most 365d); default 7d"},
    },
    "examples": [{"key": "${input.doc_id}", "ttl": "7d"}, {"ttl": "12h"}],
}
"""A task or map node's ``cache`` (``headwater.core.caching``)."""
