// Worker: registers step handlers and serves their queues on RabbitMQ until told to stop,
// reconnecting by itself after an outage and draining in-flight requests when it stops.

import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { handleDelivery } from './delivery.js';
import { StepDefinitionError, WorkerStateError } from './errors.js';
import { PayloadRefs } from './payloads.js';
import { Session } from './session.js';
import { maskUrl, resolveAmqpUrl, resolveQueuePrefix, workerSettings } from './settings.js';
import { resolvePayloadConfig } from './storeconfig.js';

/** First wait before reconnecting, doubled after each failed attempt up to the maximum. */
export const RECONNECT_DELAY_MS = 500;
export const MAX_RECONNECT_DELAY_MS = 5000;
const MAX_QUEUE_BYTES = 255;

/** `queue` if it is a usable RabbitMQ queue name; throws StepDefinitionError otherwise. */
export function checkQueueName(queue) {
  if (typeof queue !== 'string' || queue.trim() === '') {
    throw new StepDefinitionError(
      `step queue name must be a non-empty string, got ${JSON.stringify(queue)} (use worker.step('my-step', handler))`,
    );
  }
  if (queue.startsWith('amq.')) {
    throw new StepDefinitionError(`step queue name "${queue}": names starting 'amq.' are reserved`);
  }
  if (Buffer.byteLength(queue, 'utf8') > MAX_QUEUE_BYTES) {
    throw new StepDefinitionError(`step queue name "${queue.slice(0, 40)}...": longer than 255 bytes`);
  }
  return queue;
}

function deferred() {
  let resolve;
  const promise = new Promise((res) => {
    resolve = res;
  });
  return { promise, resolve };
}

/** Serves step handlers: consumes each step's queue and replies to the manager. */
export class Worker {
  #settings;
  #handlers = new Map(); // step queue name (unprefixed) -> handler
  #state = 'new'; // new | starting | running | stopping | stopped
  #session;
  #queues = new Map(); // declared queue name -> handler
  #url;
  #payloads; // the payload stores, opened at start and closed at stop
  #inFlight = new Set();
  #loop;
  #wake = deferred(); // resolved when stop() begins, to end sleeps and waits at once
  #stopped = deferred();
  #stopAfterStart = false;
  #drained = true; // whether the last stop finished every in-flight request

  /** @param {import('./settings.js').WorkerOptions} [options] */
  constructor(options = {}) {
    this.#settings = workerSettings(options);
  }

  /** Register `handler(data, ctx)` for requests on `queue`; returns the worker, to chain calls. */
  step(queue, handler) {
    checkQueueName(queue);
    if (typeof handler !== 'function') {
      throw new StepDefinitionError(
        `step "${queue}": the handler must be a function (data, ctx) => result, got ${handler === null ? 'null' : typeof handler}`,
      );
    }
    if (this.#handlers.has(queue)) {
      throw new StepDefinitionError(`step "${queue}" already has a handler; each queue has one handler per worker`);
    }
    if (this.#state !== 'new') {
      throw new WorkerStateError(`cannot add step "${queue}": the worker has started`);
    }
    this.#handlers.set(queue, handler);
    return this;
  }

