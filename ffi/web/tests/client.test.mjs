// The whole API of the package in Node: in memory, and on IndexedDB (fake-indexeddb, a complete
// in-memory implementation of the IndexedDB API) for the persistence layer, failures included.
// Run: node --test tests/ (after ./build.sh).
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { describe, test } from 'node:test';
import { IDBFactory, IDBObjectStore as FDBObjectStore } from 'fake-indexeddb';
import {
  CALLBACK_FAILED,
  Client,
  INTERNAL,
  ProteusError,
  STORAGE_FAILURE,
  bundleFingerprint,
  prekeyMessageFingerprint,
  init,
  messageId,
} from '../pkg/index.js';

await init();

const text = (bytes) => new TextDecoder().decode(bytes);
const isHex64 = (s) => /^[0-9a-f]{64}$/.test(s);

/** Asserts that `promise` rejects with a ProteusError of this code and kind. */
async function rejectsWith(promise, code, kind) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof ProteusError, `expected a ProteusError, got ${e}`);
    assert.ok(e instanceof Error);
    assert.equal(e.name, 'ProteusError');
    assert.equal(e.code, code, `code of ${e.message}`);
    assert.equal(e.kind, kind);
    assert.equal(typeof e.message, 'string');
    return true;
  });
}

/** Alice has a session with Bob ("bob"), Bob one with Alice ("alice"), both established. */
async function pair() {
  const alice = await Client.inMemory();
  const bob = await Client.inMemory();
  const [{ bundle }] = await bob.generatePrekeys(1);
  await alice.createSession('bob', bundle);
  assert.equal(text(await bob.decrypt('alice', await alice.encrypt('bob', 'hello'))), 'hello');
  assert.equal(text(await alice.decrypt('bob', await bob.encrypt('alice', 'hi'))), 'hi');
  return { alice, bob };
}

