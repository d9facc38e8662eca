"""Kafka with SASL: the security settings against a real broker that demands them.

A private KRaft broker (``infra/kafka.sh`` with ``HEADWATER_KAFKA_SASL_PORT``: a
SASL_PLAINTEXT listener, mechanism PLAIN, one user) on its own ports and
``HEADWATER_HOME``, stopped by its pid at the end. Through that listener: topics made
with ``ensure_topics``, a record produced with ``make_producer`` and read back with a
``TopicReader``; a wrong password and no SASL at all refused with a clear error; then a
whole deployment (coordinator, gateway, worker, every client they build) running a
workflow with the settings read from the environment, the password from a file.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import ConsumerRecord
from aiokafka.errors import KafkaConnectionError
from stackkit import private_stack, require_services

from faultsuite.infra import SHARED_LIBS, PrivateInfra, private_infra
from headwater.client import Client
from ops.sandbox import free_port
from services.common.kafka.client import ensure_topics, make_producer
from services.common.kafka.security import KafkaAccessRefused, KafkaSecurity
from services.common.settings import CommonSettings
from services.common.topic_reader import TopicReader
from tests.polling import scaled

USER = "headwater"


def require_java_and_jars() -> None:
    """Fail on CI (skip elsewhere) without Java or the broker's downloaded jars."""
    libs = Path(os.environ.get("HEADWATER_KAFKA_LIBS") or SHARED_LIBS)
    missing = [what for what, ok in (("java", shutil.which("java") is not None),
                                     (f"the Kafka jars in {libs}", (libs / ".stamp").exists()))
               if not ok]
    if missing:
        message = f"needs {' and '.join(missing)}; run `bash infra/stack.sh up` once"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


class SaslBroker:
    """The private broker: its SASL listener's address and its one user's password."""

    def __init__(self, infra: PrivateInfra, sasl_port: int, password: str) -> None:
        self.infra, self.password = infra, password
        self.bootstrap = f"127.0.0.1:{sasl_port}"

    def security(self, password: str | None = None) -> KafkaSecurity:
        """SASL_PLAINTEXT/PLAIN as ``USER`` with ``password`` (default: the right one)."""
        return KafkaSecurity("SASL_PLAINTEXT", "PLAIN", USER, password or self.password)

    def settings(self, password: str | None = None) -> CommonSettings:
        """Settings on the SASL listener with a fresh topic prefix."""
        return CommonSettings(bootstrap=self.bootstrap, prefix=f"t{uuid.uuid4().hex[:10]}",
                              partitions=2, kafka_security=self.security(password))


@pytest.fixture(scope="module")
def broker() -> Iterator[SaslBroker]:
    require_java_and_jars()
    sasl_port, password = free_port(), secrets.token_urlsafe(16)
    with pytest.MonkeyPatch.context() as env:
        # infra/kafka.sh reads these; private_infra passes it this process's environment.
        env.setenv("HEADWATER_KAFKA_SASL_PORT", str(sasl_port))
        env.setenv("HEADWATER_KAFKA_SASL_USERS", f"{USER}:{password}")
        with private_infra("sasl", postgres=False) as infra:  # stops the broker by pid
            yield SaslBroker(infra, sasl_port, password)


async def test_a_round_trip_through_the_sasl_listener(broker: SaslBroker) -> None:
    settings = broker.settings()
    topic = settings.topics.submissions
    await ensure_topics(settings, [topic], timeout_s=scaled(60))
    producer = make_producer(settings)
    await producer.start()
    try:
        sent = await producer.send_and_wait(topic, b"over SASL", key=b"k")
    finally:
        await producer.stop()
    async with TopicReader(settings.bootstrap, security=settings.kafka_security) as reader:
        records = await reader.read_to_end(topic)
    assert [(r.key, r.value, r.partition, r.offset) for r in records] == [
        (b"k", b"over SASL", sent.partition, sent.offset)]


