"""``headwater run NAME``, ``status``'s queue notes and warnings, and tables that keep
ids, paths and names whole: against a real HTTP server standing in for the gateway
(``conftest.Gateway``)."""

from __future__ import annotations

import io
import re
from typing import Any

from rich.console import Console
from rich.table import Table
from typer.testing import CliRunner

from ops.cli.app import app
from ops.cli.common import print_table
from tests.unit.ops.conftest import Gateway

runner = CliRunner()
RUN_ID = "wf-" + "c5aa3" * 6 + "01"  # 35 characters, as the gateway makes them


def doc(status: str, **extra: Any) -> dict[str, Any]:
    """A workflow document as ``GET /v1/workflows/{id}`` answers it."""
    return {"id": RUN_ID, "name": "docs", "status": status, "seq": 7, "nodes": [],
            "tasks": [], "output": None, "error": None, **extra}


def test_run_waits_and_prints_the_output(gateway: Gateway) -> None:
    gateway.answers = [(200, doc("succeeded", output={"n": 3}))]
    result = runner.invoke(app, ["run", "docs@2", "--input", '{"module": "json"}',
                                 "--timeout", "30", "--id", RUN_ID, "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    (method, path, body), = gateway.requests
    assert method == "POST" and path.startswith("/v1/run/docs%402?")
    assert f"id={RUN_ID}" in path and "timeout=30" in path and body == {"module": "json"}
    assert re.search(r'"n": 3', result.stdout) and f"run {RUN_ID} succeeded" in result.stdout


def test_run_that_fails_prints_status_and_error_and_exits_1(gateway: Gateway) -> None:
    gateway.answers = [(200, doc("failed", error="node a: boom"))]
    result = runner.invoke(app, ["run", "docs", "--gateway", gateway.url])
    assert result.exit_code == 1, result.output
    assert "failed" in result.stdout and "node a: boom" in result.stdout
    assert result.stderr == ""  # an answer: nothing to retry


def test_run_async_prints_the_id_at_once_and_a_wait_that_ends_first_exits_1(
        gateway: Gateway) -> None:
    gateway.answers = [(202, {"id": RUN_ID, "status": "accepted"}),
                       (202, {"id": RUN_ID, "status": "running"})]
    quick = runner.invoke(app, ["run", "docs", "--async", "--gateway", gateway.url])
    assert quick.exit_code == 0 and f"run {RUN_ID} accepted" in quick.stdout, quick.output
    assert gateway.requests[0][1].startswith("/v1/run/docs?")
    waited = runner.invoke(app, ["run", "docs", "--timeout", "1", "--gateway", gateway.url])
    assert waited.exit_code == 1 and f"headwater status {RUN_ID}" in waited.stdout


def test_run_of_an_unknown_definition_exits_1_and_a_refusal_2(gateway: Gateway) -> None:
    gateway.answers = [(404, {"title": "Not found", "status": 404, "detail":
                              "no definition dcos (did you mean 'docs'?)",
                              "did_you_mean": ["docs"]}),
                       (422, {"title": "Invalid input", "status": 422, "detail": "bad"})]
    unknown = runner.invoke(app, ["run", "dcos", "--gateway", gateway.url])
    assert unknown.exit_code == 1, unknown.output
    assert unknown.stdout == ("error: no definition dcos (did you mean 'docs'?); nothing was "
                              "started (`headwater definitions list` lists the registered "
                              "ones)\n")
    assert unknown.stderr == ""  # no "retrying is safe" before or after a 404
    refused = runner.invoke(app, ["run", "docs", "--gateway", gateway.url])
    assert refused.exit_code == 2 and "refused, not stored: 422 bad" in refused.output
    assert "retrying" not in refused.output


def test_run_that_may_have_started_says_how_to_retry_it(gateway: Gateway) -> None:
    gateway.answers = [(500, {"title": "Internal error", "status": 500, "detail": "oops"})]
    result = runner.invoke(app, ["run", "docs", "--gateway", gateway.url])
    assert result.exit_code == 2, result.output
    (_, path, _), = gateway.requests
    run_id = re.search(r"id=(wf-[0-9a-f]+)", path)
    assert run_id is not None
    assert result.stderr == (f"the run of docs may have started as {run_id[1]}: retrying "
                             f"with --id {run_id[1]} is safe (`headwater status "
                             f"{run_id[1]}` shows it)\n")
    assert "500 oops" in result.stdout
    given = runner.invoke(app, ["run", "docs", "--id", RUN_ID, "--gateway", "http://127.0.0.1:9"])
    assert given.exit_code == 2 and "cannot reach the gateway" in given.stdout
    assert given.stderr == ""  # the id given is the user's own: nothing to tell


def test_status_shows_a_node_waiting_on_a_queue_without_workers_and_the_warnings(
        gateway: Gateway) -> None:
    node = {"id": "embed", "kind": "task", "status": "running", "total": None,
            "succeeded": 0, "failed": 0, "error": ""}
    task = {"key": "embed", "node": "embed", "attempt": 1, "status": "dispatched",
            "queue": "gpu", "task": "embed", "queue_state": "no_live_workers"}
    warning = "embed (attempt 1) waits on queue 'gpu', which has no live worker"
    gateway.answers = [(200, doc("running", nodes=[node], tasks=[task], warnings=[warning]))]
    result = runner.invoke(app, ["status", RUN_ID, "--gateway", gateway.url],
                           env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if "embed" in line)
    assert "running, waiting on queue gpu (no_live_workers)" in row, result.stdout  # piped
    assert f"warning: {warning}" in result.stdout


def test_list_piped_at_80_columns_keeps_every_id_whole(gateway: Gateway) -> None:
    item = {"id": RUN_ID, "name": "a-rather-long-workflow-name", "status": "failed",
            "created_at": "2026-12-01T10:00:00+00:00", "updated_at": None,
            "error": "x" * 50, "definition": {"name": "docs.index", "version": 3}}
    gateway.answers = [(200, {"items": [item], "next_cursor": None})]
    result = runner.invoke(app, ["list", "--gateway", gateway.url], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert RUN_ID in result.stdout and "…" not in result.stdout, result.stdout
    assert "a-rather-long-workflow-name" in result.stdout and "x" * 50 in result.stdout


def test_a_table_in_an_80_column_terminal_folds_cells_and_keeps_ids_whole() -> None:
    out = Console(file=io.StringIO(), width=80, force_terminal=True, color_system=None)
    table = Table("id", "name", "log")
    table.add_row(RUN_ID, "worker-a-long-queue-name-1", "/home/someone/project/.headwater/"
                  "logs/worker-a-long-queue-name-1.log")
    print_table(table, whole=("id",), out=out)
    text = out.file.getvalue()  # type: ignore[attr-defined]
    assert RUN_ID in text and "…" not in text, text
    assert max(len(line) for line in text.splitlines()) <= 80
    logs = [line.split("│")[3].strip() for line in text.splitlines() if line.count("│") == 4]
    assert "".join(logs).endswith("queue-name-1.log"), text  # folded, all of it
