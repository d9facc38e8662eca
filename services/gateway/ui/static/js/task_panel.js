// One task's panel: its input, its output, every attempt (worker, times, error type and
// message, the traceback folded in a <details>) and its logs (task_logs.js), read from
// GET /v1/workflows/{id}/tasks/{node}/{index}. Where the gateway has no such resource
// the panel is built from the run's events (the model) and says so. A task's worker
// that stopped answering ("worker_state": "lost" in the run's document) is marked.

import {ApiError, getJson, taskPath} from "./api.js";
import {badge, between, duration, h, json, link, note, replace, runPath, timeEl, when}
  from "./dom.js";
import {attemptsOf, taskKey} from "./run_model.js";
import {TaskLogs} from "./task_logs.js";

const ENDED = new Set(["succeeded", "failed", "cancelled", "skipped", "upstream_failed",
                       "reused"]);

/** The task as the events tell it, in the resource's shape (where the gateway has no
 * task resource). */
export function fromModel(model, node, index) {
  const attempts = attemptsOf(model, node, index);
  const last = attempts[attempts.length - 1];
  const succeeded = attempts.find((a) => ["succeeded", "reused"].includes(a.outcome));
  return {node, index, task: last?.name || "", queue: last?.queue || "",
          status: last ? last.outcome : "pending",
          input: last?.input, output: succeeded?.output,
          attempts: attempts.map((a) => ({
            attempt: a.attempt, status: a.outcome, worker: a.worker,
            dispatched_at: a.dispatchedAt, started_at: a.startedAt, finished_at: a.endedAt,
            error: a.error, error_type: a.errorType, traceback: a.traceback || null}))};
}

// "cached from <run> <node[i]> attempt n": the attempt whose output a cache's hit took.
function cachedFrom(source) {
  return h("p", {class: "cached-from"}, "cached from ",
    link(runPath(source.workflow_id), source.workflow_id), ` ${taskKey(source.node,
      source.index)} attempt ${source.attempt}`);
}

function attemptView(a) {
  const error = a.error ? h("pre", {class: "error attempt-error"},
    a.error_type ? `${a.error_type}: ${a.error}` : a.error) : null;
  const traceback = a.traceback ? h("details", {class: "traceback"},
    h("summary", {}, "Traceback"), h("pre", {class: "traceback"}, a.traceback)) : null;
  return h("div", {class: "attempt", "data-attempt": a.attempt, "data-outcome": a.status},
    h("h4", {}, `attempt ${a.attempt} `, badge(a.status),
      a.worker ? h("span", {class: "muted"}, ` on ${a.worker}`) : null),
    h("dl", {class: "facts"},
      h("dt", {}, "dispatched"), h("dd", {}, timeEl(a.dispatched_at)),
      h("dt", {}, "started"), h("dd", {}, timeEl(a.started_at),
        a.started_at ? ` (queued ${duration(between(a.dispatched_at, a.started_at))})` : ""),
      h("dt", {}, "ended"), h("dd", {}, timeEl(a.finished_at),
        a.finished_at ? ` (ran ${duration(between(a.started_at, a.finished_at))})` : "")),
    a.cached ? cachedFrom(a.cached) : null, error, traceback);
}

/** The worker mark of a task of the run's document ({worker_state, worker_last_heard_at}). */
export function lostMark(entry) {
  if (entry?.worker_state !== "lost") return null;
  const heard = entry.worker_last_heard_at ? `, last heard ${when(entry.worker_last_heard_at)}` : "";
  return h("span", {class: "lost-mark", "data-worker": entry.worker || ""},
    `worker lost${entry.worker ? ` (${entry.worker}${heard})` : heard}`);
}

/** The panel of task node[index] of run id: {el, refresh(docEntry), stop()}. */
export class TaskPanel {
  constructor(id, model, node, index) {
    Object.assign(this, {id, model, node, index: index ?? null});
    this.body = h("div", {class: "task-body"}, h("p", {class: "muted"}, "reading the task…"));
    this.logs = new TaskLogs(id, node, this.index);
    this.el = h("div", {class: "task-panel", "data-node": node, "data-index": this.index ?? ""},
      h("h3", {}, "Task ", h("code", {}, taskKey(node, this.index))), this.body, this.logs.el);
    this.ended = false;
    this.reading = false;
    this.entry = null;
  }

  /** Read the task again unless it has ended; entry is its row of the run's document. */
  async refresh(entry) {
    if (entry !== undefined) this.entry = entry;
    if (this.ended || this.reading) return;
    this.reading = true;
    let task;
    let fallback = false;
    try {
      task = await getJson(taskPath(this.id, this.node, this.index));
    } catch (error) {
      if (!(error instanceof ApiError) || ![404, 405].includes(error.status)) {
        replace(this.body, note("error", error.message));
        this.reading = false;
        return;
      }
      task = fromModel(this.model, this.node, this.index);
      const last = task.attempts[task.attempts.length - 1];
      if (last && this.entry?.attempt === last.attempt) {  // the document's newer fields
        Object.assign(last, {traceback: last.traceback || this.entry.traceback || null,
                             error_type: this.entry.error_type || last.error_type});
      }
      fallback = true;
    }
    this.reading = false;
    this.ended = !fallback && ENDED.has(task.status);
    this.render(task, fallback);
    this.logs.update();
  }

  render(task, fallback) {
    const key = JSON.stringify([task, fallback, this.entry?.worker_state ?? null]);
    if (key === this.shown) return;  // unchanged: keep the tracebacks opened
    this.shown = key;
    const attempts = [...(task.attempts || [])].sort((a, b) => a.attempt - b.attempt);
    replace(this.body,
      fallback ? h("p", {class: "muted"}, "from the run's events (no task resource here)") : null,
      h("dl", {class: "facts"},
        h("dt", {}, "status"), h("dd", {class: "task-status"}, badge(task.status),
          " ", lostMark(this.entry)),
        h("dt", {}, "task"), h("dd", {}, task.task || ""),
        h("dt", {}, "queue"), h("dd", {}, task.queue || "")),
      h("h4", {}, "Input"), h("pre", {class: "task-input"}, json(task.input)),
      h("h4", {}, "Output"), task.output === undefined || task.output === null
        ? h("p", {class: "muted task-output-none"}, ENDED.has(task.status) ? "none" : "none yet")
        : h("pre", {class: "task-output"}, json(task.output)),
      h("h4", {}, `Attempts (${attempts.length})`),
      h("div", {class: "task-attempts"}, attempts.map(attemptView)));
  }

  stop() {
    this.logs.stop();
  }
}
