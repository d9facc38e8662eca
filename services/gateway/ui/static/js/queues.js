// Queues and their workers (GET /v1/queues), read again every two seconds: backlog
// (by priority, and on the selector topics of nodes that require tags), work in
// flight, the oldest waiting dispatch, maxdepth and state, each live worker with what
// it serves and the tags it announces; then the limiters of concurrency keys and rate
// limits, each with what it holds and queues and a link to its history.

import {getJson, poll} from "./api.js";
import {badge, h, link, note, replace, runPath, table} from "./dom.js";

const EVERY_MS = 2000;

function seconds(value) {
  return value === null || value === undefined ? "" : `${Number(value).toFixed(1)} s`;
}

function workersTable(workers) {
  if (!workers.length) return h("p", {class: "muted"}, "No live worker.");
  return table(["worker", "host", "pid", "version", "tasks", "tags", "concurrency",
                "in flight", "announced"],
  workers.map((w) => h("tr", {"data-worker": w.worker_id},
    h("td", {}, h("code", {}, w.worker_id)), h("td", {}, w.host), h("td", {}, String(w.pid)),
    h("td", {}, w.version), h("td", {}, (w.tasks || []).join(", ")),
    h("td", {class: "tags"}, (w.tags || []).join(", ")),
    h("td", {}, String(w.concurrency)), h("td", {}, String(w.in_flight)),
    h("td", {}, `${seconds(w.announced_s_ago)} ago`))), {class: "workers"});
}

// "8: 1, 5: 2": the backlog per priority, highest first ("" without one).
function byPriority(backlog) {
  return Object.entries(backlog || {}).sort((a, b) => Number(b[0]) - Number(a[0]))
    .map(([band, n]) => `${band}: ${n}`).join(", ");
}

function selectorsTable(selectors) {
  if (!selectors || !selectors.length) return null;
  return table(["requires", "topic", "backlog"], selectors.map((sel) => h("tr",
    {"data-selector": sel.requires.join(",")},
    h("td", {}, sel.requires.join(", ")), h("td", {}, h("code", {}, sel.topic)),
    h("td", {}, String(sel.backlog)))), {class: "selectors"});
}

function queueCard(q) {
  return h("section", {class: "queue", "data-queue": q.queue},
    h("h2", {}, h("code", {}, q.queue), " ", badge(q.state)),
    h("dl", {class: "facts"},
      h("dt", {}, "backlog"), h("dd", {class: "backlog"}, String(q.backlog)),
      h("dt", {}, "by priority"),
      h("dd", {class: "by-priority"}, byPriority(q.backlog_by_priority) || "none"),
      h("dt", {}, "in flight"), h("dd", {}, String(q.in_flight)),
      h("dt", {}, "live workers"), h("dd", {class: "live-workers"}, String(q.live_workers)),
      h("dt", {}, "oldest waiting"), h("dd", {}, seconds(q.oldest_waiting_s) || "none"),
      h("dt", {}, "maxdepth"), h("dd", {}, q.maxdepth ? String(q.maxdepth) : "unlimited"),
      h("dt", {}, "tasks"), h("dd", {}, (q.tasks || []).join(", ") || "none"),
      h("dt", {}, "tags"), h("dd", {}, (q.tags || []).join(", ") || "none")),
    h("h3", {}, "Workers"), workersTable(q.workers || []),
    ...(q.selectors && q.selectors.length
      ? [h("h3", {}, "Selectors"), selectorsTable(q.selectors)] : []));
}

function limitText(l) {
  return l.kind === "rate" && l.window_s ? `${l.limit} per ${l.window_s} s` : String(l.limit);
}

// The limiters (null: the projection could not be read; a tenant's token sees none:
// a key is shared by every tenant's runs).
function limitsSection(limits) {
  const body = limits === null ? note("error", "The limits could not be read.")
    : !limits.length ? h("p", {class: "muted"}, "No concurrency key or rate limit is in use.")
      : table(["key", "kind", "limit", "holding", "queued", "granted", "history"],
        limits.map((l) => h("tr", {"data-limiter": l.limiter},
          h("td", {}, h("code", {}, l.key)), h("td", {}, l.kind),
          h("td", {class: "limit"}, limitText(l)), h("td", {class: "holding"},
            l.kind === "rate" ? `${l.holding} in the window` : String(l.holding)),
          h("td", {class: "queued"}, String(l.queued)), h("td", {}, String(l.granted)),
          h("td", {}, link(runPath(l.limiter), "events")))), {class: "limits"});
  return h("section", {id: "limits"}, h("h2", {}, "Limits"), body);
}

/** Mount the queues page in root. */
export function mount(root) {
  document.title = "Queues · Headwater";
  const problem = h("div", {id: "queues-problem"});
  const list = h("div", {id: "queues"});
  const limits = h("div", {id: "limits-view"});
  replace(root, h("h1", {}, "Queues and workers"), problem, list, limits);
  return poll(async () => {
    const doc = await getJson("/v1/queues");
    replace(problem);
    replace(list, doc.queues.length ? doc.queues.map(queueCard)
      : h("p", {class: "muted"}, "No queue is known yet."));
    replace(limits, limitsSection(doc.limits === undefined ? [] : doc.limits));
  }, EVERY_MS, (error) => replace(problem, note("error", error.message)));
}
