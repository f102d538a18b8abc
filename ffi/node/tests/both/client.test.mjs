// The API on whichever backend index.js chose: run with PROTEUS_BACKEND=native and =wasm
// (scripts/suites/node.sh runs both), so the two cannot drift.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import * as proteus from '../../index.js';
import { loadedWasmUrl } from '../../wasm/init.js';
import { pair, text } from '../support/pair.mjs';

const { Client, ProteusError, backend } = proteus;

test(`the backend is the one asked for (${backend})`, () => {
  assert.equal(backend, process.env.PROTEUS_BACKEND ?? 'native');
});

test('the wasm fallback runs the web package\'s module, its only one (none is loaded with the addon)', () => {
  const loaded = loadedWasmUrl();
  if (backend === 'native') assert.equal(loaded, undefined);
  else assert.ok(loaded?.endsWith('/wasm/proteus_web_bg.wasm'), `loaded: ${loaded}`);
  // build.sh installs the web package's module, and no other.
  const wasmDir = new URL('../../wasm/', import.meta.url);
  assert.deepEqual(readdirSync(wasmDir).filter((f) => f.endsWith('.wasm')), ['proteus_web_bg.wasm']);
  const module = new URL('../../../web/pkg/proteus_web_bg.wasm', import.meta.url);
  assert.ok(readFileSync(new URL('proteus_web_bg.wasm', wasmDir)).equals(readFileSync(module)), 'not the web package\'s module');
});

test('the client has every method and function of ffi/api-surface.json', () => {
  const surface = JSON.parse(readFileSync(new URL('../../../api-surface.json', import.meta.url), 'utf8'));
  for (const name of surface.client.constructors) assert.equal(typeof Client[name], 'function', name);
  for (const name of surface.client.static) assert.equal(typeof Client[name], 'function', name);
  for (const name of surface.client.methods) assert.equal(typeof Client.prototype[name], 'function', name);
  for (const name of surface.functions) assert.equal(typeof proteus[name], 'function', name);
  // And nothing more: a method added here and not to the other bindings fails.
  const methods = Object.getOwnPropertyNames(Client.prototype).filter((n) => n !== 'constructor');
  assert.deepEqual(methods.sort(), [...surface.client.methods].sort());
  const statics = Object.getOwnPropertyNames(Client).filter((n) => typeof Client[n] === 'function');
  assert.deepEqual(statics.sort(), [...surface.client.constructors, ...surface.client.static].sort());
});

test('identity: fingerprint, identity key and a signature node:crypto verifies', async () => {
  const c = await Client.inMemory();
  assert.equal(c.created, true);
  const fingerprint = await c.fingerprint();
  assert.match(fingerprint, /^[0-9a-f]{64}$/);
  const key = await c.identityKey();
  assert.ok(key instanceof Uint8Array);
  assert.equal(Buffer.from(key).toString('hex'), fingerprint);
  const signature = await c.sign('login challenge');
  assert.equal(signature.length, 64);
  const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(key).toString('base64url') }, format: 'jwk' });
  assert.ok(verify(null, Buffer.from('login challenge'), publicKey, signature));
  assert.ok(!verify(null, Buffer.from('something else'), publicKey, signature));
  await c.close();
});

test('prekeys: bundles, the last-resort bundle, how many are left', async () => {
  const c = await Client.inMemory();
  const bundles = await c.generatePrekeys(3);
  assert.equal(bundles.length, 3);
  assert.equal(await c.prekeysRemaining(), 3);
  for (const b of bundles) {
    assert.deepEqual(await c.prekeyBundle(b.id), b);
    assert.equal(proteus.bundleFingerprint(b.bundle), await c.fingerprint());
  }
  assert.equal(proteus.bundleFingerprint((await c.lastResortBundle()).bundle), await c.fingerprint());
  await assert.rejects(c.prekeyBundle(60000), (e) => e instanceof ProteusError && e.kind === 'PreKeyNotFound');
  await c.close();
});

