// Payloads by reference for one worker (docs/protocol.md, "Payloads by reference"): before a
// handler runs, every reference in its request is read, checked and replaced by its value;
// after it, a reply larger than the threshold has its largest top-level values stored and sent
// as references.

import { createHash } from 'node:crypto';
import { PayloadRefError, SettingsError } from './errors.js';
import { FileStore } from './filestore.js';
import { chooseValuesToStore } from './offload.js';
import { PostgresStore, loadPg } from './pgstore.js';
import { resultReply } from './protocol.js';
import {
  HEADER_PAYLOAD_REFS,
  countReferences,
  findReferences,
  makeReference,
  referenceProblem,
  validKeySegment,
} from './refs.js';
import { STORES_ENV_VAR } from './storeconfig.js';

/** How many stored values one request reads at once. */
const PARALLEL_READS = 4;
const utf8 = new TextDecoder('utf-8', { fatal: true });
const ANY_SHA256 = '0'.repeat(64); // a stand-in digest: only the length of a reference matters here

function sha256(bytes) {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Run `work(item)` for every item, at most `limit` at a time; rejects with the first failure. */
async function eachLimited(items, limit, work) {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

/** The stores a worker reads references from, the first of which its large replies go to. */
export class PayloadRefs {
  #stores; // name -> store, in configured order
  #logger;
  /** The largest reply (JSON text, bytes) sent with every value inline. */
  threshold;

  /** @param {Array<{name: string}>} stores opened stores, the reply store first */
  constructor(stores, threshold, logger) {
    this.#stores = new Map(stores.map((store) => [store.name, store]));
    this.threshold = threshold;
    this.#logger = logger;
  }

  /** Open the configured stores (`{stores, threshold}` from resolvePayloadConfig); `pg` is
   * imported only when a PostgreSQL store is among them. Connections are made at first use. */
  static async open({ stores, threshold }, logger) {
    let pg;
    const postgres = stores.find((entry) => entry.kind === 'postgresql');
    if (postgres !== undefined) {
      try {
        pg = await loadPg();
      } catch (err) {
        throw new SettingsError(
          `payload store "${postgres.name}" is PostgreSQL, which needs the npm package pg (npm install pg): ${err.message}`,
        );
      }
    }
    const opened = stores.map((entry) =>
      entry.kind === 'file' ? new FileStore(entry.name, entry.path) : new PostgresStore(entry.name, entry.url, pg),
    );
    return new PayloadRefs(opened, threshold, logger);
  }

  /** The store replies go to (the first configured), or undefined without any. */
  get replyStore() {
    return this.#stores.values().next().value;
  }

  /** `name=where` for each store, for the start-up log line (no passwords). */
  describe() {
    return [...this.#stores.values()].map((store) => `${store.name}=${store.where}`).join(' ');
  }

  /**
   * Replace every reference in `body` (at any depth) by the value it names, in place; returns
   * `body`. PayloadRefError naming the reference when one cannot be read or does not match.
   */
  async resolve(body) {
    const found = findReferences(body);
    const texts = new Map(); // one read per distinct reference, however often it appears
    const distinct = [];
    for (const { ref } of found) {
      const id = `${ref.uri} ${ref.sha256} ${ref.size}`;
      if (!texts.has(id)) distinct.push([id, ref]);
      texts.set(id, undefined);
    }
    await eachLimited(distinct, PARALLEL_READS, async ([id, ref]) => texts.set(id, await this.#read(ref)));
    for (const { ref, parent, slot } of found) {
      // Parsed per place: each place gets its own copy, as if the value had travelled inline.
      parent[slot] = parseStored(ref, texts.get(`${ref.uri} ${ref.sha256} ${ref.size}`));
    }
    return body;
  }

  async #read(ref) {
    const problem = referenceProblem(ref);
    if (problem !== undefined) throw new PayloadRefError(`${ref.uri}: malformed reference: ${problem}`);
    const store = this.#stores.get(ref.store);
    if (store === undefined) {
      const known =
        this.#stores.size > 0
          ? `configured: ${[...this.#stores.keys()].join(', ')}`
          : `no payload stores are configured; set ${STORES_ENV_VAR}`;
      throw new PayloadRefError(`${ref.uri}: no payload store named "${ref.store}" here (${known})`);
    }
    const bytes = await store.get(ref);
    if (bytes.length !== ref.size) {
      throw new PayloadRefError(`${ref.uri}: ${store.where} holds ${bytes.length} bytes, not ${ref.size}`);
    }
    if (sha256(bytes) !== ref.sha256) {
      throw new PayloadRefError(`${ref.uri}: the bytes in ${store.where} do not match its sha256`);
    }
    try {
      return utf8.decode(bytes);
    } catch {
      throw new PayloadRefError(`${ref.uri}: the bytes in ${store.where} are not UTF-8 text`);
    }
  }

  /**
   * `reply` (the encoded `output`) as it should be sent: unchanged when there is no store or it
   * is no larger than the threshold; else with its largest top-level values stored and
   * references in their place, and `x-payload-refs` set. PayloadRefError when storing fails.
   * @param {import('./context.js').StepContext} ctx
   */
  async shrinkReply(reply, output, ctx) {
    const store = this.replyStore;
    if (store === undefined || reply.body.length <= this.threshold) return reply;
    // The job a value is stored for: correlation_id is `<job-uuid>:<step>`.
    const jobId = String(ctx.correlationId ?? '').split(':')[0];
    if (!validKeySegment(jobId)) {
      this.#logger.warn(
        `${ctx.logFields} reply of ${reply.body.length} bytes sent inline: correlation_id ${JSON.stringify(ctx.correlationId ?? null)} has no job id to store its values under`,
      );
      return reply;
    }
    const texts = new Map();
    for (const [name, value] of Object.entries(output)) {
      const text = JSON.stringify(value);
      if (text !== undefined) texts.set(name, text); // undefined values are left out of JSON
    }
    const sizes = [...texts].map(([name, text]) => [name, Buffer.byteLength(text, 'utf8')]);
    const referenceBytes = (size) =>
      JSON.stringify(makeReference(store.name, `${jobId}/${ANY_SHA256}`, ANY_SHA256, size)).length;
    const chosen = chooseValuesToStore(sizes, reply.body.length, this.threshold, referenceBytes);
    if (chosen.length === 0) return reply;
    const smaller = { ...output };
    for (const name of chosen) {
      const bytes = Buffer.from(texts.get(name), 'utf8');
      texts.delete(name); // the text of a large value need not outlive its bytes
      const digest = sha256(bytes);
      const key = `${jobId}/${digest}`;
      const reference = makeReference(store.name, key, digest, bytes.length);
      const stored = { uri: reference.$ref, store: store.name, key, sha256: digest, size: bytes.length };
      await store.put(stored, bytes, jobId);
      smaller[name] = reference;
    }
    const sent = resultReply(smaller, ctx.echoAttempt, ctx.metaPatch);
    sent.headers[HEADER_PAYLOAD_REFS] = countReferences(smaller);
    return sent;
  }

  /** Let go of the stores' connections. */
  async close() {
    await Promise.all([...this.#stores.values()].map((store) => store.close()));
  }
}

function parseStored(ref, text) {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new PayloadRefError(`${ref.uri}: the stored bytes are not JSON (${err.message})`);
  }
}
