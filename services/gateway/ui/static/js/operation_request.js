// The bulk operation form's logic, apart from the page (so it can be run without a
// browser): the body of POST /v1/operations from what the form holds, the form's
// values from an address (the runs list's filters: status, name, definition, label,
// paused), a dry run's answer as the preview shows it, and which field of the form a
// refusal (a 422's errors, "filter.status: ...") names.

export const ACTIONS = ["cancel", "pause", "resume", "rerun", "signal"];
export const STATUSES = ["", "accepted", "running", "succeeded", "failed", "cancelled"];
export const FILTER_FIELDS = ["status", "name", "definition", "label", "paused"];
const WITH_REASON = new Set(["cancel", "pause"]);

/** A fault of one field of the form: field is the form's name for it ("" for the
 * form as a whole). */
export class FieldError extends Error {
  constructor(field, message) {
    super(message);
    this.field = field;
  }
}

// A label selector is key:value (key: any value) in the API; people write key=value.
const asSelector = (pair) => pair.replace("=", ":");
const asPair = (selector) => selector.replace(":", "=");

/** The API's filter from the form's values ({status, name, definition, label: "k=v k2",
 * paused: "" | "true" | "false"}): the fields given, nothing for an empty one. */
export function filterOf(values) {
  const filter = {};
  for (const name of ["status", "name", "definition"]) {
    const text = (values[name] || "").trim();
    if (text) filter[name] = text;
  }
  const labels = (values.label || "").trim().split(/\s+/).filter(Boolean).map(asSelector);
  if (labels.length) filter.label = labels;
  if (values.paused === "true" || values.paused === "false") filter.paused = values.paused === "true";
  return filter;
}

/**
 * The body of POST /v1/operations from the form's values: {action, filter, reason?
 * (cancel, pause), signal: {name, fields} (signal), cache: "refresh" (rerun, when
 * asked), dry_run: true for a preview}. Throws a FieldError for what the gateway would
 * refuse anyway, found before asking: no action, an empty filter, a signal without a
 * name, signal fields that are not a JSON object.
 */
export function operationBody(values, dryRun) {
  const action = values.action || "";
  if (!ACTIONS.includes(action)) throw new FieldError("action", `choose one of ${ACTIONS.join(", ")}`);
  const filter = filterOf(values);
  if (!Object.keys(filter).length) {
    throw new FieldError("", "give at least one filter (an operation on every run is not taken without one)");
  }
  const body = {action, filter};
  const reason = (values.reason || "").trim();
  if (WITH_REASON.has(action) && reason) body.reason = reason;
  if (action === "signal") body.signal = signalOf(values);
  if (action === "rerun" && values.cache === true) body.cache = "refresh";
  if (dryRun) body.dry_run = true;
  return body;
}

function signalOf(values) {
  const name = (values.signalName || "").trim();
  if (!name) throw new FieldError("signal-name", "a bulk signal needs the signal's name");
  const text = (values.signalFields || "").trim();
  let fields = {};
  if (text) {
    try {
      fields = JSON.parse(text);
    } catch (error) {
      throw new FieldError("signal-fields", `not JSON: ${error.message}`);
    }
  }
  if (fields === null || typeof fields !== "object" || Array.isArray(fields)) {
    throw new FieldError("signal-fields", "a JSON object ({\"key\": value})");
  }
  return {name, fields};
}

/** The form's filter values from an address's URLSearchParams (the runs list's:
 * ?status=&name=&definition=&label=k:v&label=k2&paused=). */
export function valuesFromQuery(query) {
  const values = {};
  for (const name of ["status", "name", "definition", "paused"]) values[name] = query.get(name) || "";
  values.label = query.getAll("label").map(asPair).join(" ");
  return values;
}

/** A dry run's answer as the preview shows it: {matched, toActOn, overLimit, byStatus:
 * [[status, n], ...] (most first, then by name), sample: [ids]}. */
export function previewOf(answer) {
  const byStatus = Object.entries(answer?.by_status || {})
    .sort(([a, n], [b, m]) => m - n || a.localeCompare(b));
  return {matched: answer?.matched ?? 0, toActOn: answer?.to_act_on ?? 0,
          overLimit: !!answer?.over_limit, byStatus, sample: answer?.sample || []};
}

/**
 * The fields a refusal names: [{field, message}], field the form's name of it ("" for
 * none: the message belongs to the form as a whole). problem is the answer's problem
 * document, whose errors read "<path>: <message>" (filter.status, signal.name, action,
 * reason, cache, body); a problem without them is one message of the form's.
 */
export function fieldErrors(problem) {
  const errors = Array.isArray(problem?.errors) && problem.errors.length ? problem.errors
    : [problem?.detail || problem?.title || "refused"];
  return errors.map((text) => {
    const found = /^([\w.]+): ([\s\S]*)$/.exec(String(text));
    if (!found) return {field: "", message: String(text)};
    const field = fieldOf(found[1].split("."));
    return {field, message: field ? found[2] : String(text)};
  });
}

function fieldOf(path) {
  const [head, next] = path;
  if (head === "filter") return FILTER_FIELDS.includes(next) ? next : "";
  if (head === "signal") return next === "fields" ? "signal-fields" : "signal-name";
  if (["action", "reason", "cache"].includes(head)) return head;
  return "";
}
