"""``GET /v1/whoami``: the principal of the request's token (the web UI and
``headwater whoami`` show it)."""

from __future__ import annotations

import orjson
from fastapi import APIRouter, Request
from starlette.responses import Response

from services.gateway.auth.scope import principal
from services.gateway.lifetime import runtime
from services.gateway.openapi.problems import READS, problems

router = APIRouter()
WHOAMI_SCHEMA = {"type": "object", "required": ["auth", "tenant", "role", "subject"],
                 "properties": {
                     "auth": {"type": "boolean", "description": "whether HEADWATER_AUTH is on"},
                     "tenant": {"type": "string", "description": "the token's tenant; '*': "
                                "every tenant (always, when auth is off)"},
                     "role": {"enum": ["read", "submit", "admin"]},
                     "subject": {"type": "string", "description": "the API key's id or the "
                                 "JWT's sub; 'anonymous' when auth is off"}}}


@router.get("/v1/whoami", responses={200: {"content": {"application/json": {
    "schema": WHOAMI_SCHEMA, "example": {"auth": True, "tenant": "acme", "role": "submit",
                                        "subject": "3f9a1c2b7d4e"}}}}, **problems(*READS)})
async def whoami(request: Request) -> Response:
    """The token's tenant, role and subject: 200; 401 without a valid token (auth on)."""
    me = principal(request)
    auth = runtime(request).settings.auth.authenticator is not None
    return Response(orjson.dumps({"auth": auth, "tenant": me.tenant, "role": me.role,
                                  "subject": me.subject}), media_type="application/json")
