// A payload store in PostgreSQL: `wm://<name>/<key>` is the row of `wm_payloads` with that key
// (docs/protocol.md, "Stores"). `pg` is imported only when such a store is configured.

import { PayloadRefError } from './errors.js';
import { describeStoreUrl } from './storeconfig.js';

export const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS wm_payloads (
    key       text PRIMARY KEY,
    job_id    text NOT NULL,
    sha256    text NOT NULL,
    size      bigint NOT NULL,
    stored_at timestamptz NOT NULL DEFAULT now(),
    value     bytea NOT NULL
)`;
// Retention removes a job's values at once: the same index the other parties create.
const CREATE_INDEX = 'CREATE INDEX IF NOT EXISTS wm_payloads_job ON wm_payloads (job_id)';
const CONNECT_TIMEOUT_MS = 5000;
const MAX_CONNECTIONS = 4;
// Two parties creating the table at the same moment: one of them sees these; the table is there.
const CREATED_MEANWHILE = new Set(['23505', '42P07']);

/** The node-postgres module, imported on demand. */
export async function loadPg() {
  const module = await import('pg');
  return module.default ?? module;
}

function reason(err) {
  const text = String(err?.message ?? err).trim();
  return text.split('\n')[0] || err?.code || 'unknown error';
}

/** Values as rows of `wm_payloads`, over a small pool connected at first use. */
export class PostgresStore {
  #pool;
  #table; // the promise of the table's creation, made once per store (again after a failure)

  /** @param {string} name @param {string} url @param {any} pg the node-postgres module */
  constructor(name, url, pg) {
    this.name = name;
    this.where = describeStoreUrl(url);
    this.#pool = new pg.Pool({
      connectionString: url,
      max: MAX_CONNECTIONS,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      allowExitOnIdle: true, // an idle pool must not keep a stopped worker's process alive
    });
    // An idle connection dropped by the server: the pool replaces it at next use.
    this.#pool.on('error', () => {});
  }

  #ready() {
    this.#table ??= this.#createTable().catch((err) => {
      this.#table = undefined;
      throw err;
    });
    return this.#table;
  }

  async #createTable() {
    for (const statement of [CREATE_TABLE, CREATE_INDEX]) {
      try {
        await this.#pool.query(statement);
      } catch (err) {
        if (!CREATED_MEANWHILE.has(err?.code)) throw err;
      }
    }
  }

  async #query(uri, text, values) {
    try {
      await this.#ready();
      return await this.#pool.query(text, values);
    } catch (err) {
      throw new PayloadRefError(`${uri}: cannot use ${this.where}: ${reason(err)}`);
    }
  }

  /** The stored bytes of `ref` (a well-formed reference); PayloadRefError when it cannot. */
  async get(ref) {
    const { rows } = await this.#query(ref.uri, 'SELECT value FROM wm_payloads WHERE key = $1', [ref.key]);
    if (rows.length === 0) throw new PayloadRefError(`${ref.uri}: not found in ${this.where}`);
    return rows[0].value;
  }

  /** Store `bytes` under `ref.key` for job `jobId`; a key stored already is left as it is. */
  async put(ref, bytes, jobId) {
    await this.#query(
      ref.uri,
      'INSERT INTO wm_payloads (key, job_id, sha256, size, value) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (key) DO NOTHING',
      [ref.key, jobId, ref.sha256, ref.size, bytes],
    );
  }

  /** Close the pool's connections. */
  async close() {
    await this.#pool.end().catch(() => {});
  }
}
