"""``python -m examples.hybrid``: run the hybrid example on the local stack, in one
command.

It starts a worker for the ``hybrid`` queue if none runs (``worker-hybrid-1``, beside
the stack's own processes: ``headwater ps`` lists it, ``headwater down`` stops it),
submits ``workflow.yaml`` with ``input.json`` (``--question`` replaces the question),
follows the workflow's events and prints each step: the classification, the research
loop's decisions as decide streams them, the wait for approval. With ``--approve`` or
``--reject`` it sends the ``approval`` signal itself once the workflow waits for it;
otherwise it prints the ``headwater signal`` command to send from another terminal and
goes on following. At the end it prints the answer, what became of it and how long
each node took (the coordinator's times).

Exit status: 0 the workflow succeeded, 1 it failed or was cancelled, 2 the gateway
could not be reached or refused the submission.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import yaml

from examples.hybrid.progress import Progress
from examples.hybrid.tasks import QUEUE, TASKS_MODULE
from ops import localstack, stackstate
from ops.cli.follow import events
from ops.cli.queues import wait_for_workers

HERE = Path(__file__).resolve().parent
WORKER = "worker-hybrid-1"
WORKER_WAIT_S = 60.0
"""How long the runner waits for a worker it started to announce itself, seconds."""


def default_gateway() -> str:
    """``HEADWATER_GATEWAY_URL``, else 127.0.0.1 on ``HEADWATER_GATEWAY_PORT`` (8080)."""
    return os.environ.get("HEADWATER_GATEWAY_URL") or (
        f"http://127.0.0.1:{os.environ.get('HEADWATER_GATEWAY_PORT', '8080')}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (``--help`` lists it)."""
    parser = argparse.ArgumentParser(
        prog="python -m examples.hybrid",
        description="Run the hybrid example (classify the installed packages, research a "
                    "question in a bounded loop, wait for approval, publish) on the local "
                    "stack.")
    parser.add_argument("--question", help="the question (default: input.json's)")
    parser.add_argument("--input", type=Path, default=HERE / "input.json",
                        help="the workflow input, a JSON file (default: %(default)s)")
    verdict = parser.add_mutually_exclusive_group()
    verdict.add_argument("--approve", action="store_true",
                         help="send approved=true once the workflow waits for approval")
    verdict.add_argument("--reject", action="store_true",
                         help="send approved=false once the workflow waits for approval")
    parser.add_argument("--note", default="", help="the approval's note")
    parser.add_argument("--id", help="the workflow id (an idempotency key)")
    parser.add_argument("--gateway", default=default_gateway(),
                        help="the gateway's base URL (default: %(default)s)")
    parser.add_argument("--no-worker", action="store_true",
                        help=f"do not start a worker for the {QUEUE!r} queue")
    return parser.parse_args(argv)


def ensure_worker(gateway: str, timeout_s: float = WORKER_WAIT_S, *, queue: str = QUEUE,
                  tasks_module: str = TASKS_MODULE) -> tuple[int, bool]:
    """A worker for the example's queue (or ``queue``, importing ``tasks_module``:
    ``worker-<queue>-1``), once the gateway knows a live worker of it (its
    announcement: until then the queue's tasks get 400): ``(pid, started now)``.

    Args:
        gateway: the gateway's base URL.
        timeout_s: how long to wait for the announcement, seconds.
        queue: the queue to serve.
        tasks_module: the module of its tasks, which the worker imports.

    Raises:
        RuntimeError: the worker exited before it announced itself (the message has its
            log's last lines), or the gateway knew no live worker within ``timeout_s``.
    """
    name = f"worker-{queue}-1"
    service = localstack.Service(name, (sys.executable, "-m", "services.worker",
                                        "--queue", queue, "--tasks", tasks_module))
    running = localstack.read_pid(service.pid_file)
    pid = running if running is not None else localstack.start(service, {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(localstack.REPO),
                                                    os.environ.get("PYTHONPATH")]))})
    if not any(g.queue == queue for g in stackstate.remembered()):  # `headwater up` restarts it
        env = (localstack.launched(name) or (service, {}))[1]
        stackstate.remember(stackstate.WorkerGroup(queue, (tasks_module,), 1,
                                                   str(localstack.REPO), env))
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            wait_for_workers(gateway, queue, timeout_s=1.0)
            return pid, running is None
        except TimeoutError as e:
            if not localstack.alive(pid):  # a worker that cannot import its tasks exits
                service.pid_file.unlink(missing_ok=True)
                tail = service.log_file.read_text(errors="replace").strip().splitlines()[-3:]
                raise RuntimeError(f"{name} exited: {' | '.join(tail)}") from None
            if time.monotonic() >= deadline:
                raise RuntimeError(f"{name} (pid {pid}) did not announce itself within "
                                   f"{timeout_s:g} s: {e}") from None


