"""An example of each problem type (``edge.problems.PROBLEM_TYPES``), by slug: what the
gateway answers (``components.examples`` of the OpenAPI document). Each is checked
against its type's schema (``tests/unit/services/gateway/openapi/test_openapi_examples.py``)."""

from __future__ import annotations

from typing import Any

from services.gateway.edge.problems import PROBLEM_TYPES, ProblemType

RUN = "refund-order-1042"
_BY_SLUG = {t.slug: t for t in PROBLEM_TYPES}


def _doc(slug: str, detail: str, instance: str | None, **extra: Any) -> dict[str, Any]:
    """A problem document of type ``slug`` (``instance``: None for none)."""
    kind: ProblemType = _BY_SLUG[slug]
    doc: dict[str, Any] = {"type": kind.uri, "title": kind.title, "status": kind.status,
                           "detail": detail}
    if instance is not None:
        doc["instance"] = instance
    return {**doc, **extra}


def _faults(slug: str, instance: str, *faults: str, **extra: Any) -> dict[str, Any]:
    """A problem whose detail is its ``errors`` joined."""
    return _doc(slug, "; ".join(faults), instance, errors=list(faults), **extra)


_UNSERVED = ("node 'fetch': task 'billing.fetch_ordr' on queue 'cpu', which has no live "
             "worker; no worker serves it anywhere (did you mean 'billing.fetch_order'?): "
             "start a worker of queue cpu with the task's module, or submit with "
             "queue_anyway: true to queue it anyway")
