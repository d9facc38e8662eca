"""HTTP requests generated from the gateway's OpenAPI document by schemathesis, sent to
the sandbox's gateway, and what came back.

Every operation gets schema-conforming cases (``GenerationMode.POSITIVE``) and
schema-violating ones (``NEGATIVE``), drawn by Hypothesis from schemathesis' strategies
(``APIOperation.as_strategy``; the schemathesis documentation, "Using Hypothesis
Strategies"). Nothing is shrunk: every answer is recorded, not asserted. An answer of
5xx is a finding unless it is a 503 with ``Retry-After`` (Kafka or PostgreSQL
unavailable, docs/http-api.md, "Errors: problem types"); any error answer that is not
``application/problem+json`` is one too; so is a negative case answered 2xx (the
gateway took what its own document says it refuses), when some part of it is negative
(``violates``).
"""

from __future__ import annotations

import contextlib
import copy
import time
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import hypothesis
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisDeprecationWarning, Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.core.result import Ok

PROBLEM_JSON = "application/problem+json"
WEIGHTS = {
    "POST /v1/workflows": 4, "POST /v1/workflows/{workflow_id}/cancel": 2,
    "GET /v1/workflows": 2, "GET /v1/workflows/{workflow_id}": 1,
    "GET /v1/workflows/{workflow_id}/events": 1, "GET /health": 0, "GET /ready": 0,
    "POST /v1/workflows/{workflow_id}/pause": 1, "POST /v1/workflows/{workflow_id}/resume": 1,
}
"""Relative share of the cases per operation (0: the one case there is)."""
READ_LIMIT_BYTES = 64 * 1024
STREAM_READ_S = 2.0
"""How long an event stream that answered 200 is read before the case moves on."""
EVIDENCE = 20
"""Findings kept in full per kind."""


def load_schema(gateway: str) -> schemathesis.BaseSchema:
    """The gateway's OpenAPI document, with nodes kept on the sandbox's queue.

    A node's ``queue`` names a Kafka topic that the coordinator creates on first use; the
    cases must not create hundreds on the shared broker, so the document is narrowed:
    nodes and a loop's tools name no queue (the default, which the sandbox's workers
    serve).
    """
    # aiokafka's partitioner uses the random module in another thread; Hypothesis takes
    # that for a strategy's doing and warns.
    warnings.filterwarnings("ignore", "Do not use the `random` module inside strategies",
                            HypothesisDeprecationWarning)
    doc = requests.get(f"{gateway}/openapi.json", timeout=30).json()
    doc = copy.deepcopy(doc)
    body = doc["paths"]["/v1/workflows"]["post"]["requestBody"]
    node = body["content"]["application/json"]["schema"]["properties"]["workflow"][
        "properties"]["nodes"]["items"]
    node["properties"].pop("queue", None)
    tools = node["properties"].get("tools", {}).get("items", {}).get("anyOf", [])
    for tool in tools:
        tool.get("properties", {}).pop("queue", None)  # a loop's tool names a queue too
    return schemathesis.openapi.from_dict(doc)