def workflow_input(args: argparse.Namespace) -> dict[str, Any]:
    """``--input``'s document, its question replaced by ``--question``.

    Raises:
        ValueError: the file is not a JSON object (the message names it).
    """
    doc = json.loads(args.input.read_text())
    if not isinstance(doc, dict):
        raise ValueError(f"{args.input}: the input must be a JSON object")
    if args.question:
        doc["question"] = args.question
    return doc


def submit(client: httpx.Client, args: argparse.Namespace) -> str:
    """Submit the example; return its workflow id.

    Raises:
        RuntimeError: the gateway refused it (the message has the status and detail).
    """
    body: dict[str, Any] = {"workflow": yaml.safe_load((HERE / "workflow.yaml").read_text()),
                            "input": workflow_input(args)}
    if args.id:
        body["id"] = args.id
    response = client.post("/v1/workflows", json=body)
    if response.status_code >= 400:
        raise RuntimeError(f"submission refused: {response.status_code} {response.text:.500}")
    return str(response.json()["id"])


def send_approval(client: httpx.Client, workflow_id: str, approved: bool, note: str) -> str:
    """Send the ``approval`` signal (its id derived from the workflow's, so a second
    run of the runner sends the same signal); return the signal id.

    Raises:
        RuntimeError: the gateway refused it.
    """
    fields: dict[str, Any] = {"approved": approved}
    if note:
        fields["note"] = note
    response = client.post(f"/v1/workflows/{quote(workflow_id, safe='')}/signals/approval",
                           json={"signal_id": f"{workflow_id}:runner", "fields": fields})
    if response.status_code >= 400:
        raise RuntimeError(f"signal refused: {response.status_code} {response.text:.500}")
    return str(response.json()["signal_id"])


def signal_command(workflow_id: str, note: str) -> str:
    """The ``headwater signal`` command that approves ``workflow_id``, quoted for a
    POSIX shell (the note as a JSON string, so that a note such as ``true`` stays a
    string)."""
    extra = f" --field {shlex.quote('note=' + json.dumps(note))}" if note else ""
    return (f".venv/bin/headwater signal {workflow_id} approval --field approved=true"
            f"{extra}   (or approved=false)")


def run(args: argparse.Namespace) -> int:
    """Submit, follow, approve if asked; return the exit status."""
    with httpx.Client(base_url=args.gateway, timeout=30) as client:
        workflow_id = submit(client, args)
        print(f"workflow {workflow_id} submitted; following its events")
        progress = Progress()
        verdict = True if args.approve else False if args.reject else None
        for kind, _seq, data in events(client, f"/v1/workflows/{workflow_id}/events"):
            for line in progress.apply(kind, data):
                print(line, flush=True)
            if kind == "WaitStarted" and data.get("signal") == "approval":
                if verdict is None:
                    print(f"  waiting for approval; send it with:\n    "
                          f"{signal_command(workflow_id, args.note)}", flush=True)
                else:
                    signal_id = send_approval(client, workflow_id, verdict, args.note)
                    print(f"  sent approval approved={json.dumps(verdict)} "
                          f"(signal id {signal_id})", flush=True)
    for line in progress.summary():
        print(line)
    return 0 if progress.status == "succeeded" else 1


def main(argv: Sequence[str] | None = None) -> int:
    """The command: start the worker if needed, then :func:`run`."""
    args = parse_args(argv)
    try:
        if httpx.get(f"{args.gateway}/ready", timeout=5).status_code != 200:
            print(f"the gateway at {args.gateway} is not ready yet; try again shortly",
                  file=sys.stderr)
            return 2
    except httpx.TransportError as e:
        print(f"cannot reach the gateway at {args.gateway} ({e}); start the local stack "
              "with `.venv/bin/headwater up`", file=sys.stderr)
        return 2
    try:
        if not args.no_worker:
            pid, started = ensure_worker(args.gateway)
            print(f"{WORKER} (pid {pid}) {'started' if started else 'already running'}")
        return run(args)
    except (RuntimeError, ValueError, OSError, httpx.HTTPError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
