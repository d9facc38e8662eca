"""``headwater submit`` chooses the workflow id before its first try and prints it, and
a retry after a 503 sends that same id (no second run); ``headwater list`` sends its
filters. Against a real HTTP server on a free port standing in for the gateway."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from ops.cli.app import app
from tests.unit.ops.conftest import Gateway

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "stdlib_search" / "workflow.yaml"
runner = CliRunner()


UNAVAILABLE = (503, {"title": "Kafka unavailable", "status": 503,
                     "detail": "it may still be stored, and retrying it is safe"})


def test_a_503_is_retried_with_the_id_chosen_and_printed_before_the_first_try(
        gateway: Gateway) -> None:
    gateway.answers = [UNAVAILABLE, UNAVAILABLE, (200, {"id": "?", "status": "running"})]
    result = runner.invoke(app, ["submit", str(EXAMPLE), "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    ids = [body["id"] for _, _, body in gateway.requests]
    assert len(ids) == 3 and len(set(ids)) == 1 and re.fullmatch(r"wf-[0-9a-f]{32}", ids[0])
    assert f"workflow {ids[0]} running (submitted before)" in result.stdout
    assert result.stderr.startswith(f"submitting {ids[0]} (the id is chosen before the "
                                    f"first try: retrying with --id {ids[0]} is safe)")


def test_a_given_id_is_sent_as_given(gateway: Gateway) -> None:
    gateway.answers = [(202, {"id": "mine-1", "status": "accepted"})]
    result = runner.invoke(app, ["submit", str(EXAMPLE), "--id", "mine-1", "--tenant", "t",
                                 "--input", '{"query": "zip"}', "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    (_, path, body), = gateway.requests
    assert path == "/v1/workflows" and body["id"] == "mine-1" and body["tenant"] == "t"
    assert body["input"] == {"query": "zip"} and body["workflow"]["name"]
    assert "workflow mine-1 accepted" in result.output


def test_a_refusal_says_refused_and_not_stored_and_never_looks_accepted(
        gateway: Gateway) -> None:
    gateway.answers = [(422, {"title": "Invalid workflow", "status": 422,
                              "detail": "2 faults", "errors": ["node a: no task"]})]
    result = runner.invoke(app, ["submit", str(EXAMPLE), "--gateway", gateway.url])
    assert result.exit_code == 2
    workflow_id = gateway.requests[0][2]["id"]
    assert not any(line.startswith("workflow ") for line in result.output.splitlines())
    assert re.search(rf"error: workflow {workflow_id} refused, not stored: 422 2 faults\n"
                     r"  - node a: no task", result.output), result.output
    assert "retrying with --id" in result.stderr


def test_queue_anyway_is_sent_and_suggested_on_the_400(gateway: Gateway) -> None:
    gateway.answers = [(400, {"title": "Bad Request", "status": 400, "detail":
                              "no live worker serves it, or submit with queue_anyway: "
                              "true to queue it"}),
                       (202, {"id": "q-1", "status": "accepted"})]
    refused = runner.invoke(app, ["submit", str(EXAMPLE), "--id", "q-1", "--gateway",
                                  gateway.url])
    assert refused.exit_code == 2 and "--queue-anyway" in refused.output, refused.output
    assert "queue_anyway" not in gateway.requests[0][2]
    queued = runner.invoke(app, ["submit", str(EXAMPLE), "--id", "q-1", "--queue-anyway",
                                 "--gateway", gateway.url])
    assert queued.exit_code == 0, queued.output
    body = gateway.requests[1][2]
    assert body["queue_anyway"] is True and body["id"] == "q-1" and body["workflow"]
    assert "workflow q-1 accepted" in queued.stdout


def test_a_spec_that_is_not_a_mapping_is_refused_before_sending(
        gateway: Gateway, tmp_path: Path) -> None:
    spec = tmp_path / "list.yaml"
    spec.write_text("- a\n- b\n")
    result = runner.invoke(app, ["submit", str(spec), "--gateway", gateway.url])
    assert result.exit_code == 2 and "a workflow is a mapping" in result.output
    assert gateway.requests == []


def test_list_sends_its_filters_and_prints_a_row_per_run(gateway: Gateway) -> None:
    item = {"id": "wf-1", "name": "search", "tenant": None, "status": "failed", "seq": 9,
            "created_at": "2026-12-01T10:00:00+00:00", "updated_at": None,
            "error": "boom", "definition": {"name": "docs", "version": 3}, "links": {}}
    gateway.answers = [(200, {"items": [item], "next_cursor": "c2"})]
    result = runner.invoke(app, ["list", "--status", "failed", "--definition", "docs",
                                 "--limit", "1", "--gateway", gateway.url],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    (method, path, _), = gateway.requests
    assert method == "GET" and path.startswith("/v1/workflows?")
    assert set(path.split("?", 1)[1].split("&")) == {"status=failed", "definition=docs",
                                                      "limit=1"}
    row = next(line for line in result.output.splitlines() if "wf-1" in line)
    for text in ("search", "docs@3", "failed", "2026-12-01 10:00:00", "boom"):
        assert text in row
    assert ("more: headwater list --status failed --definition docs --limit 1 --cursor c2"
            in result.output)


def test_list_refuses_an_unknown_status_without_asking(gateway: Gateway) -> None:
    result = runner.invoke(app, ["list", "--status", "stuck", "--gateway", gateway.url])
    assert result.exit_code == 2 and gateway.requests == []
