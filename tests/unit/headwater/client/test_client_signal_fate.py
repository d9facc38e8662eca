"""``signal(..., wait=True)`` sends the signal, then asks for its fate
(``GET .../signals/{signal_id}``) until the run applied it; ``signal_fate`` reads it;
``FateWait`` decides the pauses (sans I/O). Against ``httpx.MockTransport``."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from headwater.client import AsyncClient, Client, SignalFate
from headwater.client import requests as req

WF = "wf-1"


def fate(status: str, **extra: Any) -> dict[str, Any]:
    return {"workflow_id": WF, "signal_id": "s-1", "name": "go", "index": None,
            "status": status, "node": None, "reason": None, "at": None,
            "received_at": None, "links": {}, **extra}


class Gateway:
    """Answers the signal's 202, then its fates in turn (the last one for ever)."""

    def __init__(self, *fates: dict[str, Any]) -> None:
        self.fates = list(fates)
        self.asked: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.asked.append(f"{request.method} {request.url.path}")
        if request.method == "POST":
            return httpx.Response(202, json={"workflow_id": WF, "signal": "go",
                                             "signal_id": "s-1", "links": {}})
        return httpx.Response(200, json=self.fates.pop(0) if len(self.fates) > 1
                              else self.fates[0])


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(req.FateWait, "pause", lambda self, now_s: 0.0
                        if now_s < self.started_s + self.timeout_s else None)


def test_wait_asks_until_the_run_applied_the_signal(quick: None) -> None:
    gw = Gateway(fate("received"), fate("received"),
                 fate("refused", reason="the workflow has already ended (succeeded)"))
    with Client("http://gw", transport=httpx.MockTransport(gw)) as hw:
        found = hw.signal(WF, "go", {}, signal_id="s-1", wait=True)
    assert isinstance(found, SignalFate)
    assert (found.status, found.applied, found.taken) == ("refused", True, False)
    assert found.reason == "the workflow has already ended (succeeded)"
    assert gw.asked == [f"POST /v1/workflows/{WF}/signals/go",
                        *[f"GET /v1/workflows/{WF}/signals/s-1"] * 3]


def test_without_wait_the_answer_is_the_202(quick: None) -> None:
    gw = Gateway(fate("consumed"))
    with Client("http://gw", transport=httpx.MockTransport(gw)) as hw:
        assert hw.signal(WF, "go", {}, signal_id="s-1")["signal_id"] == "s-1"
        assert hw.signal_fate(WF, "s-1").status == "consumed"
    assert len(gw.asked) == 2


def test_a_wait_that_times_out_returns_the_received_fate(quick: None) -> None:
    gw = Gateway(fate("received"))
    with Client("http://gw", transport=httpx.MockTransport(gw)) as hw:
        found = hw.wait_signal(WF, "s-1", timeout=0)
    assert (found.status, found.applied) == ("received", False)


async def test_the_async_client_waits_alike(quick: None) -> None:
    gw = Gateway(fate("received"), fate("consumed", node="approve"))
    async with AsyncClient("http://gw", transport=httpx.MockTransport(gw)) as hw:
        found = await hw.signal(WF, "go", {}, signal_id="s-1", wait=True)
    assert (found.status, found.node, found.taken) == ("consumed", "approve", True)


def test_fate_wait_doubles_its_pause_up_to_a_second_and_stops_on_time() -> None:
    wait = req.FateWait(3.0, 100.0)
    pauses = [wait.pause(100.0) for _ in range(7)]
    assert pauses == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert wait.pause(102.9) == pytest.approx(0.1)
    assert wait.pause(103.0) is None
    with pytest.raises(ValueError, match="finite"):
        req.FateWait(float("inf"), 0.0)
    with pytest.raises(ValueError, match="empty"):
        req.signal_fate(WF, "")