test('topUpPrekeys fills the stock to the target; resetSession starts over and says whether the identity changed', async () => {
  const c = await Client.inMemory();
  const first = await c.topUpPrekeys(3);
  assert.deepEqual(first.map((b) => b.id), [0, 1, 2]);
  assert.deepEqual(await c.topUpPrekeys(3), [], 'the stock is full');
  assert.equal(await c.prekeysRemaining(), 3);
  assert.throws(() => c.topUpPrekeys(-1), RangeError);

  const { alice, bob } = await pair(Client);
  const old = await bob.encrypt('alice', 'on the old session');
  const [fresh] = await bob.generatePrekeys(1);
  assert.equal(await alice.resetSession('bob', fresh.bundle), false, 'the same identity');
  assert.equal(text(await bob.decrypt('alice', await alice.encrypt('bob', 'new'))), 'new');
  await assert.rejects(alice.decrypt('bob', old), (e) => e instanceof ProteusError && e.code === 205 && e.kind === 'UnknownSessionTag');
  const [other] = await c.generatePrekeys(1);
  assert.equal(await alice.resetSession('bob', other.bundle), true, 'another identity');
  assert.equal(await alice.remoteFingerprint('bob'), await c.fingerprint());
  await assert.rejects(alice.resetSession('nobody', other.bundle), (e) => e instanceof ProteusError && e.code === 104);
});

test('sessions: encrypt and decrypt both ways, fingerprints, ids, delete', async () => {
  const { alice, bob } = await pair(Client);
  assert.equal(await alice.remoteFingerprint('bob'), await bob.fingerprint());
  assert.equal(await bob.remoteFingerprint('alice'), await alice.fingerprint());
  assert.deepEqual(await bob.sessionIds(), ['alice']);
  const reply = await bob.encrypt('alice', new Uint8Array([1, 2, 3]));
  assert.deepEqual(await alice.decrypt('bob', reply), new Uint8Array([1, 2, 3]));
  assert.equal(proteus.prekeyMessageFingerprint(reply), undefined);
  assert.equal(await alice.hasSession('bob'), true);
  await alice.deleteSession('bob');
  assert.equal(await alice.hasSession('bob'), false);
});

test('errors are ProteusErrors with the registry code and kind', async () => {
  const { alice, bob } = await pair(Client);
  const envelope = await alice.encrypt('bob', 'once');
  assert.equal(text(await bob.decrypt('alice', envelope)), 'once');
  await assert.rejects(bob.decrypt('alice', envelope), (e) => {
    assert.ok(e instanceof ProteusError);
    assert.equal(e.name, 'ProteusError');
    assert.equal(e.code, proteus.DUPLICATE_MESSAGE);
    assert.equal(e.kind, 'DuplicateMessage');
    return true;
  });
  await assert.rejects(alice.encrypt('nobody', 'x'), (e) => e.code === proteus.SESSION_NOT_FOUND && e.kind === 'SessionNotFound');
  await assert.rejects(bob.decrypt('alice', new Uint8Array([1, 2, 3])), (e) => e instanceof ProteusError && Math.floor(e.code / 100) === 3);
  assert.throws(() => alice.encrypt(42, 'x'), TypeError);
});

