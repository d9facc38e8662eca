"""The OpenAPI document (``/openapi.json``) completed past what FastAPI makes of the
routes: the problem types' schemas and examples, the answers' schemas where a route
gives none, the examples of every request body and answer, and the error answers every
operation can give.

FastAPI adds a 422 ``HTTPValidationError`` answer to every route with parameters; the
gateway's 422 is a problem document, declared by the routes that can answer it, so
``complete`` drops FastAPI's. ``install`` makes ``app.openapi()`` call it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI

from services.gateway.edge.problems import FORBIDDEN, PROBLEM_JSON, PROBLEM_TYPES, UNAUTHORIZED
from services.gateway.openapi.answers import ANSWERS
from services.gateway.openapi.examples import ANSWER_EXAMPLES, REQUEST_EXAMPLES
from services.gateway.openapi.problem_examples import PROBLEM_EXAMPLES
from services.gateway.openapi.problems import component, problems, referred
from services.gateway.openapi.problems import schemas as problem_schemas

EXAMPLES = "#/components/examples/"
_FASTAPI_ONLY = ("HTTPValidationError", "ValidationError")
_SLUGS = {component(t): t.slug for t in PROBLEM_TYPES}
_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
BEARER = {"bearer": {"type": "http", "scheme": "bearer", "description": (
    "With HEADWATER_AUTH=on every /v1 operation needs 'Authorization: Bearer <token>': "
    "an API key (hwk_...) or a JWT with tenant and role claims (RFC 6750); off, the "
    "default, none is asked for")}}
"""The security scheme of ``/v1`` (``auth.gate``)."""


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every operation of ``doc`` as ``("METHOD path", operation)``."""
    for path, item in doc.get("paths", {}).items():
        for method, operation in item.items():
            if method in _METHODS:
                yield f"{method.upper()} {path}", operation


def complete(doc: dict[str, Any], auth: bool = False) -> dict[str, Any]:
    """Complete FastAPI's document.

    Args:
        doc: ``FastAPI.openapi()``'s document (changed in place).
        auth: whether this gateway's auth is on: the ``bearer`` security requirement of
            ``/v1`` is then the only one; off, ``{}`` (none) is one too (OpenAPI 3.1
            §4.8.30: an empty requirement makes security optional).

    Returns:
        A deep copy of ``doc`` (sharing nothing with this package's tables) with
        ``components.schemas`` holding ``Problem`` and one schema per problem type,
        ``components.examples`` one example per type, and each operation's answers and
        request body their schemas and examples.
    """
    components = doc.setdefault("components", {})
    found = components.setdefault("schemas", {})
    for name in _FASTAPI_ONLY:
        found.pop(name, None)
    found.update(problem_schemas())
    components["examples"] = {
        component(t): {"summary": f"{t.status} {t.title}", "value": PROBLEM_EXAMPLES[t.slug]}
        for t in PROBLEM_TYPES}
    components["securitySchemes"] = BEARER
    for label, operation in operations(doc):
        responses = operation.setdefault("responses", {})
        _drop_fastapi_422(responses)
        guarded = label.split(" ", 1)[1].startswith("/v1/")
        for status, answer in problems(*((UNAUTHORIZED, FORBIDDEN) if guarded else ())
                                       ).items():  # what every operation can answer
            responses.setdefault(str(status), answer)
        if guarded:
            operation["security"] = [{"bearer": []}] if auth else [{"bearer": []}, {}]
        _answers(responses, ANSWERS.get(label, {}), ANSWER_EXAMPLES.get(label, {}))
        _problem_examples(responses)
        body = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if body is not None and label in REQUEST_EXAMPLES:
            body["examples"] = REQUEST_EXAMPLES[label]
    return copy.deepcopy(doc)


def _drop_fastapi_422(responses: dict[str, Any]) -> None:
    """Drop the 422 FastAPI adds on its own (never what the gateway answers)."""
    schema = responses.get("422", {}).get("content", {}).get("application/json", {}).get(
        "schema", {})
    if schema.get("$ref", "").endswith("/HTTPValidationError"):
        del responses["422"]


def vacuous(schema: dict[str, Any] | None) -> bool:
    """Whether a route's answer schema says nothing of the shape (none, ``{}`` or only
    a bare ``type``)."""
    return not schema or (set(schema) <= {"type", "description"} and schema.get(
        "type") in (None, "object"))


def _answers(responses: dict[str, Any], schemas: dict[str, dict[str, Any]],
             examples: dict[str, dict[str, Any]]) -> None:
    """Give the answers ``schemas`` (status -> media type -> schema) where the route's
    own is vacuous, and ``examples`` (status -> media type -> named examples) where the
    route gives none."""
    for status, by_media in schemas.items():
        content = responses.setdefault(status, {"description": "OK"}).setdefault(
            "content", {})
        for media, schema in by_media.items():
            entry = content.setdefault(media, {})
            if vacuous(entry.get("schema")):
                entry["schema"] = schema
    for status, by_media in examples.items():
        content = responses.get(status, {}).get("content", {})
        for media, named in by_media.items():
            entry = content.get(media)
            if entry is not None and "example" not in entry:
                entry["examples"] = named


def _problem_examples(responses: dict[str, Any]) -> None:
    """Refer each problem answer to the example of every type it can be."""
    for answer in responses.values():
        media = answer.get("content", {}).get(PROBLEM_JSON)
        if media is not None:
            media["examples"] = {_SLUGS[name]: {"$ref": EXAMPLES + name}
                                 for name in referred(media.get("schema", {}))}


def install(app: FastAPI) -> None:
    """Make ``app.openapi()`` answer the document ``complete`` makes of FastAPI's (once,
    then cached as FastAPI caches its own).

    Args:
        app: the gateway's app; its ``state.hw`` (the ``Runtime``) says whether auth is
            on when the document is first asked for.
    """

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            hw = getattr(app.state, "hw", None)
            auth = hw is not None and hw.settings.auth.authenticator is not None
            app.openapi_schema = complete(FastAPI.openapi(app), auth)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented override
