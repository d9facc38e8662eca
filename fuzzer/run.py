"""One fuzzing run on a private sandbox: HTTP cases and mutated Kafka records in rounds,
valid workflows between them, then every check.

    report = run(Options(http=300, kafka=300, rounds=3))
    assert report["violations"] == [], report["violations"]

Each round submits a valid workflow over HTTP and one straight to Kafka, and two more
that it pauses and resumes while they run (one over HTTP, one on Kafka: ``paused``),
then sends its share of HTTP cases and of bad records at the same time. Once every round is done the
valid workflows must succeed (the paused ones with their expected output, paused and
resumed once each), the coordinator must have committed every input (no
partition wedged), every bad record must have a dead letter with a reason, every
submission the decoder takes must have a history or a dead letter, and every process
must still run with the pid it started with (``watch``).
"""

from __future__ import annotations

import asyncio
import random
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from fuzzer import checks, http_cases
from fuzzer.bases import TARGET_SPEC, Builders, avro
from fuzzer.kafka_side import send
from fuzzer.mutants import Mutant, Mutator
from fuzzer.session import Options, Run
from fuzzer.valid import Valid
from fuzzer.watch import Watch
from headwater.core import events as ev
from load.deploy import QUEUE, REPO, TASK_MODULE, wait_idle
from load.kafka_io import existing_partitions, reader
from ops.sandbox import Sandbox, home_kept, start_sandbox, stop_sandbox
from services.common.settings import DEFAULT_MAX_MESSAGE_BYTES
from tests.polling import scaled

HTTP_TARGETS = 4
"""Running workflows that HTTP cases may cancel, pause and resume (apart from the Kafka
side's targets)."""


def run(options: Options, log: Any = print) -> dict[str, Any]:
    """Start a sandbox, fuzz it, check it, stop it and drop its data.

    Args:
        options: what to send.
        log: called with a progress line now and then.

    Returns:
        The report: ``options``, ``figures`` (HTTP, Kafka, services, valid workflows)
        and ``violations`` (the goal: none).
    """
    seed = options.seed or random.SystemRandom().randrange(1, 2**31)
    home = Path(tempfile.mkdtemp(prefix="hw-fuzz-"))
    began = time.monotonic()
    with home_kept():
        sandbox = start_sandbox(home, [TASK_MODULE], workers=1, queue=QUEUE,
                                pythonpath=[str(REPO)], extra_env={"HEADWATER_SSE_PING": "1"})
        try:
            report = asyncio.run(_drive(options, seed, sandbox, log))
            if report["violations"]:
                report["logs"] = sandbox.logs(4000)
        finally:
            stop_sandbox(sandbox)
            shutil.rmtree(home, ignore_errors=True)
    report["options"] = {**options.__dict__, "seed": seed}
    report["duration_s"] = round(time.monotonic() - began, 1)
    return report


async def _drive(options: Options, seed: int, sandbox: Sandbox, log: Any) -> dict[str, Any]:
    watch = Watch(sandbox)
    watch.start()
    tag = f"fz{uuid.uuid4().hex[:6]}"
    state = await _prepare(options, seed, sandbox, tag)
    schema = await asyncio.to_thread(http_cases.load_schema, sandbox.gateway)
    sender = http_cases.Sender(sandbox.gateway, state.tally)
    async with httpx.AsyncClient(timeout=30) as client:
        for r in range(options.rounds):
            await state.valid.submit_http(client)
            await state.valid.submit_kafka(DEFAULT_MAX_MESSAGE_BYTES)
            for how in ("http", "kafka"):
                await state.valid.start_paused(client, how, scaled(options.timeout_s))
            mutants = _round_mutants(state, r)
            await asyncio.gather(
                asyncio.to_thread(http_cases.run_cases, sender, schema,
                                  options.http // options.rounds, seed + 10 * r,
                                  state.known()),
                _send(state, mutants))
            log(f"round {r + 1}/{options.rounds}: {state.tally.total} HTTP cases, "
                f"{len(state.sent)} records")
        await state.valid.submit_http(client)
        await state.valid.submit_kafka(DEFAULT_MAX_MESSAGE_BYTES)
        await state.valid.settle()
        return await checks.check(state, client, watch, log)


async def _prepare(options: Options, seed: int, sandbox: Sandbox, tag: str) -> Run:
    """Find the partition count, choose the edge records, and start the target
    workflows (the run's, the HTTP cases', one per edge record that is not a
    submission); wait until the coordinator has taken them."""
    bootstrap = sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]
    async with reader(bootstrap) as source:
        partitions = len(await existing_partitions(source, sandbox.topics.submissions,
                                                   scaled(60)))
    now = int(time.time() * 1000)
    targets = [f"{tag}-target-{i}" for i in range(options.targets)]
    http_targets = [f"{tag}-http-target-{i}" for i in range(HTTP_TARGETS)]
    rng = random.Random(seed)
    mutator = Mutator(Builders(sandbox.topics, tag, targets, now), partitions,
                      DEFAULT_MAX_MESSAGE_BYTES)
    edges = mutator.edges(rng)
    rng.shuffle(edges)
    edges = edges[:options.kafka // 3]
    edge_targets = [(m.key or b"").decode() for m in edges
                    if m.topic != sandbox.topics.submissions]
    records = [avro("target", sandbox.topics.submissions,
                    ev.WorkflowSubmitted(t, TARGET_SPEC, None, now))
               for t in [*targets, *http_targets, *edge_targets]]
    await send(bootstrap, [Mutant(f"target-{i}", "target", "none", b.topic, b.key, b.value,
                                  b.headers) for i, b in enumerate(records)],
               DEFAULT_MAX_MESSAGE_BYTES)
    await wait_idle(sandbox, timeout_s=scaled(options.timeout_s))
    return Run(options, sandbox, rng, mutator, http_cases.Tally(), Valid(sandbox, tag), [],
               edges, http_targets)


def _round_mutants(state: Run, r: int) -> list[Mutant]:
    """The bad records of round ``r``: its share of the edge records, and random
    mutations for the rest of its share of ``kafka``, and its share of ``huge``."""
    o, rng = state.options, state.rng
    edges = state.edges[r::o.rounds]
    kinds = state.mutator.builders.kinds()
    share = o.kafka // o.rounds + (o.kafka % o.rounds if r == o.rounds - 1 else 0)
    count = max(0, share - len(edges))
    huge = o.huge // o.rounds + (1 if r < o.huge % o.rounds else 0)
    out: list[Mutant] = list(edges)
    for i in range(count + huge):
        base = kinds[rng.choice(sorted(kinds))](rng)
        small = [n for n in sorted(state.mutator.mutations(base)) if not n.startswith("huge")]
        huge_kind = "huge" if (i - count) % 2 == 0 else "huge_valid"  # each round: huge first
        mutation = rng.choice(small) if i < count else huge_kind
        mutant = state.mutator.mutate(base, mutation, rng, f"{r}-{i}")
        if mutant is not None:
            out.append(mutant)
    rng.shuffle(out)
    return out


async def _send(state: Run, mutants: list[Mutant]) -> None:
    state.sent += await send(state.bootstrap, mutants, DEFAULT_MAX_MESSAGE_BYTES)
