// One request, start to finish: the one place where "returned or threw" becomes reply + ack.
// The order is fixed: run the handler, publish the reply and wait for the broker's confirm, and
// only then ack the request. If the reply cannot be published the request is not acked, so
// RabbitMQ delivers it again (at least once).

import { setTimeout as sleep } from 'node:timers/promises';
import { StepContext } from './context.js';
import { PayloadRefError, ProtocolError } from './errors.js';
import { HEADER_ERROR, decodeRequest, errorReply, resultReply } from './protocol.js';
import { HEADER_PAYLOAD_REFS } from './refs.js';
import { ReplyRefused } from './session.js';

/** Wait this long before requeueing a request whose reply the broker refused (e.g. a full
 * reply queue), so a lasting refusal does not become a hot redelivery loop. */
export const REFUSED_REPLY_DELAY_MS = 1000;

/**
 * The reply for one request: the handler's result, or an x-error for whatever it threw. With
 * `payloads`, the request's references are resolved before the handler runs (a request with
 * `x-payload-refs`) and a large result's values are stored after it.
 * @param {import('./payloads.js').PayloadRefs} [payloads]
 */
export async function outcome(handler, body, ctx, logger, payloads) {
  try {
    const data = decodeRequest(body);
    const refs = ctx.headers[HEADER_PAYLOAD_REFS];
    if (payloads !== undefined && refs !== undefined && refs !== null) await payloads.resolve(data);
    const result = await handler(data, ctx);
    const reply = resultReply(result, ctx.echoAttempt, ctx.metaPatch);
    return payloads === undefined ? reply : await payloads.shrinkReply(reply, result, ctx);
  } catch (err) {
    const reply = errorReply(err, ctx.echoAttempt);
    // A protocol or payload error says all there is to say; a stack frame would only add noise.
    const plain = err instanceof ProtocolError || err instanceof PayloadRefError || !err?.stack;
    const where = plain ? '' : ` (${firstFrame(err.stack)})`;
    logger.warn(`${ctx.logFields} failed: ${reply.headers[HEADER_ERROR]}${where}`);
    return reply;
  }
}

function firstFrame(stack) {
  const frame = String(stack)
    .split('\n')
    .find((line) => line.trimStart().startsWith('at '));
  return frame ? frame.trim() : 'no stack';
}

/** Handle one delivered request on `queue` with `handler`: reply to `reply_to`, then ack. */
export async function handleDelivery({ message, queue, handler, session, logger, payloads }) {
  const ctx = StepContext.fromMessage(message, queue);
  const { replyTo } = message.properties;
  if (!replyTo) {
    logger.warn(`${ctx.logFields} request has no reply_to; nothing to answer, acking it`);
    session.ack(message);
    return;
  }
  const reply = await outcome(handler, message.content, ctx, logger, payloads);
  let published;
  try {
    published = await session.publish(replyTo, reply, ctx.correlationId);
  } catch (err) {
    if (err instanceof ReplyRefused) {
      logger.warn(
        `${ctx.logFields} RabbitMQ refused the reply to "${replyTo}" (${err.message}); requeueing the request in ${REFUSED_REPLY_DELAY_MS} ms`,
      );
      await sleep(REFUSED_REPLY_DELAY_MS);
      session.requeue(message);
    }
    // Otherwise the connection is gone: the Worker logs the outage once, and RabbitMQ
    // redelivers this unacked request to the next consumer.
    return;
  }
  if (published === 'returned') {
    // No retry could deliver it: the reply queue does not exist. Acking ends the loop.
    logger.error(`${ctx.logFields} reply queue "${replyTo}" does not exist; dropping the reply and acking`);
  }
  session.ack(message);
}
