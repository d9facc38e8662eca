"""Every problem the gateway's code makes is a type of ``problems.PROBLEM_TYPES``, and
every type has its schema in the OpenAPI document; each answer carries its type's URI
and matches that schema.

The code is read with :mod:`ast`: each call of ``Problem(...)`` or
``problem_response(...)`` in ``services/gateway`` has its status and title resolved (a
literal, or a name of its module such as ``definitions.registry.DELETED``); a pair that names no
type, or a call whose pair cannot be read, fails the test with its file and line.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from gateway_harness import UNREACHABLE, FakePool, Gateway

from services.gateway.app import create_app
from services.gateway.edge.problems import (
    PROBLEM_JSON,
    PROBLEM_TYPES,
    STARLETTE_TYPES,
    TYPE_PREFIX,
    type_of,
)
from services.gateway.openapi.document import operations
from services.gateway.openapi.problems import GATEWAY_WIDE, component, referred

ROOT = Path(__file__).resolve().parents[5]
GATEWAY = ROOT / "services" / "gateway"
MAKERS = ("Problem", "problem_response")
PASSED_ON = {("problems.py", "exc.status"), ("problems.py", "exc.status_code")}
"""Calls that answer a problem made elsewhere (the handlers of ``Problem`` and of
Starlette's HTTP errors), whose status is not this call's to name."""
DOC: dict[str, Any] = create_app(UNREACHABLE).openapi()


def calls(source: str) -> Iterator[tuple[int, ast.expr, ast.expr]]:
    """``(line, status, title)`` of each ``Problem``/``problem_response`` call."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else (
            node.func.attr if isinstance(node.func, ast.Attribute) else "")
        if name not in MAKERS:
            continue
        given = {k.arg: k.value for k in node.keywords if k.arg}
        status = node.args[0] if node.args else given.get("status")
        title = node.args[1] if len(node.args) > 1 else given.get("title")
        if status is not None and title is not None:
            yield node.lineno, status, title


def resolve(expr: ast.expr, namespace: dict[str, Any]) -> Any:
    """The value of a literal, or of a name or attribute of ``namespace``; raises
    ``LookupError`` for anything else (a local variable, a call)."""
    try:
        return ast.literal_eval(expr)
    except ValueError:
        pass
    if isinstance(expr, ast.Name) and expr.id in namespace:
        return namespace[expr.id]
    if isinstance(expr, ast.Attribute):
        try:
            owner = resolve(expr.value, namespace)
        except LookupError:
            raise LookupError(ast.unparse(expr)) from None
        if hasattr(owner, expr.attr):
            return getattr(owner, expr.attr)
    raise LookupError(ast.unparse(expr))


def made(source: str, namespace: dict[str, Any], where: str,
         ) -> tuple[set[tuple[int, str]], list[str]]:
    """The ``(status, title)`` pairs the calls in ``source`` make, and a fault per call
    whose pair names no type or cannot be read."""
    pairs: set[tuple[int, str]] = set()
    faults: list[str] = []
    for line, status_expr, title_expr in calls(source):
        try:
            pair = (resolve(status_expr, namespace), resolve(title_expr, namespace))
        except LookupError as e:
            if (where.rsplit("/", 1)[-1], str(e)) not in PASSED_ON:
                faults.append(f"{where}:{line}: cannot read the status or title of a "
                              f"problem ({e}); use a literal or a ProblemType's fields")
            continue
        pairs.add(pair)
        if type_of(*pair) is None:
            faults.append(f"{where}:{line}: {pair} is not in problems.PROBLEM_TYPES")
    return pairs, faults


def gateway_problems() -> tuple[set[tuple[int, str]], list[str]]:
    """What every module of ``services/gateway`` (and its packages) makes."""
    pairs: set[tuple[int, str]] = set()
    faults: list[str] = []
    for path in sorted(GATEWAY.rglob("*.py")):
        dotted = path.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
        module = importlib.import_module(dotted)
        found, wrong = made(path.read_text(encoding="utf-8"), vars(module),
                            path.relative_to(ROOT).as_posix())
        pairs |= found
        faults += wrong
    return pairs, faults


def test_every_problem_the_gateway_makes_is_a_type_of_the_table() -> None:
    pairs, faults = gateway_problems()
    assert faults == []
    assert len(pairs) >= 20, pairs  # the scan found the gateway's problems


def test_every_type_is_made_somewhere() -> None:
    pairs, _ = gateway_problems()
    made_types = {type_of(*p) for p in pairs} | set(STARLETTE_TYPES.values())
    assert {t.slug for t in PROBLEM_TYPES} - {t.slug for t in made_types if t} == set()


