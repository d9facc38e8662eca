"""The checks after a fuzzing run's rounds, and its figures.

Violations (the goal: none): an HTTP answer of 5xx other than a documented 503, an error
answer that is not a problem document, a request the gateway dropped, a write (``POST``)
that took a case violating the document (a read that ignores an unknown or repeated
query parameter is not one: HTTP APIs conventionally do), a process that died, was
replaced or restarted itself, a step that raised (``cannot apply`` in a dead letter's
reason, save for the documented record limits), a decoder that raised anything but
``DecodeError``, a bad record without a dead letter with a reason or whose dead letter
changed its value, a submission the decoder takes with neither a history nor a dead
letter, a coordinator that did not commit every input (a wedged partition), a valid
workflow that did not succeed, and a paused one (``fuzzer.paused``) that did not end with
its expected output or whose history does not show one pause and one resume with nothing
dispatched between them."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import httpx
from aiokafka.admin import AIOKafkaAdminClient

from fuzzer.kafka_side import Matched, Sent, match, read_dead_letters
from fuzzer.mutants import DLQ
from fuzzer.valid import wait_terminal
from fuzzer.watch import Watch
from headwater import codec
from headwater.core import events as ev
from load.deploy import wait_idle
from load.kafka_io import reader
from tests.polling import scaled

if TYPE_CHECKING:
    from fuzzer.session import Run

ACCEPTED_SAMPLE = 300
"""Workflows accepted from HTTP cases whose end is waited for (the first ones)."""


async def check(state: Run, client: httpx.AsyncClient, watch: Watch,
                log: Any) -> dict[str, Any]:
    """Wait for the run to settle, read what it left, and judge it.

    Returns:
        ``{"figures": {...}, "violations": [...]}``.
    """
    sandbox, timeout_s = state.sandbox, scaled(state.options.timeout_s)
    log("waiting for the valid workflows and the coordinator ...")
    valid = state.valid.figures(await state.valid.outcomes(client, timeout_s))
    accepted = await wait_terminal(client, sandbox.gateway,
                                   state.tally.accepted_ids[:ACCEPTED_SAMPLE], scaled(60))
    not_idle = ""
    try:
        await wait_idle(sandbox, timeout_s=timeout_s)
    except TimeoutError as e:
        not_idle = str(e)
    log("reading the dead letters and the history ...")
    dead = await read_dead_letters(state.bootstrap, sandbox.topics.dlq, scaled(300))
    matched = match(state.sent, dead)
    histories, paused = await _histories(state.bootstrap, sandbox.topics.events,
                                         set(state.valid.paused))
    valid["paused"]["faults"] = await state.valid.pause_faults(client, paused)
    dead_cases = {d.case for d in dead}
    dropped = sorted(f"{case} ({wid})" for case, wid in decoded_submissions(state.sent).items()
                     if wid not in histories and case not in dead_cases)
    figures: dict[str, Any] = {
        "http": state.tally.as_dict(),
        "http_accepted_outcomes": dict(Counter(accepted.values())),
        "kafka": {**kafka_inputs(state.sent), "dead_letters": _matched(matched),
                  "submissions_dropped": dropped, "not_idle": not_idle},
        "services": watch.finish(),
        "valid_workflows": valid,
        "sandbox_topics": await _topics(state.bootstrap, sandbox.prefix),
    }
    figures["inputs_total"] = figures["http"]["inputs"] + figures["kafka"]["inputs"]
    return {"figures": figures, "violations": violations(figures, state.sent)}


def kafka_inputs(sent: list[Sent]) -> dict[str, Any]:
    """The records sent, by mutation and topic, by base kind, and by expectation."""
    by_mutation: dict[str, Counter[str]] = {}
    for s in sent:
        topic = s.mutant.topic.rsplit(".", 1)[-1]
        by_mutation.setdefault(s.mutant.mutation, Counter())[topic] += 1
    return {
        "inputs": len(sent),
        "by_mutation_and_topic": {k: dict(v) for k, v in sorted(by_mutation.items())},
        "by_base": dict(Counter(s.mutant.base for s in sent)),
        "by_expectation": dict(Counter(s.mutant.expect for s in sent)),
        "refused_by_producer": [f"{s.mutant.case} {s.mutant.mutation}: {s.refused[:200]}"
                                for s in sent if s.refused],
        "huge": sorted(f"{s.mutant.size} B {s.mutant.base}/{s.mutant.mutation} "
                       f"({s.mutant.expect})" for s in sent
                       if s.mutant.mutation.startswith("huge")),
    }


def decoded_submissions(sent: list[Sent]) -> dict[str, str]:
    """Case -> workflow id of every submission the decoder took (its key is its id)."""
    return {s.mutant.case: (s.mutant.key or b"").decode(errors="replace") for s in sent
            if s.mutant.expect != DLQ and not s.refused
            and s.mutant.topic.endswith(".submissions")}


def _matched(m: Matched) -> dict[str, Any]:
    return {"expected": m.expected, "dead_lettered_with_reason": m.dead_lettered,
            "missing": m.missing[:50], "missing_count": len(m.missing),
            "without_reason": m.without_reason[:50], "value_changed": m.value_changed[:50],
            "duplicates": m.duplicates, "value_omitted": m.omitted,
            "step_raised": m.step_raised[:50],
            "valid_but_dead_lettered": dict(m.valid_dead_lettered),
            "not_from_this_run": dict(m.other)}


def violations(figures: dict[str, Any], sent: list[Sent]) -> list[str]:
    """Every broken promise in ``figures``, one line each."""
    http, kafka, svc = figures["http"], figures["kafka"], figures["services"]
    dead, valid = kafka["dead_letters"], figures["valid_workflows"]
    out = [f"HTTP: {http['server_errors']} answers 5xx (not a documented 503)"
           if http["server_errors"] else "",
           f"HTTP: {http['not_problem_json']} error answers not application/problem+json"
           if http["not_problem_json"] else "",
           f"HTTP: {http['transport_errors']} requests got no answer"
           if http["transport_errors"] else ""]
    out += [f"HTTP: {n} schema-violating {label} cases answered 2xx"
            for label, n in http["negative_accepted"].items() if label.startswith("POST")]
    out += [f"service {name} is not running" for name in svc["crashed"]]
    out += [f"service {name} was replaced (another pid)" for name in svc["restarted"]]
    out += [f"{svc[k]} {k.replace('_', ' ')} in the services' logs"
            for k in ("restarts_in_place", "unexpected_errors") if svc[k]]
    out += [f"a step raised: {r}" for r in dead["step_raised"]]
    out += [f"decoder raised (not DecodeError) on {s.mutant.case} {s.mutant.base}/"
            f"{s.mutant.mutation}: {s.mutant.why.splitlines()[0]}"
            for s in sent if s.mutant.why.startswith("decoder raised")][:20]
    out += [f"bad record not dead-lettered: {m}" for m in dead["missing"]]
    out += [f"dead letter without a reason: {m}" for m in dead["without_reason"]]
    out += [f"dead letter with another value: {m}" for m in dead["value_changed"]]
    out += [f"submission with neither history nor dead letter: {c}"
            for c in kafka["submissions_dropped"][:50]]
    out.append(f"coordinator not idle: {kafka['not_idle']}" if kafka["not_idle"] else "")
    out += [f"valid workflow did not succeed: {v}" for v in valid["not_succeeded"]]
    out += [f"valid workflow refused: {v}" for v in valid["refused"]]
    out += [f"paused valid workflow: {v}" for v in valid["paused"]["faults"]]
    return [line for line in out if line]


async def _histories(bootstrap: str, topic: str, wanted: set[str],
                     ) -> tuple[set[str], dict[str, list[ev.HistoryEvent]]]:
    """The workflow ids (record keys) on the events topic, and the histories of the
    ``wanted`` ones, in order."""
    async with reader(bootstrap, scaled(300)) as source:
        found = await source.partitions(topic, wait_s=5.0)
        records = await source.read_to_end(topic, found) if found else []
    histories: dict[str, list[ev.HistoryEvent]] = {}
    for r in records:
        wid = (r.key or b"").decode(errors="replace")
        if wid in wanted:
            histories.setdefault(wid, []).append(codec.decode(r.value))
    for events in histories.values():
        events.sort(key=lambda e: e.seq)
    return {(r.key or b"").decode(errors="replace") for r in records}, histories


async def _topics(bootstrap: str, prefix: str) -> int:
    """How many topics the sandbox has (queue names in specs create topics)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return sum(1 for t in await admin.list_topics() if t.startswith(f"{prefix}."))
    finally:
        await admin.close()
