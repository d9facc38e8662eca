"""Examples of the webhooks' request bodies and answers in the OpenAPI document (merged
into ``openapi.examples``; checked against their schemas like every example there)."""

from __future__ import annotations

from typing import Any

JSON = "application/json"
AT, LATER = "2026-03-02T09:14:07.512000+00:00", "2026-03-02T09:14:09.530000+00:00"
RUN = "refund-order-1042"
_BODY: dict[str, Any] = {
    "url": "https://ops.example.com/headwater", "events": ["run.failed", "run.waiting"],
    "filter": {"definitions": ["refund"]}, "secret": "whsec_4f1c2a9be07d4d3a",
    "retry": {"max_attempts": 8, "backoff_s": 2, "backoff_max_s": 600}}
_HOOK: dict[str, Any] = {
    "name": "ops-alerts", "tenant": "acme", "url": _BODY["url"], "events": _BODY["events"],
    "filter": {"names": [], "definitions": ["refund"]}, "retry": _BODY["retry"],
    "created_at": AT, "updated_at": AT,
    "links": {"self": "/v1/webhooks/ops-alerts",
              "deliveries": "/v1/webhooks/ops-alerts/deliveries"}}
_DELIVERY: dict[str, Any] = {
    "id": "d_6f0b3c1e2a9d4b7c8e5f1a2b3c4d5e6f", "webhook": "ops-alerts", "workflow_id": RUN,
    "seq": 14, "event": "run.failed", "status": "pending",
    "attempts": [{"n": 1, "at": AT, "status_code": 503, "error": "", "ms": 41},
                 {"n": 2, "at": LATER, "status_code": None,
                  "error": "ConnectTimeout: timed out", "ms": 10002}],
    "next_attempt_at": "2026-03-02T09:14:17.910000+00:00", "reason": None,
    "created_at": AT, "updated_at": LATER,
    "body": {"id": "d_6f0b3c1e2a9d4b7c8e5f1a2b3c4d5e6f", "webhook": "ops-alerts",
             "event": "run.failed", "at": AT, "error": "refund: HTTP 402 from the bank",
             "run": {"workflow_id": RUN, "name": "refund", "definition": "refund",
                     "tenant": "acme", "seq": 14, "link": f"/v1/workflows/{RUN}"}}}


def _json(summary: str, value: Any) -> dict[str, dict[str, Any]]:
    return {JSON: {"example": {"summary": summary, "value": value}}}


REQUESTS: dict[str, dict[str, dict[str, Any]]] = {
    "PUT /v1/webhooks/{name}": {
        "failures": {"summary": "failures and waits of the refund runs", "value": _BODY},
        "every-end": {"summary": "every run's end, default retries",
                      "value": {"url": "http://127.0.0.1:9000/hook", "events": ["run.ended"],
                                "secret": "a-secret-of-16-chars-or-more"}}},
}
"""Per operation: named examples of its JSON request body."""

ANSWERS: dict[str, dict[str, dict[str, dict[str, Any]]]] = {
    "PUT /v1/webhooks/{name}": {"201": _json("a new webhook", _HOOK),
                                "200": _json("the webhook, replaced", _HOOK)},
    "GET /v1/webhooks": {"200": _json("one webhook", {"items": [_HOOK], "next_cursor": None})},
    "GET /v1/webhooks/{name}": {"200": _json("a webhook (no secret)", _HOOK)},
    "GET /v1/webhooks/{name}/deliveries": {"200": _json("a delivery tried twice", {
        "items": [_DELIVERY], "next_cursor": None})},
    "POST /v1/webhooks/{name}/deliveries/{delivery_id}/retry": {"202": _json(
        "a dead delivery due again", {**_DELIVERY, "next_attempt_at": LATER})},
}
"""Per operation and status: examples of its JSON answers."""