describe('identity and prekeys', () => {
  test('a new client has an identity, a last-resort prekey and no one-time prekeys', async () => {
    const c = await Client.inMemory();
    const fp = await c.fingerprint();
    assert.ok(isHex64(fp), fp);
    assert.equal(await c.fingerprint(), fp);
    const key = await c.identityKey();
    assert.ok(key instanceof Uint8Array && key.length === 32);
    assert.equal(Buffer.from(key).toString('hex'), fp, 'the fingerprint is the hex of the identity key');
    assert.equal(await c.prekeysRemaining(), 0);
    const lastResort = await c.lastResortBundle();
    assert.equal(lastResort.id, 0xffff);
    assert.ok(lastResort.bundle instanceof Uint8Array);
    assert.equal(bundleFingerprint(lastResort.bundle), fp);
    assert.deepEqual(await c.prekeyBundle(0xffff), lastResort);
    assert.notEqual((await Client.inMemory()).fingerprint(), fp);
  });

  test('prekeyMessageFingerprint reads the sender of a PreKeyMessage, and only of one', async () => {
    const alice = await Client.inMemory();
    const bob = await Client.inMemory();
    const [{ bundle }] = await bob.generatePrekeys(1);
    await alice.createSession('bob', bundle);
    const first = await alice.encrypt('bob', 'hello');
    assert.equal(prekeyMessageFingerprint(first), await alice.fingerprint());
    await bob.decrypt('alice', first);
    const reply = await bob.encrypt('alice', 'hi');
    await alice.decrypt('bob', reply);
    assert.equal(prekeyMessageFingerprint(reply), undefined, 'a CipherMessage carries no identity');
    assert.throws(() => prekeyMessageFingerprint(new Uint8Array([1, 2, 3])), (e) => e instanceof ProteusError && e.code >= 300 && e.code < 400);
    assert.throws(() => prekeyMessageFingerprint('not bytes'), TypeError);
  });

  test('batch results name the sender of a session\'s first messages, and of one that claims another identity', async () => {
    const alice = await Client.inMemory();
    const bob = await Client.inMemory();
    const mallory = await Client.inMemory();
    const bundles = await bob.generatePrekeys(2);
    await alice.createSession('bob', bundles[0].bundle);
    await mallory.createSession('bob', bundles[1].bundle);
    const first = await alice.encrypt('bob', 'first');
    const claim = await mallory.encrypt('bob', 'it is me, alice');
    const results = await bob.decryptBatch([
      { sessionId: 'alice', envelope: first },
      { sessionId: 'alice', envelope: claim },
    ]);
    assert.equal(results[0].sender, await alice.fingerprint());
    assert.equal(results[1].sender, await mallory.fingerprint());
    assert.equal(results[1].errorCode, 204);
    await alice.decrypt('bob', await bob.encrypt('alice', 'hi'));
    const [later] = await bob.decryptBatch([{ sessionId: 'alice', envelope: await alice.encrypt('bob', 'later') }]);
    assert.equal(later.sender, undefined, 'a CipherMessage names no sender');
  });

  test('sign makes Ed25519 signatures that verify with the identity key', async () => {
    const c = await Client.inMemory();
    const key = crypto.createPublicKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(await c.identityKey()).toString('base64url') },
      format: 'jwk',
    });
    const message = new TextEncoder().encode('proteus-chat-relay-v1\nalice\n');
    const signature = await c.sign(message);
    assert.ok(signature instanceof Uint8Array && signature.length === 64);
    assert.ok(crypto.verify(null, message, key, signature));
    assert.ok(crypto.verify(null, message, key, await c.sign('proteus-chat-relay-v1\nalice\n')), 'a string is signed as UTF-8');
    assert.ok(!crypto.verify(null, new TextEncoder().encode('another message'), key, signature));
    const other = await Client.inMemory();
    assert.ok(!crypto.verify(null, message, key, await other.sign(message)), 'another identity signs differently');
    assert.throws(() => c.sign(42), TypeError);
  });

  test('topUpPrekeys fills the stock to the target; resetSession starts over and says whether the identity changed', async () => {
    const c = await Client.inMemory();
    const first = await c.topUpPrekeys(3);
    assert.deepEqual(first.map((b) => b.id), [0, 1, 2]);
    assert.deepEqual(await c.topUpPrekeys(3), [], 'the stock is full');
    assert.equal(await c.prekeysRemaining(), 3);
    assert.throws(() => c.topUpPrekeys(-1), RangeError);

    const { alice, bob } = await pair();
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

  test('generatePrekeys returns distinct ids and bundles of our identity', async () => {
    const c = await Client.inMemory();
    const bundles = await c.generatePrekeys(5);
    assert.equal(bundles.length, 5);
    assert.equal(new Set(bundles.map((b) => b.id)).size, 5);
    for (const { id, bundle } of bundles) {
      assert.ok(Number.isInteger(id) && id >= 0 && id < 0xffff);
      assert.ok(bundle instanceof Uint8Array);
      assert.equal(bundleFingerprint(bundle), await c.fingerprint());
      assert.deepEqual(await c.prekeyBundle(id), { id, bundle });
    }
    assert.equal(await c.prekeysRemaining(), 5);
    assert.deepEqual(await c.generatePrekeys(0), []);
    const more = await c.generatePrekeys(2);
    assert.ok(more.every((b) => !bundles.some((o) => o.id === b.id)), 'ids are not reused');
  });

  test('prekey errors: unknown id, bad arguments, bad bundle', async () => {
    const c = await Client.inMemory();
    await rejectsWith(c.prekeyBundle(7), 101, 'PreKeyNotFound');
    assert.throws(() => c.generatePrekeys(-1), RangeError);
    assert.throws(() => c.generatePrekeys(1.5), RangeError);
    assert.throws(() => c.prekeyBundle(70000), RangeError);
    assert.throws(() => bundleFingerprint(new Uint8Array([1, 2, 3])), (e) => e instanceof ProteusError && e.code >= 300 && e.code < 400);
  });
});

