"""Breakage: the task views and logs at their edges. Odd indexes (``-1``, ``1e3``,
``2**40``, ``0x1``, ``+1``, an Arabic-Indic digit, ``%2e%2e``) are 422 problems and
U+0000 a 400 on both the task view and its logs; with auth on (``test_tenants.py``)
another tenant's run is 404 on each. But a node the run does not have (a typo) is 404
on ``/nodes/{node}/tasks`` and on the task view, and an empty, *complete* log (200) on
``/tasks/{node}/{index}/logs`` and ``/logs?node=``, so ``headwater logs RUN fetchh``
prints "no log lines ... (have not run yet)" and exits 0 instead of naming the run's
nodes."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from breakkit import hostile_stack, one_task, submit, wait_run
from typer.testing import CliRunner

from ops.cli.app import app
from ops.sandbox import Sandbox

ODD = ["-1", "1e3", str(2**40), "0x1", "+1", "\u0661", "%2e%2e", "1.0", " 1"]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Sandbox]:
    with hostile_stack(tmp_path_factory.mktemp("views")) as stack:
        yield stack


@pytest.fixture(scope="module")
def failed_run(hostile: Sandbox) -> str:
    with httpx.Client(base_url=hostile.gateway, timeout=30) as http:
        run = submit(http, one_task("e2e.logs_then_fail", {"lines": 2, "message": "boom"}))
        assert wait_run(http, run)["status"] == "failed"
        return run


@pytest.fixture
def http(hostile: Sandbox) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=hostile.gateway, timeout=30) as client:
        yield client


@pytest.mark.parametrize("index", ODD)
def test_an_odd_index_is_a_422_problem_on_the_task_view_and_its_logs(
        http: httpx.Client, failed_run: str, index: str) -> None:
    for path in (f"/v1/workflows/{failed_run}/tasks/t/{index}",
                 f"/v1/workflows/{failed_run}/tasks/t/{index}/logs"):
        response = http.get(path)
        assert response.status_code == 422, (path, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        assert "index" in response.json()["detail"]


def test_a_nul_in_the_path_is_a_400_problem(http: httpx.Client, failed_run: str) -> None:
    response = http.get(f"/v1/workflows/{failed_run}/tasks/t%00/-/logs")
    assert response.status_code == 400 and "U+0000" in response.json()["detail"]


def test_the_logs_of_a_node_the_run_lacks_are_404(http: httpx.Client, failed_run: str) -> None:
    assert http.get(f"/v1/workflows/{failed_run}/nodes/tt/tasks").status_code == 404
    assert http.get(f"/v1/workflows/{failed_run}/tasks/tt/-").status_code == 404
    answers = [http.get(f"/v1/workflows/{failed_run}/tasks/tt/-/logs"),
               http.get(f"/v1/workflows/{failed_run}/logs", params={"node": "tt"})]
    assert [a.status_code for a in answers] == [404, 404], [a.text for a in answers]


def test_headwater_logs_of_a_mistyped_node_names_the_run_nodes(hostile: Sandbox,
                                                               failed_run: str) -> None:
    result = CliRunner().invoke(app, ["logs", failed_run, "tt", "--gateway", hostile.gateway])
    assert result.exit_code != 0, result.output
    assert "'t'" in result.output, result.output
