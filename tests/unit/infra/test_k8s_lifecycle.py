"""Start, health and stop of the Kubernetes Deployments: the gateway's probes on its real
endpoints, the other services' on their metrics port (answered here by the real
endpoint), stop timeouts above each service's graceful stop as the code bounds
it, a PodDisruptionBudget per Deployment that still lets a node drain, and the Services
the settings point at."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
from k8s_objects import (
    argv,
    container,
    headwater_deployments,
    headwater_env,
    of_kind,
    one,
    pod_spec,
    selects,
)
from k8s_render import Objects
from starlette.testclient import TestClient
from stop_windows import MARGIN_S, longest_stop_s

from services.common.metrics import DEFAULT_PORTS

HTTP_SERVICES = {"headwater-gateway"}


def probe_answers() -> dict[str, int]:
    """The status of ``/health`` and ``/ready`` from the gateway's app before it has
    connected to anything (its lifespan not started): alive, not ready."""
    from services.gateway.app import create_app
    from services.gateway.settings import Settings

    client = TestClient(create_app(Settings()))
    return {path: client.get(path).status_code for path in ("/health", "/ready")}


def test_gateway_probes_use_its_health_and_readiness(objects: Objects) -> None:
    gateway = headwater_deployments(objects)["headwater-gateway"]
    spec, env = container(gateway), headwater_env(objects, gateway)
    ports = {p["name"]: p["containerPort"] for p in spec["ports"]}
    assert ports == {"http": int(env["HEADWATER_GATEWAY_PORT"])}
    probes = {kind: spec[kind]["httpGet"] for kind in
              ("startupProbe", "livenessProbe", "readinessProbe")}
    assert probes == {"startupProbe": {"path": "/health", "port": "http"},
                      "livenessProbe": {"path": "/health", "port": "http"},
                      "readinessProbe": {"path": "/ready", "port": "http"}}
    assert probe_answers() == {"/health": 200, "/ready": 503}
    # /ready may take HEADWATER_READY_TIMEOUT (1 s by default) to answer.
    ready_timeout_s = float(env.get("HEADWATER_READY_TIMEOUT", "1"))
    assert spec["readinessProbe"]["timeoutSeconds"] > ready_timeout_s


def metrics_probe_answers() -> dict[str, int]:
    """The status of ``/health`` and ``/ready`` on a service's metrics port
    (``services.common.metrics``) in a process whose parts have not joined anything yet:
    alive, not ready."""
    from services.common import metrics
    from services.common.probes import Probes

    server, _ = metrics.start_http_server(0, "127.0.0.1")
    before, metrics.PROBES = metrics.PROBES, Probes()
    try:
        port = server.server_address[1]
        return {path: httpx.get(f"http://127.0.0.1:{port}{path}", timeout=5).status_code
                for path in ("/health", "/ready")}
    finally:
        metrics.PROBES = before
        server.shutdown()
        server.server_close()


def test_services_without_http_probe_on_their_metrics_port(objects: Objects) -> None:
    """Liveness on the shallow ``/health`` (a start-up probe first), readiness on
    ``/ready``, both on the port named ``metrics``: the one the service listens on."""
    assert metrics_probe_answers() == {"/health": 200, "/ready": 503}
    for name, deployment in headwater_deployments(objects).items():
        if name in HTTP_SERVICES:
            continue
        spec, env = container(deployment), headwater_env(objects, deployment)
        ports = {p["name"]: p["containerPort"] for p in spec.get("ports", [])}
        assert list(ports) == ["metrics"], name
        assert str(ports["metrics"]) == env.get("HEADWATER_METRICS_PORT", str(
            DEFAULT_PORTS[argv(deployment)[2].rsplit(".", 1)[1]])), name
        assert env.get("HEADWATER_METRICS_HOST") == "0.0.0.0", f"{name}: probes unreachable"
        probes = {kind: spec[kind]["httpGet"] for kind in
                  ("startupProbe", "livenessProbe", "readinessProbe")}
        assert probes == {"startupProbe": {"path": "/health", "port": "metrics"},
                          "livenessProbe": {"path": "/health", "port": "metrics"},
                          "readinessProbe": {"path": "/ready", "port": "metrics"}}, name


def test_grace_periods_exceed_each_graceful_stop(objects: Objects) -> None:
    short = {}
    for name, deployment in headwater_deployments(objects).items():
        grace = pod_spec(deployment)["terminationGracePeriodSeconds"]
        needed = longest_stop_s(argv(deployment), headwater_env(objects, deployment)) + MARGIN_S
        if grace < needed:
            short[name] = f"{grace} s < {needed} s"
    assert short == {}


def test_every_deployment_has_a_disruption_budget_that_lets_nodes_drain(
        objects: Objects) -> None:
    budgets = of_kind(objects, "PodDisruptionBudget").values()
    for name, deployment in headwater_deployments(objects).items():
        mine = [b for b in budgets if selects(b["spec"]["selector"], deployment)]
        assert len(mine) == 1, f"{name}: {len(mine)} budgets"
        spec = mine[0]["spec"]
        replicas = deployment["spec"].get("replicas", 1)
        assert spec.get("maxUnavailable", 0) >= 1 or spec["minAvailable"] < replicas, name


def test_the_settings_point_at_services_of_the_render(objects: Objects) -> None:
    deployments = headwater_deployments(objects)
    gateway = one(objects, "Service", "headwater-gateway")
    assert selects(gateway["spec"]["selector"], deployments["headwater-gateway"])
    assert [p["targetPort"] for p in gateway["spec"]["ports"]] == ["http"]
    services = of_kind(objects, "Service")
    for name, deployment in deployments.items():
        env = headwater_env(objects, deployment)
        for host_port in env["HEADWATER_KAFKA_BOOTSTRAP"].split(","):
            host, port = host_port.rsplit(":", 1)
            assert port in {str(p["port"]) for p in services[host]["spec"]["ports"]}, name
        if "worker" in name:
            url = urlsplit(env["HEADWATER_GATEWAY_URL"])
            assert url.hostname == "headwater-gateway" and (url.port or 80) == 80, name
        if "HEADWATER_PG_DSN" in env:
            assert urlsplit(env["HEADWATER_PG_DSN"]).hostname in services, name


def test_the_local_kafka_advertises_its_service(local: Objects) -> None:
    kafka = container(one(local, "StatefulSet", "kafka"))
    env = {v["name"]: v["value"] for v in kafka["env"]}
    assert "controller" in env["KAFKA_PROCESS_ROLES"].split(",")  # KRaft, no ZooKeeper
    config = next(c for n, c in of_kind(local, "ConfigMap").items()
                  if n.startswith("headwater-config"))
    assert f"PLAINTEXT://{config['data']['HEADWATER_KAFKA_BOOTSTRAP']}" in env[
        "KAFKA_ADVERTISED_LISTENERS"].split(",")
