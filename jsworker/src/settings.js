// Worker options: validated once in the constructor, frozen; the broker URL, the queue prefix
// and the payload stores fall back to the environment, which is read when the worker starts
// (never at import).

import { SettingsError } from './errors.js';
import { parseThreshold, storesOption } from './storeconfig.js';

export const DEFAULT_AMQP_URL = 'amqp://guest:guest@localhost:5672/';
export const URL_ENV_VARS = Object.freeze(['AMQP_URL', 'AMQP_SERVER']);
export const PREFIX_ENV_VAR = 'QUEUE_PREFIX';
const MAX_PREFETCH = 65535; // basic.qos prefetch-count is a 16-bit field
const KNOWN = new Set([
  'url',
  'queuePrefix',
  'prefetch',
  'name',
  'stopTimeoutMs',
  'logger',
  'env',
  'payloadStores',
  'payloadRefThreshold',
]);

/** `url` with its password replaced by `******`, for logs and messages. */
export function maskUrl(url) {
  try {
    const parsed = new URL(url);
    if (!parsed.password) return url;
    parsed.password = '******';
    return parsed.toString();
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:******@');
  }
}

function checkUrl(url, source) {
  let valid = false;
  try {
    const parsed = new URL(url);
    valid = (parsed.protocol === 'amqp:' || parsed.protocol === 'amqps:') && parsed.hostname !== '';
  } catch {
    valid = false;
  }
  if (!valid) {
    throw new SettingsError(
      `${source}: ${JSON.stringify(maskUrl(String(url)))} is not an AMQP URL (expected e.g. ${JSON.stringify(DEFAULT_AMQP_URL)})`,
    );
  }
  return url;
}

/** The broker URL: `explicit`, else $AMQP_URL, else $AMQP_SERVER, else localhost. */
export function resolveAmqpUrl(explicit, env) {
  if (explicit) return checkUrl(explicit, 'url');
  for (const name of URL_ENV_VARS) {
    const value = (env[name] ?? '').trim();
    if (value) return checkUrl(value, `environment variable ${name}`);
  }
  return DEFAULT_AMQP_URL;
}

/** The prefix for every step queue name: `explicit`, else $QUEUE_PREFIX, else none. */
export function resolveQueuePrefix(explicit, env) {
  if (explicit !== undefined) return explicit;
  return (env[PREFIX_ENV_VAR] ?? '').trim();
}

/** The default logger: information to stdout, warnings and errors to stderr, one line each. */
export const consoleLogger = Object.freeze({
  info: (line) => console.log(`jsworker: ${line}`),
  warn: (line) => console.error(`jsworker: ${line}`),
  error: (line) => console.error(`jsworker: ${line}`),
});

function checkLogger(logger) {
  const ok = logger && ['info', 'warn', 'error'].every((level) => typeof logger[level] === 'function');
  if (!ok) throw new SettingsError('logger: expected an object with info, warn and error functions (e.g. console)');
  return logger;
}

/** The validated, frozen options of a Worker; throws SettingsError naming the bad option. */
export function workerSettings(options = {}) {
  if (options === null || typeof options !== 'object') {
    throw new SettingsError(`Worker options: expected an object, got ${options === null ? 'null' : typeof options}`);
  }
  const unknown = Object.keys(options).filter((key) => !KNOWN.has(key));
  if (unknown.length > 0) {
    throw new SettingsError(`Worker options: unknown option(s) ${unknown.join(', ')} (known: ${[...KNOWN].join(', ')})`);
  }
  const { url, queuePrefix, prefetch = 10, name, stopTimeoutMs = 30_000, logger = consoleLogger, env } = options;
  const { payloadStores, payloadRefThreshold } = options;
  if (url !== undefined && url !== null) checkUrl(url, 'url');
  if (!Number.isInteger(prefetch) || prefetch < 1 || prefetch > MAX_PREFETCH) {
    throw new SettingsError(
      `prefetch: ${JSON.stringify(prefetch)} is not an integer in 1..${MAX_PREFETCH}; it is how many requests per step queue the worker handles at once`,
    );
  }
  if (queuePrefix !== undefined && typeof queuePrefix !== 'string') {
    throw new SettingsError(`queuePrefix: expected a string, got ${JSON.stringify(queuePrefix)}`);
  }
  if (name !== undefined && typeof name !== 'string') {
    throw new SettingsError(`name: expected a string, got ${JSON.stringify(name)}`);
  }
  if (typeof stopTimeoutMs !== 'number' || !(stopTimeoutMs >= 0)) {
    throw new SettingsError(`stopTimeoutMs: expected a number of milliseconds >= 0, got ${JSON.stringify(stopTimeoutMs)}`);
  }
  return Object.freeze({
    url: url ?? undefined,
    queuePrefix,
    prefetch,
    name,
    stopTimeoutMs,
    logger: checkLogger(logger),
    env,
    // Left undefined, each falls back to its environment variable when the worker starts.
    payloadStores: payloadStores === undefined ? undefined : storesOption(payloadStores),
    payloadRefThreshold:
      payloadRefThreshold === undefined ? undefined : parseThreshold(payloadRefThreshold, 'payloadRefThreshold'),
  });
}
