// Two clients of one IndexedDB store (two tabs) with NO lock between them: every commit is a
// compare-and-swap on the store's commit counter, so whatever the interleaving, no message key
// is used twice, no commit is lost and the peer decrypts everything that was sent. A batch that
// delivered before losing the race fails with StoreConflict; without Web Locks, opening needs an
// explicit opt-in.
// Run: node --test tests/ (after ./build.sh).
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { IDBFactory } from 'fake-indexeddb';
import { Client, ProteusError, init } from '../pkg/index.js';

await init();

/** A lock manager that locks nothing: the two clients run their calls fully interleaved. */
const noLocks = { request: (_name, fn) => fn() };
const text = (bytes) => new TextDecoder().decode(bytes);
const hex = (bytes) => Buffer.from(bytes).toString('hex');
const tick = () => new Promise((resolve) => setImmediate(resolve));

/**
 * How long a call may take before it counts as a deadlock: a bound against a hang (the calls
 * here take milliseconds), generous enough for a machine ten times slower than ours.
 */
const DEADLOCK_MS = 60_000;

/** `promise`, or a failure after `ms`: a deadlock fails the test instead of hanging it. */
function within(ms, promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms (deadlock)`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Runs with `globalThis.navigator` set to `navigator` (Node has none). */
const hadNavigator = Object.getOwnPropertyDescriptor(globalThis, 'navigator');
function withNavigator(navigator) {
  Object.defineProperty(globalThis, 'navigator', { value: navigator, configurable: true, writable: true });
}
afterEach(() => {
  if (hadNavigator) Object.defineProperty(globalThis, 'navigator', hadNavigator);
  else delete globalThis.navigator;
});

/** The code of StoreConflict: a commit lost its compare-and-swap to another client's. */
const STORE_CONFLICT = 512;

// --- a tiny CBOR reader (just what an envelope holds), to read an envelope's chain position --

function cborItems(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const length = (info) => {
    if (info < 24) return info;
    if (info === 24) return bytes[at++];
    if (info === 25) return (at += 2), view.getUint16(at - 2);
    if (info === 26) return (at += 4), view.getUint32(at - 4);
    throw new Error(`CBOR length ${info} not supported here`);
  };
  const item = () => {
    const head = bytes[at++];
    const info = head & 31;
    switch (head >> 5) {
      case 0:
        return length(info);
      case 2: {
        const n = length(info);
        return bytes.subarray((at += n) - n, at);
      }
      case 5: {
        const map = new Map();
        for (let n = length(info); n > 0; n--) map.set(item(), item());
        return map;
      }
      case 7:
        if (info === 22) return null;
    }
    throw new Error(`CBOR item 0x${head.toString(16)} not supported here`);
  };
  return { item, end: () => at === bytes.length };
}

/**
 * Where an envelope's message key sits: session tag, the sender's ratchet key and the counter
 * (a PreKeyMessage wraps a CipherMessage). Two envelopes at one position used one key and nonce.
 */
function chainPosition(envelope) {
  const outer = cborItems(envelope);
  const message = cborItems(outer.item().get(2));
  const type = message.item();
  let cipher = message.item();
  if (type === 2) cipher = cipher.get(3);
  assert.ok(message.end() && (type === 1 || type === 2));
  return { key: `${hex(cipher.get(0))}/${hex(cipher.get(3).get(0))}`, counter: cipher.get(1) };
}

// --- the scenario ----------------------------------------------------------------------------

/** Tab 1 and tab 2 on one fresh store, a session with `peer` on it, no lock between them. */
async function twoTabs() {
  const indexedDB = new IDBFactory();
  const open = () => Client.open('tabs', { indexedDB, locks: noLocks });
  const tab1 = await open();
  const peer = await Client.inMemory();
  const [{ bundle }] = await tab1.generatePrekeys(1);
  await peer.createSession('me', bundle);
  assert.equal(text(await tab1.decrypt('peer', await peer.encrypt('me', 'hello'))), 'hello');
  const tab2 = await open();
  return { tab1, tab2, peer, open };
}

/** Runs `calls` (functions returning Promises) with tab 2's started `delay` ticks after tab 1's. */
async function interleave(first, second, delay) {
  const one = first.map((call) => call());
  for (let i = 0; i < delay; i++) await tick();
  const two = second.map((call) => call());
  return Promise.allSettled([...one, ...two]);
}

/** The values of the calls that resolved; the others must have failed with StoreConflict. */
function landed(outcomes) {
  const values = [];
  for (const o of outcomes) {
    if (o.status === 'fulfilled') values.push(o.value);
    else assert.ok(o.reason instanceof ProteusError && o.reason.code === STORE_CONFLICT, `unexpected failure: ${o.reason}`);
  }
  return values;
}

describe('two tabs without a lock: every commit is a compare-and-swap', () => {
  const shapes = [];
  for (const a of [1, 2, 3]) for (const b of [1, 2, 3]) for (const delay of [0, 1, 2, 3, 5, 8]) shapes.push([a, b, delay]);

  test(`concurrent encrypts never share a message key, and none is lost (${shapes.length} interleavings)`, async () => {
    let conflicts = 0;
    for (const [a, b, delay] of shapes) {
      const where = `tab 1 x${a}, tab 2 x${b} after ${delay} ticks`;
      const { tab1, tab2, peer, open } = await twoTabs();
      const outcomes = await interleave(
        Array.from({ length: a }, (_, i) => () => tab1.encrypt('peer', `one ${i}`)),
        Array.from({ length: b }, (_, i) => () => tab2.encrypt('peer', `two ${i}`)),
        delay,
      );
      conflicts += outcomes.filter((o) => o.status === 'rejected').length;
      const envelopes = landed(outcomes);
      assert.ok(envelopes.length > 0, where);

      // No two envelopes at one (session tag, ratchet key, counter): no key and nonce reused.
      const positions = new Map();
      for (const e of envelopes) {
        const p = chainPosition(e);
        const id = `${p.key}/${p.counter}`;
        assert.ok(!positions.has(id), `${where}: two envelopes at ${id}: keystream reuse`);
        positions.set(id, p);
      }
      // The peer decrypts every envelope that was returned, each once.
      for (const e of envelopes) assert.match(text(await peer.decrypt('me', e)), /^(one|two) \d$/, where);

      // Every commit survived: a third client on the store sends past every counter used.
      const tab3 = await open();
      const next = await tab3.encrypt('peer', 'after');
      const p = chainPosition(next);
      for (const q of positions.values()) {
        if (q.key === p.key) assert.ok(p.counter > q.counter, `${where}: the chain was rolled back to ${p.counter} (had ${q.counter})`);
      }
      assert.equal(text(await peer.decrypt('me', next)), 'after', where);
      await Promise.all([tab1.close(), tab2.close(), tab3.close()]);
    }
    console.log(`# ${shapes.length} interleavings, ${conflicts} calls failed with StoreConflict after their retries`);
  });

  test(`concurrent decrypts and encrypts: every committed receipt survives (${shapes.length} interleavings)`, async () => {
    for (const [a, b, delay] of shapes) {
      const where = `tab 1 x${a}, tab 2 x${b} after ${delay} ticks`;
      const { tab1, tab2, peer, open } = await twoTabs();
      const incoming = [];
      for (let i = 0; i < a + b; i++) incoming.push(await peer.encrypt('me', `in ${i}`));
      // Tab 1 decrypts the first a messages, tab 2 the others and also sends one.
      const outcomes = await interleave(
        incoming.slice(0, a).map((e) => () => tab1.decrypt('peer', e)),
        [...incoming.slice(a).map((e) => () => tab2.decrypt('peer', e)), () => tab2.encrypt('peer', 'reply')],
        delay,
      );
      const results = outcomes.map((o, i) => ({ ...o, envelope: incoming[i] }));
      landed(outcomes);

      // A fresh client on the store: every message a tab decrypted is a duplicate now.
      const tab3 = await open();
      for (const [i, r] of results.slice(0, a + b).entries()) {
        if (r.status !== 'fulfilled') continue;
        assert.equal(text(r.value), `in ${i}`, where);
        await assert.rejects(
          tab3.decrypt('peer', r.envelope),
          (e) => e instanceof ProteusError && e.code === 209,
          `${where}: the receipt of message ${i} was lost: it decrypts again`,
        );
      }
      const reply = outcomes[a + b];
      if (reply.status === 'fulfilled') assert.equal(text(await peer.decrypt('me', reply.value)), 'reply', where);
      // And the store still sends: its chain is ahead of everything it sent.
      assert.equal(text(await peer.decrypt('me', await tab3.encrypt('peer', 'after'))), 'after', where);
      await Promise.all([tab1.close(), tab2.close(), tab3.close()]);
    }
  });

  test('two tabs opening a new store at once end up with one identity', async () => {
    const indexedDB = new IDBFactory();
    const [tab1, tab2] = await Promise.all([
      Client.open('fresh', { indexedDB, locks: noLocks }),
      Client.open('fresh', { indexedDB, locks: noLocks }),
    ]);
    const fingerprint = await tab1.fingerprint();
    assert.equal(await tab2.fingerprint(), fingerprint, 'the second identity overwrote the first');
    const tab3 = await Client.open('fresh', { indexedDB, locks: noLocks });
    assert.equal(await tab3.fingerprint(), fingerprint);
    await Promise.all([tab1.close(), tab2.close(), tab3.close()]);
  });
});

