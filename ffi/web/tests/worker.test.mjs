// A client living in a worker (pkg/worker.js) driven through the protocol of pkg/wire.js by
// pkg/remote.js: the same results, errors and batch contract as the Client itself. Over a
// MessageChannel (both ends in this thread) and over a real worker thread.
// Run: node --test tests/ (after ./build.sh).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { MessageChannel, Worker } from 'node:worker_threads';
import { after, describe, test } from 'node:test';
import { IDBFactory } from 'fake-indexeddb';
import { BATCH_ABORTED, CALLBACK_FAILED, CLIENT_BUSY, Client, ProteusError, SESSION_NOT_FOUND, init, messageId } from '../pkg/index.js';
import { RemoteClient, connectWorker } from '../pkg/remote.js';
import { serveClient } from '../pkg/worker.js';
import { CHUNK, fromWire, toWire } from '../pkg/wire.js';

await init();

const text = (bytes) => new TextDecoder().decode(bytes);
const noLocks = { request: (_name, fn) => fn() };
const ports = [];

/** A connection to clients served on the other end of a MessageChannel, in this thread. */
function channel(indexedDB = new IDBFactory()) {
  const { port1, port2 } = new MessageChannel();
  ports.push(port1, port2);
  serveClient(port1, { indexedDB, locks: noLocks });
  return connectWorker(port2);
}

after(() => {
  for (const p of ports) p.close();
});

/** Alice (a Client here) with a session to `bob` (a RemoteClient), and `n` messages queued for him. */
async function queued(bob, n) {
  const alice = await Client.inMemory();
  const [{ bundle }] = await bob.generatePrekeys(1);
  await alice.createSession('bob', bundle);
  const plaintexts = Array.from({ length: n }, (_, i) => `message ${i}`);
  const envelopes = await alice.encryptBatch(plaintexts.map((plaintext) => ({ sessionId: 'bob', plaintext })));
  return { alice, plaintexts, queue: envelopes.map((envelope) => ({ sessionId: 'alice', envelope })) };
}

describe('the wire protocol', () => {
  test('errors keep their type, code and kind', () => {
    const make = (...a) => new ProteusError(...a);
    const e = fromWire(toWire(new ProteusError('no session', 104, 'SessionNotFound')), make);
    assert.ok(e instanceof ProteusError);
    assert.deepEqual([e.message, e.code, e.kind], ['no session', 104, 'SessionNotFound']);
    assert.ok(fromWire(toWire(new TypeError('bad')), make) instanceof TypeError);
    assert.ok(fromWire(toWire(new RangeError('far')), make) instanceof RangeError);
    const closed = fromWire(toWire(Object.assign(new Error('closed'), { name: 'ClientClosedError' })), make);
    assert.equal(closed.name, 'ClientClosedError');
    assert.equal(fromWire(toWire('a string'), make).message, 'a string');
  });
});

describe('the API surface', () => {
  test('a RemoteClient and a connection have every call of ffi/api-surface.json that Client has', async () => {
    const surface = JSON.parse(await readFile(new URL('../../api-surface.json', import.meta.url), 'utf8'));
    const connection = channel();
    const has = (object, name) => typeof object[name] === 'function';
    for (const name of surface.client.methods) {
      if (has(Client.prototype, name)) assert.ok(has(RemoteClient.prototype, name), `RemoteClient.${name}`);
    }
    for (const name of surface.client.static) {
      if (has(Client, name)) assert.ok(has(connection, name), `connectWorker(...).${name}`);
    }
    for (const name of surface.client.constructors) assert.ok(has(connection, name), `connectWorker(...).${name}`);
    for (const name of surface.functions) assert.ok(has(connection, name), `connectWorker(...).${name}`);
  });

  test('the worker refuses what is not a call of the API', async () => {
    const { port1, port2 } = new MessageChannel();
    ports.push(port1, port2);
    serveClient(port1);
    const answers = new Map();
    port2.on('message', (m) => answers.get(m.id)?.(m));
    const ask = (request) => new Promise((resolve) => {
      answers.set(request.id, resolve);
      port2.postMessage(request);
    });
    const opened = await ask({ id: 1, op: 'inMemory', options: {} });
    assert.equal(opened.ok, true);
    const { handle } = opened.value;
    for (const [id, request] of [
      [2, { op: 'call', handle, method: 'constructor', args: [] }],
      [3, { op: 'call', handle, method: '__proto__', args: [] }],
      [4, { op: 'call', handle, method: 'toString', args: [] }],
      [5, { op: 'static', name: 'open', args: ['x'] }],
      [6, { op: 'static', name: 'prototype', args: [] }],
      [7, { op: 'function', name: 'constructor', args: [] }],
      [8, { op: 'nothing' }],
      [10, { op: 'static', name: 'deleteStore', args: ['x', {}, 'more'] }],
      [11, { op: 'static', name: 'deleteStore', args: ['x', 'not options'] }],
    ]) {
      const answer = await ask({ id, ...request });
      assert.equal(answer.ok, false, JSON.stringify(request));
      assert.equal(answer.error.name, 'TypeError', JSON.stringify(request));
    }
    const closed = await ask({ id: 9, op: 'call', handle: 99, method: 'fingerprint', args: [] });
    assert.equal(closed.error.name, 'ProteusError');
    assert.equal(closed.error.code, 122);
  });
});

