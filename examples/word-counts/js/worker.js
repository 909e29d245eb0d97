// Node.js worker for the `segment-word-counts` step of the word-counts example.
// Written from docs/protocol.md alone: consume the step queue, reply to `reply_to` with the
// same correlation_id (echoing x-attempt), and ack the request only once the broker has
// confirmed the reply, so a crash in between re-delivers the request instead of losing it.

const amqp = require('amqplib');
const { segmentWordCounts } = require('./wordcount');

const QUEUE = process.env.QUEUE || 'segment-word-counts';
const AMQP_URL =
  process.env.AMQP_URL || process.env.AMQP_SERVER || 'amqp://guest:guest@localhost:5672/';
const PREFETCH = 10;
const SHUTDOWN_TIMEOUT_MS = 10_000;
const MAX_ERROR_CHARS = 2000; // headers must fit in one frame; keep x-error readable too

const log = (line) => console.log(`[segment-word-counts] ${line}`);
const warn = (line) => console.error(`[segment-word-counts] ${line}`);

/** The reply for one request: the output, or the x-error headers of a failure. */
function handle(body, attempt) {
  const headers = attempt === undefined ? {} : { 'x-attempt': attempt };
  try {
    return { headers, output: segmentWordCounts(body) };
  } catch (err) {
    const type = err?.name || 'Error';
    let message = String(err?.message || err);
    if (message.length > MAX_ERROR_CHARS) message = `${message.slice(0, MAX_ERROR_CHARS - 3)}...`;
    return {
      headers: { ...headers, 'x-error': message, 'x-error-type': type },
      output: { error: { type, message } },
    };
  }
}

/** Publish on the confirm channel and resolve once the broker has confirmed the message. */
function publishConfirmed(channel, routingKey, body, options) {
  return new Promise((resolve, reject) => {
    channel.publish('', routingKey, body, options, (err) => (err ? reject(err) : resolve()));
  });
}

async function onRequest(channel, msg) {
  const { correlationId, replyTo, headers = {} } = msg.properties;
  const attempt = headers['x-attempt'];
  if (!replyTo) {
    // Nobody to answer: the manager always sets reply_to, so this is a stray message.
    warn(`dropping a request without reply_to (correlation_id=${correlationId})`);
    channel.ack(msg);
    return;
  }
  const reply = handle(msg.content, attempt);
  if (reply.headers['x-error']) {
    warn(`step failed: correlation_id=${correlationId} attempt=${attempt} ${reply.headers['x-error']}`);
  }
  try {
    await publishConfirmed(channel, replyTo, Buffer.from(JSON.stringify(reply.output)), {
      correlationId,
      contentType: 'application/json',
      persistent: true,
      headers: reply.headers,
    });
  } catch (err) {
    // The broker refused the reply: put the request back so it is answered later.
    warn(`reply not confirmed (correlation_id=${correlationId}): ${err?.message || err}`);
    channel.nack(msg, false, true);
    return;
  }
  channel.ack(msg);
}

async function main() {
  // Until the consumer is running there is nothing to finish: a signal just ends the process.
  let onSignal = () => process.exit(0);
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));

  const connection = await amqp.connect(AMQP_URL);
  const channel = await connection.createConfirmChannel();
  await channel.assertQueue(QUEUE, { durable: true });
  await channel.prefetch(PREFETCH);

  const inFlight = new Set();
  let stopping = false;

  connection.on('error', (err) => warn(`connection error: ${err.message}`));
  connection.on('close', () => {
    if (!stopping) {
      warn('connection to RabbitMQ lost; exiting so a supervisor can restart the worker');
      process.exit(1);
    }
  });

  let consumerTag;
  const stop = async (reason) => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => {
      warn(`did not stop within ${SHUTDOWN_TIMEOUT_MS} ms; exiting`);
      process.exit(1);
    }, SHUTDOWN_TIMEOUT_MS).unref();
    log(`${reason}: stopping`);
    try {
      if (consumerTag) await channel.cancel(consumerTag);
      await Promise.allSettled(inFlight);
      await channel.close();
      await connection.close();
    } catch (err) {
      warn(`error while stopping: ${err?.message || err}`);
      process.exitCode = 1;
    }
    log('stopped');
  };
  ({ consumerTag } = await channel.consume(QUEUE, (msg) => {
    if (msg === null) {
      // The broker cancelled the consumer (e.g. the queue was deleted).
      consumerTag = undefined;
      process.exitCode = 1;
      stop(`the broker cancelled the consumer on ${QUEUE}`);
      return;
    }
    const done = onRequest(channel, msg)
      .catch((err) => warn(`unexpected error: ${err?.stack || err}`))
      .finally(() => inFlight.delete(done));
    inFlight.add(done);
  }));
  onSignal = stop;
  log(`listening on ${QUEUE}`);
}

main().catch((err) => {
  warn(`cannot start: ${err?.message || err}`);
  process.exit(1);
});
