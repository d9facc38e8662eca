"""The gateway's auth (``auth.gate``, ``openapi.document``): the least role of every
operation of the app (``role_needed``), the middleware under ``TestClient`` with auth on
(401 with ``WWW-Authenticate: Bearer realm="headwater"``, ``error="invalid_token"``,
403 ``insufficient_scope``, open paths, ``OPTIONS``, problem documents of the right
type), and the OpenAPI document's ``security`` of each operation."""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from gateway_harness import UNREACHABLE, FakeProducer, Gateway, assert_problem
from tenant_harness import RegistryPool

from services.common.auth.settings import ServiceAuth
from services.common.auth.tokens import ROLES, Authenticator, KeysFile, bearer, new_key
from services.gateway.app import create_app
from services.gateway.auth.gate import REALM, parse_metrics_auth, role_needed
from services.gateway.openapi.document import complete
from services.gateway.settings import Settings

OPEN_PATHS = ("/health", "/ready", "/metrics", "/openapi.json", "/docs", "/redoc", "/ui",
              "/ui/", "/ui/assets/app.js", "/", "/v1", "/v2/workflows", "/favicon.ico")
UNAUTHORIZED = "urn:headwater:problem:unauthorized"
FORBIDDEN = "urn:headwater:problem:forbidden"


def document() -> dict[str, Any]:
    doc: dict[str, Any] = create_app(Settings()).openapi()
    return doc


DOC = document()
OPERATIONS = [(method.upper(), path) for path, item in DOC["paths"].items()
              for method in item if method in ("get", "put", "post", "delete", "patch")]
V1 = [(m, p) for m, p in OPERATIONS if p.startswith("/v1/")]


EVERY_TENANT_ONLY = {("PUT", "/v1/limits/{key}")}
"""Operations that the tenant's tokens of this file pass the gate of, and that answer
403 for every tenant's principal but an operator's (a limit's key is every tenant's)."""


def expected_role(method: str, path: str) -> str:
    """The rule, written apart from ``auth.gate``'s regular expression."""
    if method == "GET":
        return "read"
    if path.startswith(("/v1/definitions", "/v1/schedules", "/v1/limits", "/v1/triggers",
                        "/v1/webhooks")):
        return "admin"
    return "submit"


def concrete(path: str) -> str:
    """``path`` with each ``{parameter}`` filled in."""
    return re.sub(r"\{[^}]+\}", "x1", path)


# role_needed


def test_the_app_has_the_operations_this_file_expects() -> None:
    assert len(V1) >= 19, V1
    assert {m for m, _ in V1} == {"GET", "POST", "PUT", "DELETE"}
    assert ("POST", "/v1/workflows") in V1 and ("PUT", "/v1/definitions/{name}") in V1


@pytest.mark.parametrize(("method", "path"), V1, ids=[f"{m} {p}" for m, p in V1])
def test_every_v1_operation_needs_its_role(method: str, path: str) -> None:
    assert role_needed(method, concrete(path)) == expected_role(method, path)


@pytest.mark.parametrize(("method", "path", "role"), [
    ("GET", "/v1/workflows", "read"), ("HEAD", "/v1/workflows/x1", "read"),
    ("POST", "/v1/workflows", "submit"), ("POST", "/v1/workflows/x1/cancel", "submit"),
    ("POST", "/v1/workflows/x1/pause", "submit"), ("POST", "/v1/workflows/x1/resume", "submit"),
    ("POST", "/v1/definitions/d/pause", "admin"), ("POST", "/v1/definitions/d/resume", "admin"),
    ("POST", "/v1/workflows/x1/signals/go", "submit"), ("POST", "/v1/run/greet", "submit"),
    ("PUT", "/v1/definitions/greet", "admin"), ("DELETE", "/v1/definitions/greet", "admin"),
    ("PUT", "/v1/schedules/s", "admin"), ("DELETE", "/v1/schedules/s", "admin"),
    ("POST", "/v1/schedules/s/pause", "admin"), ("POST", "/v1/schedules/s/resume", "admin"),
    ("PUT", "/v1/definitions/", "admin"), ("DELETE", "/v1/definitions/", "admin"),
    ("PATCH", "/v1/workflows", "admin"), ("PUT", "/v1/workflows", "admin"),
    ("DELETE", "/v1/workflows/x1", "admin"), ("POST", "/v1/workflows/x1", "admin"),
    ("POST", "/v1/workflows/x1/signals/go/more", "admin"),
    ("POST", "/v1/workflows/x1/restart", "admin"), ("POST", "/v1/queues", "admin"),
    ("POST", "/v1/definitions/greet", "admin"), ("OPTIONS", "/v1/workflows", "admin")])
