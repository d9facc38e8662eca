// The sections of a run's page, each built from the run's document (GET
// /v1/workflows/{id}) or from the model of its events (run_model.js).

import {badge, between, duration, h, json, link, runPath, table, when} from "./dom.js";
import {chunkText, taskOrder} from "./run_model.js";
import {lostMark} from "./task_panel.js";

export const ATTEMPTS_PAGE = 100;

/** A node's state as shown: a running wait that waits for its signal is "waiting", a
 * running sleep "sleeping", a node of a run not yet projected "pending". */
function shownStatus(node, doc) {
  if (node.status !== "running") return node.status || "pending";
  if (node.kind === "wait" && doc.waiting?.some((w) => w.node === node.id)) return "waiting";
  if (node.kind === "sleep") return "sleeping";
  return "running";
}

/** The document's nodes by id, each with its shownStatus and its tasks whose worker
 * was lost (lost: [task entry]). */
export function nodeViews(doc) {
  const lost = new Map();
  for (const t of doc.tasks || []) {
    if (t.worker_state === "lost") lost.set(t.node, [...(lost.get(t.node) || []), t]);
  }
  return new Map((doc.nodes || []).map((n) => [n.id, {...n, shownStatus: shownStatus(n, doc),
                                                      lost: lost.get(n.id) || []}]));
}

function runLinks(ids) {
  return ids.length ? ids.map((id, i) => [i ? ", " : "", link(runPath(id), id,
                                                              {class: "rerun-link"})]) : null;
}

function term(name, value) {
  return value === null || value === undefined || value === "" ? null
    : [h("dt", {}, name), h("dd", {}, value)];
}

/** A run's labels as ``key=value`` chips (null: none). */
export function labelList(labels) {
  const pairs = Object.entries(labels || {}).sort(([a], [b]) => (a < b ? -1 : 1));
  return pairs.length ? h("span", {class: "labels"},
    pairs.map(([k, v]) => h("code", {class: "label"}, `${k}=${v}`))) : null;
}

/** The run's facts: name, status, definition, priority, generation, deadline, labels,
 * times, its parent (a workflow node's, or a task's ctx.call); stream is the event
 * stream's state ("live", "reconnecting", "ended"). */
export function summary(doc, stream) {
  const definition = doc.definition ? `${doc.definition.name}@${doc.definition.version}` : null;
  return h("dl", {class: "facts"},
    term("status", badge(doc.status, doc.status)),
    term("paused", doc.paused ? h("span", {id: "run-paused"}, badge("held", "paused"),
      ` since ${when(doc.paused.since)}${doc.paused.by ? ` by ${doc.paused.by}` : ""}`
      + `${doc.paused.reason ? `: ${doc.paused.reason}` : ""}`) : null),
    term("name", doc.name), term("definition", definition), term("tenant", doc.tenant),
    term("priority", Number.isInteger(doc.priority) ? String(doc.priority) : null),
    term("labels", labelList(doc.labels)),
    term("generation", doc.generation > 1 ? String(doc.generation) : null),
    term("deadline", doc.deadline ? h("span", {id: "deadline"}, when(doc.deadline)) : null),
    term("created", when(doc.created_at)), term("updated", when(doc.updated_at)),
    term("events", `${doc.seq} (stream ${stream})`),
    term("parent", doc.parent ? [link(runPath(doc.parent.workflow_id), doc.parent.workflow_id),
      doc.parent.via === "call" ? " (ctx.call)" : ""] : null),
    term("rerun of", doc.rerun_of ? h("span", {id: "rerun-of"}, runLinks([doc.rerun_of])) : null),
    term("reset to", doc.reset ? h("code", {}, doc.reset) : null),
    term("reruns", doc.reruns?.length ? h("span", {id: "reruns"}, runLinks(doc.reruns)) : null));
}

function counts(n) {
  const more = `${n.cached ? `, ${n.cached} cached` : ""}${n.held ? `, ${n.held} held` : ""}`;
  if (n.total === null || n.total === undefined) {
    return [n.running ? `${n.running} running` : "", n.cached ? "cached" : "",
            n.held ? "held" : ""].filter(Boolean).join(", ");
  }
  return `${n.succeeded}/${n.total} done${n.failed ? `, ${n.failed} failed` : ""}`
    + `${n.running ? `, ${n.running} running` : ""}${more}`;
}

/** One row per node: id (a button that opens it: onOpen(id)), kind, task, state, counts,
 * a lost worker, error. */
