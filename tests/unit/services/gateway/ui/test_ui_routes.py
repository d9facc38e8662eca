"""The web UI's routes (``services/gateway/ui/routes.py``): every view answers the one
HTML page and every asset its file, with the strict Content-Security-Policy; an unknown
asset or view is a 404 problem document like the rest of the gateway's errors; the UI
is served while the gateway is not ready, and is not part of the API's document. The
whole app under ``TestClient`` (what a browser does with it: ``tests/e2e/test_ui_browser.py``)."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from gateway_harness import Gateway, assert_problem

from services.gateway.edge.problems import NO_ROUTE
from services.gateway.ui import routes as ui_routes
from services.gateway.ui.routes import CSP, load_assets

VIEWS = ("/ui/", "/ui/runs", "/ui/runs/wf-1a2b", "/ui/queues", "/ui/definitions",
         "/ui/definitions/docs.index", "/ui/schedules", "/ui/schedules/nightly")
EXPECTED_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                "connect-src 'self'; base-uri 'none'; form-action 'self'; "
                "frame-ancestors 'none'")


class _Refs(HTMLParser):
    """The ``src``/``href`` of a page's scripts, styles and icons, and any inline script,
    inline style or event-handler attribute (which the CSP would block)."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.inline: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        self.inline += [f"<{tag} {k}>" for k in named if k.startswith("on") or k == "style"]
        if tag == "style":
            self.inline.append("<style>")
        if tag == "script":
            self._in_script = True
            if not named.get("src"):
                self.inline.append("<script> without src")
        for key in ("src", "href"):
            value = named.get(key)
            if tag in ("script", "link") and value:
                self.refs.append(value)

    def handle_endtag(self, tag: str) -> None:
        self._in_script = self._in_script and tag != "script"

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append("inline script text")


def test_every_view_is_the_page_with_the_strict_policy(gw: Gateway) -> None:
    bodies = set()
    for view in VIEWS:
        answer = gw.client.get(view)
        assert answer.status_code == 200, (view, answer.text)
        assert answer.headers["content-type"] == "text/html; charset=utf-8", view
        assert answer.headers["content-security-policy"] == EXPECTED_CSP == CSP
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "no-referrer"
        bodies.add(answer.content)
    assert len(bodies) == 1  # the same page: its script picks the view from the path
    assert b'<script type="module" src="/ui/assets/js/main.js"></script>' in bodies.pop()


def test_the_page_has_no_inline_script_or_style_and_its_references_are_served(
        gw: Gateway) -> None:
    refs = _Refs()
    refs.feed(gw.client.get("/ui/").text)
    assert refs.inline == []
    assert sorted(refs.refs) == ["/ui/assets/app.css", "/ui/assets/favicon.svg",
                                 "/ui/assets/js/main.js"]
    types = {".css": "text/css; charset=utf-8", ".svg": "image/svg+xml",
             ".js": "text/javascript; charset=utf-8"}
    for ref in refs.refs:
        answer = gw.client.get(ref)
        assert answer.status_code == 200, ref
        assert answer.headers["content-type"] == types[Path(ref).suffix], ref
        assert answer.headers["content-security-policy"] == CSP, ref
        assert answer.headers["etag"].startswith('"'), ref


def test_ui_without_the_slash_redirects_to_the_runs_list(gw: Gateway) -> None:
    answer = gw.client.get("/ui", follow_redirects=False)
    assert (answer.status_code, answer.headers["location"]) == (308, "/ui/")


@pytest.mark.parametrize("path", [
    "/ui/assets/js/nope.js", "/ui/assets/", "/ui/assets/js", "/ui/assets/../routes.py",
    "/ui/assets/%2e%2e/routes.py", "/ui/assets/..%2f__init__.py",
    "/ui/assets/js/main.js.map", "/ui/assets/JS/MAIN.JS"])
def test_an_unknown_asset_is_a_404_problem(gw: Gateway, path: str) -> None:
    doc = assert_problem(gw.client.get(path), 404, NO_ROUTE.title)
    assert doc["type"] == NO_ROUTE.uri


def test_an_asset_names_itself_in_its_404(gw: Gateway) -> None:
    doc = assert_problem(gw.client.get("/ui/assets/js/nope.js"), 404)
    assert doc["detail"] == "the UI has no asset 'js/nope.js' (its files are under /ui/assets/)"
    assert doc["instance"] == "/ui/assets/js/nope.js"


@pytest.mark.parametrize("path", ["/ui/nope", "/ui/runs/wf-1/more", "/uix"])
def test_an_unknown_view_is_a_404_problem(gw: Gateway, path: str) -> None:
    doc = assert_problem(gw.client.get(path), 404, NO_ROUTE.title)
    assert doc["type"] == NO_ROUTE.uri


def test_a_post_to_a_view_is_a_405_problem(gw: Gateway) -> None:
    assert_problem(gw.client.post("/ui/runs"), 405, "Method Not Allowed")


def test_an_unchanged_asset_is_304_by_its_etag(gw: Gateway) -> None:
    first = gw.client.get("/ui/assets/js/main.js")
    etag = first.headers["etag"]
    again = gw.client.get("/ui/assets/js/main.js", headers={"If-None-Match": etag})
    assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", etag)
    weak = gw.client.get("/ui/assets/js/main.js", headers={"If-None-Match": f'"x", W/{etag}'})
    assert weak.status_code == 304
    other = gw.client.get("/ui/assets/js/main.js", headers={"If-None-Match": '"other"'})
    assert (other.status_code, other.content) == (200, first.content)


def test_the_ui_is_served_while_the_gateway_is_not_ready(gw: Gateway) -> None:
    assert gw.client.get("/v1/workflows").status_code == 503  # not connected
    assert gw.client.get("/ui/runs/wf-1").status_code == 200
    assert gw.client.get("/ui/assets/app.css").status_code == 200


def test_the_ui_is_not_in_the_api_document(gw: Gateway) -> None:
    paths = gw.client.get("/openapi.json").json()["paths"]
    assert [p for p in paths if p.startswith("/ui")] == []


def test_load_assets_keeps_known_types_by_their_path(tmp_path: Path) -> None:
    (tmp_path / "js" / "deep").mkdir(parents=True)
    (tmp_path / "index.html").write_text("<!doctype html>")
    (tmp_path / "js" / "deep" / "a.js").write_text("export {};")
    (tmp_path / "notes.txt").write_text("not served")
    (tmp_path / "js" / "a.js.map").write_text("{}")
    (tmp_path / "Makefile").write_text("all:")
    found = load_assets(tmp_path)
    assert sorted(found) == ["index.html", "js/deep/a.js"]
    assert found["js/deep/a.js"].media_type == "text/javascript; charset=utf-8"
    assert found["index.html"].body == b"<!doctype html>"
    assert load_assets(tmp_path / "missing") == {}


def test_the_package_holds_every_static_file() -> None:
    root = Path(str(ui_routes.STATIC_DIR))
    on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    assert set(ui_routes.assets()) == on_disk  # nothing left out by its suffix
    assert {"index.html", "app.css", "js/main.js", "js/run.js", "js/dag.js"} <= on_disk
