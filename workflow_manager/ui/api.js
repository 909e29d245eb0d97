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
  // The manager takes only JSON on a state-changing route, even one with no body (a page of
  // another site cannot send that type without asking first: no forged requests).
  if (method !== "GET") init.headers["Content-Type"] = "application/json";
  if (body !== undefined) init.body = JSON.stringify(body);
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

const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 30000;

/**
 * Follow GET /api/events (Server-Sent Events) with `params` (job= or workflow=); `onEvent(data)`
 * for every run event, and for a `reset` (events were missed: re-read everything) with
 * data {type: "reset"}. The browser reconnects by itself after a dropped stream, sending
 * Last-Event-ID; after an answer that is no stream (a 503 while the manager running the job
 * moves, with several managers) it gives up, so a new stream is opened after a second (longer
 * if that fails again), and a `reset` follows once it is open: it could not resume.
 */
export function follow(params, onEvent) {
  const query = new URLSearchParams(params).toString();
  const url = query ? `/api/events?${query}` : "/api/events";
  const handle = (message) => {
    let data;
    try {
      data = JSON.parse(message.data);
    } catch {
      return;
    }
    onEvent(data);
  };
  let source = null;
  let retry = null;
  let waitMs = RETRY_FIRST_MS;
  let opened = false; // a stream was open before: a new one starts with no Last-Event-ID
  const open = () => {
    retry = null;
    const current = new EventSource(url);
    source = current;
    setConnection(opened ? "reconnecting" : "connecting");
    current.onopen = () => {
      setConnection("live");
      waitMs = RETRY_FIRST_MS;
      if (opened) onEvent({ type: "reset" });
      opened = true;
    };
    current.onerror = () => {
      setConnection("reconnecting");
      if (current.readyState !== EventSource.CLOSED) return; // the browser reconnects
      current.close();
      retry = setTimeout(open, waitMs);
      waitMs = Math.min(waitMs * 2, RETRY_MAX_MS);
    };
    for (const type of EVENT_TYPES) current.addEventListener(type, handle);
    current.addEventListener("reset", () => onEvent({ type: "reset" }));
  };
  open();
  return () => {
    if (retry !== null) clearTimeout(retry);
    source.close();
  };
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
