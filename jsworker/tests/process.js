// A worker run as a child `node` process, with its output collected and awaitable by line.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { AMQP_URL, within } from './helpers.js';

export class NodeProcess {
  lines = [];
  #waiters = [];

  /** Spawn `node script` with `env` added to this process's environment. */
  static spawn(script, env) {
    const child = spawn(process.execPath, [script], {
      env: { ...process.env, AMQP_URL, QUEUE_PREFIX: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new NodeProcess(child);
  }

  /** Spawn `node script` and resolve once it prints a line matching `ready`. */
  static async start(script, env, ready = /listening on/) {
    const running = NodeProcess.spawn(script, env);
    await running.waitFor(ready);
    return running;
  }

  constructor(child) {
    this.child = child;
    this.exited = once(child, 'exit').then(([code, signal]) => code ?? signal);
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => this.#add(line));
    }
  }

  #add(line) {
    this.lines.push(line);
    this.#waiters = this.#waiters.filter(({ pattern, resolve }) => {
      if (!pattern.test(line)) return true;
      resolve(line);
      return false;
    });
  }

  /** The first line matching `pattern`, seen or to come. */
  waitFor(pattern, ms = 10_000) {
    const seen = this.lines.find((line) => pattern.test(line));
    if (seen) return Promise.resolve(seen);
    const line = new Promise((resolve) => this.#waiters.push({ pattern, resolve }));
    const died = this.exited.then((code) => {
      throw new Error(`process exited (${code}) before printing ${pattern}:\n${this.lines.join('\n')}`);
    });
    return within(ms, Promise.race([line, died]), `${pattern} from the process:\n${this.lines.join('\n')}`);
  }

  /** SIGTERM it and return its exit code. */
  async terminate(ms = 15_000) {
    this.child.kill('SIGTERM');
    return within(ms, this.exited, 'the process to exit');
  }

  /** Make sure it is gone (after a failed test). */
  kill() {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}
