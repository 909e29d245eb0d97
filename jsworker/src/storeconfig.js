// Payload store configuration: `NAME=URL NAME=URL` (WM_PAYLOAD_STORES or the payloadStores
// option; replies are stored in the first) and the reply size above which values are stored
// (WM_PAYLOAD_REF_THRESHOLD or payloadRefThreshold). Pure: errors name the source and the entry.

import { fileURLToPath } from 'node:url';
import { SettingsError } from './errors.js';
import { DEFAULT_REF_THRESHOLD } from './offload.js';
import { validStoreName } from './refs.js';
import { maskUrl } from './settings.js';

export const STORES_ENV_VAR = 'WM_PAYLOAD_STORES';
export const THRESHOLD_ENV_VAR = 'WM_PAYLOAD_REF_THRESHOLD';
const EXAMPLE = 'main=file:///srv/wm-payloads';

/** Where a store is, for messages and logs: its URL without password or query string. */
export function describeStoreUrl(url) {
  const shown = maskUrl(url);
  const query = shown.indexOf('?');
  return query < 0 ? shown : shown.slice(0, query);
}

function storeKind(name, url, source) {
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  const scheme = parsed?.protocol.slice(0, -1);
  if (scheme === 'file') {
    let path;
    try {
      // file:dir or file://host/dir would quietly mean something else than the writer meant.
      if (/^file:\/\/(localhost)?\//i.test(url)) path = fileURLToPath(parsed);
    } catch {
      path = undefined;
    }
    if (path === undefined) {
      throw new SettingsError(`${source}: store "${name}": ${JSON.stringify(url)} is not file:///<absolute directory>`);
    }
    return { kind: 'file', path };
  }
  if (scheme === 'postgresql' || scheme === 'postgres') return { kind: 'postgresql' };
  throw new SettingsError(
    `${source}: store "${name}" has URL ${JSON.stringify(describeStoreUrl(url))}: ` +
      `expected file:///<directory>, postgresql://... or postgres://...`,
  );
}

/** One `NAME=URL` entry as `{name, url, kind, path?}`; SettingsError naming `source` and the entry. */
export function parseStoreEntry(entry, source) {
  const equals = entry.indexOf('=');
  const name = equals < 0 ? '' : entry.slice(0, equals);
  const url = equals < 0 ? '' : entry.slice(equals + 1);
  if (!name || !url) {
    throw new SettingsError(`${source}: entry ${JSON.stringify(maskUrl(entry))} is not NAME=URL (e.g. ${EXAMPLE})`);
  }
  if (!validStoreName(name)) {
    throw new SettingsError(
      `${source}: entry ${JSON.stringify(maskUrl(entry))}: store name "${name}" must match [a-z0-9][a-z0-9_-]* (at most 63 characters)`,
    );
  }
  return Object.freeze({ name, url, ...storeKind(name, url, source) });
}

/** `NAME=URL NAME=URL ...` (spaces between) as frozen store entries, in order, each name once. */
export function parseStores(text, source) {
  const entries = text
    .split(/\s+/)
    .filter((part) => part !== '')
    .map((part) => parseStoreEntry(part, source));
  const seen = new Set();
  for (const { name } of entries) {
    if (seen.has(name)) throw new SettingsError(`${source}: store "${name}" is named twice`);
    seen.add(name);
  }
  return Object.freeze(entries);
}

/** The payloadStores option (a `NAME=URL ...` string, or an object of name -> URL) as entries. */
export function storesOption(value) {
  const source = 'payloadStores';
  if (typeof value === 'string') return parseStores(value, source);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new SettingsError(
      `${source}: expected "NAME=URL NAME=URL" or an object { name: url }, got ${Array.isArray(value) ? 'an array' : JSON.stringify(value)}`,
    );
  }
  const parts = Object.entries(value).map(([name, url]) => {
    if (typeof url !== 'string') {
      throw new SettingsError(`${source}: store "${name}": the URL must be a string, got ${JSON.stringify(url)}`);
    }
    return `${name}=${url}`;
  });
  return parseStores(parts.join(' '), source);
}

/** A threshold in bytes: a whole number >= 0, as a number (option) or decimal text (environment). */
export function parseThreshold(value, source) {
  const text = typeof value === 'string' ? value.trim() : undefined;
  const bytes = text !== undefined && /^\d+$/.test(text) ? Number(text) : value;
  if (!Number.isSafeInteger(bytes) || bytes < 0) {
    throw new SettingsError(
      `${source}: ${JSON.stringify(value)} is not a whole number of bytes (the default is ${DEFAULT_REF_THRESHOLD}, 256 KiB)`,
    );
  }
  return bytes;
}

/**
 * The payload configuration a worker starts with: `{stores, threshold}`. The options win; the
 * environment fills in what they leave out. SettingsError naming the variable and the entry.
 */
export function resolvePayloadConfig({ payloadStores, payloadRefThreshold }, env) {
  const storesText = env[STORES_ENV_VAR] ?? '';
  const stores = payloadStores ?? parseStores(storesText, `environment variable ${STORES_ENV_VAR}`);
  let threshold = payloadRefThreshold;
  if (threshold === undefined) {
    const text = (env[THRESHOLD_ENV_VAR] ?? '').trim();
    threshold = text === '' ? DEFAULT_REF_THRESHOLD : parseThreshold(text, `environment variable ${THRESHOLD_ENV_VAR}`);
  }
  return Object.freeze({ stores, threshold });
}
