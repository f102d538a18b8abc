// The opt-in lanes build (`@proteus-engine/web/lanes`): initLanes() loads
// pkg/proteus_web_lanes_bg.wasm (its bytes, not the default's), under the same API; the first
// module loaded in a realm is the one it keeps, and initLanes() says so rather than run the
// default. Each case runs in a fresh Node process (a realm loads one module).
// Run: node --test tests/ (after ./build.sh).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { test } from 'node:test';

const pkg = new URL('../pkg/', import.meta.url);
const lanesBytes = statSync(new URL('proteus_web_lanes_bg.wasm', pkg)).size;
const defaultBytes = statSync(new URL('proteus_web_bg.wasm', pkg)).size;

/** Runs an ES module body in a new Node process (without the suite's preload); returns its stdout. */
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
  return execFileSync(process.execPath, ['--input-type=module', '-e', prelude + body], { env, encoding: 'utf8' });
}

test('the two modules differ (the lanes build is the larger)', () => {
  assert.ok(lanesBytes > defaultBytes, `lanes ${lanesBytes} bytes, default ${defaultBytes}`);
});

test('initLanes() loads the lanes module, and the API works on it', () => {
  const out = inNewProcess(`
    await initLanes();
    const alice = await Client.inMemory();
    const bob = await Client.inMemory();
    const [{ bundle }] = await bob.generatePrekeys(1);
    await alice.createSession('bob', bundle);
    const envelopes = [];
    for (let i = 0; i < 9; i++) envelopes.push({ sessionId: 'alice', envelope: await alice.encrypt('bob', 'm' + i) });
    const results = await bob.decryptBatch(envelopes);
    console.log(JSON.stringify({ bytes, texts: results.map((r) => new TextDecoder().decode(r.plaintext)) }));
  `);
  const { bytes, texts } = JSON.parse(out);
  assert.equal(bytes, lanesBytes, 'the module instantiated is proteus_web_lanes_bg.wasm');
  assert.deepEqual(texts, Array.from({ length: 9 }, (_, i) => 'm' + i));
});

test('without the opt-in, the default module loads', () => {
  const out = inNewProcess(`await Client.inMemory(); console.log(bytes);`);
  assert.equal(Number(out), defaultBytes);
});

test('init(lanesWasm) is the same opt-in as initLanes()', () => {
  const out = inNewProcess(`await init(lanesWasm); await initLanes(); console.log(bytes);`);
  assert.equal(Number(out), lanesBytes);
});

test('initLanes() after the default module loaded rejects (it cannot swap modules)', () => {
  const out = inNewProcess(`
    await init();
    const error = await initLanes().then(() => undefined, (e) => e.message);
    console.log(JSON.stringify({ bytes, error }));
  `);
  const { bytes, error } = JSON.parse(out);
  assert.equal(bytes, defaultBytes);
  assert.match(error, /already loaded/);
});

// The suite runs twice (scripts/suites/web.sh): the second time every process preloads the lanes
// module (tests/support/lanes-preload.mjs, PROTEUS_WEB_WASM=lanes). This process runs on the
// module of its run: the preload's bytes and the URL the package loaded agree.
test('this process runs on the module of the suite\'s run', async () => {
  const { init, loadedWasmUrl } = await import(new URL('init.js', pkg).href);
  await init();
  const lanes = process.env.PROTEUS_WEB_WASM === 'lanes';
  assert.equal(loadedWasmUrl(), new URL(lanes ? 'proteus_web_lanes_bg.wasm' : 'proteus_web_bg.wasm', pkg).href);
  if (lanes) assert.equal(globalThis.__proteusWasmBytes, lanesBytes);
});