describe('a batch commit that lost its compare-and-swap', () => {
  test('fails with StoreConflict (512); its messages decrypt again with the same ids', async () => {
    const indexedDB = new IDBFactory();
    const alice = await Client.inMemory();
    const tab1 = await Client.open('conflict', { indexedDB, locks: noLocks });
    const tab2 = await Client.open('conflict', { indexedDB, locks: noLocks });
    const [{ bundle }] = await tab1.generatePrekeys(2);
    await alice.createSession('bob', bundle);
    const queue = [];
    for (let i = 0; i < 3; i++) queue.push({ sessionId: 'alice', envelope: await alice.encrypt('bob', `c${i}`) });

    // While tab 1's batch waits for its callback, tab 2 commits (another tab of the app).
    const delivered = new Map();
    await assert.rejects(
      within(
        DEADLOCK_MS,
        tab1.decryptBatch(queue, async (r, done, total) => {
          delivered.set(r.messageId, text(r.plaintext));
          if (done === total) await tab2.generatePrekeys(1);
        }),
        'decryptBatch',
      ),
      (e) => e instanceof ProteusError && e.code === STORE_CONFLICT && e.kind === 'StoreConflict',
    );
    assert.equal(delivered.size, 3, 'delivered before the commit');

    // Nothing of tab 1's batch was stored: the same messages come again, under the same ids, so
    // the application drops what it stored already.
    const again = await tab1.decryptBatch(queue);
    assert.deepEqual(again.map((r) => [r.messageId, text(r.plaintext)]), [...delivered]);
    assert.equal(await tab1.prekeysRemaining(), 2, "tab 2's commit is there; the first message used a prekey");
    assert.ok((await tab2.decryptBatch(queue)).every((r) => r.alreadySeen), 'now committed, seen by tab 2');
    await Promise.all([tab1.close(), tab2.close()]);
  });
});