PROBLEM_EXAMPLES: dict[str, dict[str, Any]] = {
    "bad-request": _doc("bad-request", "the query contains U+0000 (%00)", None),
    "bad-last-event-id": _doc("bad-last-event-id", "Last-Event-ID must be a seq number: 1 "
                              "to 18 digits 0-9", f"/v1/workflows/{RUN}/events"),
    "bad-cursor": _doc("bad-cursor", "the cursor is not one this API returned",
                       "/v1/workflows"),
    "bad-digest": _doc("bad-digest", "'sha256:12ab' is not a blob's digest: sha256: and 64 "
                       "lowercase hex digits", f"/v1/workflows/{RUN}/blobs/sha256:12ab"),
    "no-worker": _doc("no-worker", _UNSERVED, "/v1/workflows", task="billing.fetch_ordr",
                      queue="cpu", did_you_mean=["billing.fetch_order"],
                      errors=["node 'fetch': no live worker of queue cpu serves task "
                              "billing.fetch_ordr"]),
    "no-matching-worker": _doc(
        "no-matching-worker", "node 'embed': task 'rag.embed' on queue 'gpu' requires the "
        "tags [a100, gpu], and no worker announces a100: the queue has live workers "
        "announcing no tags, [gpu, t4]; start a worker of queue gpu with "
        "HEADWATER_WORKER_TAGS=a100,gpu, or submit with queue_anyway: true to queue it "
        "until one starts", "/v1/workflows", task="rag.embed", queue="gpu",
        requires=["a100", "gpu"], missing=["a100"], worker_tags=[[], ["gpu", "t4"]],
        errors=["node 'embed': no live worker of queue gpu announces the tags [a100, gpu]"]),
    "invalid-signal": _faults(
        "invalid-signal", f"/v1/workflows/{RUN}/signals/aproval", "no wait node waits for "
        "signal 'aproval' (this workflow's signals: approval)", signal="aproval"),
    "cors-preflight-refused": _doc(
        "cors-preflight-refused", "this gateway does not allow the preflight's origin "
        "(origin 'https://elsewhere.example', method 'POST'); see HEADWATER_CORS_ORIGINS",
        None, refused=["origin"]),
    "unauthorized": _doc("unauthorized", "unknown or revoked API key", "/v1/workflows"),
    "forbidden": _doc("forbidden", "the token's role is read; this needs submit",
                      "/v1/workflows", role="read", needs="submit"),
    "not-found": _doc("not-found", "no definition refnud (did you mean 'refund'?)",
                      "/v1/workflows", definition="refnud", did_you_mean=["refund"]),
    "no-route": _doc("no-route", "no operation of the API has the path /v1/workflow",
                     "/v1/workflow"),
    "method-not-allowed": _doc("method-not-allowed", "DELETE is not a method of "
                               "/v1/workflows", "/v1/workflows"),
    "conflict": _doc("conflict", f"workflow id {RUN} is already used by a different "
                     "submission", "/v1/workflows", workflow_id=RUN),
    "definition-deleted": _doc(
        "definition-deleted", "definition refund was deleted (its last version is 1): it "
        "starts no new runs; runs already started go on", "/v1/workflows",
        definition="refund"),
    "request-too-large": _doc("request-too-large", "the body exceeds 268435456 bytes "
                              "(HEADWATER_MAX_PAYLOAD_BYTES)", "/v1/workflows",
                              setting="HEADWATER_MAX_PAYLOAD_BYTES",
                              max_body_bytes=268435456),
    "record-too-large": _doc(
        "record-too-large", "the submission is 1100321 bytes as a Kafka record, more than "
        "Kafka takes (1048576 bytes, HEADWATER_MAX_MESSAGE_BYTES or the broker's "
        "message.max.bytes); make its spec or input smaller", "/v1/workflows",
        workflow_id=RUN, record_bytes=1100321, max_record_bytes=1048576),
    "invalid-request": _faults("invalid-request", "/v1/workflows",
                               "tenant: Input should be a valid string",
                               "queue_anywya: Extra inputs are not permitted"),
    "invalid-workflow-spec": _faults(
        "invalid-workflow-spec", "/v1/workflows",
        "node 'refund': needs unknown node 'aproval'"),
    "workflow-spec-too-large": _faults(
        "workflow-spec-too-large", "/v1/workflows", "nodes.fan: the spec with its child "
        "definitions inlined holds over 10000 nodes (MAX_INLINED_NODES, counting every "
        "child's)"),
    "invalid-definition-reference": _doc(
        "invalid-definition-reference", "definition reference 'refund@x': the version "
        "after @ must be an integer from 1 to 2147483647 (such as \"refund@3\")",
        "/v1/workflows", errors=["definition: definition reference 'refund@x': the "
                                 "version after @ must be an integer from 1 to "
                                 "2147483647 (such as \"refund@3\")"],
        definition="refund@x"),
    "input-mismatch": _doc(
        "input-mismatch", "the input does not match the input_schema of definition "
        "refund@1: input.order: \"1042\" is not of type \"integer\"", "/v1/run/refund",
        errors=["input.order: \"1042\" is not of type \"integer\""], definition="refund",
        version=1),
    "input-unresolved": _faults(
        "input-unresolved", "/v1/workflows", "node 'fetch': input: ${input.ordr}: the "
        "input has no key 'ordr' (did you mean 'order'?); it has customer, order"),
    "invalid-definition": _faults(
        "invalid-definition", "/v1/definitions/refund",
        "input_schema.properties.order.type: \"int\" is not valid under any of the "
        "schemas listed in the 'anyOf' keyword"),
    "invalid-definition-name": _doc(
        "invalid-definition-name", "definition name '.refund' is invalid: 1-100 letters, "
        "digits and _.- starting with a letter or digit", "/v1/definitions/.refund",
        errors=["name: definition name '.refund' is invalid: 1-100 letters, digits and "
                "_.- starting with a letter or digit"]),
    "invalid-schedule-name": _faults(
        "invalid-schedule-name", "/v1/schedules/-nightly",
        "name: schedule name '-nightly' is invalid: 1-100 letters, digits and _.- "
        "starting with a letter or digit"),
    "invalid-schedule": _faults(
        "invalid-schedule", "/v1/schedules/nightly-report",
        "cron: '0 2 * *' has 4 fields; 5 (minute hour day month weekday) or 6 (and "
        "seconds, last) are needed", "definition: no definition reprots"),
    "queue-full": _doc("queue-full", "queue 'cpu' has 1000 dispatches waiting, at or over "
                       "its maxdepth of 1000; retry later", "/v1/workflows", queue="cpu",
                       backlog=1000, maxdepth=1000),
    "internal-error": _doc("internal-error", "an unexpected error; it has been logged",
                           None),
    "not-ready": _doc("not-ready", "still connecting to Kafka and PostgreSQL",
                      f"/v1/workflows/{RUN}"),
    "shutting-down": _doc("shutting-down", "this gateway is shutting down; retry, another "
                          "instance will take the request", "/v1/workflows"),
    "kafka-unavailable": _doc(
        "kafka-unavailable", "Kafka did not acknowledge the submission within 10 s; it may "
        "still be stored, and retrying it is safe", "/v1/workflows", workflow_id=RUN),
    "database-unavailable": _doc("database-unavailable",
                                 "PostgreSQL does not answer; retry later",
                                 f"/v1/workflows/{RUN}"),
}
"""Per problem type's slug: an example problem document of it."""
