"""What the OpenAPI document says of the definitions resource (``/v1/definitions``): the
bodies its routes read (a definition's spec and input schema, a rollback) and the answers
they give (a stored version, a version with its spec, a rollback's outcome, a page of the
list), and its ``{name}`` path parameter.

They are the definitions routes' (``definitions.api``), apart from the runs' bodies
(``openapi.bodies``) whose spec schema (``SPEC_SCHEMA``) a definition's body takes. Shapes
only, as there: ``headwater.core.definitions`` stays the authority on a name and
``definitions.registry`` on an input schema.
"""

from __future__ import annotations

from typing import Any

from headwater.core.definitions import NAME_PATTERN as DEFINITION_NAME_PATTERN
from services.gateway.openapi.bodies import SPEC_SCHEMA

DEFINITION_NAME_DOC: dict[str, Any] = {
    "pattern": DEFINITION_NAME_PATTERN,
    "description": "a definition's name: 1-100 letters, digits and _.- starting with a "
                   "letter or digit"}
"""The schema extras of the ``{name}`` path parameter of a definition."""

DEFINITION_BODY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["workflow"],
    "additionalProperties": False,
    "properties": {
        "workflow": SPEC_SCHEMA,
        "input_schema": {"type": ["object", "null"],
                         "description": "JSON Schema (draft 4, 6, 7, 2019-09 or 2020-12 by "
                                        "its $schema; 2020-12 without) that a run's input "
                                        "must match; null: any input. References outside "
                                        "it are refused"},
    },
}
"""``PUT /v1/definitions/{name}`` (``definitions.models.DefinitionRequest``)."""

DEFINITION_PUT_SCHEMA: dict[str, Any] = {
    "oneOf": [DEFINITION_BODY_SCHEMA, {**SPEC_SCHEMA, "description": "a bare spec: the "
                                       "same as {\"workflow\": <it>}"}],
}
"""The body of ``PUT /v1/definitions/{name}``: the spec and its input schema, or a bare
spec."""

_DEFINITION_LINKS: dict[str, Any] = {
    "type": "object", "additionalProperties": {"type": "string"},
    "description": "self (this version), latest, run (POST /v1/run/{name}), runs "
                   "(GET /v1/workflows?definition=)"}
DEFINITION_PAUSED_SCHEMA: dict[str, Any] = {
    "type": ["object", "null"], "required": ["since", "by", "reason"],
    "description": "the definition's pause (POST /v1/definitions/{name}/pause): its new "
                   "runs start paused; null: not paused",
    "properties": {"since": {"type": "string", "format": "date-time"},
                   "by": {"type": "string", "description": "who paused it"},
                   "reason": {"type": "string"}},
}
"""A definition's ``paused``, in a definition's document and in each item of the list."""

DEFINITION_STORED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name", "version", "digest", "created_at", "links"],
    "properties": {
        "name": {"type": "string"},
        "version": {"type": "integer", "minimum": 1},
        "digest": {"type": "string", "description": "SHA-256 (hex) of the canonical JSON "
                                                    "of the spec and input schema"},
        "created_at": {"type": "string", "format": "date-time"},
        "links": _DEFINITION_LINKS,
    },
}
"""The answer of ``PUT /v1/definitions/{name}``, and an item of the list."""

DEFINITION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [*DEFINITION_STORED_SCHEMA["required"], "latest", "deleted", "workflow",
                 "input_schema", "paused"],
    "properties": {
        **DEFINITION_STORED_SCHEMA["properties"],
        "latest": {"type": "integer", "description": "the definition's highest version"},
        "current": {"type": "integer", "description": "the version new runs use (the "
                                                      "latest, unless rolled back)"},
        "deleted": {"type": "boolean", "description": "deleted: no new runs"},
        "paused": DEFINITION_PAUSED_SCHEMA,
        "workflow": SPEC_SCHEMA,
        "input_schema": {"type": ["object", "null"]},
    },
}
"""The answer of ``GET /v1/definitions/{name}``."""

DEFINITION_ROLLBACK_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {"to": {"type": ["integer", "null"], "minimum": 1, "maximum": 2**31 - 1,
                          "description": "the version to make current; absent: the one "
                                         "before the current"}},
}
"""The body of ``POST /v1/definitions/{name}/rollback`` (optional)."""

DEFINITION_ROLLED_BACK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name", "version", "previous", "latest", "changed", "links"],
    "properties": {
        "name": {"type": "string"},
        "version": {"type": "integer", "minimum": 1, "description": "now current"},
        "previous": {"type": "integer", "minimum": 1, "description": "current before"},
        "latest": {"type": "integer", "minimum": 1, "description": "the highest version"},
        "changed": {"type": "boolean", "description": "false: it was current already"},
        "links": _DEFINITION_LINKS,
    },
}
"""The answer of ``POST /v1/definitions/{name}/rollback``."""

DEFINITIONS_LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["items", "next_cursor"],
    "properties": {
        "items": {"type": "array", "items": {
            **DEFINITION_STORED_SCHEMA, "properties": {
                **DEFINITION_STORED_SCHEMA["properties"], "paused": DEFINITION_PAUSED_SCHEMA}}},
        "next_cursor": {"type": ["string", "null"],
                        "description": "pass as ?cursor= for the next page; null: none"},
    },
}
"""The answer of ``GET /v1/definitions``."""