def test_the_role_of_each_method_and_path(method: str, path: str, role: str) -> None:
    assert role_needed(method, path) == role


@pytest.mark.parametrize("path", ["/v1/run/", "/v1/workflows/", "/v1/workflows/x1/cancel/"])
def test_the_slash_variants_of_submitting_need_submit(path: str) -> None:
    assert role_needed("POST", path) == "submit"


@pytest.mark.parametrize("path", OPEN_PATHS)
@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "DELETE", "OPTIONS"])
def test_a_path_outside_v1_is_open(method: str, path: str) -> None:
    expected = "submit" if (method, path) in (("POST", "/v1"), ("POST", "/v2/workflows")) else None
    assert role_needed(method, path) == expected


@pytest.mark.parametrize("path", ["/research", "/a/b.c", "/v1", "/healthz", "/uix"])
def test_a_post_to_what_may_be_a_workflows_path_needs_submit(path: str) -> None:
    """A ``@workflow(path=...)`` is run by ``POST <path>`` (``runs.paths``), which
    submits; any other method there is open (no route takes it)."""
    assert role_needed("POST", path) == "submit"
    assert role_needed("GET", path) is None and role_needed("PUT", path) is None


@pytest.mark.parametrize(("method", "path"), [(m, p) for m, p in OPERATIONS
                                              if not p.startswith("/v1/")])
def test_every_operation_outside_v1_is_open(method: str, path: str) -> None:
    assert role_needed(method, path) is None


# The middleware


@dataclasses.dataclass
class Gate:
    """A gateway with auth on and tokens of tenant A in each role, and of every tenant."""

    gw: Gateway
    tokens: dict[str, str]

    def call(self, who: str | None, method: str, url: str, **kwargs: Any) -> Any:
        headers = {} if who is None else {"Authorization": bearer(self.tokens[who])}
        return self.gw.client.request(method, url, headers=headers, **kwargs)


@contextlib.contextmanager
def gate(tmp_path: Path) -> Iterator[Gate]:
    keys = {role: new_key("A", role) for role in ROLES}
    keys["*"] = new_key("*", "admin")
    path = tmp_path / "keys"
    path.write_text("".join(line + "\n" for _, line in keys.values()))
    auth = ServiceAuth(Authenticator(KeysFile(path), None), keys["*"][0])
    app = create_app(dataclasses.replace(UNREACHABLE, auth=auth))
    with TestClient(app) as client:
        gw = Gateway(client, app.state.hw)
        gw.connect(RegistryPool(), FakeProducer())
        yield Gate(gw, {k: token for k, (token, _) in keys.items()})


@pytest.fixture(scope="module")
def g(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gate]:
    with gate(tmp_path_factory.mktemp("gate")) as found:
        yield found


def unauthorized(response: Any, challenge: str) -> dict[str, Any]:
    doc = assert_problem(response, 401, "Unauthorized")
    assert doc["type"] == UNAUTHORIZED
    assert response.headers["WWW-Authenticate"] == challenge
    return doc


@pytest.mark.parametrize(("method", "path"), V1, ids=[f"{m} {p}" for m, p in V1])
def test_every_v1_operation_without_a_token_is_401(g: Gate, method: str, path: str) -> None:
    doc = unauthorized(g.call(None, method, concrete(path)), REALM)
    assert doc["detail"] == "no Authorization header: send 'Authorization: Bearer <token>'"


def test_the_realm_challenge_is_rfc_6750_s() -> None:
    assert REALM == 'Bearer realm="headwater"'


