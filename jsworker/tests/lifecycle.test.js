// Worker processes end to end: SIGTERM drains in-flight requests; the echo example's contract.

import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { FakeManager, unique } from './helpers.js';
import { NodeProcess } from './process.js';

const SLOW_WORKER = fileURLToPath(new URL('./fixtures/slow-worker.js', import.meta.url));
const ECHO = fileURLToPath(new URL('../examples/echo.js', import.meta.url));

let manager;
before(async () => {
  manager = await FakeManager.connect();
});
after(async () => {
  await manager.close();
});

test('SIGTERM while a request is in flight: it is finished, replied and acked, and the exit is 0', async (t) => {
  const queue = await manager.stepQueue(unique('sigterm'));
  const worker = await NodeProcess.start(SLOW_WORKER, { QUEUE: queue });
  t.after(() => worker.kill());
  await manager.request(queue, { id: 'slow', delayMs: 1500 });
  await worker.waitFor(/started slow/);

  const exitCode = await worker.terminate();

  assert.equal(exitCode, 0, worker.lines.join('\n'));
  assert.deepEqual((await manager.reply(1000)).body, { id: 'slow', delayMs: 1500 });
  assert.deepEqual(await manager.counts(queue), { ready: 0, unacked: 0 });
  assert.ok(worker.lines.some((line) => /SIGTERM received/.test(line)), worker.lines.join('\n'));
});

test('the echo example: echoes, fails on "fail": true, prints "listening on QUEUE", exits 0 on SIGTERM', async (t) => {
  const queue = await manager.stepQueue(unique('echo'));
  const echo = await NodeProcess.start(ECHO, { QUEUE: queue }, new RegExp(`listening on ${queue}`));
  t.after(() => echo.kill());

  const input = { text: 'Grüße, 世界', nested: { list: [1, 2.5, null, true] } };
  await manager.request(queue, input, { attempt: 2 });
  const reply = await manager.reply();
  assert.deepEqual(reply.body, input);
  assert.equal(reply.properties.headers['x-attempt'], 2);

  await manager.request(queue, { fail: true });
  const failed = await manager.reply();
  assert.match(failed.properties.headers['x-error'], /asked to fail/);
  assert.equal(failed.properties.headers['x-error-type'], 'AskedToFail');

  assert.equal(await echo.terminate(), 0, echo.lines.join('\n'));
  assert.deepEqual(await manager.counts(queue), { ready: 0, unacked: 0 });
});

test('the echo example exits 1 with a clear message when RabbitMQ cannot be reached', async (t) => {
  const echo = NodeProcess.spawn(ECHO, { QUEUE: unique('down'), AMQP_URL: 'amqp://guest:secret@127.0.0.1:1/' });
  t.after(() => echo.kill());
  assert.equal(await echo.exited, 1);
  const output = echo.lines.join('\n');
  assert.match(output, /cannot connect to RabbitMQ at amqp:\/\/guest:\*\*\*\*\*\*@127\.0\.0\.1:1\//);
  assert.doesNotMatch(output, /secret/);
});
