"""Webhooks on the real broker, against a receiver on loopback inside the test
(docs/webhooks.md, docs/architecture.md §4r):

- a webhook of ``run.ended`` and ``run.waiting`` filtered by spec name hears a run whose
  wait times out: a ``run.waiting`` then a ``run.failed`` delivery, each signed (the
  test checks the signature with ``headwater.webhooks.verify``, and that a changed body
  fails it), with a delivery id the deliveries endpoint shows, delivered at the first
  attempt; a run of another name is not delivered; ``GET`` never shows the secret;
- a receiver answering 500 gets a delivery 3 times (the webhook's ``max_attempts``), the
  same delivery id each time, backing off; then the delivery is dead with the reason
  ``after 3 attempts: HTTP 500``, on the deliveries endpoint and on ``dlq``; retried by
  hand (``POST .../retry``) it is attempted once more, and dead again;
- a deliverer SIGKILLed after it kept a delivery and before it attempted it
  (``HEADWATER_FAULTS=webhooks.after_decide=1``, a deliverer process of its own over a
  fresh topic prefix and database) delivers it once started again, with the same id.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from stackkit import Stack, produce, read_topic

from headwater import codec
from headwater.core import events as ev
from headwater.topics import Topics
from headwater.webhooks import DELIVERY_HEADER, SignatureError, WebhookStored, verify
from ops import localstack
from ops.sandbox import Sandbox, _create_db
from ops.sandbox import _drop as drop_sandbox
from services.common.db import connect
from services.common.kafka.client import ensure_compacted_topics, ensure_topics
from services.common.settings import CommonSettings
from tests.polling import wait_until_async

SECRET = "e2e-secret-0123456789abcdef"


class Receiver:
    """An HTTP server on loopback that keeps every request and answers ``/ok`` with 200
    and ``/fail`` with 500."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes, float]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.requests.append((self.path, dict(self.headers.items()), body,
                                          time.monotonic()))
                self.send_response(500 if self.path.startswith("/fail") else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def to(self, path: str) -> list[tuple[str, dict[str, str], bytes, float]]:
        """The requests posted to ``path``."""
        return [r for r in self.requests if r[0] == path]


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    try:
        yield r
    finally:
        r.server.shutdown()
        r.server.server_close()


def _uid() -> str:
    return uuid.uuid4().hex[:10]


async def _deliveries(client: httpx.AsyncClient, hook: str) -> list[dict[str, Any]]:
    r = await client.get(f"/v1/webhooks/{hook}/deliveries")
    assert r.status_code == 200, r.text
    items: list[dict[str, Any]] = r.json()["items"]
    return items


async def test_a_signed_delivery_of_each_event_of_the_runs_the_filter_takes(
        stack: Stack, receiver: Receiver) -> None:
    uid = _uid()
    hook, name, path = f"ok-{uid}", f"hooked-{uid}", f"/ok/{uid}"
    body = {"url": receiver.url + path, "events": ["run.ended", "run.waiting"],
            "filter": {"names": [name]}, "secret": SECRET}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        r = await client.put(f"/v1/webhooks/{hook}", json=body)
        assert r.status_code == 201, r.text
        assert SECRET not in r.text and r.json()["events"] == ["run.ended", "run.waiting"]
        again = await client.put(f"/v1/webhooks/{hook}", json=body)
        assert again.status_code == 200 and SECRET not in again.text
        shown = await client.get(f"/v1/webhooks/{hook}")
        assert shown.status_code == 200 and SECRET not in shown.text
        listed = await client.get("/v1/webhooks")
        assert hook in [h["name"] for h in listed.json()["items"]]
        assert SECRET not in listed.text

        other = await client.post("/v1/workflows", json={"id": f"other-{uid}", "workflow": {
            "name": f"unhooked-{uid}", "nodes": [{"id": "s", "kind": "sleep", "duration": 0.05}]}})
        assert other.status_code == 202, other.text
        wid = f"hooked-{uid}"
        r = await client.post("/v1/workflows", json={"id": wid, "workflow": {
            "name": name, "nodes": [{"id": "approve", "kind": "wait", "signal": "go",
                                     "timeout": 1}]}})
        assert r.status_code == 202, r.text

        got = await wait_until_async(lambda: receiver.to(path), 30, "two deliveries",
                                     until=lambda rs: len(rs) >= 2)
        events = []
        for _, headers, raw, _ in got:
            delivery = verify(SECRET, headers, raw, time.time())
            doc = json.loads(raw)
            assert doc["id"] == delivery and doc["webhook"] == hook
            assert doc["run"]["workflow_id"] == wid and doc["run"]["name"] == name
            events.append(doc["event"])
            with pytest.raises(SignatureError, match="does not match"):
                verify(SECRET, headers, raw + b" ", time.time())
            with pytest.raises(SignatureError, match="does not match"):
                verify("another-secret-of-16", headers, raw, time.time())
        assert events == ["run.waiting", "run.failed"]
        assert json.loads(got[1][2])["error"]

        await wait_until_async(
            lambda: client.get(f"/v1/workflows/other-{uid}"), 30, "the other run's end",
            until=lambda resp: resp.json().get("status") == "succeeded")
        shown_deliveries = await wait_until_async(
            lambda: _deliveries(client, hook), 10, "both delivered",
            until=lambda ds: len(ds) == 2 and all(d["status"] == "delivered" for d in ds))
        assert {d["id"] for d in shown_deliveries} == {h[DELIVERY_HEADER] for _, h, _, _ in got}
        for d in shown_deliveries:
            assert d["workflow_id"] == wid and d["next_attempt_at"] is None
            assert [a["status_code"] for a in d["attempts"]] == [200]
    assert len(receiver.to(path)) == 2  # nothing of the other run, nothing twice


async def test_a_failing_receiver_is_retried_then_the_delivery_is_dead_lettered(
        stack: Stack, receiver: Receiver) -> None:
    uid = _uid()
    hook, name, path = f"fail-{uid}", f"failing-{uid}", f"/fail/{uid}"
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        r = await client.put(f"/v1/webhooks/{hook}", json={
            "url": receiver.url + path, "events": ["run.succeeded"], "secret": SECRET,
            "filter": {"names": [name]},
            "retry": {"max_attempts": 3, "backoff_s": 0.3, "backoff_max_s": 5}})
        assert r.status_code == 201, r.text
        r = await client.post("/v1/workflows", json={"id": name, "workflow": {
            "name": name, "nodes": [{"id": "s", "kind": "sleep", "duration": 0.05}]}})
        assert r.status_code == 202, r.text
        dead = await wait_until_async(
            lambda: _deliveries(client, hook), 30, "the delivery dead",
            until=lambda ds: len(ds) == 1 and ds[0]["status"] == "dead")
        delivery = dead[0]
        assert delivery["reason"] == "after 3 attempts: HTTP 500"
        assert [a["status_code"] for a in delivery["attempts"]] == [500, 500, 500]
        assert [a["n"] for a in delivery["attempts"]] == [1, 2, 3]
        assert delivery["next_attempt_at"] is None and delivery["event"] == "run.succeeded"
        times = [datetime.fromisoformat(a["at"]) for a in delivery["attempts"]]
        gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
        assert gaps[0] >= 0.3 and gaps[1] >= 0.6, gaps  # 0.3 s, then doubled
        filtered = await client.get(f"/v1/webhooks/{hook}/deliveries",
                                    params={"status": "delivered"})
        assert filtered.json()["items"] == []
        again = await client.post(f"/v1/webhooks/{hook}/deliveries/{delivery['id']}/retry")
        assert again.status_code == 202 and again.json()["status"] == "pending", again.text
        redone = await wait_until_async(
            lambda: _deliveries(client, hook), 30, "one more attempt, dead again",
            until=lambda ds: ds[0]["status"] == "dead" and len(ds[0]["attempts"]) == 4)
        assert redone[0]["reason"] == "after 4 attempts: HTTP 500"

    posted = receiver.to(path)
    assert len(posted) == 4
    assert {h[DELIVERY_HEADER] for _, h, _, _ in posted} == {delivery["id"]}
    for _, headers, raw, _ in posted:
        verify(SECRET, headers, raw, time.time())

    def dead_letter(records: list[Any]) -> bool:
        return any(dict(r.headers or ()).get("delivery-id") == delivery["id"].encode()
                   for r in records)

    letters = await read_topic(stack.topics.dlq, dead_letter, 30, decode=False)
    letter = next(r for r in letters if dead_letter([r]))
    headers = dict(letter.headers)
    assert headers["reason"] == f"webhook {hook}: after 3 attempts: HTTP 500".encode()
    assert headers["source-topic"] == stack.topics.webhooks.encode()
    assert json.loads(letter.value)["id"] == delivery["id"]


async def test_a_deliverer_killed_between_deciding_and_delivering_still_delivers(
        stack: Stack, receiver: Receiver, tmp_path: Path) -> None:
    uid = _uid()
    prefix, database, path = f"hwwh{uid}", f"hwwh{uid}", f"/ok/kill-{uid}"
    topics = Topics(prefix)
    await _create_db(database)
    dsn = stack.dsn.rsplit("/", 1)[0] + "/" + database
    settings = dataclasses.replace(CommonSettings(**CommonSettings.common_from_env()),
                                   prefix=prefix)
    await ensure_topics(settings, [topics.events, topics.dlq], timeout_s=30)
    await ensure_compacted_topics(settings, [topics.webhooks], timeout_s=30)
    now = int(time.time() * 1000)
    hook = WebhookStored("killed", None, receiver.url + path, ("run.failed",), {}, SECRET, 3,
                         200, 1000, False, now - 1000, now - 1000)
    wid = f"killed-{uid}"
    await produce([
        (topics.webhooks, b"killed", codec.encode(hook)),
        (topics.events, wid.encode(), codec.encode(ev.HistoryEvent(wid, 1, ev.WorkflowAccepted(
            wid, now, {"name": "k", "nodes": []}, None)))),
        (topics.events, wid.encode(), codec.encode(ev.HistoryEvent(wid, 2, ev.WorkflowFailed(
            wid, now, "boom"))))])
    env = {"HEADWATER_TOPIC_PREFIX": prefix, "HEADWATER_PG_DSN": dsn}
    deliverer = localstack.Service(f"webhooks-{uid}", (sys.executable, "-m", "services.webhooks"))
    conn = await connect(dsn)
    try:
        pid = stack.start(deliverer, {**env, "HEADWATER_FAULTS": "webhooks.after_decide=1"})
        await wait_until_async(lambda: not localstack.alive(pid), 30, "the deliverer killed")
        deliverer.pid_file.unlink(missing_ok=True)
        kept = await conn.fetch("select delivery_id, status, attempts from webhook_deliveries")
        assert [(r["status"], json.loads(r["attempts"])) for r in kept] == [("pending", [])]
        assert receiver.to(path) == []

        stack.start(deliverer, env)
        got = await wait_until_async(lambda: receiver.to(path), 30, "the delivery")
        await wait_until_async(
            lambda: conn.fetchval("select status from webhook_deliveries"), 10, "delivered",
            until=lambda s: s == "delivered")
        assert [h[DELIVERY_HEADER] for _, h, _, _ in got] == [kept[0]["delivery_id"]]
        verify(SECRET, got[0][1], got[0][2], time.time())
    finally:
        stack.stop(deliverer, timeout_s=3)  # its consumer may wait on the killed member
        with contextlib.suppress(ValueError):
            stack.services.remove(deliverer)
        await conn.close()
        await _drop(stack, database, prefix, tmp_path)


async def _drop(stack: Stack, database: str, prefix: str, home: Path) -> None:
    """Drop the database and the topics of the test's own deployment."""
    dsn = stack.dsn.rsplit("/", 1)[0] + "/" + database
    await drop_sandbox(Sandbox(prefix, dsn, "", home, {}))