describe('sessions', () => {
  test('create, list, inspect and delete', async () => {
    const alice = await Client.inMemory();
    const bob = await Client.inMemory();
    const [{ bundle }] = await bob.generatePrekeys(1);
    assert.equal(await alice.hasSession('bob'), false);
    await alice.createSession('bob', bundle);
    assert.equal(await alice.hasSession('bob'), true);
    assert.deepEqual(await alice.sessionIds(), ['bob']);
    assert.equal(await alice.remoteFingerprint('bob'), await bob.fingerprint());
    await rejectsWith(alice.createSession('bob', bundle), 105, 'SessionExists');
    await alice.deleteSession('bob');
    assert.equal(await alice.hasSession('bob'), false);
    assert.deepEqual(await alice.sessionIds(), []);
    await rejectsWith(alice.remoteFingerprint('bob'), 104, 'SessionNotFound');
  });

  test('session errors: missing session, invalid ids, bad bundles, wrong types', async () => {
    const c = await Client.inMemory();
    await rejectsWith(c.encrypt('nobody', 'x'), 104, 'SessionNotFound');
    await rejectsWith(c.exportSession('nobody'), 104, 'SessionNotFound');
    await rejectsWith(c.createSession('', (await (await Client.inMemory()).lastResortBundle()).bundle), 106, 'InvalidSessionId');
    await rejectsWith(c.encrypt('x'.repeat(1025), 'a'), 106, 'InvalidSessionId');
    await assert.rejects(c.createSession('peer', new Uint8Array([0xa0])), (e) => e instanceof ProteusError && e.code >= 300 && e.code < 400);
    assert.throws(() => c.createSession(42, new Uint8Array()), TypeError);
    assert.throws(() => c.createSession('peer', 'not bytes'), TypeError);
    assert.throws(() => c.decrypt('peer', [1, 2, 3]), TypeError);
  });
});

