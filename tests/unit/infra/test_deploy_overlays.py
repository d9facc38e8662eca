"""``headwater deploy``'s output, checked as the project's own manifests are: on each
example module, and on a module whose decorators ask for GPUs, fixed replicas and
bounds, the overlay builds with the real kustomize (over the base, and over the local
overlays with KEDA or HPA), every object validates against Kubernetes' and KEDA's
schemas, each queue has its worker Deployment sized by the hints, the base's example
workers are gone, and the Dockerfile passes hadolint."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from k8s_objects import of_kind, one
from k8s_render import REPO, Objects, Tools
from test_dockerfile_image import hadolint
from test_k8s_schema_validation import schema_errors

from ops.deploy import plan as plans

EXAMPLES = {
    "examples/research/flows.py": {"research", "hybrid"},
    "examples/stdlib_search/tasks.py": {"cpu"},
    "examples/hybrid/tasks.py": {"hybrid"},
}
"""Each example module -> the queues its workers serve."""

HINTED = '''
    from headwater import task, workflow

    @task(name="hinted.embed", queue="gpu", gpu=1, memory="8Gi", cpu="2",
          min_replicas=0, max_replicas=4)
    def embed(text: str) -> list[float]:
        return [float(len(text))]

    @task(name="hinted.small", queue="gpu", cpu="500m")
    def small(text: str) -> int:
        return len(text)

    @task(name="hinted.fetch", queue="io_bound", replicas=3)
    def fetch(url: str) -> str:
        return url

    @workflow(name="hinted.flow", queue="flows", max_replicas=2, memory="1Gi")
    async def flow(wf, text: str) -> list[float]:
        return await wf.run(embed, text=text)

    DEFINITIONS = {"hinted.spec": "spec.yaml"}
'''


def deploy(tmp_path: Path, module: Path, **options: Any) -> plans.Plan:
    """``headwater deploy module --no-register --out tmp_path/out`` (the plan written)."""
    plan = plans.make(plans.Options(module=module, out=tmp_path / "out", **options))
    plans.write(plan)
    return plan


def containers(objects: Objects, name: str) -> dict[str, Any]:
    spec = one(objects, "Deployment", name)["spec"]["template"]["spec"]
    container: dict[str, Any] = spec["containers"][0]
    return container


@pytest.mark.parametrize("module", sorted(EXAMPLES))
def test_each_example_deploys_to_an_overlay_that_builds_and_validates(
        tools: Tools, render: Callable[[Path], Objects], tmp_path: Path, module: str) -> None:
    plan = deploy(tmp_path, REPO / module)
    objects = render(plan.out / "k8s")
    assert schema_errors(tools, objects) == []
    workers = {n: d for n, d in of_kind(objects, "Deployment").items() if "-worker-" in n}
    assert set(workers) == {f"{plan.app}-worker-{q}" for q in EXAMPLES[module]}
    for queue in EXAMPLES[module]:
        name = f"{plan.app}-worker-{queue}"
        container = containers(objects, name)
        assert container["command"] == ["python", "-m", "services.worker", "--queue", queue,
                                        "--tasks", plan.found.module]
        assert container["image"] == f"{plan.image}:{plan.tag}"
        scaled = one(objects, "ScaledObject", name)
        assert scaled["spec"]["scaleTargetRef"]["name"] == name
        assert scaled["spec"]["triggers"][0]["metadata"]["topic"] == f"headwater.tasks.{queue}"
        assert one(objects, "PodDisruptionBudget", name)["spec"]["selector"] == \
            workers[name]["spec"]["selector"]
    # every service runs the module's image; the example image's workers are gone
    images = {c["image"] for d in of_kind(objects, "Deployment").values()
              for c in d["spec"]["template"]["spec"]["containers"]}
    assert images == {f"{plan.image}:{plan.tag}"}
    assert not [n for n in of_kind(objects, "Deployment") if n.startswith("headwater-worker")]
    assert hadolint(plan.out / "image" / "Dockerfile") == []
    assert (plan.out / "image" / "app" / Path(module)).is_file()


@pytest.fixture
def hinted(tmp_path: Path) -> Path:
    package = tmp_path / "src" / "hintedpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "jobs.py").write_text(textwrap.dedent(HINTED))
    (package / "spec.yaml").write_text(
        "name: hinted.spec\nnodes:\n  - {id: a, task: hinted.fetch, queue: io_bound,"
        " input: {url: x}}\n")
    (package / "requirements.txt").write_text("six==1.16.0\n")
    return package / "jobs.py"


def test_the_hints_size_each_pool(tools: Tools, render: Callable[[Path], Objects],
                                  tmp_path: Path, hinted: Path) -> None:
    plan = deploy(tmp_path, hinted, tag="v7", image="registry.example/hinted")
    objects = render(plan.out / "k8s")
    assert schema_errors(tools, objects) == []
    app = plan.app
    gpu = containers(objects, f"{app}-worker-gpu")
    assert gpu["resources"] == {"requests": {"cpu": "2", "memory": "8Gi"},
                                "limits": {"memory": "8Gi", "nvidia.com/gpu": 1}}
    assert {"name": "HEADWATER_CONCURRENCY", "value": "1"} in gpu["env"]
    gpu_pod = one(objects, "Deployment", f"{app}-worker-gpu")["spec"]["template"]["spec"]
    assert gpu_pod["tolerations"][0]["key"] == "nvidia.com/gpu"
    scaled = one(objects, "ScaledObject", f"{app}-worker-gpu")["spec"]
    assert (scaled["minReplicaCount"], scaled["maxReplicaCount"]) == (0, 4)
    assert scaled["triggers"][0]["metadata"]["lagThreshold"] == "2"
    fixed = one(objects, "Deployment", f"{app}-worker-io-bound")
    assert fixed["spec"]["replicas"] == 3
    assert f"{app}-worker-io-bound" not in of_kind(objects, "ScaledObject")
    assert containers(objects, f"{app}-worker-io-bound")["command"][4] == "io_bound"
    flows = one(objects, "ScaledObject", f"{app}-worker-flows")["spec"]
    assert (flows["minReplicaCount"], flows["maxReplicaCount"]) == (1, 2)
    assert containers(objects, f"{app}-worker-flows")["image"] == \
        "registry.example/hinted:v7"
    assert [d.name for d in plan.definitions] == ["hinted.flow", "hinted.spec"]
    assert plan.definitions[0].workflow["nodes"][0]["code_version"]
    assert (plan.out / "image" / "requirements.txt").read_text() == "six==1.16.0\n"
    dockerfile = (plan.out / "image" / "Dockerfile").read_text()
    assert "pip install --no-cache-dir -r /opt/app/requirements.txt" in dockerfile
    assert hadolint(plan.out / "image" / "Dockerfile") == []


@pytest.mark.parametrize(("overlay", "autoscaler", "kind"), [
    ("local", "keda", "ScaledObject"), ("local-hpa", "hpa", "HorizontalPodAutoscaler")])
def test_over_a_local_overlay_the_autoscalers_are_the_modules_alone(
        tools: Tools, render: Callable[[Path], Objects], k8s_tree: Path, tmp_path: Path,
        overlay: str, autoscaler: str, kind: str) -> None:
    plan = deploy(tmp_path, REPO / "examples/stdlib_search/tasks.py",
                  k8s_base=k8s_tree / "overlays" / overlay, autoscaler=autoscaler)
    objects = render(plan.out / "k8s")
    assert schema_errors(tools, objects) == []
    assert set(of_kind(objects, kind)) == {f"{plan.app}-worker-cpu"}
    assert {o["metadata"].get("namespace") for o in objects
            if o["kind"] != "Namespace"} == {"headwater"}
    if kind == "ScaledObject":
        config = one(objects, "ConfigMap", next(n for n in of_kind(objects, "ConfigMap")
                                                if n.startswith("headwater-config")))
        trigger = one(objects, kind, f"{plan.app}-worker-cpu")["spec"]["triggers"][0]
        assert trigger["metadata"]["bootstrapServers"] == \
            config["data"]["HEADWATER_KAFKA_BOOTSTRAP"]


def test_the_same_module_gives_the_same_tag_and_a_change_another(
        tmp_path: Path, hinted: Path) -> None:
    first = plans.make(plans.Options(module=hinted, out=tmp_path / "a"))
    again = plans.make(plans.Options(module=hinted, out=tmp_path / "b"))
    image_files = [{k: v for k, v in p.files.items() if k.startswith("image/")}
                   for p in (first, again)]
    assert first.tag == again.tag and image_files[0] == image_files[1]
    hinted.write_text(hinted.read_text() + "\n# changed\n")
    assert plans.make(plans.Options(module=hinted, out=tmp_path / "a")).tag != first.tag
