// A run's page: its warnings, facts, input and output, graph and timeline side by side,
// the panel of the node picked in either, its nodes, attempts, streamed output, open
// waits (with a form each), and cancel and pause (or resume) buttons while it runs or a
// rerun button once it failed or was cancelled, kept up to date from its event stream: every event is
// folded into the model at once, and the document is read again shortly after (at most
// one read in flight), so the page follows the run without a reload.

import {ApiError, follow, getJson, poll, postJson, workflowPath} from "./api.js";
import {draw, MAX_DRAWN, update} from "./dag.js";
import {h, note, replace} from "./dom.js";
import {NodePanel} from "./node_panel.js";
import {RERUNNABLE, rerunButton} from "./rerun.js";
import {ioView} from "./run_io.js";
import {apply, emptyModel, EVENT_TYPES, graphOf, signalFields} from "./run_model.js";
import {attemptsTable, childrenTable, chunksView, nodesTable, nodeViews, signalsTable,
  summary} from "./run_views.js";
import {signalForm} from "./signals.js";
import * as timeline from "./timeline.js";

const REREAD_MS = 150;
const FALLBACK_MS = 5000;
const CLOCK_MS = 1000;  // the timeline's "now" moves on while the run is live
const LIVE = new Set(["accepted", "running"]);

function section(id, title, ...children) {
  return h("section", {id, hidden: true}, title ? h("h2", {}, title) : null, h("div", {}), ...children);
}

function show(el, ...children) {
  const body = el.querySelector(":scope > div");
  replace(body, ...children);
  el.hidden = children.flat().filter(Boolean).length === 0;
}

function cancelForm(id, onDone) {
  const status = h("span", {class: "form-status", "aria-live": "polite"});
  const reason = h("input", {type: "text", name: "reason", placeholder: "reason (optional)",
                             "aria-label": "reason"});
  const form = h("form", {id: "cancel-form", class: "inline"}, reason,
    h("button", {type: "submit", class: "danger"}, "Cancel run"), status);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    form.querySelector("button").disabled = true;
    try {
      await postJson(workflowPath(id, "/cancel"), reason.value ? {reason: reason.value} : {});
      replace(status, " cancel requested");
      onDone();
    } catch (error) {
      replace(status, note("error", error.message));
      form.querySelector("button").disabled = false;
    }
  });
  return form;
}

/** Pause a running run, or resume a paused one (``paused``: the document's). */
function pauseButton(id, paused, onDone) {
  const status = h("span", {class: "form-status", "aria-live": "polite"});
  const verb = paused ? "resume" : "pause";
  const button = h("button", {type: "button", id: "pause-button"},
    paused ? "Resume run" : "Pause run");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await postJson(workflowPath(id, `/${verb}`), {});
      replace(status, ` ${verb} requested`);
      onDone();
    } catch (error) {
      replace(status, note("error", error.message));
      button.disabled = false;
    }
  });
  return h("span", {class: "inline"}, button, status);
}

function skeleton(root, id) {
  const els = {
    problem: h("div", {id: "run-problem"}),
    warnings: section("run-warnings", "Warnings"),
    summary: h("div", {id: "run-summary"}),
    actions: h("div", {id: "run-actions"}),
    waits: section("waits", "Waiting for a signal"),
    result: h("div", {id: "run-result"}),
    graph: section("graph", "Graph"),
    timeline: section("timeline", "Timeline"),
    panel: h("section", {id: "node-panel", class: "node-panel", hidden: true}),
    nodes: section("nodes", "Nodes"),
    attempts: section("attempts", "Attempts"),
    output: section("output", "Streamed output"),
    children: section("children", "Child workflows"),
    signals: section("signals", "Signals"),
  };
  replace(root, h("h1", {}, "Run ", h("code", {id: "run-id"}, id)), els.problem,
    els.warnings, els.summary, els.actions, els.waits, els.result,
    h("div", {class: "run-pictures"}, els.graph, els.timeline), els.panel, els.nodes,
    els.attempts, els.output, els.children, els.signals);
  return els;
}

/** One open run page: its model, its document and what keeps them fresh. */
class RunPage {
  constructor(root, id, go) {
    this.id = id;
    this.go = go;
    this.els = skeleton(root, id);
    this.model = emptyModel();
    this.panel = new NodePanel(this.els.panel, id, this.model);
    this.doc = null;
    this.stream = "connecting";
    this.svg = null;
    this.keys = {};
    this.attemptsPage = 0;
    this.timer = null;
    this.reading = false;
    this.again = false;
    this.stopped = false;
    this.reread = () => this.schedule();
    this.open = (node, index) => this.panel.open(node, index);
  }

