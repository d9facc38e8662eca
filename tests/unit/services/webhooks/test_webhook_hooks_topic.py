"""The deliverer's reading of the webhooks topic (``runner.py``): the last record of
each name, undecodable records and records of another type skipped; a record PostgreSQL
refuses (a value a foreign producer wrote that text cannot hold) is skipped alone, the
others written, never retried for ever."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from headwater import codec
from headwater.core import events as ev
from headwater.webhooks import WebhookStored
from services.webhooks.runner import WebhookSettings, last_records, write_hooks


def hook(name: str, at_ms: int, url: str = "http://x.test/h") -> WebhookStored:
    return WebhookStored(name, None, url, ("run.failed",), {}, "s" * 16, 3, 100, 1000,
                         False, 1, at_ms)


def test_the_last_record_of_each_name_and_nothing_else() -> None:
    values = [codec.encode(hook("a", 1)), b"junk", codec.encode(hook("b", 2)), None,
              codec.encode(ev.CancelRequested("wf", 1, "why")), codec.encode(hook("a", 3))]
    assert last_records(values) == [hook("a", 3), hook("b", 2)]


class Pool:
    def __init__(self) -> None:
        self.written: list[str] = []

    async def executemany(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        if any("\x00" in row[2] for row in rows):
            raise asyncpg.CharacterNotInRepertoireError("invalid byte sequence: 0x00")
        self.written += [row[0] for row in rows]


async def test_a_record_postgresql_refuses_is_skipped_alone() -> None:
    pool = Pool()
    await write_hooks(pool, [hook("a", 1), hook("bad", 1, "http://x\x00"), hook("c", 1)])  # type: ignore[arg-type]
    assert pool.written == ["a", "c"]


def test_the_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert WebhookSettings.from_env() == WebhookSettings(True, 10.0)
    monkeypatch.setenv("HEADWATER_WEBHOOKS", "off")
    monkeypatch.setenv("HEADWATER_WEBHOOK_TIMEOUT_S", "2.5")
    assert WebhookSettings.from_env() == WebhookSettings(False, 2.5)
    monkeypatch.setenv("HEADWATER_WEBHOOK_TIMEOUT_S", "0")
    with pytest.raises(ValueError, match="HEADWATER_WEBHOOK_TIMEOUT_S must be in"):
        WebhookSettings.from_env()