async def test_a_wrong_password_fails_at_once_with_a_clear_error(broker: SaslBroker) -> None:
    settings = broker.settings(password="not-the-password")
    started = time.monotonic()
    with pytest.raises(KafkaAccessRefused) as refused:
        await ensure_topics(settings, [settings.topics.submissions], timeout_s=scaled(60))
    took = time.monotonic() - started
    message = str(refused.value)
    assert f"refused SASL PLAIN user '{USER}'" in message, message
    assert "HEADWATER_KAFKA_SASL_PASSWORD" in message and "not-the-password" not in message
    assert took < scaled(20), f"took {took:.1f} s: retried a refused password"
    with pytest.raises(KafkaAccessRefused):
        async with TopicReader(settings.bootstrap, security=settings.kafka_security):
            pass


async def test_a_client_without_sasl_is_not_let_in(broker: SaslBroker) -> None:
    """The listener does demand SASL: the round trip above is not plaintext's."""
    reader = TopicReader(broker.bootstrap, security=KafkaSecurity(), timeout_s=10)
    with pytest.raises(KafkaConnectionError):
        await asyncio.wait_for(reader.start(), scaled(60))
    await reader.stop()


def test_a_deployment_runs_a_workflow_with_the_settings_from_the_environment(
        broker: SaslBroker, tmp_path: Path) -> None:
    """Coordinator (faust's ``broker_credentials``), gateway (producer, admin, topic
    readers) and worker (consumers, producer) on the SASL listener alone."""
    require_services()  # the deployment's database is on the shared PostgreSQL
    secret = tmp_path / "kafka-password"
    secret.write_text(broker.password + "\n")
    with pytest.MonkeyPatch.context() as env:
        for key, value in {"HEADWATER_KAFKA_BOOTSTRAP": broker.bootstrap,
                           "HEADWATER_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
                           "HEADWATER_KAFKA_SASL_MECHANISM": "PLAIN",
                           "HEADWATER_KAFKA_SASL_USERNAME": USER,
                           "HEADWATER_KAFKA_SASL_PASSWORD_FILE": str(secret)}.items():
            env.setenv(key, value)
        with private_stack(tmp_path / "stack") as stack, Client(stack.gateway, retries=60) as hw:
            spec = {"name": "sasl", "nodes": [{"id": "s", "task": "e2e.sleep",
                                               "input": {"seconds": 0.1}}],
                    "output": "${nodes.s.output}"}
            submitted = hw.submit(spec)
            assert hw.result(submitted.id, timeout=scaled(120)) == 0.1, stack.logs()
            assert stack.env["HEADWATER_KAFKA_BOOTSTRAP"] == broker.bootstrap
            history = asyncio.run(_events(broker, stack.topics.events))
    assert any(submitted.id.encode() == r.key for r in history), "not on the SASL broker"


async def _events(broker: SaslBroker, topic: str) -> list[ConsumerRecord]:
    """The records of ``topic`` on the private broker."""
    async with TopicReader(broker.bootstrap, security=broker.security()) as reader:
        return await reader.read_to_end(topic)


def test_a_worker_with_a_wrong_password_stops_naming_the_setting(broker: SaslBroker) -> None:
    """A service refused by the broker ends at start-up with the reason, not retrying."""
    env = {**os.environ, "HEADWATER_KAFKA_BOOTSTRAP": broker.bootstrap,
           "HEADWATER_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
           "HEADWATER_KAFKA_SASL_MECHANISM": "PLAIN", "HEADWATER_KAFKA_SASL_USERNAME": USER,
           "HEADWATER_KAFKA_SASL_PASSWORD": "not-the-password",
           "HEADWATER_TOPIC_PREFIX": f"t{uuid.uuid4().hex[:10]}",
           "HEADWATER_METRICS_PORT": str(free_port()),
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent),
                                          os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "services.worker", "--queue", "cpu",
                           "--tasks", "e2e_tasks"], env=env, capture_output=True, text=True,
                          timeout=scaled(60), check=False)
    assert done.returncode != 0
    assert f"refused SASL PLAIN user '{USER}'" in done.stderr, done.stderr[-3000:]
    assert "not-the-password" not in done.stdout + done.stderr
