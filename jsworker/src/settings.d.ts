import type { StoreEntry } from './storeconfig.js';

/** Where a Worker writes its few log lines (start, outage, stop, failed steps). */
export interface Logger {
  info(line: string): void;
  warn(line: string): void;
  error(line: string): void;
}

/** Options of `new Worker(...)`. */
export interface WorkerOptions {
  /** Broker URL. Default: $AMQP_URL, then $AMQP_SERVER, then amqp://guest:guest@localhost:5672/. */
  url?: string;
  /** Prepended to every step's queue name (e.g. "staging."). Default: $QUEUE_PREFIX, else none. */
  queuePrefix?: string;
  /** How many requests per step queue are handled at once (basic.qos). Default 10. */
  prefetch?: number;
  /** Connection name shown by RabbitMQ. Default: `jsworker <host> pid=<pid>`. */
  name?: string;
  /** How long stop() waits for in-flight handlers before closing anyway. Default 30000. */
  stopTimeoutMs?: number;
  /** Where log lines go. Default: stdout (info) and stderr (warnings, errors), prefixed `jsworker:`. */
  logger?: Logger;
  /** Environment to read AMQP_URL / AMQP_SERVER / QUEUE_PREFIX / WM_PAYLOAD_* from. Default: process.env. */
  env?: Record<string, string | undefined>;
  /**
   * Payload stores, `"NAME=URL NAME=URL"` or `{ NAME: URL }` (file:///dir, postgresql://...);
   * replies are stored in the first. Default: $WM_PAYLOAD_STORES, else none.
   */
  payloadStores?: string | Record<string, string>;
  /** A reply whose JSON text is larger (bytes) has values stored. Default: $WM_PAYLOAD_REF_THRESHOLD, else 262144. */
  payloadRefThreshold?: number;
}

/** The validated options, frozen. */
export interface WorkerSettings {
  readonly url: string | undefined;
  readonly queuePrefix: string | undefined;
  readonly prefetch: number;
  readonly name: string | undefined;
  readonly stopTimeoutMs: number;
  readonly logger: Logger;
  readonly env: Record<string, string | undefined> | undefined;
  /** The payloadStores option parsed; undefined: $WM_PAYLOAD_STORES at start. */
  readonly payloadStores: readonly StoreEntry[] | undefined;
  /** The payloadRefThreshold option; undefined: $WM_PAYLOAD_REF_THRESHOLD (or 262144) at start. */
  readonly payloadRefThreshold: number | undefined;
}

export const DEFAULT_AMQP_URL: string;
export const URL_ENV_VARS: readonly string[];
export const PREFIX_ENV_VAR: string;
/** The default logger: info to stdout, warnings and errors to stderr. */
export const consoleLogger: Logger;
/** `url` with its password replaced by `******`. */
export function maskUrl(url: string): string;
/** The broker URL: `explicit`, else $AMQP_URL, else $AMQP_SERVER, else localhost. */
export function resolveAmqpUrl(explicit: string | undefined, env: Record<string, string | undefined>): string;
/** The prefix for every step queue name: `explicit`, else $QUEUE_PREFIX, else none. */
export function resolveQueuePrefix(explicit: string | undefined, env: Record<string, string | undefined>): string;
/** The validated, frozen options of a Worker; throws SettingsError naming the bad option. */
export function workerSettings(options?: WorkerOptions): WorkerSettings;
