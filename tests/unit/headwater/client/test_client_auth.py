"""The clients and tokens (``HEADWATER_AUTH=on`` gateways): ``Authorization: Bearer`` on
every request, event streams and their reconnections included, the token taken from
``HEADWATER_TOKEN`` when none is given, 401 and 403 raised as ``Unauthorized`` and
``Forbidden`` without a retry, ``whoami``, and ``ctx.call`` sending the worker's token."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from headwater import errors
from headwater.client import AsyncClient, Client, calls, retry
from headwater.client.http import auth_headers
from headwater.client.types import Identity
from headwater.context import AttemptInfo, TaskContext

TOKEN = "hwk_0123456789ab_" + "s" * 43
RUNNING = {"id": "wf-1", "name": "n", "status": "running", "seq": 1, "output": None,
           "error": ""}


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries without waiting, and no token in the environment unless a test sets one."""
    monkeypatch.setattr(retry, "delay_s", lambda *a: 0.0)
    monkeypatch.delenv("HEADWATER_TOKEN", raising=False)


def problem(status: int, title: str, detail: str, **extra: Any) -> httpx.Response:
    return httpx.Response(status, json={"type": "about:blank", "title": title,
                                        "status": status, "detail": detail, **extra},
                          headers={"content-type": "application/problem+json"})


def sse(*events: tuple[int, str]) -> httpx.Response:
    text = "".join(f"id: {i}\nevent: {t}\ndata: {{}}\n\n" for i, t in events)
    return httpx.Response(200, text=text, headers={"content-type": "text/event-stream"})


class Recorder:
    """A gateway stand-in recording each request's ``Authorization``: a stream that
    drops after its first event, then the rest of it on the reconnection."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append((request.url.path, request.headers.get("authorization")))
        if not request.url.path.endswith("/events"):
            return httpx.Response(200, json=RUNNING)
        if request.headers.get("last-event-id") is None:
            return sse((1, "WorkflowAccepted"))  # closes without the terminal event
        return sse((2, "WorkflowSucceeded"))


def test_the_token_goes_on_every_request_and_stream_reconnection() -> None:
    gateway = Recorder()
    with Client("http://gw", TOKEN, transport=httpx.MockTransport(gateway)) as hw:
        hw.get("wf-1")
        assert [e.id for e in hw.events("wf-1")] == [1, 2]
    paths = [path for path, _ in gateway.seen]
    assert paths.count("/v1/workflows/wf-1/events") == 2, paths  # opened, then again
    assert {auth for _, auth in gateway.seen} == {f"Bearer {TOKEN}"}, gateway.seen


async def test_the_async_client_sends_it_alike() -> None:
    gateway = Recorder()
    async with AsyncClient("http://gw", TOKEN,
                           transport=httpx.MockTransport(gateway)) as hw:
        await hw.get("wf-1")
        assert [e.id async for e in hw.events("wf-1")] == [1, 2]
    assert len(gateway.seen) >= 3
    assert {auth for _, auth in gateway.seen} == {f"Bearer {TOKEN}"}, gateway.seen


def test_the_token_defaults_to_headwater_token(monkeypatch: pytest.MonkeyPatch) -> None:
    gateway = Recorder()
    transport = httpx.MockTransport(gateway)
    with Client("http://gw", transport=transport) as hw:
        hw.get("wf-1")
    monkeypatch.setenv("HEADWATER_TOKEN", TOKEN)
    with Client("http://gw", transport=transport) as hw:
        hw.get("wf-1")
    with Client("http://gw", "other-token", transport=transport) as hw:
        hw.get("wf-1")
    with Client("http://gw", "", transport=transport) as hw:  # "": none at all
        hw.get("wf-1")
    assert [auth for _, auth in gateway.seen] == [
        None, f"Bearer {TOKEN}", "Bearer other-token", None]


def test_a_token_that_cannot_be_a_header_is_refused_before_sending() -> None:
    assert auth_headers(f" {TOKEN}\n") == {"Authorization": f"Bearer {TOKEN}"}
    for bad in ("two words", "line\nbreak", "tök"):
        with pytest.raises(ValueError, match="not a token") as raised:
            Client("http://gw", bad)
        assert bad not in str(raised.value)


@pytest.mark.parametrize(("status", "kind"), [(401, errors.Unauthorized),
                                              (403, errors.Forbidden)])
def test_401_and_403_are_raised_as_their_class_and_not_retried(
        status: int, kind: type[errors.HeadwaterHTTPError]) -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        if status == 401:
            return problem(401, "Unauthorized", "unknown or revoked API key")
        return problem(403, "Forbidden", "the token's role is read; this needs submit",
                       role="read", needs="submit")

    with Client("http://gw", TOKEN, retries=5, transport=httpx.MockTransport(handler)) as hw:
        with pytest.raises(kind) as raised:
            hw.submit({"name": "n", "nodes": []})
        assert isinstance(raised.value, errors.HeadwaterHTTPError)
        assert raised.value.status == status and raised.value.detail
        with pytest.raises(kind):
            list(hw.events("wf-1"))  # a stream refused: no retry either
    assert asked == ["/v1/workflows", "/v1/workflows/wf-1/events"]
    if status == 403:
        assert raised.value.body["needs"] == "submit"


async def test_whoami_reads_the_tokens_tenant_and_role() -> None:
    doc = {"auth": True, "tenant": "acme", "role": "submit", "subject": "0123456789ab"}

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/whoami"
        return httpx.Response(200, json=doc)

    with Client("http://gw", TOKEN, transport=httpx.MockTransport(handler)) as hw:
        assert hw.whoami() == Identity(True, "acme", "submit", "0123456789ab")
    async with AsyncClient("http://gw", TOKEN,
                           transport=httpx.MockTransport(handler)) as ahw:
        assert (await ahw.whoami()).tenant == "acme"


def test_ctx_call_sends_the_workers_token(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str | None] = []

    def gateway(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        if request.method == "POST":
            return httpx.Response(202, json={"id": json.loads(request.content)["id"],
                                             "status": "accepted"})
        return httpx.Response(200, json={**RUNNING, "status": "succeeded", "output": 7})

    # The worker builds its clients as calls does: the URL alone, the token
    # from the environment.
    monkeypatch.setattr(calls, "Client", lambda url: Client(
        url, transport=httpx.MockTransport(gateway)))
    monkeypatch.setenv("HEADWATER_TOKEN", TOKEN)
    ctx = TaskContext(AttemptInfo("wf-1", "fan", None, 1), gateway_url="http://gw")
    assert ctx.call("child", {"n": 1}) == 7
    assert seen and set(seen) == {f"Bearer {TOKEN}"}, seen
