// A Worker in this process against the real RabbitMQ: replies, errors, ctx, acks.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Worker } from '../index.js';
import { AMQP_URL, FakeManager, RecordingLogger, gate, unique } from './helpers.js';

let manager;
before(async () => {
  manager = await FakeManager.connect();
});
after(async () => {
  await manager.close();
});

/** A started worker serving `steps` ({ queue: handler }) on fresh queues; stopped by the test. */
async function startWorker(steps, options = {}) {
  const logger = new RecordingLogger();
  const worker = new Worker({ url: AMQP_URL, logger, env: {}, ...options });
  for (const [queue, handler] of Object.entries(steps)) {
    await manager.stepQueue(`${options.queuePrefix ?? ''}${queue}`);
    worker.step(queue, handler);
  }
  await worker.start();
  return { worker, logger };
}

test('replies to reply_to with the correlation id, JSON, persistent, x-attempt echoed; then acks', async () => {
  const queue = unique('reply');
  const { worker } = await startWorker({ [queue]: async (data) => ({ doubled: data.n * 2, text: 'ünï ✓' }) });
  const { correlationId } = await manager.request(queue, { n: 21 }, { attempt: 3 });

  const reply = await manager.reply();

  assert.deepEqual(reply.body, { doubled: 42, text: 'ünï ✓' });
  assert.equal(reply.properties.correlationId, correlationId);
  assert.equal(reply.properties.contentType, 'application/json');
  assert.equal(reply.properties.deliveryMode, 2);
  assert.equal(reply.properties.headers['x-attempt'], 3);
  assert.equal(reply.properties.headers['x-error'], undefined);
  assert.equal(await worker.stop(), true);
  assert.deepEqual(await manager.counts(queue), { ready: 0, unacked: 0 });
});

test('a handler returning nothing replies {}', async () => {
  const queue = unique('empty');
  const { worker } = await startWorker({ [queue]: () => undefined });
  await manager.request(queue, { a: 1 });
  assert.deepEqual((await manager.reply()).body, {});
  await worker.stop();
});

test('ctx carries job id, step, attempt, workflow, traceparent, meta, headers and more', async () => {
  const queue = unique('ctx');
  let seen;
  const { worker } = await startWorker({
    [queue]: (data, ctx) => {
      seen = ctx;
      return {};
    },
  });
  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const { jobId } = await manager.request(
    queue,
    {},
    { step: 'count', attempt: 2, headers: { traceparent, 'x-meta': '{"tenant":"acme"}', 'x-other': 'kept' } },
  );
  await manager.reply();

  assert.equal(seen.jobId, jobId);
  assert.equal(seen.step, 'count');
  assert.equal(seen.attempt, 2);
  assert.equal(seen.workflow, 'wf');
  assert.equal(seen.traceparent, traceparent);
  assert.deepEqual(seen.meta, { tenant: 'acme' });
  assert.equal(seen.headers['x-other'], 'kept');
  assert.equal(seen.correlationId, `${jobId}:count`);
  assert.equal(seen.messageId, `${jobId}:count:2`);
  assert.equal(seen.queue, queue);
  assert.equal(seen.redelivered, false);
  assert.ok(Object.isFrozen(seen) && Object.isFrozen(seen.headers));
  await worker.stop();
});

test('ctx without the optional headers: attempt 1, no workflow, traceparent or meta; no x-attempt echoed', async () => {
  const queue = unique('bare');
  let seen;
  const { worker } = await startWorker({
    [queue]: (data, ctx) => {
      seen = ctx;
    },
  });
  await manager.request(queue, {}, { headers: { 'x-workflow': undefined, 'x-attempt': undefined } });
  const reply = await manager.reply();

  assert.equal(seen.attempt, 1);
  assert.equal(seen.workflow, undefined);
  assert.equal(seen.traceparent, undefined);
  assert.equal(seen.meta, undefined);
  assert.equal(reply.properties.headers['x-attempt'], undefined);
  await worker.stop();
});

test('ctx.patchMeta goes with the reply as x-meta-patch; a failed step sends none', async () => {
  const queue = unique('patch');
  const { worker } = await startWorker({
    [queue]: (data, ctx) => {
      ctx.patchMeta({ seen: [ctx.step] });
      if (data.fail) throw new Error('no');
      return {};
    },
  });
  await manager.request(queue, {}, { step: 'tag' });
  const reply = await manager.reply();
  assert.deepEqual(JSON.parse(reply.properties.headers['x-meta-patch']), { seen: ['tag'] });
  await manager.request(queue, { fail: true }, { step: 'tag' });
  const failed = await manager.reply();
  assert.equal(failed.properties.headers['x-meta-patch'], undefined);
  assert.ok(failed.properties.headers['x-error']);
  await worker.stop();
});

