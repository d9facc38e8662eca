"""Ways to break the web UI's routes (``services/gateway/ui/routes.py``): asset paths that
try to leave ``static/``, and answers that go out without the UI's headers."""

from __future__ import annotations

import pytest
from gateway_harness import Gateway

from services.gateway.ui.routes import CSP


@pytest.mark.parametrize("path", [
    "/ui/assets/..%2froutes.py", "/ui/assets/%2e%2e/%2e%2e/app.py",
    "/ui/assets/%2e%2e%2f%2e%2e%2f__init__.py", "/ui/assets/js\\..\\..\\routes.py",
    "/ui/assets/..%5croutes.py", "/ui/assets//etc/passwd",
    "/ui/assets/%252e%252e/routes.py", "/ui/assets/../routes.py"])
def test_an_asset_path_cannot_leave_the_static_files(gw: Gateway, path: str) -> None:
    answer = gw.client.get(path)
    assert answer.status_code in (400, 404), answer.status_code
    assert answer.headers["content-type"].startswith("application/problem+json")


def test_a_nul_in_an_asset_path_is_a_problem_not_a_crash(gw: Gateway) -> None:
    answer = gw.client.get("/ui/assets/index.html%00.js")
    assert answer.status_code == 400
    assert answer.headers["content-type"].startswith("application/problem+json")


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/ui/assets/js/nope.js"), ("GET", "/ui/assets/..%2froutes.py"),
    ("POST", "/ui/runs"), ("GET", "/ui")])
def test_every_ui_answer_carries_the_policy_even_an_error(
        gw: Gateway, method: str, path: str) -> None:
    # The module promises "Every answer carries a strict Content-Security-Policy"; the
    # 404/405 problems and the 308 go out without it (and without nosniff).
    answer = gw.client.request(method, path, follow_redirects=False)
    assert answer.headers.get("content-security-policy") == CSP, answer.status_code
    assert answer.headers.get("x-content-type-options") == "nosniff"


def test_head_of_a_view_is_answered_as_its_get(gw: Gateway) -> None:
    # RFC 9110 §9.3.2: a server that answers GET should answer HEAD (link checkers,
    # curl -I, load balancers' checks); the UI's views and assets answer 405.
    for path in ("/ui/", "/ui/runs/wf-1", "/ui/assets/app.css"):
        answer = gw.client.head(path)
        assert answer.status_code == 200, (path, answer.status_code)
        assert answer.headers.get("content-security-policy") == CSP
