"""Tenants and auth on the real stack (``HEADWATER_AUTH=on``): a private stack whose
gateway, coordinator and worker take API keys from a keys file.

Over HTTP, another tenant's run is 404 on read, on its event stream, on cancel and on
signal (the same answer as an id that does not exist), missing from its lists, and
untouched by all of it; a role too low is 403, no token or a bad one 401. On Kafka, a
submission to another tenant's id is dead-lettered with the reason and changes nothing,
and so are submissions without a token, with a read token, or naming another tenant;
dead letters never keep the token. A child workflow (submitted by the coordinator with
its own token) runs as its parent's tenant.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import authkit
import httpx
import orjson
import pytest
from stackkit import BOOTSTRAP, Stack, private_stack, produce, read_topic
from test_kafka_submission import wait_status
from test_signals import approval_spec
from typer.testing import CliRunner

from headwater import codec
from headwater.core import events as ev
from headwater.topics import CONTENT_TYPE_HEADER, JSON_CONTENT_TYPE
from ops import localstack
from ops.cli.app import app
from services.common.topic_reader import TopicReader
from tests.polling import holds_for_async, scaled

KEYS = {"service": ("*", "submit"), "acme": ("acme", "submit"), "acme_read": ("acme", "read"),
        "acme_admin": ("acme", "admin"), "globex": ("globex", "submit")}
LEAF = {"name": "leaf", "nodes": [{"id": "x", "task": "e2e.digest", "input": {"value": 1}}],
        "output": "${nodes.x.output}"}
UNTOUCHED_S = 2.0
FOREIGN_REF = {"$blob": "sha256:" + "ab" * 32, "bytes": 10}
BY_REFERENCE = {**LEAF, "nodes": [{**LEAF["nodes"][0], "input": {"value": FOREIGN_REF}}]}
"""A spec passing a blob by reference: a tenant's token may not send one on Kafka (a
digest is no permission to read what it names)."""


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], Path]:
    """One API key per entry of ``KEYS``, and the keys file that admits them."""
    return authkit.write_keys(tmp_path_factory.mktemp("keys"), KEYS)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, services: None,
            tokens: tuple[dict[str, str], Path]) -> Iterator[Stack]:
    """A private stack with auth on."""
    with private_stack(tmp_path_factory.mktemp("tenants"),
                       extra_env=authkit.secured_env(*tokens)) as stack:
        yield stack


@pytest.fixture
async def http(secured: Stack, tokens: tuple[dict[str, str], Path],
               ) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    """An HTTP client per key, and ``"none"`` without a token."""
    clients = authkit.async_clients(secured.gateway, tokens[0], timeout=15, anonymous=True)
    try:
        yield clients
    finally:
        for client in clients.values():
            await client.aclose()


def _same_as_unknown(foreign: httpx.Response, unknown: httpx.Response, wid: str,
                     other: str) -> None:
    """``foreign`` (about ``wid``) is the answer ``unknown`` (about ``other``) is."""
    assert foreign.status_code == unknown.status_code == 404, (foreign.status_code,
                                                               unknown.status_code)
    a, b = foreign.json(), unknown.json()
    assert a["detail"].replace(wid, "ID") == b["detail"].replace(other, "ID"), (a, b)
    assert {k: v for k, v in a.items() if k not in ("detail", "instance")} == {
        k: v for k, v in b.items() if k not in ("detail", "instance")}


async def _answer(client: httpx.AsyncClient, method: str, url: str,
                  body: dict[str, Any] | None) -> httpx.Response:
    """The answer to a request, its body read unless it is a 200 (an event stream that
    would not end: the caller's assertion fails on the status alone)."""
    kwargs: dict[str, Any] = {} if body is None else {"json": body}
    async with client.stream(method.upper(), url, **kwargs) as response:
        if response.status_code != 200:
            await response.aread()
        return response


async def _status(stack: Stack, client: httpx.AsyncClient, wid: str) -> str:
    response = await client.get(f"/v1/workflows/{wid}")
    assert response.status_code == 200, response.text
    return str(response.json()["status"])


async def test_another_tenants_run_is_not_found_and_untouched(
        secured: Stack, http: dict[str, httpx.AsyncClient]) -> None:
    wid, nobody = f"ten-{uuid.uuid4().hex[:8]}", f"ten-{uuid.uuid4().hex[:8]}"
    submitted = await http["acme"].post("/v1/workflows", json={
        "id": wid, "workflow": approval_spec(), "input": {}})
    assert submitted.status_code == 202, submitted.text
    await wait_status_as(secured, http["acme"], wid, ("running",))
    doc = (await http["acme"].get(f"/v1/workflows/{wid}")).json()
    assert doc["tenant"] == "acme"  # filled in from the token

    globex = http["globex"]
    pairs = [("get", "/v1/workflows/{}", None), ("get", "/v1/workflows/{}/events", None),
             ("post", "/v1/workflows/{}/cancel", {"reason": "not yours"}),
             ("post", "/v1/workflows/{}/signals/approval", {"fields": {"approved": True}})]
    for method, path, body in pairs:
        foreign = await _answer(globex, method, path.format(wid), body)
        unknown = await _answer(globex, method, path.format(nobody), body)
        _same_as_unknown(foreign, unknown, wid, nobody)

    listed = (await globex.get("/v1/workflows", params={"limit": 500})).json()["items"]
    assert wid not in {item["id"] for item in listed}
    assert all(item["tenant"] == "globex" for item in listed), listed
    asked = (await globex.get("/v1/workflows", params={"tenant": "acme"})).json()
    assert asked["items"] == []
    mine = (await http["acme"].get("/v1/workflows", params={"limit": 500})).json()["items"]
    assert wid in {item["id"] for item in mine}

    taken = await globex.post("/v1/workflows", json={"id": wid, "workflow": LEAF})
    assert taken.status_code == 409, taken.text
    assert "acme" not in taken.text  # nothing said of whose it is
    posing = await globex.post("/v1/workflows", json={"workflow": LEAF, "tenant": "acme"})
    assert posing.status_code == 403, posing.text

    # Nothing of that reached the run: still waiting, no cancel, no signal taken.
    await holds_for_async(lambda: _status(secured, http["acme"], wid), UNTOUCHED_S,
                          "acme's run stays running", holds=lambda s: s == "running")
    approved = await http["acme"].post(f"/v1/workflows/{wid}/signals/approval",
                                       json={"fields": {"approved": True}})
    assert approved.status_code == 202, approved.text
    done = await wait_status_as(secured, http["acme"], wid)
    assert done["status"] == "succeeded" and done["output"]["approved"] is True, done


async def test_roles_and_tokens(secured: Stack, http: dict[str, httpx.AsyncClient]) -> None:
    none = await http["none"].get("/v1/workflows")
    assert none.status_code == 401, none.text
    assert none.headers["www-authenticate"] == 'Bearer realm="headwater"'
    assert none.headers["content-type"] == "application/problem+json"
    bad = await http["none"].get("/v1/workflows", headers={"Authorization": "Bearer hwk_x"})
    assert bad.status_code == 401 and 'error="invalid_token"' in bad.headers[
        "www-authenticate"], bad.text
    reader = http["acme_read"]
    assert (await reader.get("/v1/workflows")).status_code == 200
    refused = await reader.post("/v1/workflows", json={"workflow": LEAF})
    assert refused.status_code == 403 and refused.json()["needs"] == "submit", refused.text
    assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
    me = (await reader.get("/v1/whoami")).json()
    assert me == {"auth": True, "tenant": "acme", "role": "read", "subject": me["subject"]}
    assert (await http["none"].get("/health")).status_code == 200  # open paths stay open


async def wait_status_as(stack: Stack, client: httpx.AsyncClient, wid: str,
                         until: tuple[str, ...] = ("succeeded", "failed", "cancelled"),
                         ) -> dict[str, Any]:
    """``test_kafka_submission.wait_status`` with ``client``'s token."""
    return await wait_status(stack, wid, 60, until, headers=dict(client.headers))


def _json_submission(wid: str, tenant: str | None, spec: dict[str, Any]) -> bytes:
    return orjson.dumps({"workflow_id": wid, "spec": spec, "input": {}, "tenant": tenant,
                         "at_ms": 0})


async def _submit_json(stack: Stack, wid: str, tenant: str | None, token: str | None,
                       spec: dict[str, Any] = LEAF) -> None:
    headers = [(CONTENT_TYPE_HEADER, JSON_CONTENT_TYPE.encode())]
    if token is not None:
        headers.append(("authorization", f"Bearer {token}".encode()))
    await produce([(stack.topics.submissions, wid.encode(), _json_submission(wid, tenant, spec))],
                  headers)


async def test_kafka_submissions_are_checked(
        secured: Stack, tokens: tuple[dict[str, str], Path],
        http: dict[str, httpx.AsyncClient]) -> None:
    keys, _ = tokens
    ours = f"kten-{uuid.uuid4().hex[:8]}"
    await _submit_json(secured, ours, "acme", keys["acme"])
    assert (await wait_status_as(secured, http["acme"], ours))["status"] == "succeeded"

    tag = uuid.uuid4().hex[:8]
    cases = {  # workflow id -> (tenant, token, the reason's start)
        ours: ("globex", keys["globex"], f"workflow id {ours} belongs to another tenant"),
        f"kten-{tag}-anon": ("acme", None, "unauthenticated: the record has no"),
        f"kten-{tag}-reader": ("acme", keys["acme_read"], "forbidden: the token's role is read"),
        f"kten-{tag}-posing": ("globex", keys["acme"], "tenant: the token is for tenant 'acme'"),
        f"kten-{tag}-unnamed": (None, keys["acme"], "tenant: the token is for tenant 'acme' "
                                "and the record names no tenant"),
        f"kten-{tag}-forged": ("acme", "hwk_0123456789ab_" + "x" * 43,
                               "unauthenticated: unknown or revoked API key"),
        f"kten-{tag}-blob": ("acme", keys["acme"], "forbidden: the WorkflowSubmitted holds "
                             f"a reference to blob {FOREIGN_REF['$blob']}"),
    }
    for wid, (tenant, token, _) in cases.items():
        spec = BY_REFERENCE if wid.endswith("-blob") else LEAF
        await _submit_json(secured, wid, tenant, token, spec)

    def all_dead(records: list[Any]) -> bool:
        return set(cases) <= {bytes(r.key).decode() for r in records if r.key is not None}

    dead = await read_topic(secured.topics.dlq, all_dead, scaled(90), decode=False)
    for r in dead:
        wid = bytes(r.key).decode() if r.key is not None else ""
        if wid in cases:
            headers = {k: v for k, v in r.headers}
            assert headers["reason"].decode().startswith(cases[wid][2]), headers["reason"]
            assert "authorization" not in {k.lower() for k in headers}, headers
    shown = await asyncio.to_thread(CliRunner().invoke, app, [
        "dead-letters", "--bootstrap", BOOTSTRAP, "--prefix", secured.prefix, "--json",
        f"kten-{tag}-reader"])
    assert shown.exit_code == 0, shown.output
    (line,) = shown.output.splitlines()
    assert orjson.loads(line)["reason"].startswith("forbidden: the token's role is read"), line
    for wid in list(cases)[1:]:  # none of the refused ones exists
        assert (await http["globex"].get(f"/v1/workflows/{wid}")).status_code == 404
    async with TopicReader(BOOTSTRAP) as reader:
        events = await reader.read_to_end(secured.topics.events,
                                          keep=lambda key: key == ours.encode())
    accepted = [e.body for e in (codec.decode(r.value) for r in events)
                if isinstance(e.body, ev.WorkflowAccepted)]
    assert [e.tenant for e in accepted] == ["acme"], accepted  # accepted once, acme's


async def test_a_child_runs_as_its_parents_tenant(
        secured: Stack, http: dict[str, httpx.AsyncClient]) -> None:
    wid = f"tchild-{uuid.uuid4().hex[:8]}"
    parent = {"name": "parent", "nodes": [{"id": "c", "kind": "workflow", "workflow": LEAF,
                                           "input": {}}], "output": "${nodes.c.output}"}
    response = await http["acme"].post("/v1/workflows", json={"id": wid, "workflow": parent})
    assert response.status_code == 202, response.text
    done = await wait_status_as(secured, http["acme"], wid)
    assert done["status"] == "succeeded", done
    (child,) = done["children"]
    child_id = child["workflow_id"]
    seen = (await http["acme"].get(f"/v1/workflows/{child_id}")).json()
    assert seen["tenant"] == "acme" and seen["status"] == "succeeded", seen
    assert (await http["globex"].get(f"/v1/workflows/{child_id}")).status_code == 404


async def test_ctx_call_children_run_as_the_parents_tenant(
        secured: Stack, http: dict[str, httpx.AsyncClient]) -> None:
    calls = localstack.Service("worker-calls", (
        sys.executable, "-m", "services.worker", "--queue", "calls", "--tasks", "call_tasks"))
    secured.start(calls, {"HEADWATER_GATEWAY_URL": secured.gateway})
    try:
        child = f"tchild-def-{uuid.uuid4().hex[:8]}"
        put = await http["acme_admin"].put(f"/v1/definitions/{child}", json={"workflow": {
            "name": "child", "nodes": [{"id": "x", "task": "e2e.digest", "input": {
                "value": "${input.i}"}}], "output": "${input.i}"}})
        assert put.status_code in (200, 201), put.text
        wid = f"tcall-{uuid.uuid4().hex[:8]}"
        response = await http["acme"].post("/v1/workflows", json={
            "id": wid, "queue_anyway": True, "workflow": {"name": "one", "nodes": [{
                "id": "one", "task": "e2e.acall_one", "queue": "calls",
                "input": {"definition": child}}], "output": "${nodes.one.output}"}})
        assert response.status_code == 202, response.text
        done = await wait_status_as(secured, http["acme"], wid)
        assert done["status"] == "succeeded" and done["output"] == 42, done
        called = (await http["acme"].get(f"/v1/workflows/{wid}:one:call.0")).json()
        assert called["tenant"] == "acme" and called["status"] == "succeeded", called
        hidden = await http["globex"].get(f"/v1/workflows/{wid}:one:call.0")
        assert hidden.status_code == 404, hidden.text
    finally:
        secured.stop(calls)
        secured.services.remove(calls)


async def _signal_json(stack: Stack, wid: str, token: str | None) -> None:
    headers = [(CONTENT_TYPE_HEADER, JSON_CONTENT_TYPE.encode())]
    if token is not None:
        headers.append(("authorization", f"Bearer {token}".encode()))
    doc = {"workflow_id": wid, "name": "approval", "at_ms": 0, "signal_id": uuid.uuid4().hex,
           "fields": {"approved": True}}
    await produce([(stack.topics.control, wid.encode(), orjson.dumps(doc))], headers)


async def test_kafka_signals_are_checked(
        secured: Stack, tokens: tuple[dict[str, str], Path],
        http: dict[str, httpx.AsyncClient]) -> None:
    keys, _ = tokens
    wid = f"ksig-{uuid.uuid4().hex[:8]}"
    submitted = await http["acme"].post("/v1/workflows", json={
        "id": wid, "workflow": approval_spec(), "input": {}})
    assert submitted.status_code == 202, submitted.text
    await wait_status_as(secured, http["acme"], wid, ("running",))
    refused = {None: "unauthenticated: the record has no authorization header",
               keys["globex"]: f"tenant: the token is for tenant 'globex', and workflow {wid} "
                               "is no run of it",
               keys["acme_read"]: "forbidden: the token's role is read"}
    for token in refused:
        await _signal_json(secured, wid, token)

    def all_dead(records: list[Any]) -> bool:
        return len([r for r in records if r.key == wid.encode()]) >= len(refused)

    dead = await read_topic(secured.topics.dlq, all_dead, scaled(90), decode=False)
    reasons = sorted(dict(r.headers)["reason"].decode() for r in dead if r.key == wid.encode())
    assert [any(r.startswith(want) for r in reasons) for want in refused.values()] == [
        True] * len(refused), reasons
    await holds_for_async(lambda: _status(secured, http["acme"], wid), UNTOUCHED_S,
                          "refused signals leave the run waiting",
                          holds=lambda s: s == "running")
    await _signal_json(secured, wid, keys["acme"])  # its own tenant's token: taken
    done = await wait_status_as(secured, http["acme"], wid)
    assert done["status"] == "succeeded" and done["output"]["approved"] is True, done


async def test_metrics_need_a_token_of_every_tenant(http: dict[str, httpx.AsyncClient]) -> None:
    """The gateway's ``/metrics`` are every tenant's figures: with auth on (and
    ``HEADWATER_METRICS_AUTH`` left at ``token``), 401 without a token, 403 with one
    tenant's, 200 with one of tenant ``*``."""
    assert (await http["none"].get("/metrics")).status_code == 401
    assert (await http["acme_admin"].get("/metrics")).status_code == 403
    scraped = await http["service"].get("/metrics")
    assert scraped.status_code == 200 and "headwater_http_requests" in scraped.text
