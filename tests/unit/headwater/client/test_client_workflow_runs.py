"""``client.run(fn, **input)``: a ``@workflow`` run by its function, its arguments bound
by its signature (a ``TypeError`` before anything is sent), its output returned, a
failed run raised (``headwater.client.workflow_runs``)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from headwater.client import AsyncClient, Client
from headwater.client.workflow_runs import is_workflow, workflow_call
from headwater.errors import WorkflowFailed
from tests.unit.headwater.workflows import flows


def test_the_input_is_the_arguments_after_the_context() -> None:
    assert workflow_call(flows.main, (3,), {}) == ("wt.main", {"n": 3})
    assert workflow_call(flows.main, (), {"n": 3, "text": "yo"}) == (
        "wt.main", {"n": 3, "text": "yo"})
    with pytest.raises(TypeError):
        workflow_call(flows.main, (), {"m": 3})
    with pytest.raises(TypeError):
        workflow_call(flows.double, (), {"x": 1})  # a @task, not a @workflow
    assert is_workflow(flows.main) and not is_workflow("wt.main")
    assert not is_workflow(flows.double)


class Gateway:
    """Answers ``POST /v1/run/{name}`` with an ended run (or one still running, then
    its document and events)."""

    def __init__(self, status: str = "succeeded", done: bool = True) -> None:
        self.status, self.done = status, done
        self.asked: list[tuple[str, str, Any]] = []

    def document(self) -> dict[str, Any]:
        return {"id": "wf-1", "name": "wt.main", "status": self.status, "seq": 9,
                "output": {"answer": 42} if self.status == "succeeded" else None,
                "error": "boom" if self.status == "failed" else "", "nodes": [],
                "tasks": []}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = request.content and httpx.Response(200, content=request.content).json()
        self.asked.append((request.method, request.url.path, body))
        if request.method == "POST" and self.done:
            return httpx.Response(200, json=self.document())
        if request.method == "POST":
            return httpx.Response(202, json={"id": "wf-1", "status": "running"})
        self.done = True
        return httpx.Response(200, json=self.document())


def test_a_workflow_is_run_by_its_function_and_its_output_returned() -> None:
    gateway = Gateway()
    with Client("http://gw", transport=httpx.MockTransport(gateway)) as hw:
        output: dict[str, Any] = hw.run(flows.main, 3, text="yo")
        assert output == {"answer": 42}
        assert hw.run("wt.main", {"n": 3}).done  # by name: a Run, as before
    assert gateway.asked[0][1:] == ("/v1/run/wt.main", {"n": 3, "text": "yo"})


def test_a_failed_run_raises_and_a_bad_argument_sends_nothing() -> None:
    gateway = Gateway(status="failed")
    with Client("http://gw", transport=httpx.MockTransport(gateway)) as hw:
        with pytest.raises(WorkflowFailed):
            hw.run(flows.main, n=1)
        with pytest.raises(TypeError):
            hw.run(flows.main, nope=1)  # type: ignore[call-overload]
    assert len(gateway.asked) == 1


async def test_the_async_client_waits_past_the_gateways_wait() -> None:
    gateway = Gateway(done=False)
    async with AsyncClient("http://gw", transport=httpx.MockTransport(gateway)) as hw:
        output: Any = await hw.run(flows.child, x=5)  # an int, typed; the stand-in's dict
        assert output == {"answer": 42}
    assert gateway.asked[0][1:] == ("/v1/run/wt.child", {"x": 5})
    assert ("GET", "/v1/workflows/wf-1", b"") in gateway.asked


TYPED = """
from headwater.client import AsyncClient, Client
from tests.unit.headwater.workflows import flows

async def use(hw: Client, ahw: AsyncClient) -> None:
    reveal_type(hw.run(flows.main, 3, text="yo"))
    reveal_type(await ahw.run(flows.child, x=5))
    reveal_type(hw.run("wt.main", {"n": 3}))
    hw.run(flows.main, text=3)
"""


def test_the_run_of_a_function_is_typed_by_its_signature(tmp_path: Any) -> None:
    """``mypy --strict`` sees the output's type and an argument of the wrong type."""
    from mypy import api

    snippet = tmp_path / "typed_use.py"
    snippet.write_text(TYPED)
    out, _, _ = api.run(["--strict", "--no-incremental", "--follow-imports=silent",
                         str(snippet)])
    assert 'typed_use.py:6: note: Revealed type is "dict[str, Any]"' in out, out
    assert 'typed_use.py:7: note: Revealed type is "int"' in out, out
    assert 'typed_use.py:8: note: Revealed type is "headwater.client.types.Run"' in out, out
    assert "typed_use.py:9: error: No overload variant" in out, out  # text=3: not a str
    assert out.count("error:") == 1, out