describe('encrypt and decrypt', () => {
  test('a prekey session, a reply, ratchet turns; the one-time prekey is used up', async () => {
    const alice = await Client.inMemory();
    const bob = await Client.inMemory();
    const [{ bundle }] = await bob.generatePrekeys(1);
    await alice.createSession('bob', bundle);
    const first = await alice.encrypt('bob', new Uint8Array([0, 1, 2, 255]));
    assert.ok(first instanceof Uint8Array);
    assert.deepEqual(await bob.decrypt('alice', first), new Uint8Array([0, 1, 2, 255]));
    assert.equal(await bob.prekeysRemaining(), 0);
    assert.equal(await bob.remoteFingerprint('alice'), await alice.fingerprint());
    for (let turn = 0; turn < 6; turn++) {
      const [from, to, fromId, toId] = turn % 2 ? [alice, bob, 'bob', 'alice'] : [bob, alice, 'alice', 'bob'];
      for (let i = 0; i < 3; i++) {
        assert.equal(text(await to.decrypt(toId, await from.encrypt(fromId, `turn ${turn} #${i} ✓`))), `turn ${turn} #${i} ✓`);
      }
    }
  });

  test('out of order, duplicates, tampering and garbage', async () => {
    const { alice, bob } = await pair();
    const envelopes = [];
    for (let i = 0; i < 5; i++) envelopes.push(await alice.encrypt('bob', `m${i}`));
    for (const i of [3, 0, 4, 2, 1]) assert.equal(text(await bob.decrypt('alice', envelopes[i])), `m${i}`);
    await rejectsWith(bob.decrypt('alice', envelopes[2]), 209, 'DuplicateMessage');
    const next = await alice.encrypt('bob', 'next');
    const tampered = Uint8Array.from(next);
    tampered[tampered.length - 1] ^= 1;
    await rejectsWith(bob.decrypt('alice', tampered), 206, 'InvalidSignature');
    assert.equal(text(await bob.decrypt('alice', next)), 'next', 'a rejected message changed nothing');
    await assert.rejects(bob.decrypt('alice', new Uint8Array([1, 2, 3])), (e) => e instanceof ProteusError && e.code >= 300 && e.code < 400);
    await rejectsWith(bob.decrypt('stranger', next), 104, 'SessionNotFound');
  });

  test('a gap over the staged-key limit is fast-forwarded; the oldest keys are evicted unless the limit is raised', async () => {
    for (const raised of [false, true]) {
      const { alice, bob } = await pair();
      if (raised) await bob.setMaxCounterGap(2000);
      const envelopes = [];
      for (let i = 0; i < 1002; i++) envelopes.push(await alice.encrypt('bob', `m${i}`));
      assert.equal(text(await bob.decrypt('alice', envelopes[1001])), 'm1001');
      if (raised) assert.equal(text(await bob.decrypt('alice', envelopes[0])), 'm0');
      else await rejectsWith(bob.decrypt('alice', envelopes[0]), 214, 'MessageKeyEvicted');
      assert.equal(text(await bob.decrypt('alice', envelopes[3])), 'm3');
    }
  });

  test('encryptBatch: one commit for several sessions; all or nothing', async () => {
    const { alice, bob } = await pair();
    const carol = await Client.inMemory();
    const [{ bundle }] = await carol.generatePrekeys(1);
    await alice.createSession('carol', bundle);
    const out = await alice.encryptBatch([
      { sessionId: 'bob', plaintext: 'to bob 1' },
      { sessionId: 'carol', plaintext: new TextEncoder().encode('to carol') },
      { sessionId: 'bob', plaintext: 'to bob 2' },
    ]);
    assert.equal(out.length, 3);
    assert.equal(text(await bob.decrypt('alice', out[0])), 'to bob 1');
    assert.equal(text(await carol.decrypt('alice', out[1])), 'to carol');
    assert.equal(text(await bob.decrypt('alice', out[2])), 'to bob 2');
    await rejectsWith(
      alice.encryptBatch([
        { sessionId: 'bob', plaintext: 'lost' },
        { sessionId: 'nobody', plaintext: 'x' },
      ]),
      104,
      'SessionNotFound',
    );
    // Nothing of the failed batch was committed: Bob's next message is the next in his chain.
    assert.equal(text(await bob.decrypt('alice', await alice.encrypt('bob', 'after'))), 'after');
    assert.deepEqual(await alice.encryptBatch([]), []);
    assert.throws(() => alice.encryptBatch([{ sessionId: 'bob', plaintext: 5 }]), TypeError);
  });

  test('a 1 MiB message', async () => {
    const { alice, bob } = await pair();
    const big = new Uint8Array(1 << 20).map((_, i) => (i * 31) & 255);
    assert.deepEqual(await bob.decrypt('alice', await alice.encrypt('bob', big)), big);
  });
});

