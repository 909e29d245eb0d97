// The manager's JSON API and its event stream, as the pages use them.

import { EVENT_TYPES } from "./format.js";

/** An API answer that was not 2xx; `message` is the manager's own {"error": ...} sentence. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function loginAgain() {
  const next = location.pathname + location.search;
  location.assign(`/ui/login?next=${encodeURIComponent(next)}`);
}

async function request(method, path, body) {
  const init = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new ApiError(0, `the manager did not answer (${error.message})`);
  }
  if (response.status === 401) loginAgain();
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const message = data && typeof data.error === "string" ? data.error : `HTTP ${response.status}`;
    throw new ApiError(response.status, message);
  }
  return data;
}

/** GET a JSON path with query parameters (undefined and "" values left out). */
export function get(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") query.set(key, String(value));
  }
  const qs = query.toString();
  return request("GET", qs ? `${path}?${qs}` : path);
}

/** POST a JSON body. */
export function post(path, body) {
  return request("POST", path, body);
}

/** DELETE a path. */
export function del(path) {
  return request("DELETE", path);
}

/** A path segment from any value (ids and names go into URLs escaped). */
export function seg(value) {
  return encodeURIComponent(String(value));
}

const listeners = new Set();
let connectionState = "idle";

/** Call `fn(state)` now and on every change of the stream's state: idle (no stream on this
 * page) | connecting | live | reconnecting | closed. */
export function onConnection(fn) {
  listeners.add(fn);
  fn(connectionState);
}

function setConnection(state) {
  connectionState = state;
  for (const fn of listeners) fn(state);
}

/**
 * Follow GET /api/events (Server-Sent Events) with `params` (job= or workflow=); `onEvent(data)`
 * for every run event, and for a `reset` (events were missed: re-read everything) with
 * data {type: "reset"}. The browser reconnects by itself, sending Last-Event-ID.
 */
export function follow(params, onEvent) {
  const query = new URLSearchParams(params).toString();
  const source = new EventSource(query ? `/api/events?${query}` : "/api/events");
  setConnection("connecting");
  source.onopen = () => setConnection("live");
  source.onerror = () => {
    setConnection(source.readyState === EventSource.CLOSED ? "closed" : "reconnecting");
  };
  const handle = (message) => {
    let data;
    try {
      data = JSON.parse(message.data);
    } catch {
      return;
    }
    onEvent(data);
  };
  for (const type of EVENT_TYPES) source.addEventListener(type, handle);
  source.addEventListener("reset", () => onEvent({ type: "reset" }));
  return () => source.close();
}

/** `fn` called at most once per `waitMs`, trailing: bursts of events make one refresh. */
export function debounce(fn, waitMs = 500) {
  let timer = null;
  let running = false;
  let again = false;
  const run = async () => {
    timer = null;
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      await fn();
    } finally {
      running = false;
      if (again) {
        again = false;
        schedule();
      }
    }
  };
  const schedule = () => {
    if (timer === null) timer = setTimeout(run, waitMs);
  };
  return schedule;
}
