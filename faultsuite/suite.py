"""The fault points, the large table, the infrastructure faults, the plans that exercise
them, and the two suites: ``QUICK`` (one run per point and per infrastructure fault on a
small batch, a table of 1,000 finished and 50 waiting workflows with two kills, PostgreSQL
down for 20 s, and a light rebalance: what ``make test`` runs) and ``FULL`` (several runs
per point, several kills per run, bigger batches, a table of 5,000 finished and 200
waiting workflows with three kills, two runs per infrastructure fault with PostgreSQL
down for 60 s, the full 100-workflow rebalance, and a rebalance with faults: what
``make faults`` runs, with one run of ``headwater serve`` SIGKILLed besides)."""

from __future__ import annotations

from dataclasses import dataclass, field

from faultsuite.batch import ALL_SHAPES, Submission, make_batch
from faultsuite.code import CODE_POINTS, code_faults
from faultsuite.large_table import LargeTable
from faultsuite.outage import Outage
from faultsuite.rebalance import Rebalance
from faultsuite.run import Plan
from faultsuite.shapes import Sizes

EXTERNAL_KILL = "worker.sigkill"
"""Not a ``HEADWATER_FAULTS`` point: the harness SIGKILLs a worker mid-attempt."""
REDO_KILL = "coordinator.after_intent+after_redo"
"""Two crashes in a row: at ``coordinator.after_intent``, then while the next process
carries out the intent that left (``coordinator.after_redo``)."""
OPERATION_KILL = "gateway.operation_acted"
"""The gateway killed between a batch of the bulk cancel's actions and its record
(``faultsuite.bulk``): at its first batch, and each later gateway at its first too, so
that every takeover acts again on targets already cancelled."""
POINTS = (
    "coordinator.before_intent", "coordinator.after_intent", "coordinator.after_publish",
    REDO_KILL, EXTERNAL_KILL, "worker.after_start",
    "worker.after_outcome", "gateway.after_produce", OPERATION_KILL, *CODE_POINTS,
)
"""Every fault point the suites cover, in the order they run; the last ones kill the
worker running a ``@workflow``'s function (``code.CODE_POINTS``)."""
INFRA = ("infra.broker_sigkill", "infra.broker_sigstop", "infra.postgres_stop")
"""The infrastructure faults, each on a private broker and database (``outage``): the
broker SIGKILLed mid-batch and started again ``BROKER_RESTART_S`` later; the broker
frozen (SIGSTOP) for ``BROKER_FROZEN_S`` and thawed; PostgreSQL stopped at once for the
suite's ``postgres_down_s`` and started again."""
BROKER_RESTART_S = 3.0
"""Seconds between the broker's SIGKILL and its restart (which takes ~15 s more: the
controller keeps the dead broker's registration for its session timeout)."""
BROKER_FROZEN_S = 20.0
"""Seconds the broker stays frozen (SIGSTOP)."""
LARGE_TABLE = "coordinator.large_table"
"""The coordinator SIGKILLed with a large table (finished and waiting workflows filled
before the batch) and its local store lost at each restart (``large_table``): first from
outside mid-batch, then at each of ``LARGE_TABLE_LATER`` in turn."""
LARGE_TABLE_LATER = ("coordinator.after_intent", "coordinator.after_publish")
"""The fault points of the large table's later kills (each restarted process recovers
the whole table first)."""
SERVE_KILL = "serve.sigkill"
"""The deployment is one ``headwater serve`` process (the gateway, a coordinator, the
projector and the worker in one), SIGKILLed from outside while its worker runs attempts,
then started again: everything it ran dies at once (``serve_plan``)."""
REBALANCES = ("rebalance", "rebalance+faults")
"""The rebalance scenarios (the second in the full suite only)."""