describe('decryptBatch', () => {
  test('results in order, with progress, message ids and per-message errors, before one commit', async () => {
    const alice = await Client.inMemory();
    const bob = await Client.inMemory();
    const [{ bundle }] = await bob.generatePrekeys(1);
    await alice.createSession('bob', bundle);
    const queue = [];
    for (let i = 0; i < 20; i++) queue.push({ sessionId: 'alice', envelope: await alice.encrypt('bob', `q${i}`) });
    queue.splice(7, 0, { sessionId: 'alice', envelope: new Uint8Array([9, 9, 9]) });
    queue.splice(3, 0, { sessionId: 'nobody', envelope: queue[4].envelope });
    const seen = [];
    const results = await bob.decryptBatch(queue, (result, done, total) => {
      seen.push([result, done, total]);
      return true;
    });
    assert.equal(results.length, 22);
    assert.deepEqual(seen.map(([, d, t]) => [d, t]), results.map((_, i) => [i + 1, 22]));
    results.forEach((r, i) => {
      assert.equal(seen[i][0], r);
      assert.equal(r.sessionId, queue[i].sessionId);
      assert.ok(isHex64(r.messageId));
      assert.equal(r.messageId, messageId(queue[i].envelope));
    });
    // An envelope's id is its MAC (a3 00 01 01 a1 00 58 20 <32 bytes> ...); other bytes get SHA-256.
    const hex = (b) => Buffer.from(b).toString('hex');
    assert.equal(results[0].messageId, hex(queue[0].envelope.subarray(8, 40)));
    const garbage = queue.findIndex((q) => q.envelope.length === 3);
    assert.equal(results[garbage].messageId, crypto.createHash('sha256').update(queue[garbage].envelope).digest('hex'));
    const bad = results.filter((r) => r.errorCode !== undefined);
    assert.deepEqual(bad.map((r) => [r.errorKind, r.plaintext, r.alreadySeen]).map(([k, p, s]) => [typeof k, p, s]), [
      ['string', undefined, false],
      ['string', undefined, false],
    ]);
    assert.equal(results[3].errorCode, 101, 'no session "nobody" and its prekey is gone: PreKeyNotFound');
    assert.ok(results[8].errorCode >= 300 && results[8].errorCode < 400);
    const good = results.filter((r) => r.plaintext);
    assert.deepEqual(good.map((r) => text(r.plaintext)), Array.from({ length: 20 }, (_, i) => `q${i}`));
    // Delivered again after the commit: already seen, nothing new.
    const again = await bob.decryptBatch(queue.filter((_, i) => i !== 3 && i !== 8));
    assert.ok(again.every((r) => r.alreadySeen && (r.errorCode === 209 || r.errorCode === 208)));
    assert.deepEqual(await bob.decryptBatch([]), []);
  });

  test('stopping the batch commits nothing: the same queue decrypts again', async () => {
    const { alice, bob } = await pair();
    const queue = [];
    for (let i = 0; i < 5; i++) queue.push({ sessionId: 'alice', envelope: await alice.encrypt('bob', `s${i}`) });
    const delivered = [];
    await rejectsWith(
      bob.decryptBatch(queue, (r, done) => {
        delivered.push(text(r.plaintext));
        return done < 3;
      }),
      108,
      'BatchAborted',
    );
    assert.deepEqual(delivered, ['s0', 's1', 's2']);
    const again = await bob.decryptBatch(queue);
    assert.deepEqual(again.map((r) => text(r.plaintext)), ['s0', 's1', 's2', 's3', 's4']);
    assert.deepEqual(again.slice(0, 3).map((r) => r.messageId), queue.slice(0, 3).map((q) => messageId(q.envelope)));
  });

  test('a callback that throws stops the batch: CallbackFailed, nothing committed', async () => {
    const { alice, bob } = await pair();
    const queue = [{ sessionId: 'alice', envelope: await alice.encrypt('bob', 'x') }];
    const boom = new Error('app failure');
    await assert.rejects(
      bob.decryptBatch(queue, () => {
        throw boom;
      }),
      (e) => e instanceof ProteusError && e.code === CALLBACK_FAILED && e.kind === 'CallbackFailed' && e.cause === boom,
    );
    assert.equal(text((await bob.decryptBatch(queue))[0].plaintext), 'x');
    assert.throws(() => bob.decryptBatch(queue, 'not a function'), TypeError);
    assert.throws(() => bob.decryptBatch('not an array'), TypeError);
    // The first message's session id is checked like the others'.
    for (const bad of [[{ envelope: queue[0].envelope }], [queue[0], { envelope: queue[0].envelope }]]) {
      assert.throws(() => bob.decryptBatch(bad), { name: 'TypeError', message: 'a session id must be a string' });
    }
  });

  test('promises from the callback are awaited before the commit', async () => {
    const { alice, bob } = await pair();
    const queue = [];
    for (let i = 0; i < 5; i++) queue.push({ sessionId: 'alice', envelope: await alice.encrypt('bob', `p${i}`) });
    const saved = new Map();
    let settled = 0;
    const results = await bob.decryptBatch(queue, async (r) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      saved.set(r.messageId, text(r.plaintext));
      settled++;
    });
    assert.equal(settled, 5, 'the batch resolved only after every promise settled');
    assert.deepEqual(results.map((r) => saved.get(r.messageId)), ['p0', 'p1', 'p2', 'p3', 'p4']);
    assert.ok((await bob.decryptBatch(queue)).every((r) => r.alreadySeen), 'then it was committed');
  });

  for (const [what, store] of [
    ['in memory', () => Client.inMemory()],
    ['on IndexedDB', () => Client.open('async-callback', { indexedDB: new IDBFactory(), allowWithoutWebLocks: true })],
  ]) {
    test(`a promise that rejects or resolves to false commits nothing (${what})`, async () => {
      const alice = await Client.inMemory();
      const bob = await store();
      const [{ bundle }] = await bob.generatePrekeys(1);
      await alice.createSession('bob', bundle);
      const queue = [];
      for (let i = 0; i < 4; i++) queue.push({ sessionId: 'alice', envelope: await alice.encrypt('bob', `r${i}`) });
      const boom = new Error('IndexedDB write failed');
      await assert.rejects(
        bob.decryptBatch(queue, async (r, done) => {
          if (done === 3) throw boom;
        }),
        (e) => e instanceof ProteusError && e.code === CALLBACK_FAILED && e.kind === 'CallbackFailed' && e.cause === boom,
      );
      await rejectsWith(
        bob.decryptBatch(queue, (r, done) => Promise.resolve(done !== 2)),
        108,
        'BatchAborted',
      );
      // Nothing was committed: the session (created by the first message) and its prekey are as
      // before, and the whole queue decrypts again.
      assert.deepEqual(await bob.sessionIds(), []);
      assert.equal(await bob.prekeysRemaining(), 1);
      const again = await bob.decryptBatch(queue);
      assert.deepEqual(again.map((r) => text(r.plaintext)), ['r0', 'r1', 'r2', 'r3']);
      assert.deepEqual(await bob.sessionIds(), ['alice']);
      await bob.close();
    });
  }

  test('many senders, new sessions and a 1000-message queue', async () => {
    const bob = await Client.inMemory();
    const bundles = await bob.generatePrekeys(10);
    const senders = [];
    for (const { bundle } of bundles) {
      const s = await Client.inMemory();
      await s.createSession('bob', bundle);
      senders.push(s);
    }
    const queue = [];
    for (let i = 0; i < 1000; i++) {
      const k = i % 10;
      queue.push({ sessionId: `sender-${k}`, envelope: await senders[k].encrypt('bob', `${k}:${i}`) });
    }
    const results = await bob.decryptBatch(queue);
    assert.deepEqual(results.map((r) => text(r.plaintext)), queue.map((_, i) => `${i % 10}:${i}`));
    assert.equal((await bob.sessionIds()).length, 10);
    assert.equal(await bob.prekeysRemaining(), 0);
  });
});

