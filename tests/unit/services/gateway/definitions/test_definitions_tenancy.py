"""Definitions are scoped by tenant: a tenant's principal sees its own and the shared
ones (another tenant's is 404 as an unknown name, by ``GET``, by version, in the list,
submitted by name and named by a ``kind: workflow`` child), writes its own (another
tenant's name is 409 on ``PUT``, 404 on ``DELETE``) and not the shared ones (403); a
principal of every tenant registers shared definitions. The records carry ``tenant``,
and records written before it decode as shared (``schemas/avro/retired``)."""

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
from headwater.core import events as ev
from headwater.core.definitions import (
    FOREIGN,
    SHARED,
    DefinitionHead,
    DefinitionStored,
    new_owner,
    visible,
    write_refusal,
)
from services.gateway.definitions import records as definition_records

RETIRED = {"DefinitionStored": "DefinitionStored.d7f72710f6b0e6e2.avsc",
           "DefinitionHead": "DefinitionHead.bb541cea77106524.avsc"}
OLD = [DefinitionStored("greet", 2, SPEC, {"type": "object"}, "d" * 64, 1_700_000_000_000),
       DefinitionHead("greet", 2, True, 1_700_000_000_001)]


@pytest.fixture
def t(tmp_path: Path) -> Iterator[Tenants]:
    with tenants(tmp_path) as found:
        yield found


def _written_with(path: Path, record: object) -> bytes:
    """``record`` as a gateway that knew only the retired schema wrote it."""
    schema = parse_schema(orjson.loads(path.read_bytes()))
    buf = io.BytesIO()
    buf.write(codec.MAGIC + bytes.fromhex(path.name.split(".")[1]))
    body = {k: v for k, v in codec._to_avro(record).items() if k != "tenant"}
    fastavro.schemaless_writer(buf, schema, body)
    return buf.getvalue()


@pytest.mark.parametrize("record", OLD, ids=lambda r: type(r).__name__)
def test_a_record_written_before_tenants_decodes_as_shared(record: Any) -> None:
    path = codec.schema_dir() / "retired" / RETIRED[type(record).__name__]
    data = _written_with(path, record)
    assert definition_records.decode(data) == record and record.tenant is None
    assert definition_records.encode(record)[:10] != data[:10]  # new ones name the new schema


@pytest.mark.parametrize("record", [
    DefinitionStored("greet", 1, SPEC, None, "d" * 64, 5, tenant="A"),
    DefinitionHead("greet", 1, False, 5, tenant="team.b-1")], ids=lambda r: type(r).__name__)
def test_a_record_with_a_tenant_round_trips(record: Any) -> None:
    assert definition_records.decode(definition_records.encode(record)) == record


@pytest.mark.parametrize(("owner", "reader", "seen"), [
    (None, None, True), (None, "A", True), ("A", None, True), ("A", "A", True),
    ("A", "B", False)])
def test_who_sees_a_definition(owner: str | None, reader: str | None, seen: bool) -> None:
    assert visible(owner, reader) is seen


@pytest.mark.parametrize(("exists", "owner", "writer", "refusal", "tenant"), [
    (False, None, None, None, None),  # a new name by every tenant: shared
    (False, None, "A", None, "A"),  # a new name by A: A's
    (True, "A", "A", None, "A"),
    (True, "A", None, None, "A"),  # every tenant writes A's: it stays A's
    (True, None, None, None, None),
    (True, "A", "B", FOREIGN, "A"),
    (True, None, "B", SHARED, None),
])
def test_who_writes_a_definition(exists: bool, owner: str | None, writer: str | None,
                                 refusal: str | None, tenant: str | None) -> None:
    assert write_refusal(exists, owner, writer) == refusal
    assert new_owner(exists, owner, writer) == tenant


def _put(t: Tenants, who: str, name: str, spec: dict[str, Any] = SPEC) -> Any:
    return t.call(who, "PUT", f"/v1/definitions/{name}", json={"workflow": spec})


def test_a_tenants_definition_is_its_own(t: Tenants) -> None:
    assert _put(t, "A", "billing").status_code == 201
    assert t.pool.heads["billing"]["tenant"] == "A"
    assert t.pool.versions[("billing", 1)]["tenant"] == "A"
    records = [r for _, _, r in t.producer.sent]
    assert [type(r).__name__ for r in records] == ["DefinitionStored", "DefinitionHead"]
    assert {r.tenant for r in records} == {"A"}
    assert t.call("A", "GET", "/v1/definitions/billing").json()["version"] == 1
    assert t.call("A-read", "GET", "/v1/definitions/billing?version=1").status_code == 200
    assert _put(t, "A", "billing").status_code == 200  # the same body: the same version


@pytest.mark.parametrize("url", ["/v1/definitions/billing", "/v1/definitions/billing?version=1"])
def test_another_tenants_definition_is_not_found_like_an_unknown_one(t: Tenants,
                                                                     url: str) -> None:
    _put(t, "A", "billing")
    hidden = assert_problem(t.call("B", "GET", url), 404, "Not found")
    unknown = assert_problem(t.call("B", "GET", url.replace("billing", "nosuch")), 404)
    assert hidden == {k: v.replace("nosuch", "billing") if isinstance(v, str) else v
                      for k, v in unknown.items()}
    assert t.call("*", "GET", url).status_code == 200  # every tenant sees it


