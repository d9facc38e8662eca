"""CORS (``services/gateway/edge/cors.py``): off by default; with origins set, preflights are
answered and responses carry the headers, for the allowed origins only. The whole app
under ``TestClient`` (a browser's own check is ``tests/e2e/test_cors_browser.py``)."""

from __future__ import annotations

import dataclasses

import pytest
from gateway_harness import SPEC, UNREACHABLE, FakePool, gateway

from services.gateway.edge.cors import parse_origins

PAGE = "http://127.0.0.1:5173"
PREFLIGHT = {"Origin": PAGE, "Access-Control-Request-Method": "GET",
             "Access-Control-Request-Headers": "last-event-id"}


def test_off_by_default_no_header_and_preflight_not_answered() -> None:
    with gateway() as gw:
        gw.connect(FakePool())
        simple = gw.client.get("/health", headers={"Origin": PAGE})
        preflight = gw.client.options("/v1/workflows/wf-1/events", headers=PREFLIGHT)
    assert simple.status_code == 200
    assert "access-control-allow-origin" not in simple.headers
    assert "access-control-allow-origin" not in preflight.headers
    assert preflight.status_code == 405


def test_a_preflight_from_an_allowed_origin_names_the_methods_and_headers() -> None:
    settings = dataclasses.replace(UNREACHABLE, cors_origins=(PAGE,))
    with gateway(settings) as gw:
        answer = gw.client.options("/v1/run/greet", headers={
            "Origin": PAGE, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, prefer, last-event-id"})
    assert answer.status_code == 200, answer.text
    assert answer.headers["access-control-allow-origin"] == PAGE
    methods = {m.strip() for m in answer.headers["access-control-allow-methods"].split(",")}
    assert methods >= {"GET", "POST", "PUT", "DELETE"}
    allowed = {h.strip().lower() for h in answer.headers["access-control-allow-headers"]
               .split(",")}
    assert allowed >= {"content-type", "prefer", "last-event-id"}
    assert "access-control-allow-credentials" not in answer.headers


def test_a_simple_request_exposes_location_and_a_problem_carries_the_header() -> None:
    settings = dataclasses.replace(UNREACHABLE, cors_origins=(PAGE,))
    with gateway(settings) as gw:
        gw.connect(FakePool())
        accepted = gw.client.post("/v1/workflows", json={"id": "wf-c", "workflow": SPEC,
                                                         "input": {}},
                                  headers={"Origin": PAGE})
        missing = gw.client.get("/v1/workflows/nope", headers={"Origin": PAGE})
    assert accepted.status_code == 202, accepted.text
    assert accepted.headers["access-control-allow-origin"] == PAGE
    exposed = {h.strip().lower() for h in accepted.headers["access-control-expose-headers"]
               .split(",")}
    assert exposed >= {"location", "retry-after"}
    assert missing.status_code == 404 and missing.headers["access-control-allow-origin"] == PAGE


def test_another_origin_gets_no_header_and_a_refused_preflight() -> None:
    settings = dataclasses.replace(UNREACHABLE, cors_origins=(PAGE,))
    with gateway(settings) as gw:
        simple = gw.client.get("/health", headers={"Origin": "http://evil.example"})
        preflight = gw.client.options("/health", headers={
            **PREFLIGHT, "Origin": "http://evil.example"})
    assert "access-control-allow-origin" not in simple.headers
    assert preflight.status_code == 400 and "access-control-allow-origin" not in \
        preflight.headers
    assert preflight.headers["content-type"] == "application/problem+json"
    doc = preflight.json()
    assert (doc["status"], doc["refused"]) == (400, ["origin"]), doc
    assert "http://evil.example" in doc["detail"]


def test_any_origin_with_a_star() -> None:
    settings = dataclasses.replace(UNREACHABLE, cors_origins=("*",))
    with gateway(settings) as gw:
        simple = gw.client.get("/health", headers={"Origin": "http://anywhere.example:81"})
    assert simple.headers["access-control-allow-origin"] == "*"


@pytest.mark.parametrize(("text", "origins"), [
    ("", ()), (" , ", ()), ("*", ("*",)), ("http://a.example, https://b.example:8443/",
                                         ("http://a.example", "https://b.example:8443")),
    ("http://a.example,*", ("*",))])
def test_origins_are_parsed(text: str, origins: tuple[str, ...]) -> None:
    assert parse_origins(text) == origins


@pytest.mark.parametrize("bad", ["a.example", "ftp://a.example", "http://a.example/app",
                                 "http://", "https://a.example?x=1"])
def test_a_bad_origin_names_the_variable_and_the_entry(bad: str) -> None:
    with pytest.raises(ValueError, match=r"HEADWATER_CORS_ORIGINS: .* is not an origin"):
        parse_origins(f"http://ok.example,{bad}")


def test_a_preflight_asking_a_method_or_header_not_allowed_names_it() -> None:
    settings = dataclasses.replace(UNREACHABLE, cors_origins=(PAGE,))
    with gateway(settings) as gw:
        preflight = gw.client.options("/health", headers={
            **PREFLIGHT, "Access-Control-Request-Method": "PATCH",
            "Access-Control-Request-Headers": "x-secret"})
    assert preflight.status_code == 400
    assert preflight.headers["content-type"] == "application/problem+json"
    assert preflight.json()["refused"] == ["method", "headers"]
    assert preflight.headers["access-control-allow-origin"] == PAGE
