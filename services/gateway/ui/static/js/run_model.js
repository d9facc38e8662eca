// What a run's event stream tells beyond its document: the spec it was accepted with
// (for the graph), every attempt with its times, input, output and outcome (the
// document shows only each task's latest; what a rerun reused is an attempt "reused",
// numbered 0 for a whole node), the spans of waits and sleeps (for the timeline; a
// code workflow's from its activations' decisions), and the chunks streamed by
// generator tasks. Pure: events in, plain values out.

/** Every history event type (headwater/core/events/history.py Body; a unit test compares). */
export const EVENT_TYPES = [
  "CacheAnswered", "CacheLookedUp", "CacheReleased", "CacheReturned", "CacheServed",
  "ConditionEvaluated", "LoopStepDecided", "MapExpanded", "NodeFinished", "NodeReused",
  "LimitDefined", "ParentLinked", "PermitGranted", "PermitIssued", "PermitRefused",
  "PermitReleased", "PermitRequested",
  "PermitsReturned",
  "ReportDiscarded", "ScheduleArmed", "ScheduleFired", "SchedulePaused", "ScheduleResumed",
  "SignalConsumed", "SignalDiscarded", "SignalSent", "SleepStarted", "TaskCancelled",
  "TaskCached", "TaskCheckpointed", "TaskDispatched", "TaskFailed", "TaskHeartbeated", "TaskHeld",
  "TaskLookedUp",
  "TaskOutputStreamed", "TaskProgressed", "TaskReused", "TaskStarted", "TaskSucceeded",
  "TimerFired",
  "TimerScheduled", "WaitStarted", "WorkflowAccepted", "WorkflowCancelled",
  "WorkflowFailed", "WorkflowRestarted", "WorkflowSucceeded",
  "DeadlineSet", "CallerLinked", "CallLinked",
  "WorkflowPaused", "WorkflowResumed", "DispatchDeferred", "TimerDeferred",
  "DispatchRecalled",
];

/** A task's key as the gateway writes it: node, or node[index] for a map's item. */
export function taskKey(node, index) {
  return index === null || index === undefined ? node : `${node}[${index}]`;
}

/** A fresh model: nothing seen yet. */
export function emptyModel() {
  return {spec: null, input: undefined, startedAt: null, endedAt: null, generation: 1,
          lastSeq: 0, ended: null, attempts: new Map(), spans: new Map(), chunks: new Map()};
}

function attemptOf(model, data) {
  const key = `${taskKey(data.node, data.index)}#${data.attempt ?? 0}`;
  let attempt = model.attempts.get(key);
  if (!attempt) {
    attempt = {key, task: taskKey(data.node, data.index), node: data.node,
               index: data.index ?? null, attempt: data.attempt ?? 0, generation: model.generation,
               name: "", queue: "", worker: "", dispatchedAt: null, startedAt: null,
               endedAt: null, outcome: "dispatched", error: "", errorType: "", progress: null,
               message: "", input: undefined, output: undefined, traceback: ""};
    model.attempts.set(key, attempt);
  }
  return attempt;
}

const ON_ATTEMPT = {
  TaskHeld(a, d) {  // waits for a permit of a concurrency or rate limit
    Object.assign(a, {outcome: "held", message: `waiting for ${d.kind} ${d.key}`});
  },
  TaskLookedUp(a, d) {  // waits for its cache's answer
    Object.assign(a, {name: d.task || "", outcome: "held",
                      message: `looking up the cache of ${d.task}`});
  },
  TaskCached(a, d) {  // a cache's hit: succeeded with the output another attempt computed
    const s = d.source || {};
    Object.assign(a, {name: d.task || "", endedAt: d.at_ms, outcome: "succeeded",
                      output: d.output,
                      message: `cached from ${s.workflow_id} ${taskKey(s.node, s.index)} #${s.attempt}`});
  },
  TaskDispatched(a, d) {
    Object.assign(a, {name: d.task || "", queue: d.queue || "", dispatchedAt: d.at_ms,
                      input: d.input, outcome: "dispatched", message: ""});
  },
  TaskStarted(a, d) {
    Object.assign(a, {worker: d.worker || "", startedAt: d.at_ms, outcome: "running"});
  },
  TaskProgressed(a, d) {
    Object.assign(a, {progress: d.fraction, message: d.message || ""});
  },
  TaskSucceeded(a, d) {
    Object.assign(a, {endedAt: d.at_ms, outcome: "succeeded", output: d.output});
  },
  TaskFailed(a, d) {
    Object.assign(a, {endedAt: d.at_ms, outcome: "failed", error: d.error || "",
                      errorType: d.error_type || "", traceback: d.traceback || ""});
  },
  TaskReused(a, d) {  // an item a rerun took from the run it reruns: not dispatched
    Object.assign(a, {name: "(reused)", dispatchedAt: d.at_ms, startedAt: d.at_ms,
                      endedAt: d.at_ms, outcome: "reused", output: d.output});
  },
  NodeReused(a, d) {  // a node a rerun took whole from the run it reruns
    ON_ATTEMPT.TaskReused(a, d);
  },
  TaskCancelled(a, d) {
    Object.assign(a, {endedAt: d.at_ms, outcome: "cancelled", error: d.reason || ""});
  },
  DispatchDeferred(a, d) {  // held until its run resumes
    Object.assign(a, {outcome: "held", message: "held: the run is paused"});
  },
  DispatchRecalled(a, d) {  // still in its queue when the run paused: the next one runs
    Object.assign(a, {endedAt: d.at_ms, outcome: "recalled",
                      message: "recalled: the run paused before it started"});
  },
};

