#!/usr/bin/env node
// Generates proteus-interop-vectors (format_version 1) files with the real @wireapp/proteus 9.13.0.
//
//   npm install && node gen-vectors.mjs [OUT_DIR] [--only name,name] [--lenient-out DIR]
//
// OUT_DIR defaults to ../vectors/generated. The format is the one described in
// tests/src/vectors.rs. All protocol work is done by the library's public API
// (IdentityKeyPair, PreKey, PreKeyBundle, Session.init_from_prekey / encrypt / init_from_message /
// decrypt, Envelope.deserialise, serialise()). Randomness: crypto.randomBytes is replaced by a
// stream keyed by "<seed>/<scenario>" and the library's CSPRNG singleton is reset at the start of
// each scenario, so a rerun gives byte-identical files. Every key-pair seed and session tag the
// library draws during an event is recorded in the event's `rng` (see common.mjs for the hooks).
// The only thing the generator does to a session besides calling the API is the format's
// `cleared_pending_prekey` (pending_prekey := null after an encrypt), used in long_chain.
// Self-check: node verify-vectors.mjs OUT_DIR (and --snapshots).
// The scenarios are in scenarios.mjs, the recorder they run on in scenario.mjs.
import fs from 'node:fs';
import path from 'node:path';
import { here, hooks, versions } from './common.mjs';
import { SEED } from './scenario.mjs';
import { LENIENT, scenarios } from './scenarios.mjs';

const argv = process.argv.slice(2);
const flag = (name) => {
  const i = argv.indexOf(name);
  if (i < 0) return undefined;
  const v = argv[i + 1];
  argv.splice(i, 2);
  return v;
};
const only = flag('--only')?.split(',');
const lenientOut = path.resolve(flag('--lenient-out') ?? path.join(here, '..', 'vectors', 'generated-lenient'));
const outDir = path.resolve(argv[0] ?? path.join(here, '..', 'vectors', 'generated'));

// ---------------------------------------------------------------------------------------------

const main = ['long_chain', 'counter_gap', 'many_ratchet_turns', 'last_resort', 'duplicates_and_outdated', 'tampering', 'offline_queue', 'wide_counters'];
const lenient = Object.keys(LENIENT);

async function writeSet(dir, names, set) {
  fs.mkdirSync(dir, { recursive: true });
  const index = {
    format: 'proteus-interop-vectors',
    format_version: 1,
    set,
    generator: { ...versions, script: 'tests/interop/gen-vectors.mjs', seed: SEED },
    scenarios: [],
  };
  const prev = fs.existsSync(path.join(dir, 'index.json')) ? JSON.parse(fs.readFileSync(path.join(dir, 'index.json'), 'utf8')) : null;
  for (const name of names) {
    if (only && !only.includes(name)) {
      const old = prev?.scenarios.find((x) => x.file === `${name}.json`);
      if (old) index.scenarios.push(old);
      continue;
    }
    const t0 = Date.now();
    const sc = await scenarios[name]();
    const json = sc.finish();
    hooks.entropy = null;
    const text = JSON.stringify(json, null, 1) + '\n';
    const file = path.join(dir, `${name}.json`);
    fs.writeFileSync(file, text);
    index.scenarios.push({
      file: `${name}.json`,
      bytes: Buffer.byteLength(text),
      messages: json.summary.messages,
      events: json.summary.events,
      decrypts_ok: json.summary.decrypts_ok,
      decrypts_rejected: json.summary.decrypts_rejected,
      errors: json.summary.errors,
    });
    console.log(`${file}: ${Buffer.byteLength(text)} bytes, ${json.summary.events} events, ${json.summary.messages} messages, ok ${json.summary.decrypts_ok}, rejected ${json.summary.decrypts_rejected} ${JSON.stringify(json.summary.errors)} (${Date.now() - t0} ms)`);
    for (const w of sc.warnings) console.log(`  note: ${w}`);
  }
  fs.writeFileSync(path.join(dir, 'index.json'), JSON.stringify(index, null, 1) + '\n');
}

await writeSet(outDir, main, 'generated');
await writeSet(lenientOut, lenient, 'generated-lenient');
