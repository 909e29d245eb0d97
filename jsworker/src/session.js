// One connection's worth of work: an amqplib connection, a confirm channel, a consumer per step
// queue, and the promise `lost` that settles once any of them is gone. The Worker opens a new
// Session after each outage; nothing here retries.

import { randomUUID } from 'node:crypto';
import amqp from 'amqplib';
import { BrokerError } from './errors.js';
import { CONTENT_TYPE } from './protocol.js';
import { maskUrl } from './settings.js';

const CONNECT_TIMEOUT_MS = 5000;

/** The broker refused (nacked) a reply: it is worth trying again later. */
export class ReplyRefused extends Error {}

/** The channel or connection is gone: RabbitMQ redelivers every unacked request of it. */
export class SessionClosed extends Error {}

function describe(err) {
  return err?.message || String(err);
}

export class Session {
  #connection;
  #channel;
  #consumers = new Map(); // queue -> consumer tag
  #returned = new Set(); // message ids of replies RabbitMQ returned as unroutable
  #closing = false;
  #resolveLost;
  /** Settles with a reason (text) once the connection, the channel or a consumer is gone. */
  lost;
  /** Whether publishing and acking can still work. */
  open = true;

  constructor(connection) {
    this.#connection = connection;
    this.lost = new Promise((resolve) => {
      this.#resolveLost = resolve;
    });
    connection.on('error', () => {}); // always followed by 'close', which carries the reason
    connection.on('close', (err) => this.#lose(err ? describe(err) : 'connection closed'));
  }

  /**
   * Connect, open a confirm channel, declare each step queue (durable, no arguments) and
   * consume it; `onDelivery(message, queue, session)` is called for each request.
   * Throws BrokerError saying which stage failed; a half-open connection is closed first.
   */
  static async open({ url, name, prefetch, queues, onDelivery }) {
    let connection;
    try {
      connection = await amqp.connect(url, {
        clientProperties: { connection_name: name },
        timeout: CONNECT_TIMEOUT_MS,
      });
    } catch (err) {
      throw new BrokerError(
        `cannot connect to RabbitMQ at ${maskUrl(url)}: ${describe(err)} (is it running? set the URL with the url option or $AMQP_URL)`,
        { cause: err },
      );
    }
    const session = new Session(connection);
    try {
      await session.#setUp(prefetch, queues, onDelivery);
    } catch (err) {
      await session.close();
      if (err instanceof BrokerError) throw err;
      throw new BrokerError(`RabbitMQ refused opening a channel: ${describe(err)}`, { cause: err });
    }
    return session;
  }

  async #setUp(prefetch, queues, onDelivery) {
    const channel = await this.#connection.createConfirmChannel();
    this.#channel = channel;
    channel.on('error', () => {}); // always followed by 'close'
    channel.on('close', () => this.#lose('the channel was closed'));
    channel.on('return', (message) => this.#returned.add(message.properties.messageId));
    await channel.prefetch(prefetch); // per consumer: `prefetch` requests per step queue
    for (const queue of queues) {
      try {
        await channel.assertQueue(queue, { durable: true });
        const { consumerTag } = await channel.consume(queue, (message) => {
          if (message === null) {
            this.#lose(`RabbitMQ cancelled the consumer of queue "${queue}" (was it deleted?)`);
          } else {
            onDelivery(message, queue, this);
          }
        });
        this.#consumers.set(queue, consumerTag);
      } catch (err) {
        throw new BrokerError(`RabbitMQ refused declaring/consuming queue "${queue}": ${describe(err)}`, {
          cause: err,
        });
      }
    }
  }

  #lose(reason) {
    if (!this.open) return;
    this.open = false;
    this.#resolveLost(reason);
    if (!this.#closing) {
      // A lost channel or consumer leaves the connection up: close it so the Worker starts afresh.
      this.close().catch(() => {});
    }
  }

  /**
   * Publish a reply on the default exchange (persistent, mandatory) and wait for the broker's
   * confirm. Resolves 'confirmed', or 'returned' when no queue `replyTo` exists; rejects with
   * ReplyRefused (nacked) or SessionClosed.
   */
  publish(replyTo, reply, correlationId) {
    return new Promise((resolve, reject) => {
      // Only to tell our returned replies apart; the manager ignores a reply's message id.
      const messageId = randomUUID();
      const options = {
        correlationId,
        contentType: CONTENT_TYPE,
        persistent: true,
        mandatory: true,
        messageId,
        headers: reply.headers,
      };
      const confirmed = (err) => {
        const returned = this.#returned.delete(messageId); // a return comes before its confirm
        if (!err) resolve(returned ? 'returned' : 'confirmed');
        else if (this.open && /nack/i.test(describe(err))) reject(new ReplyRefused(describe(err)));
        else reject(new SessionClosed(describe(err)));
      };
      try {
        if (!this.open) throw new Error('not connected');
        this.#channel.publish('', replyTo, reply.body, options, confirmed);
      } catch (err) {
        reject(new SessionClosed(describe(err)));
      }
    });
  }

  /** Ack a request; false when the channel is gone (RabbitMQ then redelivers it). */
  ack(message) {
    return this.#settle(() => this.#channel.ack(message));
  }

  /** Return a request to its queue; false when the channel is gone (it comes back anyway). */
  requeue(message) {
    return this.#settle(() => this.#channel.nack(message, false, true));
  }

  #settle(operation) {
    if (!this.open) return false;
    try {
      operation();
      return true;
    } catch {
      return false;
    }
  }

  /** Stop every consumer; deliveries already sent still arrive (and are handled) before this resolves. */
  async cancelConsumers() {
    for (const [queue, tag] of this.#consumers) {
      this.#consumers.delete(queue);
      if (!this.open) continue;
      try {
        await this.#channel.cancel(tag);
      } catch {
        // The channel went away meanwhile: nothing more can be delivered on it either.
      }
    }
  }

  /** Close the channel and the connection; unacked requests go back to their queues. */
  async close() {
    if (this.#closing) return;
    this.#closing = true;
    this.#lose('closed by the worker');
    // The channel first: amqplib writes each channel's frames in turn, so a connection.close
    // can overtake acks still queued on the channel and RabbitMQ would then requeue them.
    for (const closable of [this.#channel, this.#connection]) {
      try {
        await closable?.close();
      } catch {
        // Already closed by the broker or the network: nothing left to release.
      }
    }
  }
}
