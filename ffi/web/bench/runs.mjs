// What the web package's bench (bench.mjs) and the Node package's (ffi/node/bench/bench.mjs)
// share: the checks of what a run decrypted, the @wireapp/proteus runner, and the timing loop and
// its summary. Each bench keeps its own implementations and output.

import { WireClient } from '../tests/support/wire.mjs';
import { ALICE, BOB, equal } from './scenarios.mjs';

const MAX_RUNS = 31;
const MIN_RUNS = 3;
const BUDGET_MS = 3000;

/** Throws unless `got` holds the `expected` plaintexts, in order (`what`: the implementation). */
export function check(expected, got, what) {
  if (expected.length !== got.length) throw new Error(`${what}: ${got.length} results for ${expected.length} messages`);
  for (let i = 0; i < expected.length; i++) {
    if (!equal(got[i], expected[i])) throw new Error(`${what}: message ${i} did not decrypt to what was sent`);
  }
}

/**
 * The sample recipients decrypt their envelopes of each send (`sends`: envelopes per send), on a
 * client `receiverOf(sc.receiver)` of the bench's choice.
 */
export async function checkFanout(sc, sends, what, receiverOf) {
  const receiver = await receiverOf(sc.receiver);
  for (const { index, sessionId } of sc.samples) {
    for (const envelopes of sends) {
      if (!equal(await receiver.decrypt(sessionId, envelopes[index]), sc.plaintext)) {
        throw new Error(`${what}: recipient ${index} did not decrypt what was sent`);
      }
    }
  }
  await receiver.close();
}

/** One timed run of @wireapp/proteus on `sc`; a fanout's samples decrypt on `receiverOf`'s client. */
export async function runWire(sc, receiverOf) {
  if (sc.kind === 'fanout') {
    const client = WireClient.fromRecords(sc.sender);
    const warm = sc.recipients.map((id) => client.encrypt(id, sc.plaintext));
    const start = performance.now();
    const envelopes = sc.recipients.map((id) => client.encrypt(id, sc.plaintext));
    const ms = performance.now() - start;
    await checkFanout(sc, [warm, envelopes], '@wireapp/proteus', receiverOf);
    return ms;
  }
  if (sc.kind === 'queue') {
    const client = WireClient.fromRecords(sc.receiver);
    const start = performance.now();
    const plaintexts = [];
    for (const m of sc.messages) plaintexts.push(await client.decrypt(m.sessionId, m.envelope));
    const ms = performance.now() - start;
    check(sc.messages.map((m) => m.plaintext), plaintexts, '@wireapp/proteus');
    return ms;
  }
  const alice = WireClient.fromRecords(sc.alice);
  const bob = WireClient.fromRecords(sc.bob);
  const start = performance.now();
  for (let b = 0; b * sc.flipEvery < sc.plaintexts.length; b++) {
    const block = sc.plaintexts.slice(b * sc.flipEvery, (b + 1) * sc.flipEvery);
    const [sender, to, receiver, fromId] = b % 2 === 0 ? [alice, BOB, bob, ALICE] : [bob, ALICE, alice, BOB];
    const envelopes = block.map((p) => sender.encrypt(to, p));
    const got = [];
    for (const e of envelopes) got.push(await receiver.decrypt(fromId, e));
    check(block, got, '@wireapp/proteus');
  }
  return performance.now() - start;
}

function summary(times) {
  const sorted = [...times].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  const r = (x) => Math.round(x * 1000) / 1000;
  return { median_ms: r(median), min_ms: r(sorted[0]), max_ms: r(sorted[sorted.length - 1]), runs: sorted.length };
}

/**
 * `run()` (which answers its own timed milliseconds) once untimed, then `runs` times, or without
 * `runs` up to 31 times and at least 3, until 3 s passed: the median, min and max.
 */
export async function measure(run, runs) {
  await run(); // warm-up, untimed
  const times = [];
  const started = performance.now();
  while (times.length < (runs ?? MAX_RUNS)) {
    times.push(await run());
    if (runs === undefined && times.length >= MIN_RUNS && performance.now() - started > BUDGET_MS) break;
  }
  return summary(times);
}