@pytest.mark.parametrize("value", [
    "Bearer hwk_nope", "Bearer " + "hwk_0123456789ab_" + "x" * 43, "Basic dXNlcjpwdw==",
    "Bearer", "Bearer eyJ.x.y", "token"])
def test_a_bad_token_is_401_invalid_token(g: Gate, value: str) -> None:
    response = g.gw.client.get("/v1/workflows", headers={"Authorization": value})
    doc = unauthorized(response, f'{REALM}, error="invalid_token"')
    assert doc["detail"]
    assert "hwk_0123456789ab_" not in response.text


def test_a_revoked_key_is_401_invalid_token(tmp_path: Path) -> None:
    with gate(tmp_path) as fresh:
        gone = new_key("A", "read")[0]
        unauthorized(fresh.gw.client.get("/v1/workflows", headers={
            "Authorization": bearer(gone)}), f'{REALM}, error="invalid_token"')


def test_the_scheme_s_case_does_not_matter(g: Gate) -> None:
    for scheme in ("bearer", "BEARER", "Bearer"):
        response = g.gw.client.get("/v1/whoami", headers={
            "authorization": f"{scheme}  {g.tokens['read']}"})
        assert response.status_code == 200, response.text


@pytest.mark.parametrize(("method", "path"), V1, ids=[f"{m} {p}" for m, p in V1])
def test_every_v1_operation_answers_403_below_its_role_and_passes_at_it(
        g: Gate, method: str, path: str) -> None:
    needed = expected_role(method, path)
    for role in ROLES:
        response = g.call(role, method, concrete(path))
        if ROLES.index(role) < ROLES.index(needed):
            doc = assert_problem(response, 403, "Forbidden")
            assert doc["type"] == FORBIDDEN
            assert (doc["role"], doc["needs"]) == (role, needed)
            assert doc["detail"] == f"the token's role is {role}; this needs {needed}"
            assert response.headers["WWW-Authenticate"] == (
                f'{REALM}, error="insufficient_scope"')
        elif (method, path) in EVERY_TENANT_ONLY:  # passes the gate; a tenant's is refused
            doc = assert_problem(response, 403, "Forbidden")
            assert doc["needs"] == "a token for every tenant", doc
        else:
            assert response.status_code not in (401, 403), (role, response.text)


def test_whoami_is_the_token_s_principal(g: Gate) -> None:
    key_id = g.tokens["submit"][4:16]
    assert g.call("submit", "GET", "/v1/whoami").json() == {
        "auth": True, "tenant": "A", "role": "submit", "subject": key_id}
    assert g.call("*", "GET", "/v1/whoami").json()["tenant"] == "*"


@pytest.mark.parametrize("path", ["/health", "/openapi.json", "/ui/"])
def test_an_open_path_needs_no_token(g: Gate, path: str) -> None:
    assert g.gw.client.get(path).status_code == 200
    bad = g.gw.client.get(path, headers={"Authorization": "Bearer nonsense"})
    assert bad.status_code == 200


def test_metrics_need_a_token_of_every_tenant_unless_open(g: Gate, tmp_path: Path) -> None:
    """``HEADWATER_METRICS_AUTH=token`` (the default): 401 without a token or with a bad
    one, 403 for one tenant's token (the figures are every tenant's), 200 for ``*``."""
    missing = g.gw.client.get("/metrics")
    assert_problem(missing, 401)
    assert missing.headers["WWW-Authenticate"] == REALM
    assert_problem(g.gw.client.get("/metrics", headers={"Authorization": "Bearer x"}), 401)
    assert_problem(g.call("admin", "GET", "/metrics"), 403)
    answer = g.call("*", "GET", "/metrics")
    assert answer.status_code == 200 and "headwater_" in answer.text


