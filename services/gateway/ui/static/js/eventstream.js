// An event stream read with fetch() instead of EventSource, which cannot send an
// Authorization header. The text is interpreted as the WHATWG HTML Living Standard
// says (§9.2.6 "Interpreting an event stream", html.spec.whatwg.org, the page of
// server-sent events, #event-stream-interpretation): lines end with CRLF, LF or CR;
// a line starting with ":" is a comment; "field: value" (one space after the colon
// dropped); data lines are joined with "\n"; a blank line dispatches the event (none
// when its data is empty); "id" sets the last event ID (not when it holds NULL) and
// "retry" the reconnection time (ASCII digits only); an event cut off by the end of
// the stream is dropped.

/**
 * Turns a stream's text, chunk by chunk, into events {type, data, lastEventId}. One
 * parser serves every connection of a stream: the last event ID and the reconnection
 * time (retryMs, null until the stream sets one) outlive each connection (reset()).
 */
export class EventStreamParser {
  constructor(onEvent) {
    this.onEvent = onEvent;
    this.idBuffer = "";
    this.lastEventId = "";
    this.retryMs = null;
    this.reset();
  }

  /** A new connection: no partial line, data or event type carried over. */
  reset() {
    this.buffer = "";
    this.data = "";
    this.type = "";
  }

  /** Take the next chunk of decoded text (TextDecoderStream drops a leading BOM). */
  push(text) {
    this.buffer += text;
    const ends = /\r\n|\n|\r/g;
    let start = 0;
    let match;
    while ((match = ends.exec(this.buffer)) !== null) {
      // A CR last in the buffer may be the first half of a CRLF: wait for more text.
      if (match[0] === "\r" && match.index === this.buffer.length - 1) break;
      this.line(this.buffer.slice(start, match.index));
      start = match.index + match[0].length;
    }
    this.buffer = this.buffer.slice(start);
  }

  /** The stream ended: a line ended by a last CR is whole; an event not dispatched is dropped. */
  end() {
    if (this.buffer.endsWith("\r")) this.line(this.buffer.slice(0, -1));
    this.reset();
  }

  line(line) {
    if (line === "") {
      this.dispatch();
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.type = value;
    else if (field === "data") this.data += `${value}\n`;
    else if (field === "id" && !value.includes("\0")) this.idBuffer = value;
    else if (field === "retry" && /^[0-9]+$/.test(value)) this.retryMs = Number(value);
  }

  dispatch() {
    this.lastEventId = this.idBuffer;
    if (this.data === "") {
      this.type = "";
      return;
    }
    const event = {type: this.type || "message", data: this.data.slice(0, -1),
                   lastEventId: this.lastEventId};
    this.data = "";
    this.type = "";
    this.onEvent(event);
  }
}

/**
 * Read url's event stream with fetch into parser until it ends, is aborted (signal) or
 * fails, resuming after parser.lastEventId (Last-Event-ID) when there is one. Resolves
 * the HTTP status once the stream ended or was refused (0: the answer was no event
 * stream); rejects on a network error or an abort. onOpen() is called once the stream
 * is answered.
 */
export async function readEventStream(url, {headers, signal, onOpen, parser}) {
  const sent = {...headers, Accept: "text/event-stream"};
  if (parser.lastEventId) sent["Last-Event-ID"] = parser.lastEventId;
  const response = await fetch(url, {headers: sent, signal, cache: "no-store"});
  const type = (response.headers.get("Content-Type") || "").toLowerCase();
  if (!response.ok || !response.body) return response.status;
  if (!type.startsWith("text/event-stream")) {
    await response.body.cancel();
    return 0;
  }
  onOpen();
  parser.reset();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    parser.push(value);
  }
  parser.end();
  return response.status;
}