def test_a_list_shows_the_tenants_own_and_the_shared(t: Tenants) -> None:
    _put(t, "A", "a-one")
    _put(t, "B", "b-one")
    _put(t, "*", "common")
    names = {who: [d["name"] for d in t.call(who, "GET", "/v1/definitions").json()["items"]]
             for who in ("A", "B", "*")}
    assert names == {"A": ["a-one", "common"], "B": ["b-one", "common"],
                     "*": ["a-one", "b-one", "common"]}


def test_a_name_another_tenant_holds_is_409_and_not_written(t: Tenants) -> None:
    _put(t, "A", "billing")
    doc = assert_problem(_put(t, "B", "billing", {**SPEC, "name": "other"}), 409, "Conflict")
    assert "taken" in doc["detail"] and "A" not in doc["detail"], doc  # not whose
    assert set(doc) == {"type", "title", "status", "detail", "instance", "definition"}, doc
    assert assert_problem(t.call("B", "DELETE", "/v1/definitions/billing"), 404,
                          "Not found")["detail"] == "no definition billing"
    assert t.pool.heads["billing"] == {**t.pool.heads["billing"], "version": 1,
                                       "deleted": False, "tenant": "A"}


def test_a_shared_definition_is_read_by_all_and_written_only_for_every_tenant(
        t: Tenants) -> None:
    assert _put(t, "*", "common").status_code == 201
    assert t.pool.heads["common"]["tenant"] is None
    for who in ("A", "B"):
        assert t.call(who, "GET", "/v1/definitions/common").status_code == 200
    for method in ("PUT", "DELETE"):
        doc = assert_problem(t.call("A", method, "/v1/definitions/common",
                                    json={"workflow": {**SPEC, "name": "x"}}), 403,
                             "Forbidden")
        assert "token for every tenant" in doc["detail"], doc
        assert doc["type"] == "urn:headwater:problem:forbidden" and doc["role"] == "admin"
    assert _put(t, "*", "common", {**SPEC, "name": "two"}).json()["version"] == 2
    assert t.call("*", "DELETE", "/v1/definitions/common").status_code == 204


def test_every_tenant_writing_a_tenants_definition_leaves_it_that_tenants(t: Tenants) -> None:
    _put(t, "A", "billing")
    assert _put(t, "*", "billing", {**SPEC, "name": "two"}).json()["version"] == 2
    assert t.pool.versions[("billing", 2)]["tenant"] == "A"
    assert t.call("B", "GET", "/v1/definitions/billing").status_code == 404


def _submitted(t: Tenants) -> list[ev.WorkflowSubmitted]:
    return [r for _, _, r in t.producer.sent if isinstance(r, ev.WorkflowSubmitted)]


def test_a_submission_by_name_resolves_only_what_the_tenant_sees(t: Tenants) -> None:
    _put(t, "A", "billing")
    _put(t, "*", "common")
    for url, body in [("/v1/workflows", {"definition": "billing"}),
                      ("/v1/workflows", {"definition": "billing@1"}),
                      ("/v1/run/billing", {})]:
        doc = assert_problem(t.call("B", "POST", url, json=body), 404, "Not found")
        assert doc["detail"] == "no definition billing", doc
    assert t.call("A", "POST", "/v1/workflows", json={"definition": "billing"}
                  ).status_code == 202
    assert t.call("B", "POST", "/v1/run/common?timeout=0", json={}).status_code == 202
    assert [(r.tenant, r.definition) for r in _submitted(t)] == [("A", "billing"),
                                                                 ("B", "common")]


def test_a_child_naming_another_tenants_definition_is_unknown(t: Tenants) -> None:
    _put(t, "A", "billing")
    parent = {"name": "p", "nodes": [{"id": "c", "kind": "workflow", "definition": "billing"}]}
    doc = assert_problem(t.call("B", "POST", "/v1/workflows", json={"workflow": parent}), 422)
    assert doc["errors"] == ["nodes.c: definition: no definition billing"], doc
    doc = assert_problem(_put(t, "B", "parent", parent), 422, "Invalid definition")
    assert doc["errors"] == ["nodes.c: definition: no definition billing"], doc
    assert t.call("A", "POST", "/v1/workflows", json={"workflow": parent}).status_code == 202


def test_an_unknown_name_suggests_only_names_the_tenant_sees(t: Tenants) -> None:
    _put(t, "A", "billing")
    _put(t, "B", "billings")
    _put(t, "*", "billing2")
    for url, body in [("/v1/definitions/biling", None), ("/v1/workflows",
                                                         {"definition": "biling"}),
                      ("/v1/run/biling", {})]:
        method = "GET" if body is None else "POST"
        doc = assert_problem(t.call("A", method, url, json=body), 404, "Not found")
        assert doc["did_you_mean"] == ["billing", "billing2"], doc
        assert doc["detail"] == ("no definition biling (did you mean 'billing' or "
                                 "'billing2'?)"), doc
    doc = assert_problem(t.call("B", "GET", "/v1/definitions/biling"), 404)
    assert doc["did_you_mean"] == ["billings", "billing2"]  # never A's name
    doc = assert_problem(t.call("A", "GET", "/v1/definitions/zzz"), 404)
    assert "did_you_mean" not in doc and doc["detail"] == "no definition zzz"