describe('a client in a worker, over a MessageChannel', () => {
  test('has the Client API: prekeys, sessions, encrypt, decrypt, sign, import and export', async () => {
    const worker = channel();
    const bob = await worker.inMemory();
    assert.ok(bob instanceof RemoteClient);
    assert.equal(bob.created, true);
    assert.match(await bob.fingerprint(), /^[0-9a-f]{64}$/);
    assert.equal((await bob.identityKey()).length, 32);
    assert.equal((await bob.sign('challenge')).length, 64);
    const { alice } = await queued(bob, 0);
    assert.equal(await bob.prekeysRemaining(), 1);
    const envelope = await alice.encrypt('bob', 'hello');
    assert.equal(await worker.messageId(envelope), messageId(envelope));
    assert.equal(await worker.prekeyMessageFingerprint(envelope), await alice.fingerprint());
    assert.equal(text(await bob.decrypt('alice', envelope)), 'hello');
    assert.deepEqual(await bob.sessionIds(), ['alice']);
    assert.equal(await bob.hasSession('alice'), true);
    assert.equal(await bob.remoteFingerprint('alice'), await alice.fingerprint());
    const [reply] = await bob.encryptBatch([{ sessionId: 'alice', plaintext: 'hi Alice' }]);
    assert.equal(text(await alice.decrypt('bob', reply)), 'hi Alice');
    assert.equal(text(await alice.decrypt('bob', await bob.encrypt('alice', 'again'))), 'again');
    assert.equal(await worker.bundleFingerprint((await bob.lastResortBundle()).bundle), await bob.fingerprint());
    const exported = await bob.exportSession('alice');
    await bob.deleteSession('alice');
    await bob.importSession('alice', exported);
    assert.equal(await bob.hasSession('alice'), true);
    assert.equal((await bob.exportIdentity()).length > 0, true);
    await bob.close();
    await assert.rejects(bob.fingerprint(), { name: 'ProteusError', code: 122, kind: 'ClientClosed' });
  });

  test('importCryptobox: the records of another store, imported in the worker; onProgress hears the end', async () => {
    const worker = channel();
    const old = await Client.inMemory();
    const [{ bundle }] = await old.generatePrekeys(1);
    const peer = await Client.inMemory();
    await peer.createSession('old', bundle);
    assert.equal(text(await old.decrypt('peer', await peer.encrypt('old', 'before'))), 'before');
    const records = {
      identity: await old.exportIdentity(),
      sessions: [{ id: 'peer', bytes: await old.exportSession('peer') }],
    };
    const bob = await worker.inMemory();
    const progress = [];
    const report = await bob.importCryptobox({ records }, { onProgress: (p) => progress.push(p) });
    assert.deepEqual(report, { fingerprint: await old.fingerprint(), prekeys: 0, sessions: 1, skipped: [], alreadyImported: false });
    assert.deepEqual(progress, [{ done: 2, total: 2 }]);
    assert.equal(text(await bob.decrypt('peer', await peer.encrypt('old', 'after'))), 'after');
    await bob.close();
  });

  test('errors are the package\'s: ProteusError with code and kind; bad arguments throw at once', async () => {
    const bob = await channel().inMemory();
    await assert.rejects(bob.encrypt('nobody', 'hello'), (e) => {
      assert.ok(e instanceof ProteusError, `${e}`);
      assert.equal(e.code, SESSION_NOT_FOUND);
      assert.equal(e.kind, 'SessionNotFound');
      return true;
    });
    assert.throws(() => bob.encrypt(42, 'x'), TypeError);
    assert.throws(() => bob.generatePrekeys(-1), RangeError);
    assert.throws(() => bob.decryptBatch('not an array'), TypeError);
    assert.throws(() => bob.decryptBatch([], 'not a function'), TypeError);
  });

  test(`decryptBatch: results in chunks of ${CHUNK} with progress, one commit`, async () => {
    const bob = await channel().inMemory();
    const n = 2 * CHUNK + 100;
    const { alice, plaintexts, queue } = await queued(bob, n);
    const seen = [];
    const results = await bob.decryptBatch(queue, (r, done, total) => {
      seen.push([done, total]);
      assert.equal(text(r.plaintext), plaintexts[done - 1]);
    });
    assert.deepEqual(seen, Array.from({ length: n }, (_, i) => [i + 1, n]));
    assert.deepEqual(results.map((r) => text(r.plaintext)), plaintexts);
    assert.equal(results[0].sender, await alice.fingerprint(), 'a PreKeyMessage names its sender');
    assert.match(results[0].messageId, /^[0-9a-f]{64}$/);
    assert.equal(results[0].sessionId, 'alice');
    // Committed: the same queue again is all already seen.
    const again = await bob.decryptBatch(queue);
    assert.ok(again.every((r) => r.alreadySeen && r.plaintext === undefined && r.errorCode === 209));
  });

  test('decryptBatch without a callback, and an empty batch', async () => {
    const bob = await channel().inMemory();
    const { plaintexts, queue } = await queued(bob, 300);
    assert.deepEqual((await bob.decryptBatch(queue)).map((r) => text(r.plaintext)), plaintexts);
    assert.deepEqual(await bob.decryptBatch([]), []);
  });

  test('the summary of a batch in the worker, and the worker\'s log lines on the page', async () => {
    const connection = channel();
    const lines = [];
    await connection.setLogger((level, message) => lines.push([level, message]), 'info');
    const bob = await connection.inMemory();
    const { queue } = await queued(bob, 5);
    const results = await bob.decryptBatch([...queue, queue[0]], () => true);
    const s = results.summary;
    assert.deepEqual([s.total, s.decrypted, s.alreadySeen, s.keyEvicted, s.failed], [6, 5, 1, 0, 0]);
    assert.ok(s.deliveryMs >= 0 && s.commitMs >= 0 && s.decryptMs >= 0);
    assert.ok(lines.some(([l, m]) => l === 'info' && m.startsWith('batch: 6 messages: 5 decrypted, 1 already seen')), JSON.stringify(lines));
    assert.ok(lines.every(([, m]) => !m.includes('message ')), JSON.stringify(lines));
    await connection.setLogger(null);
    lines.length = 0;
    await bob.decryptBatch(queue);
    assert.deepEqual(lines, []);
    assert.throws(() => connection.setLogger(42), TypeError);
  });

  test('the batch commits only after the page\'s callback promises resolved', async () => {
    const bob = await channel().inMemory();
    const { alice, queue } = await queued(bob, 2 * CHUNK);
    let release;
    const gate = new Promise((resolve) => {
      release = resolve;
    });
    let settled = false;
    const batch = bob.decryptBatch(queue, (_, done, total) => (done === total ? gate : undefined)).then((r) => {
      settled = true;
      return r;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(settled, false, 'waits for the page');
    // Meanwhile the client is busy, as for a direct batch.
    await assert.rejects(bob.sessionIds(), (e) => e instanceof ProteusError && e.code === CLIENT_BUSY);
    release();
    assert.equal((await batch).length, 2 * CHUNK);
    assert.ok((await bob.decryptBatch(queue.slice(0, 1)))[0].alreadySeen);
    assert.ok(await alice.fingerprint());
  });

  for (const [what, code, callback] of [
    ['a callback that throws', CALLBACK_FAILED, (_, done) => {
      if (done === CHUNK + 3) throw new Error('disk full');
    }],
    ['a callback that returns false', BATCH_ABORTED, (_, done) => done !== 5],
    ['a callback promise that rejects', CALLBACK_FAILED, async (_, done) => {
      if (done === 2 * CHUNK) throw new Error('disk full');
    }],
    ['a callback promise that resolves to false', BATCH_ABORTED, async (_, done) => done !== 1],
  ]) {
    test(`${what}: ${code}, nothing committed, the same queue decrypts later`, async () => {
      const bob = await channel().inMemory();
      const { plaintexts, queue } = await queued(bob, 2 * CHUNK + 10);
      await assert.rejects(bob.decryptBatch(queue, callback), (e) => {
        assert.ok(e instanceof ProteusError, `${e}`);
        assert.equal(e.code, code);
        if (code === CALLBACK_FAILED) assert.equal(e.cause?.message, 'disk full', 'the page\'s error is the cause');
        return true;
      });
      const results = await bob.decryptBatch(queue);
      assert.deepEqual(results.map((r) => text(r.plaintext)), plaintexts, 'nothing of the failed batch was committed');
    });
  }

  test('a call from the callback fails with ClientBusy (120), the batch with CallbackFailed', async () => {
    const bob = await channel().inMemory();
    const { queue } = await queued(bob, 3);
    await assert.rejects(
      bob.decryptBatch(queue, async () => {
        await bob.encrypt('alice', 'read receipt');
      }),
      (e) => e.code === CALLBACK_FAILED && e.cause instanceof ProteusError && e.cause.code === CLIENT_BUSY,
    );
    assert.equal((await bob.decryptBatch(queue)).length, 3, 'usable after');
  });

  test('IndexedDB: a store opened in the worker keeps its batch commit', async () => {
    const indexedDB = new IDBFactory();
    const worker = channel(indexedDB);
    const bob = await worker.open('bob', { persist: false });
    assert.equal(bob.created, true);
    assert.equal(await bob.persisted, undefined);
    const fingerprint = await bob.fingerprint();
    const { queue } = await queued(bob, 500);
    await bob.decryptBatch(queue, () => {});
    await bob.close();
    const again = await worker.open('bob', { create: false, persist: false });
    assert.equal(again.created, false);
    assert.equal(await again.fingerprint(), fingerprint);
    assert.ok((await again.decryptBatch(queue.slice(0, 10))).every((r) => r.alreadySeen));
    await again.close();
    await assert.rejects(worker.open('nobody', { create: false, persist: false }), (e) => e instanceof ProteusError && e.code === 504);
    await worker.deleteStore('bob');
    assert.deepEqual((await indexedDB.databases()).map((d) => d.name), []);
  });
});

describe('a client in a worker thread', () => {
  test('a worker that fails fails every call with WorkerError, now and later', async () => {
    const thread = new Worker('throw new Error("no such module")', { eval: true });
    const worker = connectWorker(thread);
    await assert.rejects(worker.inMemory(), { name: 'WorkerError', message: /no such module/ });
    await assert.rejects(worker.messageId(new Uint8Array(1)), { name: 'WorkerError' });
    await thread.terminate();
  });

  test('a worker the page terminates fails its calls in progress and later ones with WorkerError', async () => {
    const thread = new Worker(new URL('./support/node-worker.mjs', import.meta.url));
    const worker = connectWorker(thread);
    const bob = await worker.inMemory();
    const { queue } = await queued(bob, 3 * CHUNK);
    let terminated;
    const batch = bob.decryptBatch(queue, () => {
      terminated ??= thread.terminate();
    });
    await assert.rejects(batch, { name: 'WorkerError', message: /terminated/ });
    await terminated;
    await assert.rejects(bob.fingerprint(), { name: 'WorkerError' });
  });

  test('decrypts a batch on its own thread while this one keeps running', async () => {
    const thread = new Worker(new URL('./support/node-worker.mjs', import.meta.url));
    try {
      const worker = connectWorker(thread);
      const bob = await worker.open('bob');
      const { plaintexts, queue } = await queued(bob, 5000);
      let chunks = 0;
      let last = 0;
      const results = await bob.decryptBatch(queue, (_, done) => {
        if (done - last >= CHUNK || done === plaintexts.length) {
          chunks += 1;
          last = done;
        }
      });
      assert.deepEqual(results.map((r) => text(r.plaintext)), plaintexts);
      assert.equal(chunks, Math.ceil(5000 / CHUNK));
      await assert.rejects(bob.encrypt('nobody', 'hello'), (e) => e instanceof ProteusError && e.code === SESSION_NOT_FOUND);
      await bob.close();
    } finally {
      await thread.terminate();
    }
  });
});
