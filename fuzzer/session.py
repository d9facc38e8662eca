"""A fuzzing run's options (``Options``: how much it sends) and what it carries between
its steps (``Run``): the sandbox, the mutator, what was sent and what answered."""

from __future__ import annotations

import random
from dataclasses import dataclass

from fuzzer import http_cases
from fuzzer.kafka_side import Sent
from fuzzer.mutants import Mutant, Mutator
from fuzzer.valid import Valid
from ops.sandbox import Sandbox


@dataclass(frozen=True)
class Options:
    """What one run sends.

    Attributes:
        http: HTTP cases in all (about; an operation with fewer distinct cases gets
            fewer).
        kafka: mutated records in all, besides the huge ones.
        huge: records of 1 MiB up to the broker's limit (among them valid ones too
            large to record their consequences).
        rounds: how many rounds the inputs are spread over (a valid workflow each).
        targets: running workflows that reports and control records may name.
        seed: the random seed (0: a fresh one, written in the report).
        timeout_s: the longest wait for the valid workflows, and for the coordinator to
            be idle, seconds (scaled by ``HEADWATER_TEST_TIME_SCALE``).
    """

    http: int = 6000
    kafka: int = 7000
    huge: int = 15
    rounds: int = 10
    targets: int = 8
    seed: int = 0
    timeout_s: float = 300.0


@dataclass
class Run:
    """What a run carries between its steps.

    Attributes:
        edges: the ``edge_value`` records still to send (``Mutator.edges``).
        http_targets: running workflows that HTTP cases may cancel, pause and resume.
    """

    options: Options
    sandbox: Sandbox
    rng: random.Random
    mutator: Mutator
    tally: http_cases.Tally
    valid: Valid
    sent: list[Sent]
    edges: list[Mutant]
    http_targets: list[str]

    @property
    def bootstrap(self) -> str:
        """The sandbox's Kafka."""
        return self.sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]

    def known(self) -> dict[str, list[str]]:
        """Workflow ids for the HTTP cases' paths, by operation: running targets (half
        of them cancelled, the other half paused and resumed, so that those stay
        running), valid workflows of earlier rounds (never cancelled), and workflows
        HTTP cases created (never paused: a run left paused would not end, and their
        ends are waited for)."""
        created = list(self.tally.accepted_ids)
        earlier = list(self.valid.ids)[:-2]
        targets = list(self.mutator.builders.targets)
        half = len(self.http_targets) // 2  # half cancelled, half paused and resumed
        cancelled, paused = self.http_targets[:half], self.http_targets[half:]
        return {
            "GET /v1/workflows/{workflow_id}": [*self.http_targets, *targets[:2], *earlier,
                                                *created[:10]],
            "POST /v1/workflows/{workflow_id}/cancel": [*cancelled, *created[-10:]],
            "POST /v1/workflows/{workflow_id}/pause": paused,
            "POST /v1/workflows/{workflow_id}/resume": paused,
            "GET /v1/workflows/{workflow_id}/events": [*earlier[-6:], *created[:10]],
        }
