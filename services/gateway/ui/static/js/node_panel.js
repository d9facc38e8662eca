// The panel of the node picked in the graph, the timeline or the nodes' table: for a
// map its items (map_items.js), and for a code workflow's node its activations and
// steps (each task named), each openable as a task panel below them; for any other
// node its task (task_panel.js). It is read again as the run moves on (at most
// once a second), and closed with its button.

import {h, replace} from "./dom.js";
import {MapItems} from "./map_items.js";
import {lostMark, TaskPanel} from "./task_panel.js";

const EVERY_MS = 1000;
/** The kinds whose tasks are numbered (a map's items; a code workflow's activations, at
 * even indexes, and steps, at odd ones), listed a page at a time. */
const INDEXED = new Set(["map", "code"]);

/** The document's task entry of node[index] (its latest attempt), or null. */
function entryOf(doc, node, index) {
  return (doc?.tasks || []).find((t) => t.node === node && (t.index ?? null) === (index ?? null))
    || null;
}

/** The open node's panel inside el: open(node, index?), refresh(doc), close(). */
export class NodePanel {
  constructor(el, id, model) {
    Object.assign(this, {el, id, model});
    this.node = null;
    this.items = null;
    this.task = null;
    this.doc = null;
    this.last = 0;
    this.timer = null;
  }

  /** Open node (index: one item of a map, or a code workflow's task, straight away). */
  open(node, index = undefined) {
    this.close();
    const view = (this.doc?.nodes || []).find((n) => n.id === node);
    const kind = view?.kind || this.specKind(node);
    this.node = node;
    const shut = h("button", {type: "button", class: "panel-close", "aria-label": "close"}, "×");
    shut.addEventListener("click", () => this.close());
    const lost = (this.doc?.tasks || []).filter((t) => t.node === node && t.worker_state === "lost");
    const head = h("h2", {}, "Node ", h("code", {}, node), h("span", {class: "muted"}, ` ${kind}`),
      " ", shut);
    const holder = h("div", {class: "panel-task"});
    if (INDEXED.has(kind)) {
      this.items = new MapItems(this.id, this.model, node, (i) => {
        this.openTask(holder, node, i);
        this.task.el.scrollIntoView?.({block: "start"});  // below 100 rows: bring it up
      }, {named: kind === "code"});
      replace(this.el, head, lost.length ? lostMark(lost[0]) : null, this.items.el, holder);
      this.items.refresh();
      if (index !== undefined && index !== null) this.openTask(holder, node, index);
    } else {
      replace(this.el, head, holder);
      this.openTask(holder, node, null);
    }
    this.el.dataset.node = node;
    this.el.hidden = false;
    this.el.scrollIntoView?.({block: "nearest"});
  }

  specKind(node) {
    return (this.model.spec?.nodes || []).find((n) => n?.id === node)?.kind || "task";
  }

  openTask(holder, node, index) {
    this.task?.stop();
    this.task = new TaskPanel(this.id, this.model, node, index);
    replace(holder, this.task.el);
    this.task.refresh(entryOf(this.doc, node, index));
  }

  /** The run's document was read again: read the open parts again (throttled). */
  refresh(doc) {
    this.doc = doc;
    if (this.node === null || this.timer) return;
    const wait = Math.max(0, this.last + EVERY_MS - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      this.last = Date.now();
      this.items?.refresh();
      if (this.task) this.task.refresh(entryOf(this.doc, this.task.node, this.task.index));
    }, wait);
  }

  close() {
    clearTimeout(this.timer);
    this.timer = null;
    this.task?.stop();
    this.items?.stop();
    Object.assign(this, {node: null, items: null, task: null});
    replace(this.el);
    this.el.hidden = true;
    delete this.el.dataset.node;
  }
}
