// Paired A/B of two builds of the package in one Node process, on a loaded machine:
//   node bench/ab.mjs DIR_A DIR_B [--runs N] [--scenario NAME]...
// Each run times the scenario as bench.mjs does (a queue: one decryptBatch; conv10: blocks of 10
// messages encryptBatch'd by one side and decryptBatch'd by the other, 100 times) with A, then
// with B, from the same seed; the order alternates run by run. Prints per build the median and
// minimum wall time and the median CPU time of the process during the batch (less sensitive to
// other processes than wall time), and the median of the paired ratios B / A.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, converse, equal } from './scenarios.mjs';

const args = process.argv.slice(2);
const dirs = args.filter((a, i) => !a.startsWith('--') && !(args[i - 1] ?? '').startsWith('--'));
const opt = (name, fallback) => {
  const values = args.flatMap((a, i) => (a === name ? [args[i + 1]] : []));
  return values.length ? values : fallback;
};
const runs = Number(opt('--runs', ['21'])[0]);
const scenarios = opt('--scenario', ['1x1000est']);
if (dirs.length !== 2) throw new Error('usage: ab.mjs DIR_A DIR_B [--runs N] [--scenario NAME]...');
const builds = await Promise.all(dirs.map((d) => import(pathToFileURL(path.resolve(d, 'index.js')).href)));

async function clientFrom(Client, s) {
  const client = await Client.inMemory();
  await client.importIdentity(s.identity);
  for (const p of s.prekeys) await client.importPrekey(p);
  for (const [id, bytes] of s.sessions) await client.importSession(id, bytes);
  return client;
}

/** A clock of the timed part of a run: its wall time and the process's CPU time. */
function clock() {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  return () => {
    const wall = performance.now() - t0;
    const c = process.cpuUsage(c0);
    return { wall, cpu: (c.user + c.system) / 1000 };
  };
}

/** Times one run of a queue scenario: one decryptBatch. Undefined if a plaintext is wrong. */
async function runQueue(Client, sc, queue) {
  const client = await clientFrom(Client, sc.receiver);
  const stop = clock();
  const results = await client.decryptBatch(queue);
  const timed = stop();
  await client.close();
  return results.every((x, i) => equal(x.plaintext, sc.messages[i].plaintext)) ? timed : undefined;
}

/** Times one run of a conversation (conv10): the two sides take turns, a block at a time. */
async function runConversation(Client, sc) {
  const alice = await clientFrom(Client, sc.alice);
  const bob = await clientFrom(Client, sc.bob);
  let right = true;
  const stop = clock();
  await converse(sc, alice, bob, (block, results) => {
    right &&= results.every((x, i) => equal(x.plaintext, block[i]));
  });
  const timed = stop();
  await alice.close();
  await bob.close();
  return right ? timed : undefined;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const name of scenarios) {
  const sc = await build(name);
  if (sc.kind !== 'queue' && sc.kind !== 'conversation') throw new Error(`${name}: only queue scenarios and conv10`);
  const queue = sc.kind === 'queue' ? sc.messages.map((m) => ({ sessionId: m.sessionId, envelope: m.envelope })) : undefined;
  const times = [[], []];
  const cpu = [[], []];
  const ratios = [];
  for (let r = 0; r < runs + 1; r++) {
    const order = r % 2 ? [1, 0] : [0, 1];
    const wall = [0, 0];
    for (const which of order) {
      const { Client } = builds[which];
      const timed = sc.kind === 'queue' ? await runQueue(Client, sc, queue) : await runConversation(Client, sc);
      if (timed === undefined) throw new Error(`build ${'AB'[which]}: a wrong plaintext`);
      // The first run of each build is a warm-up.
      if (r > 0) {
        times[which].push(timed.wall);
        cpu[which].push(timed.cpu);
      }
      wall[which] = timed.wall;
    }
    if (r > 0) ratios.push(wall[1] / wall[0]);
  }
  for (const which of [0, 1]) {
    console.log(JSON.stringify({ build: 'AB'[which], dir: dirs[which], scenario: name, median_ms: +median(times[which]).toFixed(3), min_ms: +Math.min(...times[which]).toFixed(3), cpu_median_ms: +median(cpu[which]).toFixed(3), runs }));
  }
  console.log(JSON.stringify({ scenario: name, paired_ratio_b_over_a_median: +median(ratios).toFixed(3) }));
}
