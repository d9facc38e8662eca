"""Checking a large spec does not block the event loop: /health answers meanwhile.

Before the fix ``parse_spec`` ran on the event loop, so a 10,000-node spec stalled
every other request (health checks included) for as long as it took. A small body's
checks run on the loop (``edge.cpu``): the body here is over that bound.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from gateway_harness import SPEC, FakePool, Gateway

from headwater.core.spec import parse_spec
from services.gateway.edge.cpu import INLINE_BODY_BYTES
from services.gateway.runs import submit

SLOW_S = 1.5
LARGE = {"workflow": SPEC, "input": {"pad": "x" * INLINE_BODY_BYTES}}
"""A body over ``INLINE_BODY_BYTES``: its checks go to a worker thread."""


@pytest.mark.timeout(30)
def test_health_answers_while_a_spec_is_checked(gw: Gateway,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    checking = threading.Event()

    def slow_parse_spec(spec: Any) -> Any:
        checking.set()
        time.sleep(SLOW_S)  # stands in for validating a very large spec
        return parse_spec(spec)

    monkeypatch.setattr(submit, "parse_spec", slow_parse_spec)
    gw.connect(FakePool())
    statuses: list[int] = []
    poster = threading.Thread(target=lambda: statuses.append(
        gw.client.post("/v1/workflows", json=LARGE).status_code))
    poster.start()
    assert checking.wait(10)
    started = time.monotonic()
    assert gw.client.get("/health").status_code == 200
    waited = time.monotonic() - started
    poster.join()
    assert statuses == [202]
    assert waited < SLOW_S / 3, f"/health waited {waited:.2f} s for the spec check"
