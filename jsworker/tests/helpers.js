// Test helpers: a fake manager on the real RabbitMQ, unique names, a recording logger, and
// closing one named connection from the broker side.

import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import amqp from 'amqplib';

export const AMQP_URL = process.env.AMQP_URL || 'amqp://guest:guest@127.0.0.1:5672/';
export const REPLY_TIMEOUT_MS = 10_000;
const run = promisify(execFile);

/** A name no other test (or agent) uses. */
export function unique(prefix) {
  return `jsworker-test.${prefix}.${randomUUID().slice(0, 8)}`;
}

/** `promise`'s outcome, or a rejection naming `what` after `ms`. */
export function within(ms, promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A logger that keeps its lines and lets a test wait for one. */
export class RecordingLogger {
  lines = [];
  #waiters = [];

  #add(level, line) {
    this.lines.push(`${level} ${line}`);
    this.#waiters = this.#waiters.filter(({ pattern, resolve }) => {
      if (!pattern.test(line)) return true;
      resolve(line);
      return false;
    });
  }

  info = (line) => this.#add('info', line);
  warn = (line) => this.#add('warn', line);
  error = (line) => this.#add('error', line);

  /** The next (or an earlier) line matching `pattern`. */
  waitFor(pattern, ms = REPLY_TIMEOUT_MS) {
    const seen = this.lines.find((line) => pattern.test(line));
    if (seen) return Promise.resolve(seen);
    return within(ms, new Promise((resolve) => this.#waiters.push({ pattern, resolve })), `a log line ${pattern}`);
  }

  matching(pattern) {
    return this.lines.filter((line) => pattern.test(line));
  }
}

/** A gate a handler can wait on, opened by the test. */
export function gate() {
  let open;
  const opened = new Promise((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** The manager's side of the protocol: step queues, a reply queue, the replies as they come. */
export class FakeManager {
  #connection;
  #channel;
  #replies = [];
  #waiting = [];
  #queues = new Set();
  replyQueue;

  static async connect() {
    const manager = new FakeManager();
    manager.#connection = await amqp.connect(AMQP_URL);
    manager.#channel = await manager.#connection.createConfirmChannel();
    const { queue } = await manager.#channel.assertQueue('', { exclusive: true });
    manager.replyQueue = queue;
    await manager.#channel.consume(queue, (message) => manager.#onReply(message), { noAck: true });
    return manager;
  }

  #onReply(message) {
    const waiter = this.#waiting.shift();
    if (waiter) waiter(message);
    else this.#replies.push(message);
  }

  /** Declare a step queue as the manager does (durable, no arguments); deleted in close(). */
  async stepQueue(name) {
    await this.#channel.assertQueue(name, { durable: true });
    this.#queues.add(name);
    return name;
  }

  /** Declare a queue that refuses (nacks) everything published to it; deleted in close(). */
  async refusingQueue(name) {
    await this.#channel.assertQueue(name, { arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' } });
    this.#queues.add(name);
    return name;
  }

  /** Publish a request as the manager does; `options` override properties. */
  async request(queue, body, { jobId = randomUUID(), step = 'step', attempt = 1, headers = {}, ...options } = {}) {
    const content = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
    const correlationId = `${jobId}:${step}`;
    this.#channel.publish('', queue, content, {
      correlationId,
      replyTo: this.replyQueue,
      contentType: 'application/json',
      persistent: true,
      messageId: `${correlationId}:${attempt}`,
      headers: { 'x-workflow': 'wf', 'x-attempt': attempt, ...headers },
      ...options,
    });
    await this.#channel.waitForConfirms();
    return { jobId, correlationId };
  }

  /** The next reply, as { body, properties }. */
  async reply(ms = REPLY_TIMEOUT_MS) {
    const message =
      this.#replies.shift() ??
      (await within(ms, new Promise((resolve) => this.#waiting.push(resolve)), 'a reply'));
    return { body: JSON.parse(message.content.toString('utf8')), properties: message.properties };
  }

  /** Ready and unacked message counts of `queue`, from the broker. */
  async counts(queue) {
    const { stdout } = await run('rabbitmqctl', ['-q', '--no-table-headers', 'list_queues', 'name', 'messages_ready', 'messages_unacknowledged']);
    const row = stdout.split('\n').find((line) => line.split('\t')[0] === queue);
    if (!row) throw new Error(`queue ${queue} not listed by rabbitmqctl`);
    const [, ready, unacked] = row.split('\t');
    return { ready: Number(ready), unacked: Number(unacked) };
  }

  async close() {
    for (const queue of this.#queues) await this.#channel.deleteQueue(queue);
    await this.#connection.close();
  }
}

/** Force-close, from the broker side, only the connections named `name`; how many were closed. */
export async function closeConnectionNamed(name) {
  const { stdout } = await run('rabbitmqctl', ['-q', '--no-table-headers', 'list_connections', 'pid', 'client_properties']);
  const pids = stdout
    .split('\n')
    .filter((line) => line.includes(`"${name}"`))
    .map((line) => line.split('\t')[0]);
  for (const pid of pids) await run('rabbitmqctl', ['-q', 'close_connection', pid, 'jsworker reconnect test']);
  return pids.length;
}
