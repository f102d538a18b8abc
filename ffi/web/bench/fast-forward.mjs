#!/usr/bin/env node
// The worst case of a long absence in wasm: one message at the largest gap a chain may be
// fast-forwarded (MAX_FAST_FORWARD = 100,000 skipped messages), forged (its MAC fails after the
// steps; nothing changes) and genuine (it decrypts and stages the newest skipped keys). The
// counterpart of `proteus-bench --fast-forward`. Each run decrypts on a fresh in-memory copy of
// Bob (identity and session imported, not timed).
//
//   npm run bench:fast-forward --prefix ffi/web -- [--runs N]
//
// Prints one JSON object per case: {"impl":"ours-wasm","case","gap","median_ms","min_ms","max_ms","runs"}.
import { Client, ProteusError, init } from '../pkg/index.js';

const MAX_FAST_FORWARD = 100_000;
const CHUNK = 10_000;

const args = process.argv.slice(2);
const runsAt = args.indexOf('--runs');
const runs = runsAt >= 0 ? Number.parseInt(args[runsAt + 1], 10) : 11;
if (!(runs >= 1)) throw new Error('--runs must be at least 1');

await init();
const alice = await Client.inMemory();
const bob = await Client.inMemory();
const [{ bundle }] = await bob.generatePrekeys(1);
await alice.createSession('bob', bundle);
await bob.decrypt('alice', await alice.encrypt('bob', 'hello'));
await alice.decrypt('bob', await bob.encrypt('alice', 'hi'));
// Bob's chain for Alice's current ratchet key is at 0: skip exactly MAX_FAST_FORWARD.
for (let sent = 0; sent < MAX_FAST_FORWARD; sent += CHUNK) {
  await alice.encryptBatch(Array.from({ length: Math.min(CHUNK, MAX_FAST_FORWARD - sent) }, () => ({ sessionId: 'bob', plaintext: 'never delivered' })));
}
const genuine = await alice.encrypt('bob', 'the one that arrives');
const forged = Uint8Array.from(genuine);
forged[forged.length - 1] ^= 1;
const bobIdentity = await bob.exportIdentity();
const bobSession = await bob.exportSession('alice');

async function freshBob() {
  const c = await Client.inMemory();
  await c.importIdentity(bobIdentity);
  await c.importSession('alice', bobSession);
  return c;
}

const times = { forged: [], genuine: [] };
for (let i = 0; i < runs; i++) {
  for (const [name, envelope] of [['forged', forged], ['genuine', genuine]]) {
    const c = await freshBob();
    const start = performance.now();
    let ok;
    try {
      ok = new TextDecoder().decode(await c.decrypt('alice', envelope)) === 'the one that arrives';
    } catch (e) {
      if (!(e instanceof ProteusError)) throw e;
      ok = false;
    }
    times[name].push(performance.now() - start);
    if (ok !== (name === 'genuine')) throw new Error(`${name}: unexpected outcome`);
    await c.close();
  }
}

const r = (x) => Math.round(x * 1000) / 1000;
for (const [name, ts] of Object.entries(times)) {
  const s = [...ts].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
  console.log(JSON.stringify({ impl: 'ours-wasm', case: name, gap: MAX_FAST_FORWARD, median_ms: r(median), min_ms: r(s[0]), max_ms: r(s[s.length - 1]), runs: s.length }));
}