export function nodesTable(doc, onOpen) {
  const views = nodeViews(doc);
  const rows = [...views.values()].map((n) => {
    const open = h("button", {type: "button", class: "node-open"}, h("code", {}, n.id));
    open.addEventListener("click", () => onOpen(n.id));
    return h("tr", {"data-node": n.id, "data-lost": n.lost.length || null},
      h("td", {}, open), h("td", {}, n.kind), h("td", {}, n.task || ""),
      h("td", {}, badge(n.shownStatus), n.lost.length ? [" ", lostMark(n.lost[0])] : null),
      h("td", {}, counts(n)),
      h("td", {}, n.error ? h("pre", {class: "error"}, n.error) : ""));
  });
  return table(["node", "kind", "task", "state", "items", "error"], rows, {class: "nodes"});
}

/** Every attempt seen in the events in task order (a map's items by index as numbers),
 * a page of ATTEMPTS_PAGE at a time (page from 0; onPage(n) turns it): where it ran,
 * its times, how it ended and its error. */
export function attemptsTable(model, page, onPage) {
  const attempts = [...model.attempts.values()].sort(taskOrder(model.spec));
  const pages = Math.max(1, Math.ceil(attempts.length / ATTEMPTS_PAGE));
  const at = Math.min(page, pages - 1);
  const generations = attempts.some((a) => a.generation > 1);
  const shown = attempts.slice(at * ATTEMPTS_PAGE, (at + 1) * ATTEMPTS_PAGE);
  const rows = shown.map((a) => h("tr", {"data-attempt": a.key, "data-outcome": a.outcome},
    h("td", {}, h("code", {}, a.task)), h("td", {}, String(a.attempt)),
    generations ? h("td", {}, String(a.generation)) : null,
    h("td", {}, a.name), h("td", {}, a.queue), h("td", {}, a.worker),
    h("td", {}, when(a.dispatchedAt)),
    h("td", {}, duration(between(a.dispatchedAt, a.startedAt))),
    h("td", {}, duration(between(a.startedAt, a.endedAt))),
    h("td", {}, badge(a.outcome), a.progress !== null && a.outcome === "running"
      ? ` ${Math.round(a.progress * 100)}%${a.message ? ` ${a.message}` : ""}` : ""),
    h("td", {}, a.error ? h("pre", {class: "error"},
      a.errorType ? `${a.errorType}: ${a.error}` : a.error) : "")));
  const headers = ["task", "attempt", ...(generations ? ["generation"] : []), "runs", "queue",
                   "worker", "dispatched", "queued", "ran", "outcome", "error"];
  const turn = (to, label) => {
    const button = h("button", {type: "button", disabled: to < 0 || to >= pages}, label);
    button.addEventListener("click", () => onPage(to));
    return button;
  };
  const pager = pages > 1 ? h("div", {class: "pager attempts-pager"}, turn(at - 1, "‹ Previous"),
    h("span", {class: "muted"}, ` ${at * ATTEMPTS_PAGE + 1}–${at * ATTEMPTS_PAGE + shown.length}`
      + ` of ${attempts.length} attempts `), turn(at + 1, "Next ›")) : null;
  return [pager, table(headers, rows, {class: "attempts"})];
}

/** What generator tasks streamed, per attempt. */
export function chunksView(model) {
  return [...model.chunks.values()].map((entry) => h("div", {class: "chunks"},
    h("h3", {}, h("code", {}, entry.task), ` attempt ${entry.attempt}`,
      h("span", {class: "muted"}, ` ${entry.chunks.length} chunks`)),
    h("pre", {class: "stream", "data-task": entry.task, "data-attempt": entry.attempt},
      chunkText(entry.chunks))));
}

/** The child workflows it started, linked. */
export function childrenTable(doc) {
  const rows = (doc.children || []).map((c) => [
    link(runPath(c.workflow_id), c.workflow_id), c.node,
    c.index === null ? "" : String(c.index), String(c.attempt), badge(c.status || "accepted"),
    c.via === "call" ? "ctx.call" : "workflow node"]);
  return table(["run", "node", "index", "attempt", "status", "via"], rows,
               {class: "children"});
}

/** The signals it recorded: taken, kept for later, or discarded (and why). */
export function signalsTable(doc) {
  const rows = (doc.signals || []).map((sg) => [
    h("code", {}, sg.name), sg.index === null ? "" : String(sg.index), badge(sg.status),
    sg.node || "", when(sg.at), h("pre", {}, json(sg.fields, 2000)), sg.reason || ""]);
  return table(["signal", "index", "status", "taken by", "at", "fields", "reason"], rows,
               {class: "signals"});
}