function addChunk(model, d) {
  const key = `${taskKey(d.node, d.index)}#${d.attempt}`;
  let entry = model.chunks.get(key);
  if (!entry) {
    entry = {key, task: taskKey(d.node, d.index), attempt: d.attempt, chunks: []};
    model.chunks.set(key, entry);
  }
  entry.chunks[d.chunk_seq ?? entry.chunks.length] = d.chunk;
}

const TERMINAL = {WorkflowSucceeded: "succeeded", WorkflowFailed: "failed",
                  WorkflowCancelled: "cancelled"};

function openSpan(model, kind, d, until) {
  const key = `${kind}:${taskKey(d.node, d.index)}`;
  model.spans.set(key, {key, kind, node: d.node, index: d.index ?? null, start: d.at_ms,
                        until: until ?? null, end: null, outcome: kind === "wait" ? "waiting"
                          : "sleeping"});
}

function closeSpans(model, at, outcome, node = null, index = undefined) {
  for (const span of model.spans.values()) {
    if (span.end !== null || (node !== null && span.node !== node)) continue;
    if (index !== undefined && span.index !== index) continue;
    Object.assign(span, {end: at, outcome});
  }
}

/** The kind of node in the run's spec ("task" when it names none). */
function kindOf(model, node) {
  const found = (model.spec?.nodes || []).find((n) => n?.id === node);
  return found ? found.kind || "task" : null;
}

const CODE_SPANS = {sleep: "sleep", signal: "wait"};

/** The span key of a code workflow's own step at node[index] of kind ("sleep" or
 * "wait"): a generation after the first (continued as new, numbering its steps from 0
 * again) has its own. */
function codeKey(model, kind, node, index) {
  const key = `${kind}:${taskKey(node, index)}`;
  return model.generation > 1 ? `${key}@${model.generation}` : key;
}

/** A code workflow's activation decided: its sleeps and signal waits are run by the
 * coordinator, with no dispatch of their own, so each opens a span at the index of the
 * number the decision gives it (2 step + 1), as the projector makes their rows
 * (services/projector/code_steps.py). An ending decision issues nothing. */
function codeDecided(model, d) {
  const out = d.output;
  if (kindOf(model, d.node) !== "code" || d.index === null || d.index === undefined
      || d.index % 2 || !out || typeof out !== "object" || !Array.isArray(out.steps)
      || "finish" in out || "fail" in out) return;
  for (const step of out.steps) {
    const kind = CODE_SPANS[step?.op];
    if (!kind || !Number.isInteger(step.step)) continue;
    const index = 2 * step.step + 1;
    const key = codeKey(model, kind, d.node, index);
    if (model.spans.has(key)) continue;  // the same event again
    const until = kind === "sleep" ? step.until_ms ?? d.at_ms + 1000 * (step.seconds || 0)
      : step.timeout != null ? d.at_ms + 1000 * step.timeout : null;
    model.spans.set(key, {key, kind, node: d.node, index, generation: model.generation,
                          start: d.at_ms, until, end: null,
                          outcome: kind === "wait" ? "waiting" : "sleeping"});
  }
}

/** End the code step at node[index] (a sleep: outcomes.sleep, a wait: outcomes.wait);
 * whether it is one. */
function codeEnded(model, node, index, at, outcomes) {
  let found = false;
  for (const kind of ["sleep", "wait"]) {
    const span = model.spans.get(codeKey(model, kind, node, index));
    if (!span) continue;
    found = true;
    if (span.end === null) Object.assign(span, {end: at, outcome: outcomes[kind]});
  }
  return found;
}