@dataclass
class Tally:
    """What the HTTP cases got.

    Attributes:
        cases: per operation label, cases sent per mode (``positive``, ``negative``).
        classes: answers per status class (``2xx`` ...; ``error`` for no answer).
        codes: answers per status code.
        server_errors: 5xx other than documented 503s, each with its request.
        documented_503: 503s with ``Retry-After`` and a problem document.
        not_problem: error answers that were not ``application/problem+json``.
        negative_accepted: per operation, negative cases answered 2xx.
        transport_errors: requests that got no answer (connection reset, timeout).
        accepted_ids: workflow ids of submissions answered 202.
        findings: the first ``EVIDENCE`` of each kind of finding, in full.
    """

    cases: dict[str, Counter[str]] = field(default_factory=dict)
    classes: Counter[str] = field(default_factory=Counter)
    codes: Counter[str] = field(default_factory=Counter)
    server_errors: int = 0
    documented_503: int = 0
    not_problem: int = 0
    negative_accepted: Counter[str] = field(default_factory=Counter)
    transport_errors: int = 0
    accepted_ids: list[str] = field(default_factory=list)
    findings: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """Cases sent."""
        return sum(sum(c.values()) for c in self.cases.values())

    def keep(self, kind: str, evidence: dict[str, Any]) -> None:
        """Keep one finding's evidence (the first ``EVIDENCE`` of each kind)."""
        kept = self.findings.setdefault(kind, [])
        if len(kept) < EVIDENCE:
            kept.append(evidence)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for the report."""
        return {"inputs": self.total, "by_operation": {k: dict(v) for k, v in self.cases.items()},
                "by_status_class": dict(self.classes), "by_status": dict(self.codes),
                "server_errors": self.server_errors, "documented_503": self.documented_503,
                "not_problem_json": self.not_problem,
                "negative_accepted": dict(self.negative_accepted),
                "transport_errors": self.transport_errors,
                "accepted_submissions": len(self.accepted_ids), "findings": self.findings}


def split(total: int) -> dict[str, int]:
    """Cases per operation label for ``total`` cases (at least one each)."""
    weights = sum(WEIGHTS.values())
    return {label: max(1, total * w // weights) for label, w in WEIGHTS.items()}


def operations(schema: schemathesis.BaseSchema) -> Iterator[Any]:
    """Every operation of the document (``APIOperation``)."""
    for result in schema.get_all_operations():
        if isinstance(result, Ok):
            yield result.ok()


@dataclass
class Sender:
    """Sends cases to the gateway and tallies the answers.

    Args:
        base_url: the gateway.
        tally: where the answers go.
    """

    base_url: str
    tally: Tally
    session: requests.Session = field(default_factory=requests.Session)

    def run(self, operation: Any, mode: GenerationMode, count: int, seed: int,
            ids: Sequence[str] = ()) -> None:
        """Send up to ``count`` cases of ``operation`` in ``mode`` (fewer when the
        operation has fewer distinct cases; none when it has none of that mode), with
        the ``{workflow_id}`` of the path drawn from ``ids`` when given."""
        strategy = operation.as_strategy(generation_mode=mode) if not ids else st.one_of(
            [operation.as_strategy(generation_mode=mode, path_parameters={"workflow_id": w})
             for w in ids])

        @hypothesis.seed(seed)
        @settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @hypothesis.given(case=strategy)
        def cases(case: Any) -> None:
            self.send(operation.label, mode.value, case)

        # Unsatisfiable: e.g. no negative case of an operation without parameters.
        with contextlib.suppress(Unsatisfiable):
            cases()

    def send(self, label: str, mode: str, case: Any) -> None:
        """Send one case; record its answer."""
        self.tally.cases.setdefault(label, Counter())[mode] += 1
        kwargs = case.as_transport_kwargs(base_url=self.base_url)
        try:
            response = self.session.request(**kwargs, timeout=(5, 10), stream=True,
                                            allow_redirects=False)
            body = _read_some(response)
        except requests.RequestException as e:
            self.tally.classes["error"] += 1
            self.tally.transport_errors += 1
            self.tally.keep("transport_error", _evidence(case, self.base_url, None, str(e)))
            self.session = requests.Session()
            return
        self._record(label, mode, case, response, body)

    def _record(self, label: str, mode: str, case: Any, response: requests.Response,
                body: bytes) -> None:
        status = response.status_code
        t = self.tally
        t.classes[f"{status // 100}xx"] += 1
        t.codes[str(status)] += 1
        problem = response.headers.get("content-type", "").startswith(PROBLEM_JSON)
        if status >= 500:
            if status == 503 and problem and "retry-after" in response.headers:
                t.documented_503 += 1
            else:
                t.server_errors += 1
                t.keep("server_error", _evidence(case, self.base_url, response, body))
        if status >= 400 and not problem:
            t.not_problem += 1
            t.keep("not_problem_json", _evidence(case, self.base_url, response, body))
        if mode == "negative" and status < 300 and violates(case):
            t.negative_accepted[label] += 1
            t.keep(f"negative_accepted {label}", _evidence(case, self.base_url, response, body))
        if label == "POST /v1/workflows" and status == 202:
            t.accepted_ids.append(response.headers.get("location", "").rsplit("/", 1)[-1])


def violates(case: Any) -> bool:
    """Whether a case breaks the document in some part: a ``NEGATIVE`` strategy may
    draw a case with nothing negative in it (no body for an optional one, the path's
    parameters fixed), which the gateway rightly takes."""
    components = getattr(getattr(case, "meta", None), "components", None)
    if not components:
        return True  # nothing says otherwise
    return any(c.mode is GenerationMode.NEGATIVE for c in components.values())


def _read_some(response: requests.Response) -> bytes:
    """Up to ``READ_LIMIT_BYTES`` of the body; an event stream for ``STREAM_READ_S``."""
    chunks, size = [], 0
    began = time.monotonic()
    try:
        for chunk in response.iter_content(chunk_size=4096):
            chunks.append(chunk)
            size += len(chunk)
            if size >= READ_LIMIT_BYTES or time.monotonic() - began > STREAM_READ_S:
                break
    finally:
        response.close()
    return b"".join(chunks)


def _evidence(case: Any, base_url: str, response: requests.Response | None,
              body: bytes | str) -> dict[str, Any]:
    shown = body.decode(errors="replace") if isinstance(body, bytes) else body
    return {"request": case.as_curl_command(base_url=base_url)[:2000],
            "status": response.status_code if response is not None else None,
            "content_type": response.headers.get("content-type") if response else None,
            "body": shown[:1000]}


def run_cases(sender: Sender, schema: schemathesis.BaseSchema, total: int, seed: int,
              known: Mapping[str, Sequence[str]]) -> None:
    """About ``total`` cases over every operation (``WEIGHTS``), half of each
    operation's positive and half negative, drawn from ``seed``; an operation with
    known workflow ids (``known``, by label) gets half its cases about them."""
    counts = split(total)
    for operation in operations(schema):
        per_mode = max(1, counts.get(operation.label, 1) // 2)
        ids = known.get(operation.label, ())
        for i, mode in enumerate(GenerationMode):
            if ids:
                sender.run(operation, mode, max(1, per_mode // 2), seed + i + 2, ids)
            sender.run(operation, mode, per_mode - per_mode // 2 if ids else per_mode,
                       seed + i)