FIRST_HITS = {"coordinator": (20, 5, 60), "worker": (20, 7, 50), "gateway": (4, 2, 9)}
"""The hit that kills a service's first process, per run (cycled): points are passed
once per applied batch (coordinator), attempt (worker) or submission (gateway; the
first is the schedule's ``PUT``, so 4 is the batch's third submission)."""
LATER_HITS = {"coordinator": 12, "worker": 15, "gateway": 4}
"""The hit that kills each later process (a restarted coordinator applies its backlog in
few, large batches, so fewer hits)."""


def point_plan(point: str, run: int = 0, kills: int = 1, timeout_s: float = 240.0) -> Plan:
    """The plan that kills at ``point`` ``kills`` times in run number ``run``.

    Raises:
        ValueError: an unknown point.
    """
    if point == EXTERNAL_KILL:
        return Plan(point, worker_kills=kills, kill_gap_s=4.0, expect=("external SIGKILL",),
                    timeout_s=timeout_s)
    if point in CODE_POINTS:
        first, later, expect = code_faults(point, run, kills)
        return Plan(point, faults=first, schedule={"worker": later}, expect=expect,
                    timeout_s=timeout_s)
    if point == REDO_KILL:
        first = FIRST_HITS["coordinator"][run % len(FIRST_HITS["coordinator"])]
        return Plan(point, faults=f"coordinator.after_intent={first}",
                    schedule={"coordinator": ["coordinator.after_redo=1"]},
                    expect=("fault coordinator.after_intent", "fault coordinator.after_redo"),
                    timeout_s=timeout_s)
    if point == OPERATION_KILL:
        return Plan(point, faults=f"{point}=1", schedule={"gateway": [f"{point}=1"] * (kills - 1)},
                    expect=(f"fault {point}",), timeout_s=timeout_s)
    if point not in POINTS:
        raise ValueError(f"unknown fault point {point!r} (one of {list(POINTS)})")
    kind = point.split(".", 1)[0]
    first = FIRST_HITS[kind][run % len(FIRST_HITS[kind])]
    later = [f"{point}={LATER_HITS[kind] + 3 * i}" for i in range(kills - 1)]
    return Plan(point, faults=f"{point}={first}", schedule={kind: later},
                expect=(f"fault {point}",), timeout_s=timeout_s)


def serve_plan(kills: int = 1, timeout_s: float = 240.0) -> Plan:
    """The ``SERVE_KILL`` plan: ``kills`` SIGKILLs of the one ``headwater serve``
    process, each while its worker has an attempt in flight."""
    return Plan(SERVE_KILL, serve=True, worker_kills=kills, kill_gap_s=4.0,
                expect=("external SIGKILL",), timeout_s=timeout_s)


def large_table_plan(table: LargeTable, kills: int = 2, timeout_s: float = 240.0) -> Plan:
    """The large-table plan: ``kills`` SIGKILLs of the coordinator (at least one), the
    first from outside, the others at ``LARGE_TABLE_LATER``'s points in turn."""
    later = [LARGE_TABLE_LATER[i % len(LARGE_TABLE_LATER)] for i in range(max(kills, 1) - 1)]
    return Plan(LARGE_TABLE, table=table, timeout_s=timeout_s,
                schedule={"coordinator": [f"{p}={LATER_HITS['coordinator']}" for p in later]},
                expect=("external SIGKILL", *(f"fault {p}" for p in later)))


def infra_plan(name: str, postgres_down_s: float = 60.0) -> Plan:
    """The plan of the infrastructure fault ``name`` (one of ``INFRA``).

    Args:
        name: the fault.
        postgres_down_s: how long PostgreSQL stays down, seconds.

    Raises:
        ValueError: an unknown fault.
    """
    if name not in INFRA:
        raise ValueError(f"unknown infrastructure fault {name!r} (one of {list(INFRA)})")
    what = name.split(".", 1)[1]
    down = {"broker_sigkill": BROKER_RESTART_S, "broker_sigstop": BROKER_FROZEN_S,
            "postgres_stop": postgres_down_s}[what]
    return Plan(name, outage=Outage(what, down))