/** A code timer ("code:<node>[<index>]") woke a sleep or timed a signal wait out. */
function codeTimer(model, d) {
  const m = /^code:(.+)\[(\d+)\]$/.exec(d.timer_id || "");
  if (m) codeEnded(model, m[1], Number(m[2]), d.at_ms, {sleep: "succeeded", wait: "failed"});
}

const ON_SPAN = {
  WaitStarted: (m, d) => openSpan(m, "wait", d, d.timeout_at_ms),
  SleepStarted: (m, d) => openSpan(m, "sleep", d, d.wake_at_ms),
  SignalConsumed: (m, d) => closeSpans(m, d.at_ms, "succeeded", d.node, d.index ?? null),
  NodeFinished: (m, d) => closeSpans(m, d.at_ms, d.status, d.node),
  TimerFired: codeTimer,
};

/** Fold one event ({seq, type, data}) into the model; returns the model. */
export function apply(model, event) {
  const {type, data} = event;
  model.lastSeq = Math.max(model.lastSeq, event.seq);
  if (type === "WorkflowAccepted") {
    Object.assign(model, {spec: data?.spec ?? null, input: data?.input,
                          startedAt: data?.at_ms ?? null});
  } else if (type === "WorkflowRestarted") {
    model.generation = data.generation;
  } else if (type === "TaskOutputStreamed") {
    addChunk(model, data);
  } else if (type === "TaskCancelled" && codeEnded(model, data.node, data.index, data.at_ms,
                                                   {sleep: "cancelled", wait: "cancelled"})) {
    // a code workflow's sleep or signal wait cancelled: no attempt of its own
  } else if (ON_ATTEMPT[type]) {
    ON_ATTEMPT[type](attemptOf(model, data), data);
    if (type === "TaskSucceeded") codeDecided(model, data);
  } else if (ON_SPAN[type]) {
    ON_SPAN[type](model, data);
  } else if (TERMINAL[type]) {
    model.ended = TERMINAL[type];
    model.endedAt = data?.at_ms ?? null;
    closeSpans(model, model.endedAt, model.ended);
  }
  return model;
}

/** How tasks are ordered wherever they are listed: by the node's place in the spec,
 * then by index as a number (2 before 10), then by generation and attempt. */
export function taskOrder(spec) {
  const place = new Map((Array.isArray(spec?.nodes) ? spec.nodes : [])
    .map((n, i) => [n?.id, i]));
  const at = (node) => place.get(node) ?? Number.MAX_SAFE_INTEGER;
  return (a, b) => at(a.node) - at(b.node) || String(a.node).localeCompare(String(b.node))
    || (a.index ?? -1) - (b.index ?? -1) || (a.generation ?? 1) - (b.generation ?? 1)
    || (a.attempt ?? 0) - (b.attempt ?? 0);
}

/** The attempts of one node (every item of a map), or of one task when index is given
 * (null: the node's own task), in taskOrder. */
export function attemptsOf(model, node, index = undefined) {
  const found = [];
  for (const a of model.attempts.values()) {
    if (a.node === node && (index === undefined || a.index === (index ?? null))) found.push(a);
  }
  return found.sort(taskOrder(model.spec));
}

/** A generator task's chunks as text: strings joined as they came, other values one
 * JSON document per line. */
export function chunkText(chunks) {
  const present = chunks.filter((c) => c !== undefined);
  if (present.every((c) => typeof c === "string")) return present.join("");
  return present.map((c) => JSON.stringify(c)).join("\n");
}

/** The graph of a spec: [{id, kind, needs, onError}], nodes without an id left out. */
export function graphOf(spec) {
  const nodes = Array.isArray(spec?.nodes) ? spec.nodes : [];
  return nodes.filter((n) => n && typeof n.id === "string").map((n) => ({
    id: n.id,
    kind: n.kind || "task",
    needs: Array.isArray(n.needs) ? n.needs.filter((x) => typeof x === "string") : [],
    onError: typeof n.on_error === "string" ? n.on_error : null,
  }));
}

/** The fields a wait node of the spec declares for signal: [{name, type, required}]. */
export function signalFields(spec, signal) {
  const nodes = Array.isArray(spec?.nodes) ? spec.nodes : [];
  const wait = nodes.find((n) => n && n.kind === "wait" && n.signal === signal);
  const declared = wait && typeof wait.fields === "object" && wait.fields ? wait.fields : {};
  return Object.entries(declared).map(([name, value]) => {
    const typed = value && typeof value === "object";
    return {name, type: typed ? (value.type || "any") : String(value),
            required: typed ? value.required !== false : true};
  });
}
