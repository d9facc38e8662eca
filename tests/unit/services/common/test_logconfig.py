"""Every service's logging (``services.common.logconfig``): the Kafka clients' loggers at
WARNING unless ``HEADWATER_KAFKA_LOG_LEVEL`` says otherwise; the logs topic's retention."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from services.common import logconfig, logs_topic


@pytest.fixture(autouse=True)
def kept() -> Iterator[None]:
    levels = {n: logging.getLogger(n).level for n in logconfig.KAFKA_LOGGERS}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def test_the_kafka_clients_log_warnings_only_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEADWATER_KAFKA_LOG_LEVEL", raising=False)
    logconfig.configure()
    assert logging.getLogger("aiokafka").getEffectiveLevel() == logging.WARNING
    assert logging.getLogger("aiokafka.consumer.group_coordinator").getEffectiveLevel() == (
        logging.WARNING)
    assert logging.getLogger("kafka").level == logging.WARNING
    monkeypatch.setenv("HEADWATER_KAFKA_LOG_LEVEL", "info")
    logconfig.configure()
    assert logging.getLogger("aiokafka").level == logging.INFO


def test_a_level_that_names_none_is_warning(monkeypatch: pytest.MonkeyPatch,
                                            caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("HEADWATER_KAFKA_LOG_LEVEL", "loud")
    with pytest.raises(ValueError, match="HEADWATER_KAFKA_LOG_LEVEL must be one of"):
        logconfig.kafka_log_level()
    logconfig.configure()
    assert logging.getLogger("aiokafka").level == logging.WARNING
    assert "HEADWATER_KAFKA_LOG_LEVEL" in caplog.text


def test_the_logs_topics_retention(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEADWATER_LOGS_RETENTION_MS", raising=False)
    assert logs_topic.logs_retention_ms() == 7 * 24 * 3600 * 1000
    monkeypatch.setenv("HEADWATER_LOGS_RETENTION_MS", "-1")
    assert logs_topic.logs_retention_ms() == -1
    monkeypatch.setenv("HEADWATER_LOGS_RETENTION_MS", "0")
    with pytest.raises(ValueError, match="HEADWATER_LOGS_RETENTION_MS"):
        logs_topic.logs_retention_ms()
