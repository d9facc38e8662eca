"""``--label`` of ``headwater submit``, ``run`` and ``list``: sent as the gateway takes
it (a submission's ``labels``, ``?label=k:v`` of a run and of the listing, ``?label=k``
for any value), a malformed one refused before anything is sent; the listing and
``status`` show a run's labels. Against a real HTTP server standing in for the gateway
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
