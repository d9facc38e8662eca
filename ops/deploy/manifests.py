"""The kustomize overlay of a module's deploy: over the project's base manifests
(``infra/k8s/base``), one worker Deployment (and PodDisruptionBudget) per queue of the
module, with its autoscaler, and the image set.

Each pool's Deployment is the base's ``headwater-worker-cpu`` made over (so probes,
security context, drain and volumes stay the base's): named ``<app>-worker-<queue>``,
running ``python -m services.worker --queue <queue> --tasks <module>``, with the pool's
requests, limits, GPUs and concurrency (``pools.Pool``). The base's own example workers
are deleted by the overlay (their consumer groups are the queues' groups: a worker of
the example image on a queue of the module would take dispatches it has no task for),
with their PodDisruptionBudgets and any autoscaler an underlying overlay gave them.

Autoscaling: ``keda`` (a ScaledObject per pool on its consumer group's lag, as
``components/keda``, the bootstrap servers and topic prefix filled from the
``headwater-config`` ConfigMap) or ``hpa`` (a HorizontalPodAutoscaler on CPU, as
``components/hpa``); a fixed pool has ``replicas`` and neither.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ops.deploy.pools import Pool

AUTOSCALERS = ("keda", "hpa")
"""``headwater deploy --autoscaler``."""
BASE_WORKER = "headwater-worker-cpu"
"""The base's worker Deployment the pools' are made from."""
DELETED = [("apps/v1", "Deployment"), ("policy/v1", "PodDisruptionBudget"),
           ("keda.sh/v1alpha1", "ScaledObject"),
           ("autoscaling/v2", "HorizontalPodAutoscaler")]
"""The kinds of the base's example workers' objects the overlay deletes."""
SCALE_DOWN = {"stabilizationWindowSeconds": 300,
              "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}
"""A worker that goes drains for up to 30 s: remove one at a time (as the base's)."""


class ManifestError(Exception):
    """Raised when the base manifests lack what the overlay is made from."""


def dns_label(text: str, limit: int = 63) -> str:
    """``text`` as a Kubernetes name part (lower case, ``_`` and ``.`` as ``-``), cut
    to ``limit`` characters with 6 hex digits of its digest when longer."""
    label = re.sub(r"[^a-z0-9-]", "-", text.lower()).strip("-") or "x"
    if len(label) <= limit:
        return label
    suffix = hashlib.sha256(text.encode()).hexdigest()[:6]
    return f"{label[:limit - 7].rstrip('-')}-{suffix}"


def object_name(app: str, queue: str) -> str:
    """The name of a pool's objects: ``<app>-worker-<queue>`` (a DNS label)."""
    return dns_label(f"{app}-worker-{queue}")


def _base_worker(base: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The base's worker Deployment and PodDisruptionBudget (``BASE_WORKER``)."""
    path = base / "worker-cpu.yaml"
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    except OSError as e:
        raise ManifestError(f"the base manifests have no {path.name}: {e}") from e
    found = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    try:
        return (found[("Deployment", BASE_WORKER)],
                found[("PodDisruptionBudget", BASE_WORKER)])
    except KeyError as e:
        raise ManifestError(f"{path} has no {e.args[0][0]} {BASE_WORKER}") from e


def _labels(app: str, queue: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": "headwater",
            "app.kubernetes.io/component": dns_label(f"worker-{queue}"),
            "app.kubernetes.io/instance": dns_label(app)}


def worker(template: dict[str, Any], pdb_template: dict[str, Any], app: str, module: str,
           pool: Pool, code_version: str | None) -> list[dict[str, Any]]:
    """The Deployment and PodDisruptionBudget of one pool."""
    name, labels = object_name(app, pool.queue), _labels(app, pool.queue)
    deployment = copy.deepcopy(template)
    deployment["metadata"] = {"name": name, "labels": labels}
    spec = deployment["spec"]
    spec["selector"] = {"matchLabels": labels}
    if pool.fixed:
        spec["replicas"] = pool.min_replicas
    pod = spec["template"]
    pod["metadata"] = {"labels": labels}
    container = pod["spec"]["containers"][0]
    container["command"] = ["python", "-m", "services.worker", "--queue", pool.queue,
                            "--tasks", module]
    env = [e for e in container.get("env", []) if e["name"] not in (
        "HEADWATER_CONCURRENCY", "HEADWATER_CODE_VERSION")]
    env.append({"name": "HEADWATER_CONCURRENCY", "value": str(pool.concurrency)})
    if code_version:
        env.append({"name": "HEADWATER_CODE_VERSION", "value": code_version})
    container["env"] = env
    limits: dict[str, Any] = {"memory": pool.memory_limit}
    if pool.gpu:
        limits["nvidia.com/gpu"] = pool.gpu
        pod["spec"]["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists",
                                       "effect": "NoSchedule"}]
    container["resources"] = {"requests": {"cpu": pool.cpu, "memory": pool.memory},
                              "limits": limits}
    pdb = copy.deepcopy(pdb_template)
    pdb["metadata"] = {"name": name, "labels": labels}
    pdb["spec"]["selector"] = {"matchLabels": labels}
    return [deployment, pdb]


def scaled_object(app: str, pool: Pool) -> dict[str, Any]:
    """KEDA's ScaledObject of a pool: desired workers = lag / (2 x concurrency)."""
    name = object_name(app, pool.queue)
    return {
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
        "metadata": {"name": name, "labels": _labels(app, pool.queue)},
        "spec": {
            "scaleTargetRef": {"name": name},
            "minReplicaCount": pool.min_replicas, "maxReplicaCount": pool.max_replicas,
            "pollingInterval": 15, "cooldownPeriod": 300,
            "advanced": {"horizontalPodAutoscalerConfig": {
                "behavior": {"scaleDown": SCALE_DOWN}}},
            "triggers": [{"type": "kafka", "metadata": {
                # Filled from the headwater-config ConfigMap (replacements below).
                "bootstrapServers": "kafka:9092",
                "consumerGroup": f"headwater-worker-{pool.queue}",
                "topic": f"headwater.tasks.{pool.queue}",
                "lagThreshold": str(2 * pool.concurrency),
                "offsetResetPolicy": "earliest", "allowIdleConsumers": "false",
                "sasl": "none", "tls": "disable"}}]}}


def hpa(app: str, pool: Pool) -> dict[str, Any]:
    """A HorizontalPodAutoscaler of a pool, on CPU (``components/hpa``'s reasons)."""
    name = object_name(app, pool.queue)
    return {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "labels": _labels(app, pool.queue)},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": max(pool.min_replicas, 1), "maxReplicas": pool.max_replicas,
            "metrics": [{"type": "Resource", "resource": {
                "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}],
            "behavior": {"scaleDown": SCALE_DOWN}}}


def _delete_patch(api_version: str, kind: str) -> dict[str, Any]:
    body = {"$patch": "delete", "apiVersion": api_version, "kind": kind,
            "metadata": {"name": "headwater-worker"}}
    return {"target": {"kind": kind, "name": "headwater-worker-.*"},
            "patch": yaml.safe_dump(body, sort_keys=False)}


KEDA_REPLACEMENTS: list[dict[str, Any]] = [
    {"source": {"kind": "ConfigMap", "name": "headwater-config",
                "fieldPath": "data.HEADWATER_KAFKA_BOOTSTRAP"},
     "targets": [{"select": {"kind": "ScaledObject"},
                  "fieldPaths": ["spec.triggers.[type=kafka].metadata.bootstrapServers"]}]},
    {"source": {"kind": "ConfigMap", "name": "headwater-config",
                "fieldPath": "data.HEADWATER_TOPIC_PREFIX"},
     "targets": [{"select": {"kind": "ScaledObject"},
                  "fieldPaths": ["spec.triggers.[type=kafka].metadata.topic"],
                  "options": {"delimiter": ".", "index": 0}},
                 {"select": {"kind": "ScaledObject"},
                  "fieldPaths": ["spec.triggers.[type=kafka].metadata.consumerGroup"],
                  "options": {"delimiter": "-", "index": 0}}]},
]
"""``components/keda``'s replacements: the triggers follow the cluster's settings."""


class _Dumper(yaml.SafeDumper):
    """Writes a string of several lines (a patch) as a literal block, readable."""


def _literal(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _literal)


def _yaml(doc: dict[str, Any]) -> str:
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False)


def _dump(docs: list[dict[str, Any]], header: str) -> str:
    return header + "---\n".join(_yaml(d) for d in docs)


@dataclass(frozen=True)
class Overlay:
    """What the overlay is made of.

    Attributes:
        app: the deploy's name (the prefix of its objects' names).
        module: the module the workers import (``--tasks``).
        pools: the pools (one per queue).
        base: the kustomization the overlay is over (``infra/k8s/base``, or an
            overlay of it).
        out: the overlay's directory (``base`` is referred to relative to it).
        image: the image's name.
        tag: its tag.
        autoscaler: ``keda`` or ``hpa``.
        namespace: the namespace of every object, or None: the one the base's
            kustomization sets, if any (the module's objects are in it too).
        code_version: the workers' ``HEADWATER_CODE_VERSION``, or None.
    """

    app: str
    module: str
    pools: list[Pool]
    base: Path
    out: Path
    image: str
    tag: str
    autoscaler: str = "keda"
    namespace: str | None = None
    code_version: str | None = None


def overlay(o: Overlay) -> dict[str, str]:
    """The overlay's files, relative path (under ``o.out``) -> text.

    Raises:
        ManifestError: the base has no worker to make the pools' from.
        ValueError: an unknown autoscaler.
    """
    app, module, pools, base, out = o.app, o.module, o.pools, o.base, o.out
    image, tag, autoscaler, code_version = o.image, o.tag, o.autoscaler, o.code_version
    if autoscaler not in AUTOSCALERS:
        raise ValueError(f"the autoscaler is one of {', '.join(AUTOSCALERS)}, not "
                         f"{autoscaler!r}")
    template, pdb = _base_worker(base.resolve() if (base / "worker-cpu.yaml").is_file()
                                 else _find_base(base))
    workers: list[dict[str, Any]] = []
    scaling: list[dict[str, Any]] = []
    for p in pools:
        workers += worker(template, pdb, app, module, p, code_version)
        if not p.fixed:
            scaling.append(scaled_object(app, p) if autoscaler == "keda" else hpa(app, p))
    header = (f"# Made by `headwater deploy` from {module}: deploy again rather than edit.\n")
    files = {"workers.yaml": _dump(workers, header)}
    resources = [os.path.relpath(base.resolve(), out.resolve()), "workers.yaml"]
    if scaling:
        files["scaling.yaml"] = _dump(scaling, header)
        resources.append("scaling.yaml")
    kustomization: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}
    namespace = o.namespace or _namespace_of(base)
    if namespace:
        kustomization["namespace"] = namespace
    kustomization |= {
        "resources": resources,
        "labels": [{"pairs": {"app.kubernetes.io/part-of": "headwater"},
                    "includeTemplates": True}],
        "images": [{"name": "headwater", "newName": image, "newTag": tag}],
        "patches": [_delete_patch(a, k) for a, k in DELETED],
    }
    if scaling and autoscaler == "keda":
        kustomization["replacements"] = KEDA_REPLACEMENTS
    files["kustomization.yaml"] = (
        f"{header}# Over {resources[0]}; the cluster's settings (Kafka bootstrap, "
        "Secrets) as that base says.\n" + _yaml(kustomization))
    return files


def _namespace_of(base: Path) -> str | None:
    """The ``namespace`` the kustomization in ``base`` sets, or None."""
    try:
        doc = yaml.safe_load((base / "kustomization.yaml").read_text())
    except (OSError, yaml.YAMLError):
        return None
    found = doc.get("namespace") if isinstance(doc, dict) else None
    return found if isinstance(found, str) else None


def _find_base(base: Path) -> Path:
    """The base manifests' directory under an overlay: ``infra/k8s/base`` beside it."""
    for parent in [base.resolve(), *base.resolve().parents]:
        if (parent / "base" / "worker-cpu.yaml").is_file():
            return parent / "base"
    raise ManifestError(f"no base manifests (base/worker-cpu.yaml) at or above {base}")
