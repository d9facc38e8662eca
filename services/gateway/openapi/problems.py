"""The problem documents of the OpenAPI document: one schema per problem type
(``edge.problems.PROBLEM_TYPES``) under ``components.schemas``, and the error answers each
operation gives (``problems``), referring to them.

A problem document is RFC 9457's (``Problem``, extension members allowed); each type's
schema pins its ``type``, ``title`` and ``status`` (``const``) and adds its extension
members. An operation's error answer of one status refers to every type of that status
the operation can answer, told apart by ``type`` (OpenAPI 3.1.0, "Discriminator
Object"). Every operation can also answer ``GATEWAY_WIDE``: U+0000 in its path or query
is refused before any route, and an unexpected error is a 500 problem
(``edge.middleware``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.gateway.edge.problems import (
    BAD_REQUEST,
    CONFLICT,
    DATABASE_DOWN,
    DEFINITION_DELETED,
    INPUT_MISMATCH,
    INPUT_UNRESOLVED,
    INTERNAL_ERROR,
    INVALID_DEFINITION_REFERENCE,
    INVALID_REQUEST,
    INVALID_SIGNAL,
    INVALID_SPEC,
    KAFKA_UNAVAILABLE,
    NO_WORKER,
    NOT_FOUND,
    NOT_READY,
    PROBLEM_JSON,
    PROBLEM_TYPES,
    QUEUE_FULL,
    RECORD_TOO_LARGE,
    REQUEST_TOO_LARGE,
    SHUTTING_DOWN,
    SPEC_TOO_LARGE,
    ProblemType,
)

SCHEMAS = "#/components/schemas/"
PROBLEM = "Problem"
"""The name of the schema every problem document matches."""
GATEWAY_WIDE = (BAD_REQUEST, INTERNAL_ERROR)
"""What any operation can answer (``edge.middleware.RejectNul``, ``edge.middleware.CatchAll``)."""

READS = (NOT_READY, DATABASE_DOWN)
"""What a read of the projection can answer (``lifetime.runtime``, PostgreSQL down)."""
WRITES = (SHUTTING_DOWN, NOT_READY, DATABASE_DOWN, KAFKA_UNAVAILABLE)
"""What an operation that produces to Kafka can answer (``lifetime.accepting``,
``outlet.produce``)."""
BODY = (REQUEST_TOO_LARGE, INVALID_REQUEST)
"""What reading a JSON body can answer (``edge.body``)."""
SUBMISSION = (INVALID_SPEC, SPEC_TOO_LARGE, INVALID_DEFINITION_REFERENCE, NOT_FOUND,
              DEFINITION_DELETED, INPUT_MISMATCH, INPUT_UNRESOLVED, CONFLICT, NO_WORKER, QUEUE_FULL,
              RECORD_TOO_LARGE)
"""What ``runs.submit.submit`` can answer beyond ``BODY`` and ``WRITES``."""
SIGNAL = (NOT_FOUND, CONFLICT, INVALID_SIGNAL)
"""What ``control.send.send_signal`` can answer beyond ``WRITES``."""

RETRY_AFTER_HEADER: dict[str, Any] = {
    "description": "seconds to wait before retrying (RFC 9110 §10.2.3); sent by the "
                   "types that say so",
    "schema": {"type": "integer", "minimum": 0}}

PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "An RFC 9457 problem document. Its type names the kind of problem "
                   "(one of the *Problem schemas); members beyond these are the type's "
                   "own (a client ignores those it does not know).",
    "required": ["type", "title", "status"],
    "properties": {
        "type": {"type": "string", "format": "uri",
                 "description": "the problem type's URI (urn:headwater:problem:<slug>)"},
        "title": {"type": "string", "description": "the same for every problem of the type"},
        "status": {"type": "integer", "minimum": 400, "maximum": 599},
        "detail": {"type": "string", "description": "what went wrong this time"},
        "instance": {"type": "string", "description": "the request's path"},
        "errors": {"type": "array", "items": {"type": "string"},
                   "description": "every fault, each \"<where>: <what>\" (e.g. "
                                  "input.age: \"x\" is not of type \"integer\")"},
    },
}
"""An RFC 9457 problem document (``edge.problems.problem_response``)."""


def component(kind: ProblemType) -> str:
    """The name of ``kind``'s schema (and example): ``not-found`` is ``NotFoundProblem``."""
    return "".join(part.capitalize() for part in kind.slug.split("-")) + PROBLEM