  /** The registered step queue names (without the queue prefix). */
  get steps() {
    return [...this.#handlers.keys()];
  }

  /** The validated options (frozen). */
  get settings() {
    return this.#settings;
  }

  /** Whether the worker has started and not begun stopping (it may be reconnecting). */
  get running() {
    return this.#state === 'running';
  }

  /** Whether the worker is connected and consuming right now. */
  get connected() {
    return this.#state === 'running' && this.#session !== undefined && this.#session.open;
  }

  /** How many requests are being handled right now. */
  get inFlight() {
    return this.#inFlight.size;
  }

  toString() {
    const url = this.#url ? maskUrl(this.#url) : '<url from options/env>';
    return `<Worker ${url} steps=[${this.steps.join(', ')}] prefetch=${this.#settings.prefetch} ${this.#state}>`;
  }

  /**
   * Connect, declare each step queue (durable, no arguments) and start consuming; from then on
   * reconnect by itself after any outage. Throws BrokerError when RabbitMQ cannot be reached now,
   * SettingsError for a bad $AMQP_URL, $WM_PAYLOAD_STORES or $WM_PAYLOAD_REF_THRESHOLD.
   */
  async start() {
    if (this.#state !== 'new' && this.#state !== 'stopped') {
      throw new WorkerStateError(`cannot start a worker that is ${this.#state}`);
    }
    if (this.#handlers.size === 0) {
      throw new WorkerStateError("no steps registered; add one with worker.step('queue', handler)");
    }
    const env = this.#settings.env ?? process.env;
    this.#url = resolveAmqpUrl(this.#settings.url, env);
    const prefix = resolveQueuePrefix(this.#settings.queuePrefix, env);
    this.#queues = new Map([...this.#handlers].map(([queue, handler]) => [checkQueueName(prefix + queue), handler]));
    const payloadConfig = resolvePayloadConfig(this.#settings, env);
    this.#state = 'starting';
    this.#wake = deferred();
    this.#stopped = deferred();
    try {
      this.#payloads = await PayloadRefs.open(payloadConfig, this.#settings.logger);
      this.#session = await this.#open();
    } catch (err) {
      await this.#payloads?.close();
      this.#payloads = undefined;
      this.#state = 'stopped';
      this.#stopped.resolve();
      throw err;
    }
    this.#state = 'running';
    const { logger } = this.#settings;
    logger.info(`listening on ${[...this.#queues.keys()].join(', ')} at ${maskUrl(this.#url)}`);
    if (this.#payloads.replyStore !== undefined) {
      logger.info(
        `payload stores: ${this.#payloads.describe()}; replies over ${this.#payloads.threshold} bytes store values in "${this.#payloads.replyStore.name}"`,
      );
    }
    this.#loop = this.#keepConnected();
    if (this.#stopAfterStart) void this.stop();
  }

  #open() {
    const name = this.#settings.name ?? `jsworker ${hostname()} pid=${process.pid}`;
    return Session.open({
      url: this.#url,
      name,
      prefetch: this.#settings.prefetch,
      queues: [...this.#queues.keys()],
      onDelivery: (message, queue, session) => this.#onDelivery(message, queue, session),
    });
  }

  #onDelivery(message, queue, session) {
    const { logger } = this.#settings;
    const handler = this.#queues.get(queue);
    const done = handleDelivery({ message, queue, handler, session, logger, payloads: this.#payloads })
      .catch((err) => logger.error(`unexpected error while handling a request on "${queue}": ${err?.stack ?? err}`))
      .finally(() => this.#inFlight.delete(done));
    this.#inFlight.add(done);
  }

  /** Wait for the session to be lost; log the outage once, reconnect, log its end once. */
  async #keepConnected() {
    const { logger } = this.#settings;
    while (this.#state === 'running') {
      const reason = await Promise.race([this.#session.lost, this.#wake.promise]);
      if (this.#state !== 'running') return;
      const lostAt = Date.now();
      logger.warn(`lost the connection to RabbitMQ (${reason}); reconnecting`);
      this.#session = undefined;
      const session = await this.#reconnect();
      if (session === undefined) return; // stopped during the outage
      this.#session = session;
      const seconds = ((Date.now() - lostAt) / 1000).toFixed(1);
      logger.info(`reconnected to RabbitMQ after ${seconds} s; consuming ${[...this.#queues.keys()].join(', ')} again`);
    }
  }

  async #reconnect() {
    let delayMs = RECONNECT_DELAY_MS;
    while (this.#state === 'running') {
      await Promise.race([sleep(delayMs), this.#wake.promise]);
      if (this.#state !== 'running') return undefined;
      let session;
      try {
        session = await this.#open();
      } catch {
        delayMs = Math.min(delayMs * 2, MAX_RECONNECT_DELAY_MS);
        continue; // still down: the outage was logged once when it began
      }
      if (this.#state === 'running') return session;
      await session.close(); // stop() began while connecting
    }
    return undefined;
  }

  /**
   * Stop consuming, let in-flight handlers finish and publish their replies (and ack), then
   * disconnect. Handlers still running after `stopTimeoutMs` are abandoned: their requests are
   * not acked, so RabbitMQ redelivers them. Resolves true when every request was finished.
   */
  async stop() {
    if (this.#state === 'starting' || this.#state === 'stopping') {
      this.#stopAfterStart = this.#state === 'starting';
      await this.#stopped.promise;
      return this.#drained;
    }
    if (this.#state !== 'running') return true;
    this.#state = 'stopping';
    this.#stopAfterStart = false;
    this.#wake.resolve();
    await this.#loop;
    const session = this.#session;
    await session?.cancelConsumers();
    const drained = await this.#drain();
    this.#session = undefined;
    await session?.close();
    // Abandoned handlers may still use a store; their requests are redelivered anyway.
    await this.#payloads?.close();
    this.#payloads = undefined;
    this.#drained = drained;
    this.#state = 'stopped';
    this.#stopped.resolve();
    this.#settings.logger.info('stopped');
    return drained;
  }

  async #drain() {
    if (this.#inFlight.size === 0) return true;
    const { logger, stopTimeoutMs } = this.#settings;
    const all = Promise.allSettled([...this.#inFlight]).then(() => true);
    const timeout = sleep(stopTimeoutMs, false, { ref: false });
    const drained = await Promise.race([all, timeout]);
    if (!drained) {
      logger.warn(
        `${this.#inFlight.size} request(s) still running after ${stopTimeoutMs} ms; closing, RabbitMQ will redeliver them`,
      );
    }
    return drained;
  }

  /** Resolves once the worker has stopped (after stop(), or a signal in run()). */
  whenStopped() {
    return this.#stopped.promise;
  }

  /**
   * Start, serve until SIGINT or SIGTERM, then stop gracefully and resolve. A second signal
   * exits at once (status 1). Handlers abandoned after `stopTimeoutMs` also end the process
   * (status 1), since a running handler cannot be cancelled. Rejects with BrokerError when
   * RabbitMQ cannot be reached at start.
   */
  async run({ signals = ['SIGINT', 'SIGTERM'] } = {}) {
    const { logger } = this.#settings;
    let signalled = false;
    const onSignal = (signal) => {
      if (!signalled) {
        signalled = true;
        logger.info(`${signal} received: stopping after in-flight requests (again to exit at once)`);
        void this.stop();
      } else {
        logger.warn(`${signal} received again: exiting now; RabbitMQ will redeliver unfinished requests`);
        process.exit(1);
      }
    };
    for (const signal of signals) process.on(signal, onSignal);
    try {
      await this.start();
      await this.#stopped.promise;
    } finally {
      for (const signal of signals) process.off(signal, onSignal);
    }
    if (!this.#drained) process.exit(1);
  }
}
