// Runs the run page's pure modules under Node on made-up histories and prints what
// they answer as one JSON document (test_ui_run_logic.py checks it). Argument: the
// URL of the UI's js/ directory.

const base = process.argv[2];
const model = await import(`${base}run_model.js`);
const timeline = await import(`${base}timeline.js`);
const items = await import(`${base}map_items.js`);
const rerun = await import(`${base}rerun.js`);
const dom = await import(`${base}dom.js`);
const panel = await import(`${base}task_panel.js`);

function history(events) {
  const m = model.emptyModel();
  events.forEach(([type, data], i) => model.apply(m, {seq: i + 1, type, data}));
  return m;
}

const spec = {nodes: [{id: "first"}, {id: "extract", kind: "map"}, {id: "w", kind: "wait"},
                      {id: "nap", kind: "sleep"}]};
const big = [["WorkflowAccepted", {spec, input: {xs: 1}, at_ms: 1000}],
             ["TaskDispatched", {node: "first", index: null, attempt: 1, task: "t", queue: "cpu",
                                 input: {a: 1}, at_ms: 1000}],
             ["TaskSucceeded", {node: "first", index: null, attempt: 1, output: 5, at_ms: 1100}]];
for (let i = 9999; i >= 0; i -= 1) {  // dispatched last item first: order must not matter
  big.push(["TaskDispatched", {node: "extract", index: i, attempt: 1, task: "t", queue: "cpu",
                               input: i, at_ms: 1200 + i}]);
  big.push(["TaskStarted", {node: "extract", index: i, attempt: 1, at_ms: 1201 + i, worker: "w1"}]);
  big.push(i % 1000 === 7
    ? ["TaskFailed", {node: "extract", index: i, attempt: 1, at_ms: 1300 + i, error: "no",
                      error_type: "ValueError", traceback: "Traceback …"}]
    : ["TaskSucceeded", {node: "extract", index: i, attempt: 1, at_ms: 1300 + i, output: i}]);
}
big.push(["WaitStarted", {node: "w", index: null, signal: "s", at_ms: 12000}],
         ["SignalConsumed", {node: "w", index: null, name: "s", at_ms: 13000}],
         ["SleepStarted", {node: "nap", at_ms: 13000, wake_at_ms: 13500}],
         ["NodeFinished", {node: "nap", status: "succeeded", at_ms: 13500}],
         ["WorkflowSucceeded", {at_ms: 14000}]);
const m = history(big);
const rows = items.itemsFromModel(m, "extract");
const bigRows = timeline.rows(m);
const span = timeline.span(m, bigRows, 20000);
const extract = bigRows.find((r) => r.node === "extract");
const buckets = timeline.buckets(extract.bars, span.t0, span.t1, 20000);

const small = history([
  ["WorkflowAccepted", {spec: {nodes: [{id: "a", kind: "map"}]}, at_ms: 0}],
  ...[10, 2, 1, 100, 0].map((i) => ["TaskDispatched", {node: "a", index: i, attempt: 1, at_ms: 5}]),
  ["TaskFailed", {node: "a", index: 2, attempt: 1, at_ms: 6, error: "x"}],
  ["TaskDispatched", {node: "a", index: 2, attempt: 2, at_ms: 7}]]);

const reused = history([
  ["WorkflowAccepted", {spec: {nodes: [{id: "whole"}, {id: "m", kind: "map"}]}, at_ms: 0}],
  ["NodeReused", {node: "whole", output: {kept: true}, at_ms: 1}],
  ["TaskReused", {node: "m", index: 3, attempt: 1, output: 9, at_ms: 2}],
  ["TaskDispatched", {node: "m", index: 1, attempt: 1, at_ms: 3}]]);

// A code workflow: activation 0 issues a task (step 0); activation 1 a sleep (step 1)
// and two signal waits (steps 2, 3), numbered by the decision; the code timer wakes the
// sleep, a signal ends one wait, the other is cancelled; it continues as new (its next
// generation numbers its steps from 0 again, its attempts after the first's) and
// sleeps once more; then it ends.
const act = (index, at, steps, extra = {}, attempt = 1) => [
  ["TaskDispatched", {node: "main", index, attempt, task: "flow", queue: "cpu", at_ms: at}],
  ["TaskSucceeded", {node: "main", index, attempt, at_ms: at + 1, output: {steps, ...extra}}]];
