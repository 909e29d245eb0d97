// Payloads by reference, pure parts (no broker): what a reference is, the store configuration
// and its errors, and which reply values are stored.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SettingsError, Worker } from '../index.js';
import { MIN_STORED_BYTES, chooseValuesToStore } from '../src/offload.js';
import { asReference, countReferences, findReferences, referenceProblem, validKey } from '../src/refs.js';
import { parseStores, resolvePayloadConfig } from '../src/storeconfig.js';

const SHA = 'a'.repeat(64);
const ref = (uri, sha256 = SHA, size = 3) => ({ $ref: uri, sha256, size });

test('a reference is an object with exactly $ref (wm://...), sha256 and size', () => {
  assert.deepEqual(asReference(ref('wm://main/job-1/abc')), {
    uri: 'wm://main/job-1/abc',
    store: 'main',
    key: 'job-1/abc',
    sha256: SHA,
    size: 3,
  });
  assert.equal(asReference({ ...ref('wm://main/k'), extra: 1 }), undefined, 'a fourth member');
  assert.equal(asReference({ $ref: 'wm://main/k', sha256: SHA }), undefined, 'no size');
  assert.equal(asReference(ref('http://main/k')), undefined, 'another scheme');
  assert.equal(asReference(ref(7)), undefined, '$ref not a string');
  assert.equal(asReference([ref('wm://main/k')]), undefined, 'a list');
  assert.equal(asReference('wm://main/k'), undefined, 'a string');
});

test('referenceProblem names what makes a reference malformed', () => {
  assert.equal(referenceProblem(asReference(ref('wm://main/job/abc'))), undefined);
  assert.match(referenceProblem(asReference(ref('wm://Main/job/abc'))), /store name "Main"/);
  assert.match(referenceProblem(asReference(ref('wm://main/job/../etc'))), /key "job\/..\/etc"/);
  assert.match(referenceProblem(asReference(ref('wm://main'))), /key ""/);
  assert.match(referenceProblem(asReference(ref('wm://main/k', 'ABC'))), /sha256 "ABC"/);
  assert.match(referenceProblem(asReference(ref('wm://main/k', SHA, -1))), /size -1/);
  assert.match(referenceProblem(asReference(ref('wm://main/k', SHA, '3'))), /size "3"/);
});

test('keys: /-joined segments of [A-Za-z0-9._-], none . or .., at most 512 characters', () => {
  assert.ok(validKey('3f2a-uuid/9f86d0'));
  assert.ok(validKey('a.b_c-d'));
  for (const bad of ['', 'a//b', '/a', 'a/', '.', 'a/..', 'a b', 'a\\b', 'x'.repeat(513)]) {
    assert.equal(validKey(bad), false, JSON.stringify(bad));
  }
});

test('findReferences finds references at any depth, and where each is held', () => {
  const deep = ref('wm://main/job/deep');
  const body = { top: ref('wm://main/job/top'), list: [1, { deep }, [ref('wm://b/job/x')]], plain: { a: 1 } };
  const found = findReferences(body);
  assert.deepEqual(found.map(({ ref: r }) => r.uri).sort(), ['wm://b/job/x', 'wm://main/job/deep', 'wm://main/job/top']);
  for (const { ref: r, parent, slot } of found) assert.equal(parent[slot].$ref, r.uri);
  assert.equal(countReferences(body), 3);
  assert.equal(countReferences({ a: [1, 2, { b: 'wm://main/x' }] }), 0);
});

test('WM_PAYLOAD_STORES: NAME=URL entries, in order, the first for replies', () => {
  const stores = parseStores(' main=file:///srv/wm-payloads  pg=postgresql://u:secret@db:5432/wm ', 'X');
  assert.deepEqual(
    stores.map(({ name, kind }) => [name, kind]),
    [
      ['main', 'file'],
      ['pg', 'postgresql'],
    ],
  );
  assert.equal(stores[0].path, '/srv/wm-payloads');
  assert.equal(parseStores('old=postgres://db/wm', 'X')[0].kind, 'postgresql');
  assert.deepEqual(parseStores('', 'X'), []);
});

