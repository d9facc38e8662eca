// What a run's event stream tells beyond its document: the spec it was accepted with
// (for the graph), every attempt with its times and outcome (the document shows only
// each task's latest), and the chunks streamed by generator tasks. Pure: events in,
// plain values out.

/** Every history event type (headwater/core/events/history.py Body; a unit test compares). */
export const EVENT_TYPES = [
  "ConditionEvaluated", "LoopStepDecided", "MapExpanded", "NodeFinished", "NodeReused",
  "ParentLinked",
  "ReportDiscarded", "ScheduleArmed", "ScheduleFired", "SchedulePaused", "ScheduleResumed",
  "SignalConsumed", "SignalDiscarded", "SignalSent", "SleepStarted", "TaskCancelled",
  "TaskCheckpointed", "TaskDispatched", "TaskFailed", "TaskHeartbeated",
  "TaskOutputStreamed", "TaskProgressed", "TaskReused", "TaskStarted", "TaskSucceeded",
  "TimerFired",
  "TimerScheduled", "WaitStarted", "WorkflowAccepted", "WorkflowCancelled",
  "WorkflowFailed", "WorkflowRestarted", "WorkflowSucceeded",
];

/** A task's key as the gateway writes it: node, or node[index] for a map's item. */
export function taskKey(node, index) {
  return index === null || index === undefined ? node : `${node}[${index}]`;
}

/** A fresh model: nothing seen yet. */
export function emptyModel() {
  return {spec: null, generation: 1, lastSeq: 0, ended: null, attempts: new Map(),
          chunks: new Map()};
}

function attemptOf(model, data) {
  const key = `${taskKey(data.node, data.index)}#${data.attempt}`;
  let attempt = model.attempts.get(key);
  if (!attempt) {
    attempt = {key, task: taskKey(data.node, data.index), node: data.node,
               index: data.index ?? null, attempt: data.attempt, generation: model.generation,
               name: "", queue: "", worker: "", dispatchedAt: null, startedAt: null,
               endedAt: null, outcome: "dispatched", error: "", errorType: "", progress: null,
               message: ""};
    model.attempts.set(key, attempt);
  }
  return attempt;
}

const ON_ATTEMPT = {
  TaskDispatched(a, d) {
    Object.assign(a, {name: d.task || "", queue: d.queue || "", dispatchedAt: d.at_ms});
  },
  TaskStarted(a, d) {
    Object.assign(a, {worker: d.worker || "", startedAt: d.at_ms, outcome: "running"});
  },
  TaskProgressed(a, d) {
    Object.assign(a, {progress: d.fraction, message: d.message || ""});
  },
  TaskSucceeded(a, d) {
    Object.assign(a, {endedAt: d.at_ms, outcome: "succeeded"});
  },
  TaskFailed(a, d) {
    Object.assign(a, {endedAt: d.at_ms, outcome: "failed", error: d.error || "",
                      errorType: d.error_type || ""});
  },
  TaskCancelled(a, d) {
    Object.assign(a, {endedAt: d.at_ms, outcome: "cancelled", error: d.reason || ""});
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

/** Fold one event ({seq, type, data}) into the model; returns the model. */
export function apply(model, event) {
  const {type, data} = event;
  model.lastSeq = Math.max(model.lastSeq, event.seq);
  if (type === "WorkflowAccepted") {
    model.spec = data?.spec ?? null;
  } else if (type === "WorkflowRestarted") {
    model.generation = data.generation;
  } else if (type === "TaskOutputStreamed") {
    addChunk(model, data);
  } else if (ON_ATTEMPT[type]) {
    ON_ATTEMPT[type](attemptOf(model, data), data);
  } else if (TERMINAL[type]) {
    model.ended = TERMINAL[type];
  }
  return model;
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
