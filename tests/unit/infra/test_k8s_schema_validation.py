"""Every object the Kubernetes overlays render validates: the API's own kinds against
Kubernetes' JSON schemas (strict), KEDA's ScaledObjects against KEDA's CRD and their Kafka
triggers against the settings of KEDA's Kafka scaler. And the checks bite: a broken
object, or a broken manifest file, fails them."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import k8s_schemas
import pytest
from k8s_objects import one
from k8s_render import Objects, Tools

KEDA_KINDS = {"ScaledObject"}


def schema_errors(tools: Tools, objects: Objects) -> list[str]:
    """Every schema error of ``objects``; a kind without a schema is one too."""
    errors = []
    for obj in objects:
        if obj["kind"] in KEDA_KINDS:
            errors += k8s_schemas.crd_errors(tools.keda_dir, obj)
            for trigger in obj["spec"].get("triggers", []):
                if trigger.get("type") == "kafka":
                    errors += [f"{obj['metadata']['name']}: {e}" for e in
                               k8s_schemas.kafka_trigger_errors(tools.keda_dir,
                                                                trigger["metadata"])]
            continue
        try:
            errors += k8s_schemas.k8s_errors(obj)
        except k8s_schemas.kubernetes_validate.SchemaNotFoundError as e:
            errors.append(e.message)
    return errors


@pytest.mark.parametrize("overlay", ["local", "local_hpa"])
def test_every_rendered_object_validates(tools: Tools, overlay: str,
                                         request: pytest.FixtureRequest) -> None:
    objects: Objects = request.getfixturevalue(overlay)
    kinds = {o["kind"] for o in objects}
    assert {"Deployment", "Service", "PodDisruptionBudget", "ConfigMap", "Secret"} <= kinds
    assert ("ScaledObject" in kinds) == (overlay == "local")
    assert ("HorizontalPodAutoscaler" in kinds) == (overlay == "local_hpa")
    assert schema_errors(tools, objects) == []


def test_the_validators_refuse_broken_objects(tools: Tools, local: Objects) -> None:
    """Each kind of mistake, one object each: all are caught."""
    deployment = copy.deepcopy(one(local, "Deployment", "headwater-gateway"))
    deployment["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {}
    replicas = copy.deepcopy(one(local, "StatefulSet", "headwater-coordinator"))
    replicas["spec"]["replicas"] = "two"
    pdb = copy.deepcopy(one(local, "PodDisruptionBudget", "headwater-gateway"))
    pdb["apiVersion"] = "policy/v1beta2"
    scaled = copy.deepcopy(one(local, "ScaledObject", "headwater-worker-cpu"))
    scaled["spec"]["minReplicaCount"] = "1"
    scaled["spec"]["cooldown"] = 300
    trigger = copy.deepcopy(one(local, "ScaledObject", "headwater-worker-gpu"))
    trigger["spec"]["triggers"][0]["metadata"]["lagThreshhold"] = "2"
    trigger["spec"]["triggers"][0]["metadata"]["offsetResetPolicy"] = "oldest"
    errors = schema_errors(tools, [deployment, replicas, pdb, scaled, trigger])
    assert any("'livenesProbe' was unexpected" in e for e in errors), errors
    assert any("spec.replicas: 'two' is not of type" in e for e in errors), errors
    assert any("PodDisruptionBudget with api version policy/v1beta2" in e for e in errors)
    assert any('minReplicaCount: "1" is not of type "integer"' in e for e in errors), errors
    assert any("'cooldown' was unexpected" in e for e in errors), errors
    assert any("lagThreshhold: not a setting" in e for e in errors), errors
    assert any("'oldest' is not one of ('latest', 'earliest')" in e for e in errors), errors
    assert len(errors) == 7, errors


def test_a_broken_manifest_file_fails(tools: Tools, k8s_copy: Path,
                                      render: Callable[[Path], Objects]) -> None:
    """The same render and checks on a copy of the tree whose files were broken: a
    probe's port given as a number string, a misspelled ScaledObject field."""
    gateway = k8s_copy / "base" / "gateway.yaml"
    gateway.write_text(gateway.read_text().replace("containerPort: 8080",
                                                   'containerPort: "8080"', 1))
    scaled = k8s_copy / "components" / "keda" / "scaledobjects.yaml"
    scaled.write_text(scaled.read_text().replace("pollingInterval:", "pollInterval:", 1))
    errors = schema_errors(tools, render(k8s_copy / "overlays" / "local"))
    assert any("containerPort: '8080' is not of type 'integer'" in e for e in errors), errors
    assert any("'pollInterval' was unexpected" in e for e in errors), errors


def test_kustomize_refuses_a_dangling_component(k8s_copy: Path,
                                                render: Callable[[Path], Objects]) -> None:
    overlay = k8s_copy / "overlays" / "local" / "kustomization.yaml"
    overlay.write_text(overlay.read_text().replace("components/keda", "components/kedah"))
    with pytest.raises(AssertionError, match="kedah"):
        render(k8s_copy / "overlays" / "local")


def test_keda_settings_are_read_from_the_scaler_source(tools: Tools) -> None:
    """The Kafka scaler's settings come from KEDA's source, not from a copy here."""
    settings = k8s_schemas.kafka_trigger_settings(tools.keda_dir)
    assert {"bootstrapServers", "consumerGroup", "topic", "lagThreshold",
            "allowIdleConsumers", "offsetResetPolicy", "sasl", "tls"} <= settings.keys()
    assert "none" in settings["sasl"]