describe('without Web Locks', () => {
  test('open refuses unless the caller opts in', async () => {
    // A host without Web Locks (Node has none; Deno and browsers have them).
    withNavigator({});
    const indexedDB = new IDBFactory();
    await assert.rejects(Client.open('nolocks', { indexedDB }), (e) => {
      assert.equal(e.name, 'WebLocksUnavailableError');
      assert.match(e.message, /allowWithoutWebLocks/);
      return true;
    });
    assert.deepEqual((await indexedDB.databases()).map((d) => d.name), [], 'nothing was opened');
    withNavigator({});
    await assert.rejects(Client.open('nolocks', { indexedDB }), (e) => e.name === 'WebLocksUnavailableError');

    const c = await Client.open('nolocks', { indexedDB, allowWithoutWebLocks: true });
    const d = await Client.open('nolocks', { indexedDB, allowWithoutWebLocks: true });
    assert.equal(await c.fingerprint(), await d.fingerprint());
    await Promise.all([c.close(), d.close()]);
  });

  test("navigator.locks is used when there is one", async () => {
    const names = [];
    withNavigator({ locks: { request: (name, fn) => (names.push(name), fn()) } });
    const c = await Client.open('withlocks', { indexedDB: new IDBFactory() });
    await c.fingerprint();
    assert.ok(names.length >= 2 && names.every((n) => n === 'proteus:withlocks'), `${names}`);
    await c.close();
  });
});
