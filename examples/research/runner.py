"""``python -m examples.research``: run the research workflow (Python code,
:mod:`examples.research.flows`) on the local stack, in one command.

It starts the workers it needs if none runs (``worker-hybrid-1`` for the hybrid
example's tasks, ``worker-research-1`` for the workflows' activations; ``headwater
ps`` lists them, ``headwater down`` stops them and ``headwater up`` starts them again),
submits the workflow's spec document (``WorkflowInfo.spec()``: one ``code`` node) with
the hybrid example's ``input.json`` (the same question over the same installed
packages), follows its events and prints each decision of the function, decide's
reasoning and the function's progress. With ``--approve`` or ``--reject`` it sends the
``approval`` signal itself once the function waits for it; otherwise it prints the
``headwater signal`` command to send from another terminal and goes on following. An
approved answer is held ``--hold`` seconds (the workflow's default is a day), then
published. At the end it prints the answer, where it went and each task's time.

Exit status: 0 the workflow succeeded, 1 it failed or was cancelled, 2 the gateway
could not be reached or refused the submission.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from examples.hybrid.runner import default_gateway, ensure_worker, signal_command
from examples.hybrid.tasks import QUEUE as HYBRID_QUEUE
from examples.hybrid.tasks import TASKS_MODULE
from examples.research.flows import FLOWS_MODULE, QUEUE, research
from examples.research.progress import Progress, waits_for
from headwater.client import Client
from headwater.errors import HeadwaterError
from headwater.workflows.decorator import info_of

INPUT = Path(__file__).resolve().parents[1] / "hybrid" / "input.json"
"""The hybrid example's input: the runs of both examples answer the same question."""
HOLD_S = 3.0
"""How long the runner asks an approved answer to be held, seconds."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (``--help`` lists it)."""
    parser = argparse.ArgumentParser(
        prog="python -m examples.research",
        description="Run the research workflow, written as Python code (classify the "
                    "installed packages, search, draft in a bounded loop, wait for "
                    "approval, publish), on the local stack.")
    parser.add_argument("--question", help="the question (default: input.json's)")
    parser.add_argument("--input", type=Path, default=INPUT,
                        help="the workflow input, a JSON file (default: %(default)s)")
    verdict = parser.add_mutually_exclusive_group()
    verdict.add_argument("--approve", action="store_true",
                         help="send approved=true once the workflow waits for approval")
    verdict.add_argument("--reject", action="store_true",
                         help="send approved=false once the workflow waits for approval")
    parser.add_argument("--note", default="", help="the approval's note")
    parser.add_argument("--hold", type=float, default=HOLD_S,
                        help="seconds an approved answer is held before it is published "
                             "(default: %(default)s; the workflow's own default is a day)")
    parser.add_argument("--id", help="the workflow id (an idempotency key)")
    parser.add_argument("--gateway", default=default_gateway(),
                        help="the gateway's base URL (default: %(default)s)")
    parser.add_argument("--no-worker", action="store_true",
                        help="do not start the workers of the hybrid and research queues")
    return parser.parse_args(argv)


def workflow_input(args: argparse.Namespace) -> dict[str, Any]:
    """``--input``'s document, its question replaced by ``--question``, with
    ``hold_s`` from ``--hold``.

    Raises:
        ValueError: the file is not a JSON object (the message names it).
    """
    doc = json.loads(args.input.read_text())
    if not isinstance(doc, dict):
        raise ValueError(f"{args.input}: the input must be a JSON object")
    if args.question:
        doc["question"] = args.question
    return {**doc, "hold_s": args.hold}


def spec() -> dict[str, Any]:
    """The spec document of a run of ``research`` (``WorkflowInfo.spec``)."""
    info = info_of(research)
    assert info is not None
    return info.spec()


def run(args: argparse.Namespace) -> int:
    """Submit, follow, approve if asked; return the exit status."""
    verdict = True if args.approve else False if args.reject else None
    with Client(args.gateway) as hw:
        workflow_id = hw.submit(spec(), input=workflow_input(args), id=args.id).id
        print(f"workflow {workflow_id} submitted; following its events", flush=True)
        progress = Progress()
        asked = False
        for event in hw.events(workflow_id):
            for line in progress.apply(event.type, event.data):
                print(line, flush=True)
            if asked or event.type != "TaskSucceeded" or not waits_for(
                    event.data.get("output"), "approval"):
                continue
            asked = True
            if verdict is None:
                print(f"  waiting for approval; send it with:\n    "
                      f"{signal_command(workflow_id, args.note)}", flush=True)
                continue
            fields: dict[str, Any] = {"approved": verdict}
            if args.note:
                fields["note"] = args.note
            sent = hw.signal(workflow_id, "approval", fields,
                             signal_id=f"{workflow_id}:runner")
            print(f"  sent approval approved={json.dumps(verdict)} "
                  f"(signal id {sent['signal_id']})", flush=True)
    for line in progress.summary():
        print(line)
    return 0 if progress.status == "succeeded" else 1


def main(argv: Sequence[str] | None = None) -> int:
    """The command: start the workers if needed, then :func:`run`."""
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
            for queue, module in ((HYBRID_QUEUE, TASKS_MODULE), (QUEUE, FLOWS_MODULE)):
                pid, started = ensure_worker(args.gateway, queue=queue, tasks_module=module)
                print(f"worker-{queue}-1 (pid {pid}) "
                      f"{'started' if started else 'already running'}")
        return run(args)
    except (RuntimeError, ValueError, OSError, HeadwaterError, httpx.HTTPError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
