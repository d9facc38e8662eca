"""``POST /v1/definitions/{name}/rollback`` on a gateway whose registry is in memory
(``tenant_harness.RegistryPool``): the head it produces, what new runs resolve to, the
answers it refuses with, and an announced body that does not undo it. Records written
with ``DefinitionHead``'s schema before revisions decode with revision 0."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastavro
import orjson
import pytest
from fastavro.schema import parse_schema
from gateway_harness import assert_problem
from tenant_harness import SPEC, Tenants, tenants

from headwater import codec
from headwater.core.definitions import DefinitionHead
from services.gateway.definitions.registry import resolve
from services.gateway.definitions.store import Store

RETIRED_HEAD = codec.schema_dir() / "retired" / "DefinitionHead.13dad2c5dd3a2407.avsc"


@pytest.fixture
def t(tmp_path: Path) -> Iterator[Tenants]:
    with tenants(tmp_path) as found:
        yield found


def _spec(n: int) -> dict[str, Any]:
    return {**SPEC, "nodes": [{"id": "a", "task": f"t.v{n}"}]}


def _three(t: Tenants) -> None:
    for n in (1, 2, 3):
        assert t.call("*", "PUT", "/v1/definitions/greet",
                      json={"workflow": _spec(n)}).status_code == 201


def _heads(t: Tenants) -> list[DefinitionHead]:
    return [r for _, _, r in t.producer.sent if isinstance(r, DefinitionHead)]


def test_a_rollback_makes_an_earlier_version_current(t: Tenants) -> None:
    _three(t)
    answer = t.call("*", "POST", "/v1/definitions/greet/rollback", json={"to": 1})
    assert answer.status_code == 200, answer.text
    doc = answer.json()
    assert (doc["version"], doc["previous"], doc["latest"], doc["changed"]) == (1, 3, 3, True)
    head = _heads(t)[-1]
    assert (head.version, head.deleted, head.revision) == (1, False, 3)
    shown = t.call("*", "GET", "/v1/definitions/greet").json()
    assert (shown["version"], shown["current"], shown["latest"]) == (1, 1, 3)
    assert shown["workflow"]["nodes"][0]["task"] == "t.v1"
    resolved = t.gw.client.portal.call(resolve, t.pool, "greet")
    assert (resolved.version, resolved.spec["nodes"][0]["task"]) == (1, "t.v1")
    assert t.gw.client.portal.call(resolve, t.pool, "greet@3").version == 3  # still readable


def test_without_a_version_it_steps_back_one(t: Tenants) -> None:
    _three(t)
    steps = [t.call("*", "POST", "/v1/definitions/greet/rollback").json()["version"]
             for _ in range(2)]
    assert steps == [2, 1]
    assert_problem(t.call("*", "POST", "/v1/definitions/greet/rollback"), 409, "Conflict")


def test_the_current_version_again_changes_nothing(t: Tenants) -> None:
    _three(t)
    sent = len(t.producer.sent)
    doc = t.call("*", "POST", "/v1/definitions/greet/rollback", json={"to": 3}).json()
    assert (doc["version"], doc["changed"]) == (3, False)
    assert len(t.producer.sent) == sent


def test_a_put_after_a_rollback_makes_the_next_version_current(t: Tenants) -> None:
    _three(t)
    t.call("*", "POST", "/v1/definitions/greet/rollback", json={"to": 1})
    same = t.call("*", "PUT", "/v1/definitions/greet", json={"workflow": _spec(1)})
    assert (same.status_code, same.json()["version"]) == (200, 1)
    again = t.call("*", "PUT", "/v1/definitions/greet", json={"workflow": _spec(3)})
    assert (again.status_code, again.json()["version"]) == (201, 4)
    assert _heads(t)[-1].revision == 4


@pytest.mark.parametrize(("body", "status"), [
    ({"to": 9}, 404), ({"to": 0}, 422), ({"to": "one"}, 422), ({"wat": 1}, 422)])
def test_a_bad_rollback_is_refused(t: Tenants, body: dict[str, Any], status: int) -> None:
    _three(t)
    assert_problem(t.call("*", "POST", "/v1/definitions/greet/rollback", json=body), status)
    assert t.pool.heads["greet"]["version"] == 3


def test_unknown_deleted_and_foreign_names(t: Tenants) -> None:
    assert_problem(t.call("*", "POST", "/v1/definitions/nosuch/rollback"), 404)
    _three(t)
    assert_problem(t.call("A", "POST", "/v1/definitions/greet/rollback"), 403)  # shared
    assert_problem(t.call("A-read", "POST", "/v1/definitions/greet/rollback"), 403)
    t.call("*", "DELETE", "/v1/definitions/greet")
    doc = assert_problem(t.call("*", "POST", "/v1/definitions/greet/rollback",
                                json={"to": 1}), 409)
    assert "deleted" in doc["detail"]
    t.call("B", "PUT", "/v1/definitions/mine", json={"workflow": _spec(1)})
    assert_problem(t.call("A", "POST", "/v1/definitions/mine/rollback"), 404)


def test_an_announced_body_leaves_a_rolled_back_name_on_its_version(t: Tenants) -> None:
    _three(t)
    t.call("*", "POST", "/v1/definitions/greet/rollback", json={"to": 2})
    store: Store = t.gw.hw.definitions_store()
    kept = t.gw.client.portal.call(store.put_announced, "greet", _spec(3), None)
    assert (kept.version, kept.created) == (2, False)
    assert t.pool.heads["greet"]["version"] == 2
    # An operator's registration ends the rollback; announcements register again.
    t.call("*", "PUT", "/v1/definitions/greet", json={"workflow": _spec(4)})
    moved = t.gw.client.portal.call(store.put_announced, "greet", _spec(5), None)
    assert (moved.version, moved.created) == (5, True)


def test_a_head_written_before_revisions_decodes_with_revision_0() -> None:
    old = DefinitionHead("greet", 2, False, 1_700_000_000_001, "A")
    schema = parse_schema(orjson.loads(RETIRED_HEAD.read_bytes()))
    buf = io.BytesIO()
    buf.write(codec.MAGIC + bytes.fromhex(RETIRED_HEAD.name.split(".")[1]))
    fastavro.schemaless_writer(buf, schema, {k: v for k, v in codec._to_avro(old).items()
                                             if k != "revision"})
    assert codec.decode(buf.getvalue()) == old
    assert old.revision == 0
