// The wire protocol (docs/protocol.md), pure: header names, request decoding and reply encoding.
// A request body is a JSON object; so is a reply body. A failed step is answered with the headers
// `x-error` ("Type: message") and `x-error-type` (the error's class name) and the body
// `{"error": {"type": ..., "message": ...}}`, as pyworker does. Replies echo `x-attempt`.

import { InvalidRequest, InvalidResult } from './errors.js';

export const CONTENT_TYPE = 'application/json';
export const HEADER_ATTEMPT = 'x-attempt';
export const HEADER_WORKFLOW = 'x-workflow';
export const HEADER_ERROR = 'x-error';
export const HEADER_ERROR_TYPE = 'x-error-type';
export const HEADER_TRACEPARENT = 'traceparent';
export const HEADER_META = 'x-meta';
export const HEADER_META_PATCH = 'x-meta-patch';
/** Longest `x-error` text: headers must fit in one AMQP frame, and log lines stay readable. */
export const MAX_ERROR_CHARS = 4000;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A JSON object, as opposed to an array, null or a scalar. */
export function isPlainObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function describe(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  const text = String(value);
  return `a ${typeof value} (${text.length > 80 ? `${text.slice(0, 77)}...` : text})`;
}

/** The request body as a JSON object; throws InvalidRequest when it is not one. */
export function decodeRequest(body) {
  let data;
  try {
    data = JSON.parse(utf8.decode(body));
  } catch (err) {
    const preview = Buffer.from(body).subarray(0, 80).toString('utf8');
    throw new InvalidRequest(`request body is not UTF-8 JSON (${err.message}): ${JSON.stringify(preview)}`);
  }
  if (!isPlainObject(data)) {
    throw new InvalidRequest(`request body must be a JSON object, got ${describe(data)}`);
  }
  return data;
}

function attemptHeaders(attempt) {
  return attempt === undefined ? {} : { [HEADER_ATTEMPT]: attempt };
}

/** The reply for a handler's return value; throws InvalidResult unless it is a JSON object. */
export function resultReply(result, attempt, metaPatch = {}) {
  const output = result ?? {};
  if (!isPlainObject(output)) {
    throw new InvalidResult(
      `a step must return a JSON object (or nothing), got ${describe(output)} ` +
        '(wrap it, e.g. return { value: ... })',
    );
  }
  let body;
  try {
    body = JSON.stringify(output);
  } catch (err) {
    throw new InvalidResult(`a step's result is not JSON-serialisable: ${err.message}`, { cause: err });
  }
  const headers = attemptHeaders(attempt);
  if (Object.keys(metaPatch).length > 0) {
    try {
      headers[HEADER_META_PATCH] = JSON.stringify(metaPatch);
    } catch (err) {
      throw new InvalidResult(`a metadata patch is not JSON-serialisable: ${err.message}`, { cause: err });
    }
  }
  return { body: Buffer.from(body, 'utf8'), headers, isError: false };
}

/** The name to report for a thrown value: its class name (`TypeError`, `InvalidInput`, ...). */
export function errorType(err) {
  if (!(err instanceof Error)) return 'Error';
  if (err.name && err.name !== 'Error') return err.name;
  return err.constructor?.name || 'Error';
}

/** The x-error reply for a thrown value: `x-error` "Type: message", `x-error-type` the type. */
export function errorReply(err, attempt) {
  const type = errorType(err);
  const detail = String(err instanceof Error ? err.message : err).trim();
  let message = detail ? `${type}: ${detail}` : type;
  if (message.length > MAX_ERROR_CHARS) message = `${message.slice(0, MAX_ERROR_CHARS - 3)}...`;
  const headers = { ...attemptHeaders(attempt), [HEADER_ERROR]: message, [HEADER_ERROR_TYPE]: type };
  const body = Buffer.from(JSON.stringify({ error: { type, message } }), 'utf8');
  return { body, headers, isError: true };
}

/** A header value as text (AMQP byte arrays arrive as Buffers); undefined when absent. */
export function headerText(value) {
  if (value === undefined || value === null) return undefined;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return String(value);
}

/** The 1-based attempt from an `x-attempt` header value; undefined when absent or invalid. */
export function parseAttempt(value) {
  if (typeof value === 'boolean') return undefined;
  const text = headerText(value);
  if (text === undefined || !/^\s*\d+\s*$/.test(text)) return undefined;
  const attempt = Number(text);
  return Number.isSafeInteger(attempt) && attempt >= 1 ? attempt : undefined;
}

/** `[jobId, step]` from `<job-id>:<step-name>`; the step is undefined when there is no colon. */
export function splitCorrelationId(correlationId) {
  if (!correlationId) return ['', undefined];
  const colon = correlationId.lastIndexOf(':');
  if (colon <= 0 || colon === correlationId.length - 1) return [correlationId, undefined];
  return [correlationId.slice(0, colon), correlationId.slice(colon + 1)];
}

/** The `x-meta` header as an object: a JSON-object string or an AMQP table; else undefined. */
export function parseMeta(value) {
  if (isPlainObject(value) && !Buffer.isBuffer(value)) return value;
  const text = headerText(value);
  if (text === undefined) return undefined;
  try {
    const meta = JSON.parse(text);
    return isPlainObject(meta) ? meta : undefined;
  } catch {
    return undefined; // not ours to reject: x-meta is optional context, the step still runs
  }
}
