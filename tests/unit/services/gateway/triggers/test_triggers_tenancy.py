"""Triggers are scoped by tenant: a tenant's principal stores its trigger as its tenant's
(its runs run as that tenant), reads and deletes only its own (another tenant's is 404 as
an unknown name, and may share its name), and names only definitions it sees; a
principal of every tenant lists every tenant's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gateway_harness import assert_problem
from tenant_harness import SPEC, Tenants, tenants
from trigger_kit import TopicProducer

from services.gateway.triggers.catalog import Catalog
from services.gateway.triggers.runner import Plumbing

TOPICS = {"shop.orders", "orders", "a.b"}


async def listed(settings: object, topic: str) -> bool:
    """The broker's topics, as the test has them."""
    return topic in TOPICS

BODY: dict[str, Any] = {"topic": "shop.orders", "definition": "billing"}


@pytest.fixture
def t(tmp_path: Path) -> Iterator[tuple[Tenants, TopicProducer]]:
    with tenants(tmp_path) as found:
        for who, name in (("A", "billing"), ("*", "common")):
            answer = found.call(who, "PUT", f"/v1/definitions/{name}", json={"workflow": SPEC})
            assert answer.status_code == 201, answer.text
        producer = TopicProducer()
        hw = found.gw.hw
        hw.triggers = Catalog(Plumbing(hw.settings, producer, hw.pool, exists=listed),  # type: ignore[arg-type]
                              run=False)
        yield found, producer


def test_a_tenants_trigger_is_its_own(t: Any) -> None:
    tenants, producer = t
    assert tenants.call("A", "PUT", "/v1/triggers/orders", json=BODY).status_code == 201
    [(_, key, record)] = producer.sent
    assert (key, record.tenant) == (b"A/orders", "A")
    assert tenants.call("A", "GET", "/v1/triggers/orders").json()["tenant"] == "A"
    assert_problem(tenants.call("B", "GET", "/v1/triggers/orders"), 404)
    assert_problem(tenants.call("B", "DELETE", "/v1/triggers/orders"), 404)
    assert tenants.call("B", "GET", "/v1/triggers").json() == {"items": []}


def test_tenants_may_share_a_name_and_every_tenant_lists_them_all(t: Any) -> None:
    tenants, _ = t
    assert tenants.call("A", "PUT", "/v1/triggers/orders", json=BODY).status_code == 201
    other = tenants.call("B", "PUT", "/v1/triggers/orders", json={**BODY,
                                                                  "definition": "common"})
    assert other.status_code == 201, other.text
    listed = tenants.call("*", "GET", "/v1/triggers").json()["items"]
    assert sorted(i["tenant"] for i in listed) == ["A", "B"]
    assert [i["tenant"] for i in tenants.call("A", "GET", "/v1/triggers").json()["items"]] == [
        "A"]


def test_a_trigger_names_only_definitions_its_tenant_sees(t: Any) -> None:
    tenants, producer = t
    refused = assert_problem(tenants.call("B", "PUT", "/v1/triggers/orders", json=BODY), 422)
    assert refused["errors"][0].startswith("definition: ")
    assert producer.sent == []