def test_the_scan_names_a_problem_outside_the_table() -> None:
    source = ("def f(status):\n    raise Problem(418, 'Teapot', 'short and stout')\n"
              "def g(status):\n    raise Problem(status, 'Not found')\n")
    pairs, faults = made(source, {}, "services/gateway/teapot.py")
    assert pairs == {(418, "Teapot")}
    assert faults == [
        "services/gateway/teapot.py:2: (418, 'Teapot') is not in problems.PROBLEM_TYPES",
        "services/gateway/teapot.py:4: cannot read the status or title of a problem "
        "(status); use a literal or a ProblemType's fields"]


def test_types_are_unique_and_have_their_schema_in_the_document() -> None:
    assert len({t.slug for t in PROBLEM_TYPES}) == len(PROBLEM_TYPES)
    assert len({(t.status, t.title) for t in PROBLEM_TYPES}) == len(PROBLEM_TYPES)
    schemas = DOC["components"]["schemas"]
    for kind in PROBLEM_TYPES:
        schema = schemas[component(kind)]
        assert schema["properties"]["type"] == {"const": TYPE_PREFIX + kind.slug}
        assert schema["properties"]["title"] == {"const": kind.title}
        assert schema["properties"]["status"] == {"const": kind.status}
        assert schema["description"] and schema["allOf"] == [
            {"$ref": "#/components/schemas/Problem"}]
    assert "HTTPValidationError" not in schemas, "the gateway's 422 is a problem document"


def test_every_error_answer_refers_to_types_of_its_status() -> None:
    by_name = {component(t): t for t in PROBLEM_TYPES}
    for label, operation in operations(DOC):
        answers = operation["responses"]
        for wide in GATEWAY_WIDE:
            assert component(wide) in referred(
                answers[str(wide.status)]["content"][PROBLEM_JSON]["schema"]), label
        for status, answer in answers.items():
            if not status.startswith(("4", "5")):
                continue
            assert list(answer["content"]) == [PROBLEM_JSON], (label, status)
            names = referred(answer["content"][PROBLEM_JSON]["schema"])
            assert names and {by_name[n].status for n in names} == {int(status)}, label
            retry = any(by_name[n].retry_after for n in names)
            assert ("Retry-After" in answer.get("headers", {})) == retry, (label, status)


def test_operations_name_what_their_code_can_answer() -> None:
    def answers(label: str, status: str) -> set[str]:
        operation = dict(operations(DOC))[label]
        return {n.removesuffix("Problem") for n in referred(
            operation["responses"][status]["content"][PROBLEM_JSON]["schema"])}

    assert answers("POST /v1/workflows", "404") == {"NotFound"}
    assert answers("POST /v1/workflows", "410") == {"DefinitionDeleted"}
    assert answers("POST /v1/workflows", "503") == {
        "ShuttingDown", "NotReady", "DatabaseUnavailable", "KafkaUnavailable"}
    assert answers("GET /v1/workflows", "400") == {"BadRequest", "BadCursor"}
    assert answers("GET /v1/workflows/{workflow_id}/events", "400") == {
        "BadRequest", "BadLastEventId"}
    assert answers("PUT /v1/schedules/{name}", "429") == {"QueueFull"}
    assert answers("GET /v1/queues", "503") == {"NotReady", "KafkaUnavailable"}


def _validator(kind_name: str) -> Any:
    return jsonschema_rs.Draft202012Validator(
        {"$ref": f"#/components/schemas/{kind_name}", "components": DOC["components"]},
        validate_formats=True)


@pytest.mark.parametrize(("method", "url", "slug", "ready"), [
    ("GET", "/v1/workflows/wf-1", "not-ready", False),
    ("GET", "/v1/nope", "no-route", True),
    ("DELETE", "/v1/workflows", "method-not-allowed", True),
    ("GET", "/v1/workflows?name=%00", "bad-request", True),
    ("GET", "/v1/workflows?limit=0", "invalid-request", True),
    ("GET", "/v1/workflows?cursor=zzz", "bad-cursor", True),
    ("GET", "/v1/workflows/wf-1", "not-found", True),
])
def test_answers_carry_their_type_and_match_its_schema(gw: Gateway, method: str, url: str,
                                                       slug: str, ready: bool) -> None:
    if ready:
        gw.connect(FakePool())
    response = gw.client.request(method, url)
    doc = response.json()
    kind = next(t for t in PROBLEM_TYPES if t.slug == slug)
    assert (response.status_code, doc["type"], doc["title"]) == (
        kind.status, kind.uri, kind.title), doc
    assert response.headers["content-type"] == PROBLEM_JSON
    errors = [e.message for e in _validator(component(kind)).iter_errors(doc)]
    assert errors == [], doc