def type_schema(kind: ProblemType) -> dict[str, Any]:
    """The JSON Schema of a problem of type ``kind``: ``Problem`` with its ``type``,
    ``title`` and ``status`` pinned, and its extension members."""
    retry = " Answered with Retry-After." if kind.retry_after else ""
    return {
        "allOf": [{"$ref": SCHEMAS + PROBLEM}],
        "type": "object",
        "title": f"{kind.status} {kind.title}",
        "description": f"{kind.about[0].upper()}{kind.about[1:]}.{retry}",
        "required": ["type", "title", "status"],
        "properties": {"type": {"const": kind.uri}, "title": {"const": kind.title},
                       "status": {"const": kind.status}, **kind.members},
    }


def schemas() -> dict[str, dict[str, Any]]:
    """``components.schemas`` of the problem documents: ``Problem`` and one per type."""
    return {PROBLEM: PROBLEM_SCHEMA, **{component(t): type_schema(t) for t in PROBLEM_TYPES}}


def problems(*kinds: ProblemType, meanings: Mapping[int, str] | None = None,
             ) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` entries of an operation's error answers, for a route decorator.

    Args:
        kinds: the problem types the operation can answer (``GATEWAY_WIDE`` is added);
            a type named twice counts once.
        meanings: what a status means for this operation, where the types' own words
            are too broad (e.g. ``{404: "no such workflow"}``).

    Returns:
        ``{status: {"description", "content": {problem+json: {"schema"}}, "headers"?}}``,
        the schema a ``$ref`` to the one type of that status or a ``oneOf`` of them
        told apart by ``type``; ``Retry-After`` where a type sends it.
    """
    by_status: dict[int, list[ProblemType]] = {}
    for kind in (*kinds, *GATEWAY_WIDE):
        same = by_status.setdefault(kind.status, [])
        if kind not in same:
            same.append(kind)
    return {status: _answer(found, (meanings or {}).get(status))
            for status, found in sorted(by_status.items())}


def _description(kinds: list[ProblemType], meaning: str | None) -> str:
    """What an answer of one of ``kinds`` means: ``meaning``, else the one type's own
    words or the types' titles; then each of ``GATEWAY_WIDE``'s among them."""
    own = [k for k in kinds if k not in GATEWAY_WIDE]
    if meaning:
        said = [meaning]
    elif len(own) == 1:
        said = [own[0].about]
    else:
        said = [f"one of: {', '.join(k.title for k in own)}"] if own else []
    return "; or ".join([*said, *(k.about for k in kinds if k in GATEWAY_WIDE)])


def _answer(kinds: list[ProblemType], meaning: str | None) -> dict[str, Any]:
    """The ``responses`` entry of one status answering one of ``kinds``."""
    described = _description(kinds, meaning)
    refs = {k.uri: SCHEMAS + component(k) for k in kinds}
    schema: dict[str, Any] = ({"$ref": next(iter(refs.values()))} if len(refs) == 1 else
                              {"oneOf": [{"$ref": r} for r in refs.values()],
                               "discriminator": {"propertyName": "type", "mapping": refs}})
    answer: dict[str, Any] = {"description": described,
                              "content": {PROBLEM_JSON: {"schema": schema}}}
    if any(k.retry_after for k in kinds):
        answer["headers"] = {"Retry-After": RETRY_AFTER_HEADER}
    return answer


def referred(schema: Mapping[str, Any]) -> list[str]:
    """The component names of the problem types a response's schema refers to."""
    refs = [schema] if "$ref" in schema else list(schema.get("oneOf", ()))
    return [str(r["$ref"]).removeprefix(SCHEMAS) for r in refs if "$ref" in r]
