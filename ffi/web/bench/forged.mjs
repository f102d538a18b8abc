#!/usr/bin/env node
// What a forged message costs in wasm, on each path: the counterpart of `proteus-bench --forged`.
// A CipherMessage, a PreKeyMessage (its session made, the peer not yet answered) and a
// PreKeyMessage on a chain the session has dropped since (the conversation went on), each
// through decrypt and through decryptBatch, at the largest counter gap a chain may be
// fast-forwarded (MAX_FAST_FORWARD = 100,000). Each costs at most one fast-forward: the first
// row, a forged CipherMessage on a fresh copy of the session, is the fast-forward alone
// (fast-forward.mjs's forged case). A rejected message changes nothing, so every run of a path
// uses the same client.
//
//   npm run bench:forged --prefix ffi/web -- [--runs N]
//
// Prints one JSON object per path: {"impl":"ours-wasm","case","gap","median_ms","min_ms","max_ms","runs","x_one"}.
import { Client, ProteusError, init } from '../pkg/index.js';

const MAX_FAST_FORWARD = 100_000;
const MAX_RECV_CHAINS = 5;
const CHUNK = 10_000;

const args = process.argv.slice(2);
const runsAt = args.indexOf('--runs');
const runs = runsAt >= 0 ? Number.parseInt(args[runsAt + 1], 10) : 11;
if (!(runs >= 1)) throw new Error('--runs must be at least 1');

await init();

/** `envelope` with its last byte (in the ciphertext) flipped: its MAC no longer verifies. */
function forge(envelope) {
  const forged = Uint8Array.from(envelope);
  forged[forged.length - 1] ^= 1;
  return forged;
}

/** Bob (his session made on his last-resort prekey) and a forged envelope from Alice. */
async function setup(kind) {
  const alice = await Client.inMemory();
  const bob = await Client.inMemory();
  await alice.createSession('bob', (await bob.lastResortBundle()).bundle);
  await bob.decrypt('alice', await alice.encrypt('bob', 'hello'));
  if (kind === 'CipherMessage') await alice.decrypt('bob', await bob.encrypt('alice', 'hi'));
  // Bob's chain for Alice's ratchet key is at 1 ("hello" was 0): the forged message is exactly
  // MAX_FAST_FORWARD ahead of it; for a state made anew, whose chain is at 0, one less is sent.
  const skip = kind === 'PreKeyMessage, dropped chain' ? MAX_FAST_FORWARD - 1 : MAX_FAST_FORWARD;
  for (let sent = 0; sent < skip; sent += CHUNK) {
    const length = Math.min(CHUNK, skip - sent);
    await alice.encryptBatch(Array.from({ length }, () => ({ sessionId: 'bob', plaintext: 'never delivered' })));
  }
  const forged = forge(await alice.encrypt('bob', 'the one'));
  if (kind === 'PreKeyMessage, dropped chain') {
    for (let turn = 0; turn <= MAX_RECV_CHAINS; turn++) {
      await alice.decrypt('bob', await bob.encrypt('alice', 'turn'));
      await bob.decrypt('alice', await alice.encrypt('bob', 'turn'));
    }
  }
  await alice.close();
  return { bob, forged };
}

async function rejected(promise) {
  try {
    await promise;
  } catch (e) {
    if (e instanceof ProteusError) return;
    throw e;
  }
  throw new Error('a forged message decrypted');
}

const times = new Map();
const add = (name, t) => times.set(name, [...(times.get(name) ?? []), t]);

// One fast-forward alone: a forged CipherMessage on a fresh copy of the session each run.
{
  const { bob, forged } = await setup('CipherMessage');
  const identity = await bob.exportIdentity();
  const session = await bob.exportSession('alice');
  for (let i = 0; i < runs; i++) {
    const c = await Client.inMemory();
    await c.importIdentity(identity);
    await c.importSession('alice', session);
    const start = performance.now();
    await rejected(c.decrypt('alice', forged));
    add('one fast-forward (a fresh session)', performance.now() - start);
    await c.close();
  }
}
for (const kind of ['CipherMessage', 'PreKeyMessage', 'PreKeyMessage, dropped chain']) {
  const { bob, forged } = await setup(kind);
  for (let i = 0; i < runs; i++) {
    let start = performance.now();
    await rejected(bob.decrypt('alice', forged));
    add(`${kind}, decrypt`, performance.now() - start);
    start = performance.now();
    const [result] = await bob.decryptBatch([{ sessionId: 'alice', envelope: forged }]);
    add(`${kind}, decryptBatch`, performance.now() - start);
    if (result.plaintext !== undefined) throw new Error('a forged message decrypted');
  }
  await bob.close();
}

const r = (x) => Math.round(x * 1000) / 1000;
let one;
for (const [name, ts] of times) {
  const s = [...ts].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
  one ??= median;
  console.log(JSON.stringify({ impl: 'ours-wasm', case: name, gap: MAX_FAST_FORWARD, median_ms: r(median), min_ms: r(s[0]), max_ms: r(s[s.length - 1]), runs: s.length, x_one: r(median / one) }));
}