@dataclass(frozen=True)
class Suite:
    """How much to run.

    Attributes:
        name: ``quick`` or ``full``.
        batch_size: workflows per fault run (cycling through every shape,
            ``batch.ALL_SHAPES``: the quick suite runs one of each, the full two, so a
            shape added there runs in both).
        runs: runs per fault point.
        kills: kills per run.
        rebalance_size: workflows of the rebalance run.
        rebalance: its scaling script.
        rebalance_gap_s: seconds between its submissions (spreads it over the steps).
        faulty_rebalance: also run the rebalance batch while a coordinator and a worker
            are killed.
        infra_runs: runs per infrastructure fault.
        postgres_down_s: how long PostgreSQL stays down in its fault, seconds.
        table: the large table's size (``LARGE_TABLE``).
        table_kills: the coordinator's kills in the large-table run.
        sizes: how long tasks take.
        serve_runs: runs of ``SERVE_KILL`` (one ``headwater serve`` SIGKILLed).
    """

    name: str
    batch_size: int
    runs: int
    kills: int
    rebalance_size: int
    rebalance: Rebalance
    rebalance_gap_s: float
    faulty_rebalance: bool
    infra_runs: int = 1
    postgres_down_s: float = 60.0
    table: LargeTable = field(default_factory=LargeTable)
    table_kills: int = 3
    sizes: Sizes = field(default_factory=Sizes)
    serve_runs: int = 0

    def batch(self) -> list[Submission]:
        """The fault runs' batch (the same in every run)."""
        return make_batch("fb", self.batch_size, self.sizes)

    def rebalance_batch(self) -> list[Submission]:
        """The rebalance runs' batch."""
        return make_batch("rb", self.rebalance_size, self.sizes)

    def plans(self) -> list[Plan]:
        """Every fault run, point by point, ``headwater serve`` killed, the large table,
        then the infrastructure faults."""
        return [*(point_plan(p, r, self.kills) for p in POINTS for r in range(self.runs)),
                *(serve_plan(self.kills) for _ in range(self.serve_runs)),
                large_table_plan(self.table, self.table_kills), *self.infra_plans()]

    def infra_plans(self) -> list[Plan]:
        """Every infrastructure fault, ``infra_runs`` times each."""
        return [infra_plan(name, self.postgres_down_s)
                for name in INFRA for _ in range(self.infra_runs)]

    def rebalance_plans(self) -> list[Plan]:
        """The rebalance run, and with ``faulty_rebalance`` the one with kills too."""
        plans = [Plan("rebalance", rebalance=self.rebalance, submit_gap_s=self.rebalance_gap_s)]
        if self.faulty_rebalance:
            plans.append(Plan(
                "rebalance+faults", faults="coordinator.after_publish=40",
                schedule={"coordinator": ["coordinator.after_intent=15"]},
                worker_kills=1, kill_gap_s=5.0, rebalance=self.rebalance,
                submit_gap_s=self.rebalance_gap_s,
                expect=("fault coordinator.after_publish", "external SIGKILL")))
        return plans


QUICK = Suite("quick", batch_size=len(ALL_SHAPES), runs=1, kills=1, rebalance_size=28,
              rebalance=Rebalance(coordinators=2, workers=3, start_s=2.0, hold_s=3.0),
              rebalance_gap_s=0.4, faulty_rebalance=False, infra_runs=1, postgres_down_s=20.0,
              table=LargeTable(finished=1000, waiting=50), table_kills=2)
FULL = Suite("full", batch_size=2 * len(ALL_SHAPES), runs=3, kills=2, rebalance_size=100,
             rebalance=Rebalance(coordinators=2, workers=3, start_s=3.0, hold_s=8.0),
             rebalance_gap_s=0.3, faulty_rebalance=True, infra_runs=2, postgres_down_s=60.0,
             table=LargeTable(finished=5000, waiting=200), table_kills=3, serve_runs=1)
SUITES = {s.name: s for s in (QUICK, FULL)}
