// Signing in with a token when the gateway's auth is on: the page asks /v1/whoami
// first; a 401 (there, or from any call later) puts a sign-in form in place of the
// page. A token the gateway takes is kept for the tab (session.js) and the header
// shows its tenant and role with a sign-out button.

import {ApiError, getJson} from "./api.js";
import {h, note, replace} from "./dom.js";
import {onUnauthorized, setToken, signOut, token} from "./session.js";

let showing = false;

/** Whether the sign-in form is in place of the page (no view may be shown). */
export function signingIn() {
  return showing;
}

function who(doc, onSignOut) {
  const el = document.getElementById("who");
  if (!doc || !doc.auth) {
    replace(el);
    return;
  }
  const button = h("button", {type: "button", id: "sign-out"}, "Sign out");
  button.addEventListener("click", onSignOut);
  const tenant = doc.tenant === "*" ? "every tenant" : doc.tenant;
  replace(el, h("span", {id: "who-tenant", "data-tenant": doc.tenant}, tenant), " · ",
    h("span", {id: "who-role", "data-role": doc.role}, doc.role), button);
}

function form(message, onIn) {
  const field = h("input", {type: "password", id: "token", name: "token", autocomplete: "off",
                            placeholder: "hwk_… or a JWT", "aria-label": "token", required: true});
  const status = h("div", {id: "sign-in-status", "aria-live": "polite"},
    message ? note("error", message) : null);
  const el = h("form", {id: "sign-in", class: "sign-in"},
    h("h1", {}, "Sign in"),
    h("p", {class: "muted"}, "This gateway needs a token: an API key (headwater keys create) "
      + "or a JWT. It is kept for this tab only."),
    h("div", {class: "field"}, h("label", {for: "token"}, "token"), field),
    h("button", {type: "submit"}, "Sign in"), status);
  el.addEventListener("submit", async (event) => {
    event.preventDefault();
    el.querySelector("button").disabled = true;
    setToken(field.value);
    try {
      const doc = await getJson("/v1/whoami");
      showing = false;
      onIn(doc);
    } catch (error) {
      signOut();
      replace(status, note("error", error instanceof ApiError && error.status === 401
        ? `Not signed in: ${error.message}` : error.message));
      el.querySelector("button").disabled = false;
      field.select();
    }
  });
  return el;
}

/**
 * Start the page: render() it when the gateway takes this tab's token (or needs none),
 * else show the sign-in form; stopView() stops the view shown when a 401 takes over.
 */
export async function start(render, stopView) {
  const main = document.getElementById("main");
  const nav = document.getElementById("nav");
  const signedIn = (doc) => {
    nav.hidden = false;
    who(doc, () => {
      signOut();
      showForm("");
    });
    render();
  };
  const showForm = (message) => {
    showing = true;
    stopView();
    nav.hidden = true;
    who(null);
    document.title = "Sign in · Headwater";
    replace(main, form(message, signedIn));
    main.querySelector("#token").focus();
  };
  onUnauthorized((error) => {
    if (showing) return;  // the form says it already (or is being filled in)
    const had = token();
    signOut();
    showForm(had ? `The gateway no longer takes the token: ${error.message}` : "");
  });
  try {
    signedIn(await getJson("/v1/whoami"));
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) render();  // views say why
  }
}
