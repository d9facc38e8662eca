"""``/v1/triggers`` under the gateway harness: a ``PUT`` checks the body (every fault
named) and the definition, and stores the trigger on the triggers topic; the same
settings again store nothing; ``GET``, the list and ``DELETE``; a tenant's triggers are
its own."""

from __future__ import annotations

from typing import Any

import pytest
from gateway_harness import Gateway, assert_problem
from trigger_kit import DefinitionPool, TopicProducer

from services.gateway.settings import Settings
from services.gateway.triggers.catalog import Catalog
from services.gateway.triggers.runner import Plumbing

TOPICS = {"shop.orders", "orders", "a.b"}


async def listed(settings: object, topic: str) -> bool:
    """The broker's topics, as the test has them."""
    return topic in TOPICS

BODY: dict[str, Any] = {"topic": "shop.orders", "definition": "ship",
                        "input": {"n": "${value.n}"}, "start": "earliest"}


@pytest.fixture
def connected(gw: Gateway) -> tuple[Gateway, TopicProducer]:
    producer = TopicProducer()
    gw.connect(DefinitionPool(), producer)
    gw.hw.triggers = Catalog(Plumbing(gw.hw.settings, producer, gw.hw.pool, exists=listed),  # type: ignore[arg-type]
                             run=False)
    return gw, producer


def test_a_put_stores_the_trigger_with_its_defaults(connected: Any) -> None:
    gw, producer = connected
    answer = gw.client.put("/v1/triggers/orders", json=BODY)
    assert answer.status_code == 201, answer.text
    doc = answer.json()
    assert doc["name"] == "orders" and doc["tenant"] is None
    assert doc["settings"] == {**BODY, "format": "json", "filter": [], "id": None}
    assert doc["links"] == {"self": "/v1/triggers/orders", "definition": "/v1/definitions/ship"}
    [(topic, key, record)] = producer.sent
    assert (topic, key) == (f"{gw.hw.settings.prefix}.triggers", b"-/orders")
    assert (record.name, record.deleted, record.settings) == ("orders", False, doc["settings"])


def test_the_same_settings_again_store_nothing_and_others_replace_them(connected: Any) -> None:
    gw, producer = connected
    gw.client.put("/v1/triggers/orders", json=BODY)
    again = gw.client.put("/v1/triggers/orders", json=BODY)
    assert again.status_code == 200 and len(producer.sent) == 1
    changed = gw.client.put("/v1/triggers/orders", json={**BODY, "definition": "ship@2"})
    assert changed.status_code == 200, changed.text
    assert len(producer.sent) == 2
    shown = gw.client.get("/v1/triggers/orders").json()
    assert shown["settings"]["definition"] == "ship@2" and shown["lag"] is None


def test_every_fault_of_the_body_is_named(connected: Any) -> None:
    gw, producer = connected
    doc = assert_problem(gw.client.put("/v1/triggers/orders", json={
        "topic": "a b", "format": "xml", "definition": "ship", "extra": 1}), 422,
        "Invalid request")
    assert [e.split(":")[0] for e in doc["errors"]] == ["extra", "topic", "format"]
    assert_problem(gw.client.put("/v1/triggers/orders", content=b"{"), 422)
    assert_problem(gw.client.put("/v1/triggers/-x", json=BODY), 422)
    assert producer.sent == []


def test_an_unknown_or_deleted_definition_is_refused(connected: Any) -> None:
    gw, producer = connected
    unknown = assert_problem(gw.client.put("/v1/triggers/orders", json={
        **BODY, "definition": "shp"}), 422)
    assert unknown["errors"][0].startswith("definition: ")
    gw.hw.pool.deleted = True
    deleted = assert_problem(gw.client.put("/v1/triggers/orders", json=BODY), 422)
    assert "deleted" in deleted["detail"] and producer.sent == []


def test_get_list_and_delete(connected: Any) -> None:
    gw, producer = connected
    assert_problem(gw.client.get("/v1/triggers/orders"), 404)
    assert_problem(gw.client.delete("/v1/triggers/orders"), 404)
    gw.client.put("/v1/triggers/orders", json=BODY)
    gw.client.put("/v1/triggers/audit", json={**BODY, "format": "bytes", "input": "${value}"})
    assert [t["name"] for t in gw.client.get("/v1/triggers").json()["items"]] == [
        "audit", "orders"]
    deleted = gw.client.delete("/v1/triggers/orders")
    assert deleted.status_code == 200 and deleted.json() == {"name": "orders", "deleted": True}
    assert producer.sent[-1][2].deleted and producer.sent[-1][2].settings is None
    assert_problem(gw.client.get("/v1/triggers/orders"), 404)
    assert [t["name"] for t in gw.client.get("/v1/triggers").json()["items"]] == ["audit"]


def test_before_the_triggers_topic_is_read_the_routes_answer_503(gw: Gateway) -> None:
    gw.connect(DefinitionPool(), TopicProducer())
    assert_problem(gw.client.get("/v1/triggers"), 503)
    assert_problem(gw.client.put("/v1/triggers/orders", json=BODY), 503)


def test_a_gateway_runs_the_consumers_unless_told_not_to(monkeypatch: pytest.MonkeyPatch,
                                                         ) -> None:
    monkeypatch.delenv("HEADWATER_TRIGGERS", raising=False)
    assert Settings.from_env().run_triggers
    for off in ("off", "OFF", "0", "false"):
        monkeypatch.setenv("HEADWATER_TRIGGERS", off)
        assert not Settings.from_env().run_triggers


@pytest.mark.parametrize(("topic", "fault"), [
    ("{p}.events", "one of this deployment's own topics"),
    ("{p}.tasks.cpu", "one of this deployment's own topics"),
    ("{p}-coordinator-workflows-changelog", "one of this deployment's own topics"),
    ("__consumer_offsets", "one of this deployment's own topics"),
    ("no.such.topic", "no topic 'no.such.topic' on the broker")])
def test_a_topic_of_the_deployment_or_none_at_all_is_refused(connected: Any, topic: str,
                                                             fault: str) -> None:
    """A trigger on the deployment's history would start runs that write more history,
    without end; one on a missing topic would have the broker create it."""
    gw, producer = connected
    topic = topic.format(p=gw.hw.settings.prefix)
    answer = gw.client.put("/v1/triggers/loop", json={**BODY, "topic": topic})
    doc = assert_problem(answer, 422, "Invalid request")
    assert doc["errors"][0].startswith("topic: ") and fault in doc["errors"][0], doc
    assert producer.sent == []