const code = history([
  ["WorkflowAccepted", {spec: {nodes: [{id: "main", kind: "code", task: "flow"}]}, at_ms: 0}],
  ...act(0, 10, [{op: "task", name: "t", step: 0}]),
  ["TaskDispatched", {node: "main", index: 1, attempt: 1, task: "t", at_ms: 12}],
  ["TaskSucceeded", {node: "main", index: 1, attempt: 1, at_ms: 20, output: 1}],
  ...act(2, 30, [{op: "sleep", seconds: 5, step: 1},
                 {op: "signal", name: "go", timeout: 60, step: 2},
                 {op: "signal", name: "stop", step: 3}]),
  ["TimerFired", {timer_id: "code:main[3]", at_ms: 5031}],
  ["SignalConsumed", {node: "main", index: 5, name: "go", at_ms: 6000}],
  ["TaskCancelled", {node: "main", index: 7, attempt: 1, at_ms: 7000, reason: "gone"}],
  ...act(4, 7000, [], {continue_as_new: {n: 2}}),
  ["WorkflowRestarted", {generation: 2, at_ms: 7002}],
  ...act(0, 7010, [{op: "sleep", seconds: 1, step: 0}], {}, 2),
  ["TimerFired", {timer_id: "code:main[1]", at_ms: 8011}],
  ...act(2, 8020, [], {finish: 3}, 2),
  ["WorkflowSucceeded", {at_ms: 8030}]]);

const paused = history([
  ["WorkflowAccepted", {spec: {nodes: [{id: "m", kind: "map"}]}, input: {}, at_ms: 1000}],
  ["TaskDispatched", {node: "m", index: 0, attempt: 1, task: "t", queue: "cpu", at_ms: 1000}],
  ["TaskDispatched", {node: "m", index: 1, attempt: 1, task: "t", queue: "cpu", at_ms: 1000}],
  ["TaskStarted", {node: "m", index: 0, attempt: 1, at_ms: 1010, worker: "w1"}],
  ["WorkflowPaused", {at_ms: 1100, by: "alice"}],
  ["DispatchRecalled", {node: "m", index: 1, attempt: 1, at_ms: 1100}],
  ["TaskSucceeded", {node: "m", index: 0, attempt: 1, at_ms: 1200, output: 0}],
  ["DispatchDeferred", {node: "m", index: 2, attempt: 1, at_ms: 1200}],
  ["WorkflowResumed", {at_ms: 5000, held: 2, due: 0}],
  ["TaskDispatched", {node: "m", index: 1, attempt: 2, task: "t", queue: "cpu", at_ms: 5000}]]);

const refused = (text, mode, node) => {
  try {
    return rerun.rerunRequest("r1", {a: 1}, text, mode, node);
  } catch (e) {
    return e.message;
  }
};

console.log(JSON.stringify({
  page0: items.pageOf(rows, 0, "").tasks.map((t) => t.index),
  page1: items.pageOf(rows, 1, "").tasks.map((t) => t.index),
  last: items.pageOf(rows, 99, ""),
  total: items.pageOf(rows, 0, "").total,
  failed: items.pageOf(rows, 0, "failed").tasks.map((t) => [t.index, t.error_type]),
  failedTraceback: model.attemptsOf(m, "extract", 7)[0].traceback,
  output: model.attemptsOf(m, "extract", 42)[0].output,
  input: m.input,
  bigRows: bigRows.map((r) => [r.label, r.aggregate, r.count, r.bars.length]),
  span,
  buckets: {count: buckets.length, failed: buckets.filter((b) => b.failed).length,
            most: Math.max(...buckets.map((b) => b.count))},
  spans: [...m.spans.values()].map((sp) => [sp.key, sp.start, sp.end, sp.outcome]),
  codeSpans: [...code.spans.values()].map((sp) => [sp.key, sp.start, sp.until, sp.end,
                                                   sp.outcome]),
  codeRows: timeline.rows(code).map((r) => [r.label, r.kind, r.bars.map((b) => b.outcome)]),
  codeItems: items.itemsFromModel(code, "main").map((t) => [t.index, t.task, t.status]),
  smallRows: timeline.rows(small).map((r) => [r.label, r.bars.map((b) => b.outcome)]),
  reused: [...reused.attempts.values()].map((a) => [a.key, a.outcome, a.output ?? null]),
  reusedItems: items.itemsFromModel(reused, "m").map((t) => [t.index, t.status]),
  taskFirst: panel.fromModel(m, "first", null),
  taskFailed: panel.fromModel(m, "extract", 7),
  smallAttempts: model.attemptsOf(small, "a").map((a) => a.key),
  rerunSame: rerun.rerunRequest("r1", {a: 1}, '{"a": 1}', "failed", "n"),
  rerunChanged: rerun.rerunRequest("r1", {a: 1}, '{"a": 2}', "failed", "n"),
  reset: rerun.rerunRequest("r1", {a: 1}, '{"a": 1}', "reset", "extract"),
  badJson: refused("{", "failed", "n").slice(0, 21),
  noNode: refused("{}", "reset", ""),
  when: dom.when(Date.UTC(2026, 11, 5, 14, 3, 7, 512)),
  pausedAttempts: model.attemptsOf(paused, "m").map((a) => [a.key, a.outcome, a.message]),
}));
