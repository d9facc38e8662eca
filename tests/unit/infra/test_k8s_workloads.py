"""The Kubernetes Deployments run Headwater as the image and the code expect: a real
module per service, settings the code reads and takes, the image's non-root user with a
writable data directory, resources, no service links, configuration from the ConfigMap
and the database DSN from a Secret, only where it is used."""

from __future__ import annotations

import posixpath
from pathlib import Path

import deploy_settings
from dockerfile_facts import image
from k8s_objects import argv, container, headwater_deployments, headwater_env, of_kind, pod_spec
from k8s_render import Objects

SERVICES = {
    "headwater-gateway": "services.gateway",
    "headwater-coordinator": "services.coordinator",
    "headwater-projector": "services.projector",
    "headwater-worker-cpu": "services.worker",
    "headwater-worker-gpu": "services.worker",
}
DSN_USERS = {"headwater-gateway", "headwater-projector"}
"""The Deployments whose process uses PostgreSQL (the coordinators run with
``HEADWATER_PROJECTION=off``; workers and their task code never need it)."""


def test_every_service_has_its_deployment(objects: Objects) -> None:
    deployments = headwater_deployments(objects)
    assert {name: argv(d)[2] for name, d in deployments.items()} == SERVICES
    assert [argv(d)[3:5] for name, d in deployments.items() if "worker" in name] == [
        ["--queue", "cpu"], ["--queue", "gpu"]]


def test_commands_are_shipped_modules_and_settings_parse(objects: Objects) -> None:
    problems = []
    for name, deployment in headwater_deployments(objects).items():
        command, env = argv(deployment), headwater_env(objects, deployment)
        problems += [f"{name}: {p}" for p in (deploy_settings.module_problem(command),
                                              deploy_settings.settings_problem(command, env))
                     if p]
        problems += [f"{name}: {n} is read by no code"
                     for n in deploy_settings.unknown_settings(env)]
    assert problems == []


def test_commands_import_their_modules_and_tasks(local: Objects) -> None:
    """Each command's module and ``--tasks`` modules import in a fresh interpreter with
    the container's settings (the local stack's preflight)."""
    commands = {name: (argv(d), headwater_env(local, d))
                for name, d in headwater_deployments(local).items()}
    assert deploy_settings.import_failures(commands) == {}


def test_pods_run_as_the_images_user_with_a_writable_data_dir(objects: Objects) -> None:
    uid, gid = (int(part) for part in image().user.split(":"))
    for name, deployment in headwater_deployments(objects).items():
        pod, spec = pod_spec(deployment), container(deployment)
        context = dict(pod["securityContext"])
        assert context.pop("seccompProfile") == {"type": "RuntimeDefault"}, name
        assert context == {"runAsNonRoot": True, "runAsUser": uid, "runAsGroup": gid,
                           "fsGroup": gid}, name
        assert spec["securityContext"] == {"allowPrivilegeEscalation": False,
                                           "readOnlyRootFilesystem": True,
                                           "capabilities": {"drop": ["ALL"]}}, name
        volumes = {v["name"]: v for v in pod["volumes"]}
        claims = {t["metadata"]["name"]: {"persistentVolumeClaim": t["spec"]}
                  for t in deployment["spec"].get("volumeClaimTemplates", [])}
        mounts = {m["mountPath"]: {**volumes, **claims}[m["name"]] for m in spec["volumeMounts"]}
        secret = {p for p, v in mounts.items() if "secret" in v}
        assert all(m["readOnly"] for m in spec["volumeMounts"]
                   if m["mountPath"] in secret), name  # the API keys, read-only
        assert all("emptyDir" in v or "persistentVolumeClaim" in v
                   for p, v in mounts.items() if p not in secret), name
        if name == "headwater-coordinator":  # its table outlives the pod (RocksDB)
            assert "persistentVolumeClaim" in mounts["/data"], mounts
        data_dir = headwater_env(objects, deployment)["HEADWATER_DATA_DIR"]
        writable = [p for p in mounts if posixpath.commonpath([p, data_dir]) == p]
        assert writable and "/tmp" in mounts, f"{name}: {data_dir} or /tmp not writable"
        assert pod["automountServiceAccountToken"] is False, name