  start() {
    this.unfollow = follow(this.id, (event) => {
      apply(this.model, event);
      this.schedule();
    }, (value) => this.streamState(value), EVENT_TYPES);
    // Beside the stream, a slow re-read while the run is live: a stream refused for a
    // while (PostgreSQL away) leaves the page no older than this.
    this.unpoll = poll(async () => {
      if (!this.doc || LIVE.has(this.doc.status)) await this.read();
    }, FALLBACK_MS);
    this.clock = setInterval(() => {
      if (this.doc && LIVE.has(this.doc.status) && !this.model.ended) this.renderTimeline();
    }, CLOCK_MS);
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.clock);
    this.unfollow?.();
    this.unpoll?.();
    this.panel.close();
  }

  streamState(value) {
    this.stream = value;
    if (this.doc) replace(this.els.summary, summary(this.doc, value));
    if (value === "ended") this.schedule();
  }

  /** Read the document again shortly (events come in bursts: one read per burst). */
  schedule() {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.renderEvents();
      this.read();
    }, REREAD_MS);
  }

  async read() {
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = true;
    try {
      this.doc = await getJson(workflowPath(this.id));
      replace(this.els.problem);
      this.renderDoc();
    } catch (error) {
      replace(this.els.problem, note("error", error.message));
      if (error instanceof ApiError && error.status === 404) this.stop();
    } finally {
      this.reading = false;
      if (this.again && !this.stopped) {
        this.again = false;
        this.read();
      }
    }
  }

  /** Whether what key names changed since the last call with name (and remember it). */
  changed(name, key) {
    if (this.keys[name] === key) return false;
    this.keys[name] = key;
    return true;
  }

  renderDoc() {
    const {doc, els} = this;
    replace(els.summary, summary(doc, this.stream));
    show(els.warnings, (doc.warnings || []).map((w) => h("p", {class: "warning"}, w)));
    const input = doc.input !== undefined ? doc.input : this.model.input;
    if (this.changed("result", JSON.stringify([doc.status, doc.error, doc.failure ?? null,
                                               input !== undefined]))) {
      replace(els.result, ioView(doc, input, this.open));
    }
    show(els.nodes, doc.nodes?.length ? nodesTable(doc, (node) => this.open(node)) : null);
    show(els.children, doc.children?.length ? childrenTable(doc) : null);
    show(els.signals, doc.signals?.length ? signalsTable(doc) : null);
    this.renderGraph();
    this.renderWaits();
    this.renderActions();
    this.panel.refresh(doc);
  }

  renderActions() {
    const {doc, els} = this;
    // The document's nodes (the spec's, in its order), known with the run's end: the
    // dialog is not drawn again under someone using it.
    const nodes = (doc.nodes || []).map((n) => n.id);
    if (!this.changed("actions", JSON.stringify([doc.status, nodes, !!doc.paused]))) return;
    if (LIVE.has(doc.status)) {
      replace(els.actions, cancelForm(this.id, this.reread),
        pauseButton(this.id, !!doc.paused, this.reread));
    }
    else if (RERUNNABLE.has(doc.status)) {
      replace(els.actions, rerunButton(this.id, {...doc, input: doc.input ?? this.model.input},
        nodes, this.go));
    } else replace(els.actions);
  }

  renderGraph() {
    if (!this.svg && this.model.spec) {
      const graph = graphOf(this.model.spec);
      if (graph.length > MAX_DRAWN) {
        show(this.els.graph, h("p", {class: "muted"}, `${graph.length} nodes: too many to draw`));
        this.svg = true;
      } else if (graph.length) {
        this.svg = draw(graph);
        const pick = (event) => {
          const g = event.target.closest?.("g.node");
          if (g && (event.type === "click" || event.key === "Enter")) this.open(g.dataset.node);
        };
        this.svg.addEventListener("click", pick);
        this.svg.addEventListener("keydown", pick);
        show(this.els.graph, h("div", {class: "dag-box"}, this.svg));
      }
    }
    if (this.svg instanceof SVGElement && this.doc) update(this.svg, nodeViews(this.doc));
  }

  renderWaits() {
    const waiting = this.doc.waiting || [];
    const key = JSON.stringify([waiting.map((w) => [w.node, w.index, w.signal]),
                                !!this.model.spec]);
    if (!this.changed("waits", key)) return;  // keep what is being typed
    show(this.els.waits, waiting.map((w) => signalForm(
      this.id, w, signalFields(this.model.spec, w.signal), this.reread)));
  }

  renderTimeline() {
    const now = Date.now();
    const listed = timeline.rows(this.model);
    show(this.els.timeline, listed.length ? h("div", {class: "timeline-box"},
      timeline.draw(listed, timeline.span(this.model, listed, now), now, this.open)) : null);
  }

  renderEvents() {
    const turn = (page) => {
      this.attemptsPage = page;
      this.renderEvents();
    };
    show(this.els.attempts, this.model.attempts.size
      ? attemptsTable(this.model, this.attemptsPage, turn) : null);
    show(this.els.output, chunksView(this.model));
    this.renderGraph();
    this.renderTimeline();
  }
}

/** Mount the page of run params.id in root (go(path) shows another view); returns stop(). */
export function mount(root, params, query, go) {
  document.title = `Run ${params.id} · Headwater`;
  const page = new RunPage(root, params.id, go);
  page.start();
  return () => page.stop();
}
