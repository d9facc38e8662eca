"""The triggers topic read into the catalog: the last record of a key is its trigger, a
record at or before the key's last offset changes nothing (the writer applies its own
record at once and reads it again later), and a trigger's consumer is started, started
again for new settings, and stopped once deleted."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from trigger_kit import BODY

from headwater.trigger_records import TriggerStored
from services.gateway.settings import Settings
from services.gateway.triggers import catalog as catalog_module
from services.gateway.triggers.catalog import Catalog
from services.gateway.triggers.runner import Plumbing

DOC = {"topic": "shop.orders", "format": "json", "filter": [], "input": "${value}",
       "id": None, "definition": "ship", "start": "latest"}


class Runner:
    """Stands in for ``TriggerRunner``: keeps what happened to each."""

    events: ClassVar[list[tuple[str, str, Any]]] = []

    def __init__(self, settings: Any, key: str, plumbing: Any) -> None:
        self.settings, self.key = settings, key

    def start(self) -> None:
        Runner.events.append(("start", self.key, self.settings.definition))

    async def stop(self) -> None:
        Runner.events.append(("stop", self.key, self.settings.definition))


@pytest.fixture
def catalog(monkeypatch: pytest.MonkeyPatch) -> Catalog:
    monkeypatch.setattr(catalog_module, "TriggerRunner", Runner)
    Runner.events = []
    return Catalog(Plumbing(Settings(bootstrap="127.0.0.1:9"), None, None))  # type: ignore[arg-type]


def _stored(definition: str = "ship", deleted: bool = False, tenant: str | None = None,
            ) -> TriggerStored:
    return TriggerStored("orders", tenant, None if deleted else {**DOC, "definition": definition},
                         deleted, 1)


async def test_consumers_start_restart_and_stop_with_the_records(catalog: Catalog) -> None:
    await catalog.take(0, _stored())
    await catalog.take(1, _stored())  # the same settings: left running
    await catalog.take(2, _stored("ship@2"))
    await catalog.take(3, _stored(deleted=True))
    assert Runner.events == [("start", "-/orders", "ship"), ("stop", "-/orders", "ship"),
                             ("start", "-/orders", "ship@2"), ("stop", "-/orders", "ship@2")]
    assert catalog.live("-/orders") is None and catalog.all_live() == []


async def test_a_record_at_or_before_the_last_offset_is_ignored(catalog: Catalog) -> None:
    await catalog.take(5, _stored("ship@2"))
    await catalog.take(5, _stored("ship@2"))
    await catalog.take(4, _stored(deleted=True))
    live = catalog.live("-/orders")
    assert live is not None and live.settings["definition"] == "ship@2"
    assert Runner.events == [("start", "-/orders", "ship@2")]


async def test_tenants_keep_their_triggers_apart(catalog: Catalog) -> None:
    await catalog.take(0, _stored(tenant="acme"))
    await catalog.take(1, _stored(tenant="other", definition="ship@1"))
    assert [r.tenant for r in catalog.all_live()] == ["acme", "other"]
    assert {key for _, key, _ in Runner.events} == {"acme/orders", "other/orders"}


async def test_settings_this_gateway_cannot_read_are_not_run(catalog: Catalog) -> None:
    await catalog.take(0, TriggerStored("orders", None, {**BODY, "format": "xml"}, False, 1))
    assert Runner.events == [] and catalog.live("-/orders") is not None


async def test_stop_stops_every_consumer(catalog: Catalog) -> None:
    await catalog.take(0, _stored())
    await catalog.stop()
    assert Runner.events[-1] == ("stop", "-/orders", "ship") and catalog.runners == {}