describe('import and export', () => {
  test('identity and sessions move to another client and go on', async () => {
    const { alice, bob } = await pair();
    const copy = await Client.inMemory();
    await copy.importIdentity(await bob.exportIdentity());
    assert.equal(await copy.fingerprint(), await bob.fingerprint());
    await copy.importSession('alice', await bob.exportSession('alice'));
    assert.equal(text(await copy.decrypt('alice', await alice.encrypt('bob', 'to the copy'))), 'to the copy');
    assert.equal(text(await alice.decrypt('bob', await copy.encrypt('alice', 'from the copy'))), 'from the copy');
    await rejectsWith(copy.importIdentity(await alice.exportIdentity()), 107, 'IdentityInUse');
    await rejectsWith(copy.importSession('alice', await bob.exportSession('alice')), 105, 'SessionExists');
    await assert.rejects(copy.importSession('other', new Uint8Array([1])), (e) => e instanceof ProteusError && e.code >= 300 && e.code < 400);
    await assert.rejects((await Client.inMemory()).importIdentity(new Uint8Array([1])), (e) => e instanceof ProteusError && e.code >= 300 && e.code < 400);
  });

  test("a session of another identity is refused", async () => {
    const { bob } = await pair();
    const stranger = await Client.inMemory();
    await rejectsWith(stranger.importSession('alice', await bob.exportSession('alice')), 300, 'LocalIdentityChanged');
  });

  test('importPrekey stores a prekey under its id', async () => {
    const c = await Client.inMemory();
    // A prekey record as Wire's Proteus serialises it: {0: version 1, 1: id 7, 2: key pair}.
    const { WireClient } = await import('./support/wire.mjs');
    const wire = new WireClient();
    const [{ prekey, bundle }] = wire.newPrekeys([7]);
    await c.importIdentity(wire.exportIdentity());
    assert.equal(await c.importPrekey(prekey), 7);
    assert.deepEqual((await c.prekeyBundle(7)).bundle, bundle);
    await assert.rejects(c.importPrekey(new Uint8Array([0xa1])), (e) => e instanceof ProteusError && e.code >= 300 && e.code < 400);
  });
});