def service_link_names(objects: Objects) -> set[str]:
    """The variables Kubernetes' service links would give every pod of the namespace:
    ``<NAME>_SERVICE_HOST``, ``<NAME>_SERVICE_PORT``, ``<NAME>_PORT`` and more
    (Kubernetes, "Service", discovering services: environment variables)."""
    names = set()
    for service in of_kind(objects, "Service"):
        stem = service.upper().replace("-", "_")
        names |= {f"{stem}_SERVICE_HOST", f"{stem}_SERVICE_PORT", f"{stem}_PORT"}
    return names


def test_service_links_are_off_where_they_would_be_settings(objects: Objects) -> None:
    """A Service named ``headwater-gateway`` makes ``HEADWATER_GATEWAY_PORT=tcp://...``
    appear in every pod, where the gateway and the workers read it as a port; the
    Kafka image reads ``KAFKA_*`` (``KAFKA_PORT``) as broker settings."""
    collisions = service_link_names(objects) & deploy_settings.settings_read_by_code()
    assert "HEADWATER_GATEWAY_PORT" in collisions
    pods = [*of_kind(objects, "Deployment").values(), *of_kind(objects, "StatefulSet").values()]
    assert [p["metadata"]["name"] for p in pods
            if pod_spec(p).get("enableServiceLinks") is not False] == []


def test_every_container_has_requests_and_a_memory_limit(objects: Objects) -> None:
    for workload in [*of_kind(objects, "Deployment").values(),
                     *of_kind(objects, "StatefulSet").values()]:
        for spec in pod_spec(workload)["containers"]:
            resources = spec["resources"]
            assert {"cpu", "memory"} <= resources["requests"].keys(), spec["name"]
            assert "memory" in resources["limits"], spec["name"]


def test_configuration_from_the_configmap_and_the_dsn_from_a_secret(objects: Objects) -> None:
    configs = of_kind(objects, "ConfigMap")
    for name, deployment in headwater_deployments(objects).items():
        spec = container(deployment)
        refs = [s["configMapRef"]["name"] for s in spec["envFrom"]]
        assert len(refs) == 1 and refs[0] in configs, name
        assert refs[0].startswith("headwater-config"), refs
        dsn = [v for v in spec.get("env", []) if v["name"] == "HEADWATER_PG_DSN"]
        if name in DSN_USERS:
            assert dsn[0]["valueFrom"]["secretKeyRef"]["key"] == "dsn", name
            assert dsn[0]["valueFrom"]["secretKeyRef"]["name"].startswith(
                "headwater-postgres"), name
        else:
            assert dsn == [], f"{name} gets the database DSN without using it"
    coordinator = headwater_env(objects, headwater_deployments(objects)["headwater-coordinator"])
    assert coordinator["HEADWATER_PROJECTION"] == "off"


AUTH_USERS = {"headwater-gateway", "headwater-coordinator"}
"""The Deployments that check tokens (HTTP requests; submissions on Kafka)."""
TOKEN_USERS = {*AUTH_USERS, "headwater-worker-cpu", "headwater-worker-gpu"}
"""The Deployments that send a token of their own (submissions; ctx.call)."""


def test_auth_is_on_with_keys_and_tokens_from_a_secret(objects: Objects) -> None:
    for name, deployment in headwater_deployments(objects).items():
        env = headwater_env(objects, deployment)
        assert env["HEADWATER_AUTH"] == "on", name
        token = [v for v in container(deployment).get("env", [])
                 if v["name"] == "HEADWATER_TOKEN"]
        if name in TOKEN_USERS:
            ref = token[0]["valueFrom"]["secretKeyRef"]
            assert ref["name"].startswith("headwater-auth") and ref["key"] == "token", name
        else:
            assert token == [], f"{name} gets a token without using it"
        if name in AUTH_USERS:  # the keys file is the mounted Secret's, and it admits the token
            from services.common.auth.tokens import KeysFile

            keys = KeysFile(Path(env["HEADWATER_AUTH_KEYS_FILE"]))
            me = keys.verify(env["HEADWATER_TOKEN"])
            assert me.every_tenant and me.may("submit"), (name, me)
