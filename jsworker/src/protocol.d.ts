export const CONTENT_TYPE: 'application/json';
export const HEADER_ATTEMPT: 'x-attempt';
export const HEADER_WORKFLOW: 'x-workflow';
export const HEADER_ERROR: 'x-error';
export const HEADER_ERROR_TYPE: 'x-error-type';
export const HEADER_TRACEPARENT: 'traceparent';
export const HEADER_META: 'x-meta';
/** Longest `x-error` text. */
export const MAX_ERROR_CHARS: number;

/** A JSON object (plain data). */
export type JsonObject = { [key: string]: unknown };

/** An encoded reply: the JSON body and the headers to send with it. */
export interface Reply {
  body: Buffer;
  headers: Record<string, string | number>;
  isError: boolean;
}

/** A JSON object, as opposed to an array, null or a scalar. */
export function isPlainObject(value: unknown): value is JsonObject;
/** The request body as a JSON object; throws InvalidRequest when it is not one. */
export function decodeRequest(body: Uint8Array): JsonObject;
/** The reply for a handler's return value; throws InvalidResult unless it is a JSON object. */
export function resultReply(result: unknown, attempt: number | undefined, metaPatch?: JsonObject): Reply;
/** The name to report for a thrown value: its class name. */
export function errorType(err: unknown): string;
/** The x-error reply for a thrown value. */
export function errorReply(err: unknown, attempt: number | undefined): Reply;
/** A header value as text; undefined when absent. */
export function headerText(value: unknown): string | undefined;
/** The 1-based attempt from an `x-attempt` header value; undefined when absent or invalid. */
export function parseAttempt(value: unknown): number | undefined;
/** `[jobId, step]` from `<job-id>:<step-name>`. */
export function splitCorrelationId(correlationId: string | undefined): [string, string | undefined];
/** The `x-meta` header as an object, else undefined. */
export function parseMeta(value: unknown): JsonObject | undefined;
