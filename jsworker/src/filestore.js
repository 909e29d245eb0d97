// A payload store in a directory every party mounts: `wm://<name>/<key>` is the file
// `<dir>/<key>`, each key segment a directory level (docs/protocol.md, "Stores").

import { randomUUID } from 'node:crypto';
import { mkdir, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { PayloadRefError } from './errors.js';

/** Values as files `<root>/<key>`. */
export class FileStore {
  /** @param {string} name @param {string} root an absolute directory */
  constructor(name, root) {
    this.name = name;
    this.root = root;
    this.where = `file://${root}`;
  }

  #path(key) {
    return join(this.root, ...key.split('/'));
  }

  /** The stored bytes of `ref` (a well-formed reference); PayloadRefError when it cannot. */
  async get(ref) {
    try {
      return await readFile(this.#path(ref.key));
    } catch (err) {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') throw await this.#missing(ref);
      throw new PayloadRefError(`${ref.uri}: cannot read ${this.where}: ${err.message}`);
    }
  }

  async #missing(ref) {
    const root = await stat(this.root).catch(() => undefined);
    if (!root?.isDirectory()) return new PayloadRefError(`${ref.uri}: ${this.where} is not a directory (not mounted?)`);
    return new PayloadRefError(`${ref.uri}: not found in ${this.where}`);
  }

  /**
   * Store `bytes` under `ref.key` unless a value is there already (the same key always holds
   * the same bytes). Written to a temporary file beside it, flushed to disk and renamed into
   * place, so a reader never sees part of a value and a reply never names one a crash could lose.
   */
  async put(ref, bytes) {
    const path = this.#path(ref.key);
    if (await stat(path).then(() => true, () => false)) return;
    const temp = join(dirname(path), `.${basename(path)}.${randomUUID()}.part`);
    try {
      await mkdir(dirname(path), { recursive: true });
      const file = await open(temp, 'wx');
      try {
        await file.writeFile(bytes);
        await file.datasync();
      } finally {
        await file.close();
      }
      await rename(temp, path);
    } catch (err) {
      await unlink(temp).catch(() => {});
      throw new PayloadRefError(`${ref.uri}: cannot write to ${this.where}: ${err.message}`);
    }
  }

  /** Nothing to let go of. */
  async close() {}
}