def test_metrics_auth_open_serves_them_to_anyone(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text(new_key("*", "admin")[1] + "\n")
    settings = dataclasses.replace(
        UNREACHABLE, auth=ServiceAuth(Authenticator(KeysFile(keys), None), None),
        metrics_token=False)
    with TestClient(create_app(settings)) as client:
        assert client.get("/metrics").status_code == 200
        assert client.get("/v1/workflows").status_code == 401


@pytest.mark.parametrize(("text", "token"), [("token", True), ("open", False),
                                             (" OPEN ", False)])
def test_metrics_auth_setting(text: str, token: bool) -> None:
    assert parse_metrics_auth(text) is token


def test_a_bad_metrics_auth_setting_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_METRICS_AUTH", "bearer")
    with pytest.raises(ValueError, match="HEADWATER_METRICS_AUTH must be token or open"):
        Settings.from_env()


def test_ready_needs_no_token(g: Gate) -> None:
    assert g.gw.client.get("/ready").status_code in (200, 503)
    assert "WWW-Authenticate" not in g.gw.client.get("/ready").headers


@pytest.mark.parametrize("path", ["/v1/workflows", "/v1/workflows/x1", "/v1/definitions/d"])
def test_options_passes_the_gate(g: Gate, path: str) -> None:
    response = g.gw.client.options(path)
    assert response.status_code not in (401, 403), response.text
    assert "WWW-Authenticate" not in response.headers


def test_an_unknown_v1_path_needs_a_token_first(g: Gate) -> None:
    unauthorized(g.gw.client.get("/v1/nothing-here"), REALM)
    assert_problem(g.call("read", "GET", "/v1/nothing-here"), 404)


def test_auth_off_lets_everything_through_as_every_tenant(gw: Gateway) -> None:
    gw.connect(RegistryPool())
    doc = gw.client.get("/v1/whoami").json()
    assert doc == {"auth": False, "tenant": "*", "role": "admin", "subject": "anonymous"}
    assert gw.client.get("/v1/whoami", headers={"Authorization": "Bearer x"}).status_code == 200


# The OpenAPI document

AUTH_DOC = complete(FastAPI.openapi(create_app(Settings())), auth=True)
"""The document of a gateway whose auth is on."""


@pytest.mark.parametrize(("method", "path"), V1, ids=[f"{m} {p}" for m, p in V1])
def test_every_v1_operation_declares_the_bearer_scheme_and_401_403(
        method: str, path: str) -> None:
    operation = DOC["paths"][path][method.lower()]
    assert operation["security"] == [{"bearer": []}, {}]  # auth off: a token is optional
    assert AUTH_DOC["paths"][path][method.lower()]["security"] == [{"bearer": []}]
    for status in ("401", "403"):
        answer = operation["responses"][status]
        assert "application/problem+json" in answer["content"], answer


@pytest.mark.parametrize(("method", "path"), [(m, p) for m, p in OPERATIONS
                                              if not p.startswith("/v1/")])
def test_an_open_operation_declares_no_security(method: str, path: str) -> None:
    operation = DOC["paths"][path][method.lower()]
    assert "security" not in operation
    assert "401" not in operation["responses"] and "403" not in operation["responses"]


def test_the_bearer_scheme_is_a_component() -> None:
    scheme = DOC["components"]["securitySchemes"]["bearer"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    assert "security" not in DOC  # not global: the open paths take none


def test_the_served_document_is_the_same(g: Gate) -> None:
    served = g.gw.client.get("/openapi.json").json()
    assert served["components"]["securitySchemes"] == DOC["components"]["securitySchemes"]
    assert served["paths"]["/v1/workflows"]["post"]["security"] == [{"bearer": []}]


def test_two_authorization_headers_are_401(g: Gate) -> None:
    response = g.gw.client.get("/v1/workflows", headers=[
        ("Authorization", bearer(g.tokens["*"])), ("Authorization", bearer(g.tokens["read"]))])
    body = unauthorized(response, 'Bearer realm="headwater", error="invalid_token"')
    assert "two Authorization headers" in body["detail"]


def test_a_workflows_path_needs_a_submit_token(g: Gate) -> None:
    """``POST /research`` (a ``@workflow``'s path, ``runs.paths``) is a submission:
    401 without a token, 403 with a read token, through with a submit token (the
    stand-in registry has no workflow at that path: 404)."""
    unauthorized(g.call(None, "POST", "/research", json={}), REALM)
    assert_problem(g.call("read", "POST", "/research", json={}), 403, "Forbidden")
    assert_problem(g.call("submit", "POST", "/research", json={}), 404, "Not found")
