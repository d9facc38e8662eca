"""Reading rendered Kubernetes objects: by kind, the Headwater Deployments, a container's
environment as the kubelet would give it (ConfigMap and Secret references resolved)."""

from __future__ import annotations

import atexit
import base64
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dockerfile_facts import image

Obj = dict[str, Any]
HEADWATER = {"app.kubernetes.io/name": "headwater"}
"""The label of every Headwater workload (the local Kafka and PostgreSQL have others)."""
FIELD_STAND_IN = "headwater-pod-0"
"""What a ``fieldRef`` (the pod's name) stands for when a test reads a container's env."""


def of_kind(objects: Sequence[Obj], kind: str) -> dict[str, Obj]:
    """The objects of ``kind`` by name."""
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def one(objects: Sequence[Obj], kind: str, name: str) -> Obj:
    """The object ``kind``/``name``. Raises ``AssertionError`` when there is none."""
    found = of_kind(objects, kind)
    assert name in found, f"no {kind} {name} among {sorted(found)}"
    return found[name]


def headwater_deployments(objects: Sequence[Obj]) -> dict[str, Obj]:
    """The workloads of Headwater's services, by name: Deployments, and the coordinators'
    StatefulSet."""
    workloads = {**of_kind(objects, "Deployment"), **of_kind(objects, "StatefulSet")}
    return {name: d for name, d in workloads.items()
            if HEADWATER.items() <= d["metadata"].get("labels", {}).items()}


def pod_spec(workload: Obj) -> Obj:
    """A Deployment's (or StatefulSet's) pod spec."""
    return dict(workload["spec"]["template"]["spec"])


def container(workload: Obj) -> Obj:
    """A Headwater pod's one container. Raises ``AssertionError`` on more or fewer."""
    containers = pod_spec(workload)["containers"]
    assert len(containers) == 1, f"{workload['metadata']['name']}: {len(containers)} containers"
    return dict(containers[0])


def _secret_value(objects: Sequence[Obj], name: str, key: str) -> str:
    """A rendered Secret's value, or a stand-in when the Secret is the user's to create."""
    secret = of_kind(objects, "Secret").get(name)
    if secret is None:
        return f"<{name}/{key}>"
    if key in secret.get("stringData", {}):
        return str(secret["stringData"][key])
    return base64.b64decode(secret["data"][key]).decode()


def _value_of(objects: Sequence[Obj], var: Mapping[str, Any]) -> str:
    """One ``env`` entry's value: literal, from a ConfigMap or Secret key, or a field."""
    if "value" in var:
        return str(var["value"])
    source = var["valueFrom"]
    if "secretKeyRef" in source:
        ref = source["secretKeyRef"]
        return _secret_value(objects, ref["name"], ref["key"])
    if "configMapKeyRef" in source:
        ref = source["configMapKeyRef"]
        return str(one(objects, "ConfigMap", ref["name"])["data"][ref["key"]])
    return FIELD_STAND_IN


def container_env(objects: Sequence[Obj], workload: Obj) -> dict[str, str]:
    """The environment the container of ``workload`` starts with (``envFrom`` first,
    then ``env``, which wins, as the kubelet merges them), the image's own aside.

    Raises:
        AssertionError: an ``envFrom`` names a ConfigMap the render does not have.
    """
    env: dict[str, str] = {}
    spec = container(workload)
    for source in spec.get("envFrom", []):
        if "configMapRef" in source:
            config = one(objects, "ConfigMap", source["configMapRef"]["name"])
            env.update({k: str(v) for k, v in config.get("data", {}).items()})
        if "secretRef" in source:
            secret = of_kind(objects, "Secret").get(source["secretRef"]["name"], {})
            env.update({k: base64.b64decode(v).decode()
                        for k, v in secret.get("data", {}).items()})
    for var in spec.get("env", []):
        env[var["name"]] = _value_of(objects, var)
    return env


_SECRET_FILES = Path(tempfile.mkdtemp(prefix="headwater-k8s-secrets-"))
"""Where the files of mounted Secret volumes are written for the tests to read (removed
when the test process ends)."""
atexit.register(shutil.rmtree, _SECRET_FILES, True)


def secret_mounts(objects: Sequence[Obj], workload: Obj) -> dict[str, Path]:
    """The container's Secret volumes: mount path -> a local folder holding the files the
    kubelet would put there (the rendered Secret's ``items``, or every key).

    Raises:
        AssertionError: a mounted Secret or key the render does not have.
    """
    volumes = {v["name"]: v for v in pod_spec(workload).get("volumes", [])}
    mounts: dict[str, Path] = {}
    for mount in container(workload).get("volumeMounts", []):
        source = volumes.get(mount["name"], {}).get("secret")
        if source is None:
            continue
        data = one(objects, "Secret", source["secretName"]).get("data", {})
        folder = _SECRET_FILES / f"{workload['metadata']['name']}-{mount['name']}"
        folder.mkdir(exist_ok=True)
        for item in source.get("items") or [{"key": k, "path": k} for k in data]:
            assert item["key"] in data, f"Secret {source['secretName']} has no {item['key']}"
            (folder / item["path"]).write_bytes(base64.b64decode(data[item["key"]]))
        mounts[mount["mountPath"].rstrip("/")] = folder
    return mounts


def headwater_env(objects: Sequence[Obj], workload: Obj) -> dict[str, str]:
    """The ``HEADWATER_*`` environment of a Headwater container: the image's (its
    Dockerfile's ``ENV``), then the pod's; a path into a mounted Secret volume points at
    the local copy of its files (``secret_mounts``), so settings that read them can."""
    merged = {**image().env, **container_env(objects, workload)}
    mounts = secret_mounts(objects, workload)
    env = {k: v for k, v in merged.items() if k.startswith("HEADWATER_")}
    for name, value in env.items():
        for path, folder in mounts.items():
            if value.startswith(path + "/"):
                env[name] = str(folder) + value[len(path):]
    return env


def argv(workload: Obj) -> list[str]:
    """The container's command line (``command`` then ``args``)."""
    spec = container(workload)
    return [*spec.get("command", []), *spec.get("args", [])]


def selects(selector: Mapping[str, Any], workload: Obj) -> bool:
    """Whether a ``matchLabels`` selector (a PDB's, a Service's plain map) picks the pods
    of ``workload``."""
    labels = selector.get("matchLabels", selector)
    pod_labels = workload["spec"]["template"]["metadata"].get("labels", {})
    return bool(labels) and labels.items() <= pod_labels.items()
