// The bearer token of this tab (sessionStorage: gone when the tab closes, never sent to
// another origin), the Authorization header it makes, and who is told when the gateway
// answers 401 (the sign-in form takes over the page).

const KEY = "headwater.token";
const listeners = new Set();

/** The token signed in with, or null. */
export function token() {
  try {
    return sessionStorage.getItem(KEY) || null;
  } catch {
    return null;  // storage disabled: no token can be kept
  }
}

/** Keep token for this tab (an empty one signs out). */
export function setToken(value) {
  const trimmed = (value || "").trim();
  if (trimmed) sessionStorage.setItem(KEY, trimmed);
  else sessionStorage.removeItem(KEY);
}

/** Forget the token. */
export function signOut() {
  setToken("");
}

/** headers with Authorization: Bearer <token> added when there is a token (RFC 6750 §2.1). */
export function withToken(headers = {}) {
  const value = token();
  return value ? {...headers, Authorization: `Bearer ${value}`} : {...headers};
}

/** Call listener(error) whenever the gateway answers 401; returns what removes it. */
export function onUnauthorized(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Tell the listeners the gateway answered 401 (error: the ApiError of the answer). */
export function unauthorized(error) {
  for (const listener of listeners) listener(error);
}