test('a thrown error becomes an x-error reply with x-error-type, acked', async () => {
  const queue = unique('throws');
  class NotEnoughWords extends Error {}
  const { worker, logger } = await startWorker({
    [queue]: async () => {
      throw new NotEnoughWords('need at least 3 words');
    },
  });
  const { jobId } = await manager.request(queue, {}, { attempt: 4 });

  const reply = await manager.reply();

  const message = 'NotEnoughWords: need at least 3 words';
  assert.equal(reply.properties.headers['x-error'], message);
  assert.equal(reply.properties.headers['x-error-type'], 'NotEnoughWords');
  assert.equal(reply.properties.headers['x-attempt'], 4);
  assert.deepEqual(reply.body, { error: { type: 'NotEnoughWords', message } });
  await worker.stop();
  assert.deepEqual(await manager.counts(queue), { ready: 0, unacked: 0 });
  assert.equal(logger.matching(new RegExp(`job=${jobId} .*failed: ${message}`)).length, 1, logger.lines.join('\n'));
});

test('bad bodies and bad results are answered with x-error, long messages truncated', async () => {
  const queue = unique('bad');
  const { worker } = await startWorker({
    [queue]: (data) => {
      if (data.kind === 'array') return [1, 2];
      if (data.kind === 'bigint') return { n: 1n };
      throw new RangeError('x'.repeat(10_000));
    },
  });
  const cases = [
    [Buffer.from('{not json'), 'InvalidRequest', /not UTF-8 JSON/],
    [Buffer.from('[1, 2]'), 'InvalidRequest', /must be a JSON object, got an array/],
    [Buffer.from([0x7b, 0xff, 0x7d]), 'InvalidRequest', /not UTF-8 JSON/],
    [{ kind: 'array' }, 'InvalidResult', /must return a JSON object .*got an array/],
    [{ kind: 'bigint' }, 'InvalidResult', /not JSON-serialisable/],
    [{ kind: 'long' }, 'RangeError', /^RangeError: x+\.\.\.$/],
  ];
  for (const [body, type, pattern] of cases) {
    await manager.request(queue, body);
    const reply = await manager.reply();
    assert.equal(reply.properties.headers['x-error-type'], type, String(body));
    assert.match(reply.properties.headers['x-error'], pattern);
    assert.ok(reply.properties.headers['x-error'].length <= 4000);
  }
  await worker.stop();
  assert.deepEqual(await manager.counts(queue), { ready: 0, unacked: 0 });
});

test('the queue prefix is prepended to every step queue', async () => {
  const prefix = `${unique('prefix')}.`;
  const { worker } = await startWorker({ step: () => ({ ok: true }) }, { queuePrefix: prefix });
  await manager.request(`${prefix}step`, {});
  assert.deepEqual((await manager.reply()).body, { ok: true });
  await worker.stop();
});

test('the request is acked only after the reply is confirmed: a refused reply requeues it', async () => {
  const queue = unique('refused');
  const full = unique('full-replies');
  // A reply queue that refuses every message: RabbitMQ nacks the worker's reply.
  await manager.refusingQueue(full);
  const ctxs = [];
  const redelivered = gate();
  const { worker, logger } = await startWorker({
    [queue]: (data, ctx) => {
      ctxs.push(ctx);
      if (ctx.redelivered) redelivered.open();
      return {};
    },
  });

  await manager.request(queue, { n: 1 }, { replyTo: full });
  await redelivered.opened;

  assert.equal(ctxs[0].redelivered, false);
  await logger.waitFor(/refused the reply/);
  await worker.stop();
  // Whatever happened, the request was never acked: it is back in the queue.
  assert.deepEqual(await manager.counts(queue), { ready: 1, unacked: 0 });
});

test('a reply to a queue that does not exist is dropped with an error line, and the request acked', async () => {
  const queue = unique('noreplyq');
  const { worker, logger } = await startWorker({ [queue]: () => ({}) });
  await manager.request(queue, {}, { replyTo: unique('missing') });
  await logger.waitFor(/does not exist; dropping the reply and acking/);
  await worker.stop();
  assert.deepEqual(await manager.counts(queue), { ready: 0, unacked: 0 });
});

test('stop() waits for in-flight handlers, which reply and ack', async () => {
  const queue = unique('drain');
  const release = gate();
  const started = gate();
  const { worker } = await startWorker({
    [queue]: async () => {
      started.open();
      await release.opened;
      return { finished: true };
    },
  });
  await manager.request(queue, {});
  await started.opened;
  assert.equal(worker.inFlight, 1);

  const stopping = worker.stop();
  setImmediate(release.open);
  assert.equal(await stopping, true);

  assert.deepEqual((await manager.reply()).body, { finished: true });
  assert.deepEqual(await manager.counts(queue), { ready: 0, unacked: 0 });
});
