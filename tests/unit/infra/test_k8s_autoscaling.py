"""Each worker queue scales: with KEDA on the lag of its own consumer group on its own
tasks topic (names from ``headwater.topics``, bootstrap from the ConfigMap, also when an
overlay changes them), or with an HPA on CPU; within the partitions, never to zero, and
with the replica count left to the autoscaler."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from k8s_objects import Obj, argv, headwater_deployments, of_kind, one
from k8s_render import Objects

from headwater.topics import Topics
from ops import localstack


def worker_queues(objects: Objects) -> dict[str, str]:
    """``{Deployment name: queue}`` of the worker Deployments."""
    found = {name: localstack.worker_of(["python", *argv(d)[1:]])
             for name, d in headwater_deployments(objects).items()}
    return {name: w[0] for name, w in found.items() if w is not None}


def config(objects: Objects) -> dict[str, str]:
    """The rendered ``headwater-config`` ConfigMap's data."""
    [data] = [c["data"] for n, c in of_kind(objects, "ConfigMap").items()
              if n.startswith("headwater-config")]
    return dict(data)


def kafka_trigger(scaled: Obj) -> dict[str, str]:
    """A ScaledObject's one trigger, which is Kafka's; its metadata."""
    [trigger] = scaled["spec"]["triggers"]
    assert trigger["type"] == "kafka"
    return dict(trigger["metadata"])


def expected_trigger(settings: dict[str, str], queue: str) -> dict[str, str]:
    """What a queue's trigger must name: the ConfigMap's brokers, the queue's tasks topic
    and its workers' consumer group (``Topics``)."""
    topics = Topics(settings["HEADWATER_TOPIC_PREFIX"])
    return {"bootstrapServers": settings["HEADWATER_KAFKA_BOOTSTRAP"],
            "topic": topics.tasks(queue), "consumerGroup": topics.worker_group(queue)}


def check_keda(objects: Objects) -> None:
    """The ScaledObjects of ``objects`` fit their worker Deployments."""
    queues, settings = worker_queues(objects), config(objects)
    scaled = of_kind(objects, "ScaledObject")
    assert sorted(s["spec"]["scaleTargetRef"]["name"] for s in scaled.values()) == sorted(
        queues)
    partitions = int(settings["HEADWATER_PARTITIONS"])
    for obj in scaled.values():
        target = obj["spec"]["scaleTargetRef"]["name"]
        metadata = kafka_trigger(obj)
        wanted = expected_trigger(settings, queues[target])
        assert {k: metadata[k] for k in wanted} == wanted, target
        assert metadata["allowIdleConsumers"] == "false"
        assert 1 <= obj["spec"]["minReplicaCount"] <= obj["spec"]["maxReplicaCount"]
        assert obj["spec"]["maxReplicaCount"] <= partitions, target
        # The workers' consumers start at the earliest offset (services/worker/app.py).
        assert metadata["offsetResetPolicy"] == "earliest"
        assert int(metadata["lagThreshold"]) >= 1


def test_each_worker_queue_scales_on_its_consumer_group_lag(local: Objects) -> None:
    check_keda(local)
    assert set(worker_queues(local).values()) == {"cpu", "gpu"}


def test_the_triggers_follow_an_overlays_brokers_and_prefix(
        k8s_copy: Path, render: Callable[[Path], Objects]) -> None:
    overlay = k8s_copy / "overlays" / "prod"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text("""\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../../base]
components: [../../components/keda]
configMapGenerator:
  - name: headwater-config
    behavior: merge
    literals:
      - HEADWATER_KAFKA_BOOTSTRAP=b-1.example:9092,b-2.example:9092
      - HEADWATER_TOPIC_PREFIX=acme-prod.hw
""")
    objects = render(overlay)
    check_keda(objects)
    gpu = kafka_trigger(one(objects, "ScaledObject", "headwater-worker-gpu"))
    assert (gpu["bootstrapServers"], gpu["topic"], gpu["consumerGroup"]) == (
        "b-1.example:9092,b-2.example:9092", "acme-prod.hw.tasks.gpu",
        "acme-prod.hw-worker-gpu")


def test_each_worker_queue_has_a_cpu_hpa_in_the_alternative(local_hpa: Objects) -> None:
    queues, settings = worker_queues(local_hpa), config(local_hpa)
    deployments = headwater_deployments(local_hpa)
    hpas = of_kind(local_hpa, "HorizontalPodAutoscaler")
    assert sorted(h["spec"]["scaleTargetRef"]["name"] for h in hpas.values()) == sorted(queues)
    for hpa in hpas.values():
        spec = hpa["spec"]
        assert spec["scaleTargetRef"]["kind"] == "Deployment"
        assert 1 <= spec["minReplicas"] <= spec["maxReplicas"]
        assert spec["maxReplicas"] <= int(settings["HEADWATER_PARTITIONS"])
        [metric] = spec["metrics"]
        assert metric["resource"]["name"] == "cpu"
        # Utilisation is relative to the request: the container must have one.
        target = deployments[spec["scaleTargetRef"]["name"]]
        [container] = target["spec"]["template"]["spec"]["containers"]
        assert "cpu" in container["resources"]["requests"]
    assert of_kind(local_hpa, "ScaledObject") == {}


def test_autoscaled_deployments_leave_the_replica_count_alone(objects: Objects) -> None:
    """A ``replicas`` in the manifest would reset the autoscaler's count at each apply."""
    deployments = headwater_deployments(objects)
    assert [n for n in worker_queues(objects) if "replicas" in deployments[n]["spec"]] == []
