"""``--label`` of ``headwater submit``, ``run`` and ``list``: sent as the gateway takes
it (a submission's ``labels``, ``?label=k:v`` of a run and of the listing, ``?label=k``
for any value), a malformed one refused before anything is sent; the listing and
``status`` show a run's labels; ``list --paused``/``--not-paused`` send ``?paused=``
and the listing marks a paused run. Against a real HTTP server standing in for the gateway
(``conftest.Gateway``)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from typer.testing import CliRunner

from ops.cli.app import app
from tests.unit.ops.conftest import Gateway

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "stdlib_search" / "workflow.yaml"
RUN_ID = "wf-" + "0" * 32
runner = CliRunner()


def _query(path: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(path).query, keep_blank_values=True)


def test_submit_and_run_send_their_labels(gateway: Gateway) -> None:
    gateway.answers = [(202, {"id": RUN_ID, "status": "accepted"})] * 2
    result = runner.invoke(app, ["submit", str(EXAMPLE), "--id", RUN_ID, "-l", "team=a",
                                 "--label", "env=", "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["run", "docs", "--async", "--label", "team=a", "--label",
                                 "ref=x:y", "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    (_, _, body), (_, path, _) = gateway.requests
    assert body["labels"] == {"team": "a", "env": ""}
    assert _query(path)["label"] == ["team:a", "ref:x:y"]


def test_list_filters_by_labels_and_shows_them(gateway: Gateway) -> None:
    gateway.answers = [(200, {"items": [{"id": RUN_ID, "name": "n", "status": "running",
                                         "labels": {"team": "a", "env": "prod"}}],
                              "next_cursor": None})]
    result = runner.invoke(app, ["list", "--label", "team=a", "--label", "env",
                                 "--label", "ref:x:y", "--gateway", gateway.url],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    (_, path, _), = gateway.requests
    assert _query(path)["label"] == ["team:a", "env", "ref:x:y"]  # KEY:VALUE as KEY=VALUE
    assert "env=prod team=a" in result.output


@pytest.mark.parametrize(("command", "given"), [
    (["submit", str(EXAMPLE)], "team"), (["run", "docs"], "bad key=x"),
    (["list"], "team=a b"), (["run", "docs"], "=x"), (["run", "docs"], ":x")])
def test_a_bad_label_is_refused_before_anything_is_sent(gateway: Gateway, command: list[str],
                                                        given: str) -> None:
    result = runner.invoke(app, [*command, "--label", given, "--gateway", gateway.url])
    assert result.exit_code == 2, result.output
    assert "--label" in result.output
    assert gateway.requests == []


@pytest.mark.parametrize(("flag", "sent"), [("--paused", "true"), ("--not-paused", "false")])
def test_list_filters_by_paused_and_shows_it(gateway: Gateway, flag: str, sent: str) -> None:
    gateway.answers = [(200, {"items": [
        {"id": RUN_ID, "name": "n", "status": "running",
         "paused": {"since": "2026-03-02T09:20:00+00:00", "by": "ops", "reason": ""}}],
        "next_cursor": "c1"})]
    result = runner.invoke(app, ["list", flag, "--gateway", gateway.url],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    (_, path, _), = gateway.requests
    assert _query(path)["paused"] == [sent]
    assert "running (paused)" in result.output
    assert f"more: headwater list {flag} --cursor c1" in result.output


def test_list_without_a_paused_flag_does_not_filter(gateway: Gateway) -> None:
    gateway.answers = [(200, {"items": [], "next_cursor": None})]
    result = runner.invoke(app, ["list", "--gateway", gateway.url])
    assert result.exit_code == 0, result.output
    (_, path, _), = gateway.requests
    assert "paused" not in _query(path)
