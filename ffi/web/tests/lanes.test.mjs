// `@proteus-engine/web/lanes`, the opt-in of the lanes module while it was a second module: the
// package has one module now, the lanes one, and this entry loads that same module. Each case
// runs in a fresh Node process (a realm loads one module).
// Run: node --test tests/ (after ./build.sh).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const pkg = new URL('../pkg/', import.meta.url);
const moduleBytes = readFileSync(new URL('proteus_web_bg.wasm', pkg));

/** Runs an ES module body in a new Node process; returns its stdout. */
function inNewProcess(body) {
  const env = { ...process.env, NODE_OPTIONS: '' };
  const prelude = `
    const instantiate = WebAssembly.instantiate;
    let bytes;
    WebAssembly.instantiate = (source, ...rest) => {
      if (ArrayBuffer.isView(source)) bytes ??= source.byteLength;
      return instantiate(source, ...rest);
    };
    const pkg = ${JSON.stringify(pkg.href)};
    const { Client, init } = await import(pkg + 'index.js');
    const { initLanes, lanesWasm } = await import(pkg + 'lanes.js');
  `;
  // A module file rather than `--input-type=module -e`, which Deno's Node command line ignores.
  const dir = mkdtempSync(join(tmpdir(), 'proteus-lanes-'));
  const file = join(dir, 'case.mjs');
  writeFileSync(file, prelude + body);
  try {
    return execFileSync(process.execPath, [file], { env, encoding: 'utf8' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('initLanes() loads the package module, and the API works on it', () => {
  const out = inNewProcess(`
    await initLanes();
    const alice = await Client.inMemory();
    const bob = await Client.inMemory();
    const [{ bundle }] = await bob.generatePrekeys(1);
    await alice.createSession('bob', bundle);
    const envelopes = [];
    for (let i = 0; i < 9; i++) envelopes.push({ sessionId: 'alice', envelope: await alice.encrypt('bob', 'm' + i) });
    const results = await bob.decryptBatch(envelopes);
    console.log(JSON.stringify({ bytes, href: lanesWasm.href, texts: results.map((r) => new TextDecoder().decode(r.plaintext)) }));
  `);
  const { bytes, href, texts } = JSON.parse(out);
  assert.equal(bytes, moduleBytes.length, 'the module instantiated is proteus_web_bg.wasm');
  assert.equal(href, new URL('proteus_web_bg.wasm', pkg).href);
  assert.deepEqual(texts, Array.from({ length: 9 }, (_, i) => 'm' + i));
});

test('initLanes() after the module loaded resolves: it is the same module', () => {
  const out = inNewProcess(`
    await init();
    await initLanes();
    await Client.inMemory();
    console.log(bytes);
  `);
  assert.equal(Number(out), moduleBytes.length);
});

test('the old module name is mapped to the module in the manifest, not shipped as a file', () => {
  const manifest = JSON.parse(readFileSync(new URL('package.json', pkg), 'utf8'));
  assert.equal(manifest.exports['./proteus_web_lanes_bg.wasm'], './proteus_web_bg.wasm');
  assert.deepEqual(manifest.files.filter((f) => f.endsWith('.wasm')), ['proteus_web_bg.wasm']);
});
