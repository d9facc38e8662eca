"""infra/docker-compose.yml, checked without a Docker engine: it validates against the
Compose Specification's schema (compose-go's, as Docker Compose uses it); every
Headwater service runs the repository's image with a real command, settings the code
reads and takes, a health check and a stop timeout above its graceful stop; Kafka is a
KRaft node and PostgreSQL the projection's database, both healthy before the services
start; the host ports are the local stack's."""

from __future__ import annotations

import copy
import json
import posixpath
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import deploy_settings
import jsonschema_rs
import pytest
import yaml
from dockerfile_facts import REPO, image
from k8s_render import Tools
from stop_windows import MARGIN_S, longest_stop_s

from headwater.client.http import DEFAULT_PORT
from services.common.metrics import DEFAULT_PORTS
from services.common.settings import DEFAULT_BOOTSTRAP, DEFAULT_PG_DSN

COMPOSE = REPO / "infra" / "docker-compose.yml"
SCHEMA = "schema/compose-spec.json"
"""The Compose Specification's JSON schema in the compose-go module."""
SERVICES = {"gateway": "services.gateway", "coordinator": "services.coordinator",
            "projector": "services.projector", "worker": "services.worker"}
DURATION = re.compile(r"(\d+)(h|m|s|ms)")
UNITS_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def compose() -> dict[str, Any]:
    """The compose file, anchors and merge keys resolved."""
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


def duration_s(text: str) -> float:
    """A Compose duration (``1m30s``, Go's notation) in seconds."""
    assert DURATION.sub("", text) == "", text
    return sum(int(n) * UNITS_S[unit] for n, unit in DURATION.findall(text))


def headwater(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The services that run the Headwater image."""
    images = {s.get("image") for s in doc["services"].values() if "build" in s}
    return {n: s for n, s in doc["services"].items() if s.get("image") in images}


def schema_errors(tools: Tools, doc: dict[str, Any]) -> list[str]:
    """What the Compose Specification's schema says of ``doc``."""
    schema = json.loads((Path(tools.compose_go_dir) / SCHEMA).read_text())
    validator = jsonschema_rs.validator_for(schema)
    return [f"{'.'.join(map(str, e.instance_path))}: {e.message}"
            for e in validator.iter_errors(doc)]


def test_the_file_validates_against_the_compose_specification(tools: Tools) -> None:
    assert schema_errors(tools, compose()) == []
    broken = copy.deepcopy(compose())
    broken["services"]["gateway"]["healtcheck"] = broken["services"]["gateway"].pop(
        "healthcheck")
    broken["services"]["worker"]["stop_grace_period"] = 45
    errors = schema_errors(tools, broken)
    assert any("'healtcheck' was unexpected" in e for e in errors), errors
    assert any('stop_grace_period: 45 is not of type "string"' in e for e in errors), errors


def service_env(service: dict[str, Any]) -> dict[str, str]:
    """A Headwater container's ``HEADWATER_*`` environment: the image's, the service's."""
    merged = {**image().env, **{k: str(v) for k, v in service["environment"].items()}}
    return {k: v for k, v in merged.items() if k.startswith("HEADWATER_")}


def test_every_service_runs_the_image_with_real_commands_and_settings() -> None:
    services = headwater(compose())
    assert {n: s["command"][2] for n, s in services.items()} == SERVICES
    for name, service in services.items():
        context = (COMPOSE.parent / service["build"]["context"]).resolve()
        assert context / service["build"]["dockerfile"] == REPO / "Dockerfile", name
        command, env = service["command"], service_env(service)
        assert deploy_settings.module_problem(command) == "", name
        assert deploy_settings.unknown_settings(env) == [], name
        assert deploy_settings.settings_problem(command, env) == "", name
        assert {d: c["condition"] for d, c in service["depends_on"].items()} == {
            "kafka": "service_healthy", "postgres": "service_healthy"}, name


def ready_url(name: str, service: dict[str, Any]) -> str:
    """Where a Headwater container answers ``/ready``: the gateway on its HTTP port, the
    others on their metrics port (``HEADWATER_METRICS_PORT``, else their default)."""
    env = service_env(service)
    if service["command"][-1:] == ["services.gateway"] or name == "gateway":
        return f"http://127.0.0.1:{env['HEADWATER_GATEWAY_PORT']}/ready"
    module = deploy_settings.python_form(service["command"])[2]
    port = env.get("HEADWATER_METRICS_PORT", DEFAULT_PORTS[module.rsplit(".", 1)[1]])
    return f"http://127.0.0.1:{port}/ready"


def test_health_checks_and_stop_timeouts() -> None:
    """Each container is healthy once its ``/ready`` answers 200 (a ``urlopen`` fails
    on any other status), and stops within its graceful stop."""
    for name, service in headwater(compose()).items():
        check = service["healthcheck"]["test"]
        assert check[:5] == ["CMD", "python", "-I", "-S", "-c"], name
        assert f"urlopen('{ready_url(name, service)}'" in check[-1], name
        needed = longest_stop_s(service["command"], service_env(service)) + MARGIN_S
        assert duration_s(service["stop_grace_period"]) >= needed, f"{name}: {needed} s"


def test_the_coordinator_keeps_its_data_on_a_volume_and_projects_apart() -> None:
    doc = compose()
    coordinator = doc["services"]["coordinator"]
    data_dir = service_env(coordinator)["HEADWATER_DATA_DIR"]
    volumes = dict(v.split(":", 1) for v in coordinator["volumes"])
    assert any(posixpath.commonpath([target, data_dir]) == target
               for target in volumes.values()), volumes
    assert set(volumes) <= set(doc["volumes"])
    assert service_env(coordinator)["HEADWATER_PROJECTION"] == "off"
    assert "projector" in doc["services"]


def test_kafka_and_postgres_are_what_the_services_are_told() -> None:
    doc = compose()
    kafka, postgres = doc["services"]["kafka"], doc["services"]["postgres"]
    assert "controller" in kafka["environment"]["KAFKA_PROCESS_ROLES"].split(",")
    assert "healthcheck" in kafka and "healthcheck" in postgres
    advertised = kafka["environment"]["KAFKA_ADVERTISED_LISTENERS"].split(",")
    for name, service in headwater(doc).items():
        env = service_env(service)
        assert f"PLAINTEXT://{env['HEADWATER_KAFKA_BOOTSTRAP']}" in advertised, name
        dsn = urlsplit(env["HEADWATER_PG_DSN"])
        assert (dsn.hostname, dsn.port) == ("postgres", 5432), name
        assert dsn.path == f"/{postgres['environment']['POSTGRES_DB']}", name


@pytest.mark.parametrize(("service", "default"), [
    ("kafka", DEFAULT_BOOTSTRAP), ("postgres", DEFAULT_PG_DSN),
    ("gateway", f"http://127.0.0.1:{DEFAULT_PORT}")])
def test_host_ports_are_the_local_stacks(service: str, default: str) -> None:
    """Host tools find each part where the local stack (infra/stack.sh) puts it."""
    port = urlsplit(default if "//" in default else f"//{default}").port
    published = [p.split(":")[0] for p in compose()["services"][service]["ports"]]
    assert published == [str(port)]