test(`Client.open(path): the native addon's durable store, or on the wasm fallback StoreUnavailable (513) saying how to get it (${backend})`, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'proteus-open-'));
  const path = join(dir, 'store.db');
  try {
    if (backend === 'native') {
      const c = await Client.open(path);
      assert.equal(c.created, true);
      await c.close();
      const again = await Client.open(path, { create: false });
      assert.equal(again.created, false);
      await again.close();
      return;
    }
    const unavailable = (e) => {
      assert.ok(e instanceof ProteusError, `a ProteusError, not ${e?.name}: ${e?.message}`);
      assert.equal(e.code, proteus.STORE_UNAVAILABLE);
      assert.equal(e.code, 513);
      assert.equal(e.kind, 'StoreUnavailable');
      assert.ok(proteus.isSystemError(e));
      // Not the Web Locks refusal a browser without them gets: what is missing is the store.
      assert.doesNotMatch(e.message, /Web Locks/);
      assert.match(e.message, /native addon of @proteus-engine\/node/);
      assert.match(e.message, /no prebuilt addon loaded for this platform/);
      assert.match(e.message, /install the addon's package for this platform or build the addon from source/);
      return true;
    };
    await assert.rejects(Client.open(path), unavailable);
    await assert.rejects(Client.open(path, { create: false, storeKey: new Uint8Array(32) }), unavailable);
    await assert.rejects(Client.deleteStore(path), unavailable);
    // Nothing was created where the file store would be.
    assert.throws(() => readFileSync(path), { code: 'ENOENT' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test(`eraseDeleted: what a decrypt deleted is gone from the disk (${backend})`, async () => {
  const memory = await Client.inMemory();
  assert.equal(await memory.eraseDeleted(), true);
  await memory.close();
  if (backend !== 'native') return;
  const dir = mkdtempSync(join(tmpdir(), 'proteus-erase-'));
  try {
    const bob = await Client.open(join(dir, 'store.db'));
    const alice = await Client.inMemory();
    const [{ bundle }] = await bob.generatePrekeys(1);
    await alice.createSession('bob', bundle);
    assert.equal(text(await bob.decrypt('alice', await alice.encrypt('bob', 'hi'))), 'hi');
    assert.equal(await bob.prekeysRemaining(), 0);
    assert.equal(await bob.eraseDeleted(), true);
    await bob.close();
    await alice.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('encryptBatch and decryptBatch: progress per message, ids, one commit after the callback', async () => {
  const { alice, bob } = await pair(Client);
  const n = 600; // three chunks of the native delivery (256 each)
  const envelopes = await alice.encryptBatch(Array.from({ length: n }, (_, i) => ({ sessionId: 'bob', plaintext: `m${i}` })));
  assert.equal(envelopes.length, n);
  const queue = envelopes.map((envelope) => ({ sessionId: 'alice', envelope }));
  const seen = [];
  const results = await bob.decryptBatch(queue, (result, done, total) => {
    assert.equal(total, n);
    seen.push(done);
    assert.equal(text(result.plaintext), `m${done - 1}`);
  });
  assert.deepEqual(seen, Array.from({ length: n }, (_, i) => i + 1));
  results.forEach((r, i) => {
    assert.equal(r.messageId, proteus.messageId(envelopes[i]));
    assert.equal(r.sessionId, 'alice');
    assert.equal(r.alreadySeen, false);
  });
  // Committed: the same queue again is all duplicates.
  const again = await bob.decryptBatch(queue);
  assert.ok(again.every((r) => r.alreadySeen && r.errorCode === 209 && r.errorKind === 'DuplicateMessage' && r.plaintext === undefined));
});

test('decryptBatch: false aborts (108), a throw or a rejection fails (121): nothing committed', async () => {
  const { alice, bob } = await pair(Client);
  const envelopes = await alice.encryptBatch([1, 2, 3].map((i) => ({ sessionId: 'bob', plaintext: `m${i}` })));
  const queue = envelopes.map((envelope) => ({ sessionId: 'alice', envelope }));
  await assert.rejects(bob.decryptBatch(queue, (_, done) => done < 2), (e) => e.code === proteus.BATCH_ABORTED);
  const boom = new Error('boom');
  await assert.rejects(bob.decryptBatch(queue, () => { throw boom; }), (e) => e.code === proteus.CALLBACK_FAILED && e.cause === boom);
  await assert.rejects(bob.decryptBatch(queue, async () => { throw boom; }), (e) => e.code === proteus.CALLBACK_FAILED && e.cause === boom);
  await assert.rejects(bob.decryptBatch(queue, async () => false), (e) => e.code === proteus.BATCH_ABORTED);
  // Nothing was committed: every message decrypts now.
  const results = await bob.decryptBatch(queue);
  assert.deepEqual(results.map((r) => text(r.plaintext)), ['m1', 'm2', 'm3']);
  // Every message's session id is checked, the first one's too.
  for (const bad of [[{ envelope: queue[0].envelope }], [queue[0], { envelope: queue[0].envelope }]]) {
    assert.throws(() => bob.decryptBatch(bad), { name: 'TypeError', message: 'a session id must be a string' });
  }
});

test('decryptBatch: results stay intact through later batches, in parallel or after (the queue buffer is reused)', async () => {
  const one = await pair(Client);
  const two = await pair(Client);
  const batch = async ({ alice }, prefix, n) =>
    (await alice.encryptBatch(Array.from({ length: n }, (_, i) => ({ sessionId: 'bob', plaintext: `${prefix}${i}`.repeat(8) }))))
      .map((envelope) => ({ sessionId: 'alice', envelope }));
  const first = await one.bob.decryptBatch(await batch(one, 'a', 40));
  // Two clients at once (one with a callback; both queues packed before either runs), then a
  // bigger batch on the first.
  const [queueB, queueC] = [await batch(one, 'b', 30), await batch(two, 'c', 30)];
  const [second, third] = await Promise.all([one.bob.decryptBatch(queueB, () => true), two.bob.decryptBatch(queueC)]);
  const fourth = await one.bob.decryptBatch(await batch(one, 'd', 80));
  for (const [results, prefix] of [[first, 'a'], [second, 'b'], [third, 'c'], [fourth, 'd']]) {
    assert.deepEqual(results.map((r) => text(r.plaintext)), results.map((_, i) => `${prefix}${i}`.repeat(8)));
    for (const r of results) assert.equal(Object.getPrototypeOf(r.plaintext), Uint8Array.prototype);
  }
});

test('decryptBatch without a callback: every result intact and in order, whatever the batch size', async () => {
  const bob = await Client.inMemory();
  const senders = { alice: await Client.inMemory(), carol: await Client.inMemory() };
  for (const [name, sender] of Object.entries(senders)) {
    const [prekey] = await bob.generatePrekeys(1);
    await sender.createSession('bob', prekey.bundle);
    await bob.decrypt(name, await sender.encrypt('bob', 'hello'));
  }
  // The senders' messages stay PreKeyMessages (no reply yet): each result names its sender.
  const fingerprints = { alice: await senders.alice.fingerprint(), carol: await senders.carol.fingerprint() };
  // Several sizes, none at all included (the native addon packs each result as the engine hands
  // it over, into buffers sized from the envelopes).
  for (const n of [0, 1, 32, 33, 256, 289, 1000]) {
    // Runs from two senders; in the 1000-message batch a duplicate, an undecodable envelope and
    // a message for an unknown session among them.
    const odd = new Map(n === 1000 ? [[255, 'duplicate'], [256, 'junk'], [967, 'unknown'], [968, 'duplicate'], [999, 'junk']] : []);
    const queue = [];
    const expected = [];
    let last;
    for (let i = 0; i < n; i++) {
      if (odd.get(i) === 'duplicate') {
        queue.push(last);
        expected.push({ code: proteus.DUPLICATE_MESSAGE });
      } else if (odd.get(i) === 'junk') {
        queue.push({ sessionId: 'alice', envelope: new Uint8Array([0xa1, 0x00, i & 0xff]) });
        expected.push({ code: undefined });
      } else if (odd.get(i) === 'unknown') {
        // A PreKeyMessage (the senders have had no reply), whose prekey is used up.
        queue.push({ sessionId: 'nobody', envelope: await senders.alice.encrypt('bob', 'lost') });
        expected.push({ code: undefined });
      } else {
        const name = Math.floor(i / 100) % 3 === 2 ? 'carol' : 'alice';
        const plaintext = `${name} ${i} `.repeat(1 + (i % 5));
        last = { sessionId: name, envelope: await senders[name].encrypt('bob', plaintext) };
        queue.push(last);
        expected.push({ plaintext, sender: fingerprints[name] });
      }
    }
    const results = await bob.decryptBatch(queue);
    assert.equal(results.length, n);
    for (let i = 0; i < n; i++) {
      const what = `message ${i} of ${n}`;
      const [r, want] = [results[i], expected[i]];
      assert.ok(r !== undefined, what);
      assert.equal(r.messageId, proteus.messageId(queue[i].envelope), what);
      assert.equal(r.sessionId, queue[i].sessionId, what);
      if (want.plaintext !== undefined) {
        assert.equal(text(r.plaintext), want.plaintext, what);
        assert.equal(r.sender, want.sender, what);
        assert.equal(r.errorCode, undefined, what);
      } else {
        assert.equal(r.plaintext, undefined, what);
        assert.ok(r.errorCode > 0 && (want.code === undefined || r.errorCode === want.code), `${what}: ${r.errorCode} ${r.errorKind}`);
        assert.equal(r.errorKind, proteus.ERROR_KINDS[r.errorCode], what);
      }
    }
  }
});

test('decryptBatch: a call on the client while the callback delivers fails with ClientBusy (120)', async () => {
  const { alice, bob } = await pair(Client);
  const envelope = await alice.encrypt('bob', 'x');
  let busy;
  await bob.decryptBatch([{ sessionId: 'alice', envelope }], async () => {
    busy = await bob.fingerprint().then(() => undefined, (e) => e);
  });
  assert.equal(busy?.code, proteus.CLIENT_BUSY);
  assert.match(await bob.fingerprint(), /^[0-9a-f]{64}$/);
});

test('encryptFor: one plaintext for many sessions, a result per recipient', async () => {
  const { alice, bob } = await pair(Client);
  const carol = await Client.inMemory();
  const [prekey] = await carol.generatePrekeys(1);
  await alice.createSession('carol', prekey.bundle);
  const results = await alice.encryptFor(['bob', 'nobody', 'carol'], 'to all');
  assert.deepEqual(results.map((r) => r.sessionId), ['bob', 'nobody', 'carol']);
  assert.equal(text(await bob.decrypt('alice', results[0].envelope)), 'to all');
  assert.equal(text(await carol.decrypt('alice', results[2].envelope)), 'to all');
  assert.equal(proteus.prekeyMessageFingerprint(results[2].envelope), await alice.fingerprint());
  assert.equal(results[1].errorCode, proteus.SESSION_NOT_FOUND);
  assert.equal(results[1].errorKind, 'SessionNotFound');
  assert.equal(results[1].envelope, undefined);
});

test('import and export: an identity and a session move to another client', async () => {
  const { alice, bob } = await pair(Client);
  const copy = await Client.inMemory();
  await copy.importIdentity(await bob.exportIdentity());
  assert.equal(await copy.fingerprint(), await bob.fingerprint());
  await copy.importSession('alice', await bob.exportSession('alice'));
  const envelope = await alice.encrypt('bob', 'to the copy');
  assert.equal(text(await copy.decrypt('alice', envelope)), 'to the copy');
  const prekeys = await Client.inMemory();
  await assert.rejects(prekeys.importPrekey(new Uint8Array([0xff])), ProteusError);
});

test('close: waits for the calls before it; later calls fail with ClientClosed (122), close twice is fine', async () => {
  const c = await Client.inMemory();
  const before = c.generatePrekeys(5);
  const closing = c.close();
  assert.equal((await before).length, 5);
  await closing;
  await c.close();
  await assert.rejects(c.fingerprint(), (e) => e.name === 'ProteusError' && e.code === 122 && e.kind === 'ClientClosed');
});

test('batchThreads: checked (RangeError), and the same results with one thread or several', async () => {
  await assert.rejects(Client.inMemory({ batchThreads: 0 }), RangeError);
  await assert.rejects(Client.inMemory({ batchThreads: 1.5 }), RangeError);
  for (const batchThreads of [1, 3]) {
    const { alice, bob } = await pair(Client, { bob: await Client.inMemory({ batchThreads }) });
    const envelopes = await alice.encryptBatch(Array.from({ length: 300 }, (_, i) => ({ sessionId: 'bob', plaintext: `m${i}` })));
    const results = await bob.decryptBatch(envelopes.map((envelope) => ({ sessionId: 'alice', envelope })));
    assert.deepEqual(results.map((r) => text(r.plaintext)), Array.from({ length: 300 }, (_, i) => `m${i}`));
  }
});
