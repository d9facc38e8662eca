"""Start, health and stop of the Kubernetes Deployments: the gateway's probes on its real
endpoints, a shallow process check for the services without HTTP (run here on live and
stopped processes), stop timeouts above each service's graceful stop as the code bounds
it, a PodDisruptionBudget per Deployment that still lets a node drain, and the Services
the settings point at."""

from __future__ import annotations

import signal
import subprocess
import sys
from urllib.parse import urlsplit

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

from tests.polling import wait_until

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


def process_probe(objects: Objects) -> list[str]:
    """The exec liveness command of the services without HTTP, the same for each."""
    commands = {tuple(container(d)["livenessProbe"]["exec"]["command"])
                for name, d in headwater_deployments(objects).items()
                if name not in HTTP_SERVICES}
    assert len(commands) == 1, commands
    return list(commands.pop())


def test_services_without_http_have_a_shallow_exec_liveness(objects: Objects) -> None:
    for name, deployment in headwater_deployments(objects).items():
        spec = container(deployment)
        if name in HTTP_SERVICES:
            continue
        # Their only port is Prometheus's (HEADWATER_METRICS_PORT): no traffic, so no
        # readiness probe.
        assert [p["name"] for p in spec.get("ports", [])] == ["metrics"], name
        assert "readinessProbe" not in spec, name
        assert spec["livenessProbe"]["exec"]["command"] == process_probe(objects), name


def run_probe(command: list[str], pid: int) -> int:
    """The probe's exit status here, asking about ``pid`` in place of PID 1."""
    assert command[0] == "python" and "/proc/1/stat" in command[-1]
    script = command[-1].replace("/proc/1/stat", f"/proc/{pid}/stat")
    return subprocess.run([sys.executable, *command[1:-1], script], timeout=30).returncode


def state(pid: int) -> str:
    """A process's state letter (proc(5): R running, S sleeping, T stopped, Z zombie)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rpartition(")")[2].split()[0]


def test_the_process_probe_fails_on_a_stopped_process(local: Objects) -> None:
    command = process_probe(local)
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as child:
        try:
            assert run_probe(command, child.pid) == 0
            child.send_signal(signal.SIGSTOP)
            wait_until(lambda: state(child.pid), 10, "the child stopped", until=lambda s: s == "T")
            assert run_probe(command, child.pid) == 1
            child.send_signal(signal.SIGCONT)
            wait_until(lambda: state(child.pid), 10, "the child running",
                       until=lambda s: s in "RS")
            assert run_probe(command, child.pid) == 0
        finally:
            child.kill()


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