test('a bad WM_PAYLOAD_STORES entry is an error naming the variable and the entry', () => {
  const source = 'environment variable WM_PAYLOAD_STORES';
  const cases = [
    ['main', /WM_PAYLOAD_STORES: entry "main" is not NAME=URL/],
    ['=file:///x', /entry "=file:\/\/\/x" is not NAME=URL/],
    ['Main=file:///x', /entry "Main=file:\/\/\/x": store name "Main" must match/],
    ['main=s3://bucket/x', /store "main" has URL "s3:\/\/bucket\/x": expected file:\/\/\/<directory>, postgresql/],
    ['main=file://host/x', /store "main": "file:\/\/host\/x" is not file:\/\/\/<absolute directory>/],
    ['main=file:relative', /store "main": "file:relative" is not file:\/\/\//],
    ['a=file:///x a=file:///y', /store "a" is named twice/],
  ];
  for (const [text, message] of cases) {
    assert.throws(() => parseStores(text, source), (err) => err instanceof SettingsError && message.test(err.message), text);
  }
  // A password in a bad entry is not repeated in the message.
  assert.throws(
    () => parseStores('pg=mysql://u:hunter2@db/wm', source),
    (err) => !err.message.includes('hunter2') && /\*\*\*\*\*\*/.test(err.message),
  );
});

test('WM_PAYLOAD_REF_THRESHOLD: bytes, 262144 by default; anything else stops the worker', () => {
  assert.equal(resolvePayloadConfig({}, {}).threshold, 262_144);
  assert.equal(resolvePayloadConfig({}, { WM_PAYLOAD_REF_THRESHOLD: ' 1000 ' }).threshold, 1000);
  assert.equal(resolvePayloadConfig({ payloadRefThreshold: 5 }, { WM_PAYLOAD_REF_THRESHOLD: '1000' }).threshold, 5);
  for (const bad of ['256k', '-1', '1.5', 'lots']) {
    assert.throws(
      () => resolvePayloadConfig({}, { WM_PAYLOAD_REF_THRESHOLD: bad }),
      new RegExp(`environment variable WM_PAYLOAD_REF_THRESHOLD: "${bad}" is not a whole number of bytes`),
    );
  }
});

test('worker options are checked in the constructor, naming the option', () => {
  assert.throws(() => new Worker({ payloadStores: 'main' }), /payloadStores: entry "main" is not NAME=URL/);
  assert.throws(() => new Worker({ payloadStores: ['main=file:///x'] }), /payloadStores: expected "NAME=URL NAME=URL" or an object/);
  assert.throws(() => new Worker({ payloadStores: { main: 3 } }), /payloadStores: store "main": the URL must be a string/);
  assert.throws(() => new Worker({ payloadRefThreshold: -5 }), /payloadRefThreshold: -5 is not a whole number of bytes/);
  const worker = new Worker({ payloadStores: { main: 'file:///srv/p', pg: 'postgresql://db/wm' }, payloadRefThreshold: 10 });
  assert.deepEqual(
    worker.settings.payloadStores.map((store) => store.name),
    ['main', 'pg'],
  );
  // The options win over the environment.
  const config = resolvePayloadConfig(worker.settings, { WM_PAYLOAD_STORES: 'other=file:///o' });
  assert.deepEqual(
    config.stores.map((store) => store.name),
    ['main', 'pg'],
  );
});

test('a bad $WM_PAYLOAD_STORES makes start() reject before connecting to RabbitMQ', async () => {
  const worker = new Worker({
    url: 'amqp://guest:guest@127.0.0.1:1/', // nothing listens there: reaching it would be a BrokerError
    env: { WM_PAYLOAD_STORES: 'main=file:///srv/p broken' },
    logger: { info() {}, warn() {}, error() {} },
  });
  worker.step('q', () => ({}));
  await assert.rejects(worker.start(), (err) => {
    assert.ok(err instanceof SettingsError, String(err));
    assert.match(err.message, /environment variable WM_PAYLOAD_STORES: entry "broken" is not NAME=URL/);
    return true;
  });
  assert.equal(worker.running, false);
});

test('the largest values are stored first, until the reply fits; 1 KiB or less never', () => {
  const refBytes = () => 200;
  // 300 KiB over a 256 KiB threshold: storing the 200 KB value is enough.
  const sizes = [
    ['small', 50],
    ['big', 200_000],
    ['mid', 100_000],
  ];
  assert.deepEqual(chooseValuesToStore(sizes, 300_080, 262_144, refBytes), ['big']);
  // Under a low threshold both large ones go, largest first.
  assert.deepEqual(chooseValuesToStore(sizes, 300_080, 1000, refBytes), ['big', 'mid']);
  // Already small enough: nothing.
  assert.deepEqual(chooseValuesToStore(sizes, 300_080, 300_080, refBytes), []);
  // Many values of exactly 1 KiB never go, even when the reply stays over the threshold.
  const many = Array.from({ length: 400 }, (_, i) => [`k${i}`, MIN_STORED_BYTES]);
  assert.deepEqual(chooseValuesToStore(many, 400 * 1030, 262_144, refBytes), []);
  assert.deepEqual(chooseValuesToStore([['v', MIN_STORED_BYTES + 1]], 2000, 100, refBytes), ['v']);
});
