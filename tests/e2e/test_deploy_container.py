"""``headwater deploy``'s image, built and run: the build context of a module is built
with podman ``FROM`` the project's image, a worker of the module's queue runs in a
container of it (``python -m services.worker`` as the overlay runs it, host network, the
stack's Kafka and gateway), and a workflow whose task only that worker has succeeds.

Skipped where podman is missing or the project's image (``HEADWATER_BASE_IMAGE``,
``headwater:local``: ``podman build -t headwater:local .``) was not built: neither
comes with a clean clone, and building the project's image takes minutes."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from stackkit import Stack
from test_kafka_submission import wait_status

from ops.deploy import plan as plans
from tests.polling import scaled, wait_until_async

PODMAN = shutil.which("podman")
BASE_IMAGE = os.environ.get("HEADWATER_BASE_IMAGE", "headwater:local")
BUILD_TIMEOUT_S = 600


def podman(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    assert PODMAN is not None
    return subprocess.run([PODMAN, *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, check=False)


@pytest.fixture(scope="module")
def engine() -> None:
    if PODMAN is None:
        pytest.skip("podman is not installed")
    if podman("image", "exists", BASE_IMAGE).returncode != 0:
        pytest.skip(f"the project's image {BASE_IMAGE} is not built (podman build -t "
                    f"{BASE_IMAGE} .)")


MODULE = '''
    import platform

    from headwater import task


    @task(name="{queue}.where", queue="{queue}", cpu="250m")
    def where(word: str) -> dict[str, str]:
        """Where it ran: the container's hostname and its image's Python."""
        with open("/etc/hostname") as f:
            host = f.read().strip()
        return {{"word": word.upper(), "host": host, "python": platform.python_version()}}
'''


@pytest.fixture
def worker(engine: None, stack: Stack, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Deploy a module (files only), build its image, run its worker in a container;
    yield ``(queue, container hostname)``; remove the container and image after."""
    queue = f"box{uuid.uuid4().hex[:8]}"
    module = tmp_path / "boxed.py"
    module.write_text(textwrap.dedent(MODULE.format(queue=queue)))
    plan = plans.make(plans.Options(module=module, out=tmp_path / "out",
                                    base_image=BASE_IMAGE, image=f"localhost/{queue}"))
    plans.write(plan)
    image = f"{plan.image}:{plan.tag}"
    built = podman("build", "-t", image, str(plan.out / "image"), timeout=BUILD_TIMEOUT_S)
    assert built.returncode == 0, built.stderr[-3000:]
    [pool] = plan.pools
    env = {k: v for k, v in stack.env.items() if k.startswith("HEADWATER_") and k not in (
        "HEADWATER_HOME", "HEADWATER_DATA_DIR", "HEADWATER_GATEWAY_PORT")}
    # Host network: no metrics port, which another process of the machine may hold.
    env |= {"HEADWATER_GATEWAY_URL": stack.gateway, "HEADWATER_WORKER_NAME": queue,
            "HEADWATER_METRICS_PORT": "0"}
    host = f"{queue}-worker"
    run = podman("run", "-d", "--rm", "--network", "host", "--hostname", host,
                 *[a for k, v in env.items() for a in ("-e", f"{k}={v}")], image,
                 "python", "-m", "services.worker", "--queue", pool.queue, "--tasks",
                 plan.found.module)
    assert run.returncode == 0, run.stderr
    container = run.stdout.strip()
    try:
        yield queue, host
    finally:
        logs = podman("logs", container)
        podman("rm", "-f", "-t", "5", container)
        podman("rmi", image)
        print(logs.stdout[-2000:], logs.stderr[-2000:])


async def test_a_workflow_runs_on_the_deployed_image(stack: Stack,
                                                     worker: tuple[str, str]) -> None:
    queue, host = worker
    spec = {"name": "boxed", "nodes": [{"id": "w", "task": f"{queue}.where",
                                        "queue": queue, "input": {"word": "shipped"}}],
            "output": "${nodes.w.output}"}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        async def served() -> set[str]:  # its worker announced (else 400: no worker)
            doc = (await client.get("/v1/queues")).json()
            return {q["queue"] for q in doc["queues"] if q.get("workers")}
        await wait_until_async(served, scaled(60), f"a worker of {queue} announced",
                               until=lambda found: queue in found)
        response = await client.post("/v1/workflows", json={"workflow": spec})
        assert response.status_code == 202, response.text
        done = await wait_status(stack, response.json()["id"], timeout_s=scaled(90))
    assert done["status"] == "succeeded", done
    output = done["output"]
    assert isinstance(output, dict), done
    assert output["word"] == "SHIPPED" and output["host"] == host, done
