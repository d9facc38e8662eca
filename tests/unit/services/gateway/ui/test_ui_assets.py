"""The web UI's static files (``services/gateway/ui/static``), read as text: the
modules import only each other, and every one is used; nothing the page's
Content-Security-Policy would block (HTML parsed from strings, ``eval``, inline styles)
nor anything from another origin; the event types the run page listens for are the
history's, and the statuses the map's items are filtered by the tasks'; every request
goes through ``api.js`` (which sends the tab's token); the package data of
``pyproject.toml`` ships every file.
"""

from __future__ import annotations

import re
import tomllib
import typing
from pathlib import Path

from headwater.core import events as ev
from headwater.core.status import TaskStatus

ROOT = Path(__file__).resolve().parents[5]
PACKAGE = ROOT / "services" / "gateway" / "ui"
STATIC = PACKAGE / "static"
JS = STATIC / "js"
IMPORT = re.compile(r"""^import\s+(?:[\w*{}\s,]+\s+from\s+)?["']([^"']+)["'];""", re.M)
FORBIDDEN = {
    "innerHTML": "HTML parsed from a string (build elements with dom.h)",
    "outerHTML": "HTML parsed from a string",
    "insertAdjacentHTML": "HTML parsed from a string",
    "document.write": "HTML parsed from a string",
    "eval(": "script-src 'self' has no 'unsafe-eval'",
    "new Function": "script-src 'self' has no 'unsafe-eval'",
    'setAttribute("style"': "style-src 'self' has no 'unsafe-inline'",
    ".style =": "style-src 'self' has no 'unsafe-inline'",
    "javascript:": "a javascript: URL is an inline script",
}
SVG_NS = "http://www.w3.org/2000/svg"
MAX_MODULE_LINES = 400


def modules() -> dict[str, str]:
    """Every JavaScript module by its path below ``js/``."""
    return {p.relative_to(JS).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(JS.rglob("*.js"))}


def test_modules_import_only_each_other_and_each_is_reached_from_main() -> None:
    sources = modules()
    reached, pending = set(), ["main.js"]
    while pending:
        name = pending.pop()
        if name in reached:
            continue
        reached.add(name)
        for target in IMPORT.findall(sources[name]):
            assert target.startswith("./"), f"{name} imports {target!r}: only ./ modules"
            resolved = (Path(name).parent / target[2:]).as_posix()
            assert resolved in sources, f"{name} imports {target!r}, which is not a module"
            pending.append(resolved)
    assert reached == set(sources), f"not imported by anything: {set(sources) - reached}"


def test_nothing_the_policy_blocks_nor_anything_of_another_origin() -> None:
    faults = []
    files = [p for p in STATIC.rglob("*") if p.is_file()]
    for path in files:
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(STATIC).as_posix()
        faults += [f"{name}: {needle!r}: {why}" for needle, why in FORBIDDEN.items()
                   if needle in text]
        faults += [f"{name}: {url!r}: another origin" for url in
                   re.findall(r"""(?:https?:)?//[\w.-]+\.\w+[^\s"'`)]*""", text)
                   if not url.startswith(SVG_NS) and not name.endswith(".css")]
    assert faults == []
    assert len(files) >= 10


def test_the_checks_see_what_they_look_for() -> None:
    bad = 'el.innerHTML = x; el.setAttribute("style", "color: red"); fetch("https://cdn.example.com/x.js")'
    assert [n for n in FORBIDDEN if n in bad] == ["innerHTML", 'setAttribute("style"']
    assert re.findall(r"""(?:https?:)?//[\w.-]+\.\w+[^\s"'`)]*""", bad) == [
        "https://cdn.example.com/x.js"]
    assert IMPORT.findall('import {a, b} from "./dom.js";\nimport * as r from "./run.js";') == [
        "./dom.js", "./run.js"]


def test_the_run_page_listens_for_every_history_event_type() -> None:
    source = modules()["run_model.js"]
    block = re.search(r"export const EVENT_TYPES = \[(.*?)\];", source, re.S)
    assert block is not None
    listened = re.findall(r'"(\w+)"', block.group(1))
    history = sorted(body.__name__ for body in typing.get_args(ev.Body))
    assert sorted(listened) == history
    assert len(listened) == len(set(listened))


def test_the_items_filter_offers_every_task_status() -> None:
    block = re.search(r"export const STATUSES = \[(.*?)\];", modules()["map_items.js"], re.S)
    assert block is not None
    offered = re.findall(r'"(\w*)"', block.group(1))
    assert offered == ["", *(s.value for s in TaskStatus)]


def test_every_request_goes_through_the_api_module() -> None:
    transport = {"api.js", "eventstream.js"}  # api.js reads streams with eventstream.js
    calls = re.compile(r"\bfetch\(|new EventSource\(|XMLHttpRequest|navigator\.sendBeacon")
    faults = {name: calls.findall(text) for name, text in modules().items()
              if name not in transport and calls.search(text)}
    assert faults == {}
    assert calls.search(modules()["api.js"]) and calls.search(modules()["eventstream.js"])


def test_modules_stay_small() -> None:
    sizes = {name: len(text.splitlines()) for name, text in modules().items()}
    assert {n: s for n, s in sizes.items() if s > MAX_MODULE_LINES} == {}


def test_the_package_data_ships_every_static_file() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"].get("services.gateway.ui", [])
    shipped = {p.relative_to(PACKAGE).as_posix() for pattern in patterns
               for p in PACKAGE.glob(pattern) if p.is_file()}
    on_disk = {p.relative_to(PACKAGE).as_posix() for p in STATIC.rglob("*") if p.is_file()}
    assert on_disk - shipped == set(), (
        "pyproject.toml [tool.setuptools.package-data] \"services.gateway.ui\" leaves out "
        "these files")
