"""The short fuzzing run (``python -m fuzzer`` runs the long one): a few hundred HTTP
cases generated from the gateway's OpenAPI document and a few hundred mutated Kafka
records, with valid workflows between them, on a private sandbox.

Every promise of docs/architecture.md invariant 6 is checked by the run itself
(``fuzzer.checks``): no 5xx but documented 503s, every error a problem document,
no process dead, replaced or restarted, every bad record dead-lettered with a reason,
no partition wedged, every valid workflow succeeded (those paused and resumed while
they ran with their expected output, one pause and one resume in their histories).
Pause and resume requests are among the inputs on both sides. The seed is fixed, so
the inputs are the same on every run.
"""

from __future__ import annotations

from typing import Any

import pytest

from fuzzer.run import run
from fuzzer.session import Options
from tests.polling import scaled

pytestmark = [pytest.mark.e2e]

SHORT = Options(http=400, kafka=600, huge=3, rounds=3, targets=4, seed=20261201,
                timeout_s=120)


def explain(report: dict[str, Any]) -> str:
    """The violations, a few figures and the processes' log tails, for a failure."""
    f = report["figures"]
    return "\n".join([*report["violations"][:30],
                      f"HTTP: {f['http']['by_status']}", f"services: {f['services']}",
                      report.get("logs", "")])


@pytest.mark.timeout(scaled(300))
def test_bad_inputs_get_clear_errors_and_valid_work_goes_on(services: None) -> None:
    report = run(SHORT, log=lambda line: None)
    f = report["figures"]
    assert report["violations"] == [], explain(report)
    http, kafka = f["http"], f["kafka"]
    assert http["inputs"] >= 250, http["by_operation"]
    assert set(http["by_operation"]) >= {"POST /v1/workflows", "GET /v1/workflows"}
    assert http["by_status_class"].get("4xx", 0) > 0 and http["server_errors"] == 0
    dead = kafka["dead_letters"]
    assert dead["expected"] >= 200 and dead["dead_lettered_with_reason"] == dead["expected"]
    assert kafka["by_expectation"].get("applied", 0) > 0, "odd but valid records too"
    assert dead["value_omitted"] >= 1, "a record at the size limit lost its value only"
    valid = f["valid_workflows"]
    assert valid["outcomes"] == {"succeeded": 2 * (SHORT.rounds + 1) + 2 * SHORT.rounds}
    assert valid["paused"]["runs"] == {"http": SHORT.rounds, "kafka": SHORT.rounds}
    assert valid["paused"]["seen_paused"] > 0, valid["paused"]["steps"]
    assert {"POST /v1/workflows/{workflow_id}/pause", "POST /v1/workflows/{workflow_id}/resume",
            "POST /v1/definitions/{name}/pause"} <= set(http["by_operation"])
    assert {"pause", "resume"} <= set(kafka["by_base"])
