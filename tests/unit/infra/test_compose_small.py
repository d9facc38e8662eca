"""infra/docker-compose.small.yml, the small deployment, checked as the full stack's file
is (``test_compose_stack``): it validates against the Compose Specification's schema;
three containers, Kafka and PostgreSQL as the full stack has them and one Headwater
container running ``headwater serve`` (the image's own command) with settings the code
reads and takes, healthy once its ``/ready`` answers, stopped within its graceful stop."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import deploy_settings
import yaml
from dockerfile_facts import REPO, image
from k8s_render import Tools
from stop_windows import MARGIN_S, longest_stop_s
from test_compose_stack import compose, duration_s, ready_url, schema_errors, service_env

SMALL = REPO / "infra" / "docker-compose.small.yml"


def small() -> dict[str, Any]:
    """The small compose file, its ``extends`` resolved from the file each names (a
    service's own keys win, as Compose merges them)."""
    doc: dict[str, Any] = yaml.safe_load(SMALL.read_text())
    for name, service in doc["services"].items():
        base = service.pop("extends", None)
        if base is not None:
            other = yaml.safe_load((SMALL.parent / base["file"]).read_text())
            doc["services"][name] = {**copy.deepcopy(other["services"][base["service"]]),
                                     **service}
    return doc


def test_the_file_validates_against_the_compose_specification(tools: Tools) -> None:
    raw = yaml.safe_load(SMALL.read_text())
    assert schema_errors(tools, raw) == []
    raw["services"]["headwater"]["stop_grace_period"] = 75
    assert any("stop_grace_period" in e for e in schema_errors(tools, raw))


def test_three_containers_kafka_and_postgres_the_full_stacks() -> None:
    doc, full = small(), compose()
    assert set(doc["services"]) == {"kafka", "postgres", "headwater"}
    for name in ("kafka", "postgres"):
        assert doc["services"][name] == full["services"][name], name
        for volume in doc["services"][name].get("volumes", []):
            assert volume.split(":", 1)[0] in doc["volumes"], volume


def test_headwater_serve_runs_the_images_command_with_real_settings() -> None:
    service = small()["services"]["headwater"]
    context = (SMALL.parent / service["build"]["context"]).resolve()
    assert context / service["build"]["dockerfile"] == REPO / "Dockerfile"
    command = service["command"]
    assert command == image().exec_form("CMD"), "the image runs headwater serve"
    argv = deploy_settings.python_form(command)
    assert argv[:3] == ["python", "-m", "services.serve"]
    env = service_env(service)
    assert deploy_settings.module_problem(argv) == ""
    assert deploy_settings.unknown_settings(env) == []
    assert deploy_settings.settings_problem(argv, env) == ""
    assert {d: c["condition"] for d, c in service["depends_on"].items()} == {
        "kafka": "service_healthy", "postgres": "service_healthy"}
    dsn = urlsplit(env["HEADWATER_PG_DSN"])
    assert (dsn.hostname, dsn.port) == ("postgres", 5432)
    advertised = small()["services"]["kafka"]["environment"]["KAFKA_ADVERTISED_LISTENERS"]
    assert f"PLAINTEXT://{env['HEADWATER_KAFKA_BOOTSTRAP']}" in advertised.split(",")


def test_health_check_stop_timeout_and_data_volume() -> None:
    service = small()["services"]["headwater"]
    check = service["healthcheck"]["test"]
    assert check[:5] == ["CMD", "python", "-I", "-S", "-c"]
    assert f"urlopen('{ready_url('headwater', service)}'" in check[-1]
    argv = deploy_settings.python_form(service["command"])
    needed = longest_stop_s(argv, service_env(service)) + MARGIN_S
    assert duration_s(service["stop_grace_period"]) >= needed, f"{needed} s"
    data_dir = service_env(service)["HEADWATER_DATA_DIR"]
    mounts = dict(v.split(":", 1) for v in service["volumes"])
    assert any(Path(data_dir).is_relative_to(target) for target in mounts.values())
    assert service["ports"] == [f"{service_env(service)['HEADWATER_GATEWAY_PORT']}:8080"]