describe('lifecycle', () => {
  test('close waits for calls in progress; a closed client refuses calls', async () => {
    const { alice } = await pair();
    const pending = alice.encrypt('bob', 'in flight');
    const closing = alice.close();
    assert.ok((await pending) instanceof Uint8Array);
    await closing;
    await assert.rejects(alice.fingerprint(), (e) => e instanceof ProteusError && e.code === 122 && e.kind === 'ClientClosed');
    await alice.close();
  });

  test('calls run one at a time, in order', async () => {
    const { alice, bob } = await pair();
    const envelopes = await Promise.all(Array.from({ length: 20 }, (_, i) => alice.encrypt('bob', `c${i}`)));
    const plain = await Promise.all(envelopes.map((e) => bob.decrypt('alice', e)));
    assert.deepEqual(plain.map(text), Array.from({ length: 20 }, (_, i) => `c${i}`));
  });

  test('the constructor is not public; error codes of the bindings', () => {
    assert.throws(() => new Client(), TypeError);
    assert.equal(CALLBACK_FAILED, 121);
    assert.equal(STORAGE_FAILURE, 507);
    assert.equal(INTERNAL, 599);
  });
});

describe('IndexedDB store', () => {
  test('eraseDeleted: true in memory, false on IndexedDB (deleted values stay until the browser compacts)', async () => {
    const memory = await Client.inMemory();
    await memory.generatePrekeys(1);
    assert.equal(await memory.eraseDeleted(), true);
    const c = await Client.open('erase', { indexedDB: new IDBFactory(), allowWithoutWebLocks: true });
    await c.generatePrekeys(1);
    assert.equal(await c.eraseDeleted(), false);
    await c.close();
    await rejectsWith(c.eraseDeleted(), 122, 'ClientClosed');
  });

  test('a client survives a reopen: identity, prekeys, sessions and chains', async () => {
    const indexedDB = new IDBFactory();
    const peer = await Client.inMemory();
    let c = await Client.open('me', { indexedDB, allowWithoutWebLocks: true });
    const fp = await c.fingerprint();
    const bundles = await c.generatePrekeys(3);
    await peer.createSession('me', bundles[1].bundle);
    assert.equal(text(await c.decrypt('peer', await peer.encrypt('me', 'one'))), 'one');
    const toPeer = await c.encrypt('peer', 'reply 1');
    await c.close();

    c = await Client.open('me', { indexedDB, allowWithoutWebLocks: true });
    assert.equal(await c.fingerprint(), fp);
    assert.equal(await c.prekeysRemaining(), 2);
    assert.deepEqual(await c.sessionIds(), ['peer']);
    assert.equal(text(await peer.decrypt('me', toPeer)), 'reply 1');
    // The sending chain advance of 'reply 1' was stored: the next message is a new one.
    assert.equal(text(await peer.decrypt('me', await c.encrypt('peer', 'reply 2'))), 'reply 2');
    const queue = [];
    for (let i = 0; i < 50; i++) queue.push({ sessionId: 'peer', envelope: await peer.encrypt('me', `b${i}`) });
    await c.decryptBatch(queue);
    await c.close();

    c = await Client.open('me', { indexedDB, allowWithoutWebLocks: true });
    const again = await c.decryptBatch(queue);
    assert.ok(again.every((r) => r.alreadySeen), 'the batch commit was stored');
    await c.close();
    await Client.deleteStore('me', { indexedDB });
    c = await Client.open('me', { indexedDB, allowWithoutWebLocks: true });
    assert.notEqual(await c.fingerprint(), fp, 'a deleted store starts over');
    await c.close();
  });

  test('a failed IndexedDB write rejects with StorageFailure and loses nothing', async () => {
    const indexedDB = new IDBFactory();
    const { alice: peer } = await pair();
    const c = await Client.open('failing', { indexedDB, allowWithoutWebLocks: true });
    const [{ bundle }] = await c.generatePrekeys(1);
    await peer.createSession('c', bundle);
    await c.decrypt('peer', await peer.encrypt('c', 'hello'));
    const before = await c.exportSession('peer');

    const put = FDBObjectStore.prototype.put;
    FDBObjectStore.prototype.put = function failingPut() {
      throw new DOMException('disk full', 'QuotaExceededError');
    };
    try {
      await rejectsWith(c.encrypt('peer', 'never sent'), STORAGE_FAILURE, 'StorageFailure');
    } finally {
      FDBObjectStore.prototype.put = put;
    }
    // The client reloaded from the store: the chain is where it was before the failed call.
    assert.deepEqual(await c.exportSession('peer'), before);
    assert.equal(text(await peer.decrypt('c', await c.encrypt('peer', 'sent'))), 'sent');
    await c.close();
  });

  test('two clients of one store (two tabs) take turns and see each other\'s commits', async () => {
    const indexedDB = new IDBFactory();
    const tab1 = await Client.open('shared', { indexedDB, allowWithoutWebLocks: true });
    const tab2 = await Client.open('shared', { indexedDB, allowWithoutWebLocks: true });
    assert.equal(await tab1.fingerprint(), await tab2.fingerprint());
    const peer = await Client.inMemory();
    const [{ bundle }] = await tab1.generatePrekeys(1);
    await peer.createSession('me', bundle);
    await tab2.decrypt('peer', await peer.encrypt('me', 'first'));
    assert.deepEqual(await tab1.sessionIds(), ['peer'], 'tab 1 reloaded after tab 2 committed');
    const fromTabs = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? tab1 : tab2).encrypt('peer', `t${i}`)),
    );
    const got = [];
    for (const e of fromTabs) got.push(text(await peer.decrypt('me', e)));
    assert.deepEqual(got, Array.from({ length: 20 }, (_, i) => `t${i}`), 'no envelope reused a message key');
    await tab1.close();
    await tab2.close();
  });

  test('a damaged store is reported, not wiped', async () => {
    const indexedDB = new IDBFactory();
    const c = await Client.open('damaged', { indexedDB, allowWithoutWebLocks: true });
    const fp = await c.fingerprint();
    await c.close();
    const db = await new Promise((resolve, reject) => {
      const req = indexedDB.open('proteus:damaged');
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
    const tx = db.transaction('meta', 'readwrite');
    tx.objectStore('meta').put(new Uint8Array([1, 2, 3]), new TextEncoder().encode('identity'));
    await new Promise((resolve) => {
      tx.oncomplete = resolve;
    });
    await rejectsWith(Client.open('damaged', { indexedDB, allowWithoutWebLocks: true }), 503, 'StoreCorrupt');
    const tx2 = db.transaction('meta', 'readonly');
    const kept = await new Promise((resolve) => {
      const r = tx2.objectStore('meta').get(new TextEncoder().encode('identity'));
      r.onsuccess = () => resolve(r.result);
    });
    assert.deepEqual(new Uint8Array(kept), new Uint8Array([1, 2, 3]), 'left as it was');
    db.close();
    assert.ok(isHex64(fp));
  });

  test('without IndexedDB, open fails with StoreUnavailable', async () => {
    await rejectsWith(Client.open('x', { indexedDB: null, allowWithoutWebLocks: true }), 513, 'StoreUnavailable');
    await assert.rejects(Client.open(''), TypeError);
  });
});
