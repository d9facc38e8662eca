// The sections of a run's page, each built from the run's document (GET
// /v1/workflows/{id}) or from the model of its events (run_model.js).

import {badge, between, duration, h, json, link, runPath, table, when} from "./dom.js";
import {chunkText} from "./run_model.js";

const MAX_ROWS = 500;

/** A node's state as shown: a running wait that waits for its signal is "waiting", a
 * running sleep "sleeping", a node of a run not yet projected "pending". */
function shownStatus(node, doc) {
  if (node.status !== "running") return node.status || "pending";
  if (node.kind === "wait" && doc.waiting?.some((w) => w.node === node.id)) return "waiting";
  if (node.kind === "sleep") return "sleeping";
  return "running";
}

/** The document's nodes by id, each with its shownStatus. */
export function nodeViews(doc) {
  return new Map((doc.nodes || []).map((n) => [n.id, {...n, shownStatus: shownStatus(n, doc)}]));
}

function term(name, value) {
  return value === null || value === undefined || value === "" ? null
    : [h("dt", {}, name), h("dd", {}, value)];
}

/** The run's facts: name, status, definition, generation, times; stream is the event
 * stream's state ("live", "reconnecting", "ended"). */
export function summary(doc, stream) {
  const definition = doc.definition ? `${doc.definition.name}@${doc.definition.version}` : null;
  return h("dl", {class: "facts"},
    term("status", badge(doc.status, doc.status)),
    term("name", doc.name), term("definition", definition), term("tenant", doc.tenant),
    term("generation", doc.generation > 1 ? String(doc.generation) : null),
    term("created", when(doc.created_at)), term("updated", when(doc.updated_at)),
    term("events", `${doc.seq} (stream ${stream})`),
    term("parent", doc.parent ? link(runPath(doc.parent.workflow_id), doc.parent.workflow_id)
      : null));
}

/** The run's error, or its output once it succeeded; null while neither. */
export function result(doc) {
  if (doc.error) {
    return h("div", {class: "result"}, h("h2", {}, doc.status === "cancelled" ? "Cancelled" : "Error"),
      h("pre", {class: "error", id: "run-error"}, doc.error));
  }
  if (doc.status === "succeeded") {
    return h("div", {class: "result"}, h("h2", {}, "Output"),
      h("pre", {id: "run-output"}, json(doc.output)));
  }
  return null;
}

function counts(n) {
  if (n.total === null || n.total === undefined) return n.running ? `${n.running} running` : "";
  return `${n.succeeded}/${n.total} done${n.failed ? `, ${n.failed} failed` : ""}`
    + `${n.running ? `, ${n.running} running` : ""}`;
}

/** One row per node: id, kind, task, state, counts, error. */
export function nodesTable(doc) {
  const views = nodeViews(doc);
  const rows = [...views.values()].map((n) => h("tr", {"data-node": n.id},
    h("td", {}, h("code", {}, n.id)), h("td", {}, n.kind), h("td", {}, n.task || ""),
    h("td", {}, badge(n.shownStatus)), h("td", {}, counts(n)),
    h("td", {}, n.error ? h("pre", {class: "error"}, n.error) : "")));
  return table(["node", "kind", "task", "state", "items", "error"], rows, {class: "nodes"});
}

/** Every attempt seen in the events, oldest first: where it ran, its times, how it
 * ended and its error. */
export function attemptsTable(model) {
  const attempts = [...model.attempts.values()].sort(
    (a, b) => (a.dispatchedAt ?? 0) - (b.dispatchedAt ?? 0) || a.key.localeCompare(b.key));
  const generations = attempts.some((a) => a.generation > 1);
  const rows = attempts.slice(-MAX_ROWS).map((a) => h("tr", {"data-attempt": a.key,
                                                          "data-outcome": a.outcome},
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
  return [attempts.length > MAX_ROWS
    ? h("p", {class: "muted"}, `the latest ${MAX_ROWS} of ${attempts.length} attempts`) : null,
  table(headers, rows, {class: "attempts"})];
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
    c.index === null ? "" : String(c.index), String(c.attempt), badge(c.status || "accepted")]);
  return table(["run", "node", "index", "attempt", "status"], rows, {class: "children"});
}

/** The signals it recorded: taken, kept for later, or discarded (and why). */
export function signalsTable(doc) {
  const rows = (doc.signals || []).map((sg) => [
    h("code", {}, sg.name), sg.index === null ? "" : String(sg.index), badge(sg.status),
    sg.node || "", when(sg.at), h("pre", {}, json(sg.fields, 2000)), sg.reason || ""]);
  return table(["signal", "index", "status", "taken by", "at", "fields", "reason"], rows,
               {class: "signals"});
}
