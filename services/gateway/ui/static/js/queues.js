// Queues and their workers (GET /v1/queues), read again every two seconds: backlog,
// work in flight, the oldest waiting dispatch, maxdepth and state, and each live
// worker with what it serves.

import {getJson, poll} from "./api.js";
import {badge, h, note, replace, table} from "./dom.js";

const EVERY_MS = 2000;

function seconds(value) {
  return value === null || value === undefined ? "" : `${Number(value).toFixed(1)} s`;
}

function workersTable(workers) {
  if (!workers.length) return h("p", {class: "muted"}, "No live worker.");
  return table(["worker", "host", "pid", "version", "tasks", "concurrency", "in flight",
                "announced"],
  workers.map((w) => h("tr", {"data-worker": w.worker_id},
    h("td", {}, h("code", {}, w.worker_id)), h("td", {}, w.host), h("td", {}, String(w.pid)),
    h("td", {}, w.version), h("td", {}, (w.tasks || []).join(", ")),
    h("td", {}, String(w.concurrency)), h("td", {}, String(w.in_flight)),
    h("td", {}, `${seconds(w.announced_s_ago)} ago`))), {class: "workers"});
}

function queueCard(q) {
  return h("section", {class: "queue", "data-queue": q.queue},
    h("h2", {}, h("code", {}, q.queue), " ", badge(q.state)),
    h("dl", {class: "facts"},
      h("dt", {}, "backlog"), h("dd", {class: "backlog"}, String(q.backlog)),
      h("dt", {}, "in flight"), h("dd", {}, String(q.in_flight)),
      h("dt", {}, "live workers"), h("dd", {class: "live-workers"}, String(q.live_workers)),
      h("dt", {}, "oldest waiting"), h("dd", {}, seconds(q.oldest_waiting_s) || "none"),
      h("dt", {}, "maxdepth"), h("dd", {}, q.maxdepth ? String(q.maxdepth) : "unlimited"),
      h("dt", {}, "tasks"), h("dd", {}, (q.tasks || []).join(", ") || "none")),
    h("h3", {}, "Workers"), workersTable(q.workers || []));
}

/** Mount the queues page in root. */
export function mount(root) {
  document.title = "Queues · Headwater";
  const problem = h("div", {id: "queues-problem"});
  const list = h("div", {id: "queues"});
  replace(root, h("h1", {}, "Queues and workers"), problem, list);
  return poll(async () => {
    const doc = await getJson("/v1/queues");
    replace(problem);
    replace(list, doc.queues.length ? doc.queues.map(queueCard)
      : h("p", {class: "muted"}, "No queue is known yet."));
  }, EVERY_MS, (error) => replace(problem, note("error", error.message)));
}
