// Which addon the package loads (load.js): the prebuild of the machine it runs on, by napi-rs's
// platform name, and the wasm build where the package has none. Run by scripts/suites/node.sh
// on x64 and by scripts/suites/arm64.sh on both x64 and arm64 (Debian's arm64 Node under
// qemu-user), with the two Linux prebuilds in the package.
//
// PROTEUS_EXPECT_PREBUILDS (space-separated platform names, e.g. "linux-x64-gnu linux-arm64-gnu"):
// the prebuilds that must be in the package; the arm64 suite sets it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { machine } from 'node:os';
import { fileURLToPath } from 'node:url';

import { loadAddon, platformTriple } from '../../load.js';

// The choice without a forced backend (this file's process only: each test file has its own).
delete process.env.PROTEUS_BACKEND;
const require = createRequire(import.meta.url);
const packageDir = fileURLToPath(new URL('../../', import.meta.url));
const prebuilds = readdirSync(packageDir)
  .map((f) => /^proteus\.(.+)\.node$/.exec(f)?.[1])
  .filter((t) => t !== undefined)
  .sort();

// An ELF file's e_machine (little-endian, at byte 18), and the values of the two Linux prebuilds.
const EM_X86_64 = 62;
const EM_AARCH64 = 183;
const elfMachine = (path) => {
  const header = readFileSync(path).subarray(0, 20);
  assert.deepEqual([...header.subarray(0, 4)], [0x7f, 0x45, 0x4c, 0x46], `${path} is not an ELF file`);
  return header.readUInt16LE(18);
};
// Which e_machine a platform name means, and which this machine runs (uname, as the kernel or
// qemu-user reports it: not process.arch, which load.js goes by).
const ARCH_MACHINE = { x64: EM_X86_64, arm64: EM_AARCH64 };
const UNAME_MACHINE = { x86_64: EM_X86_64, aarch64: EM_AARCH64 };

test("napi-rs's platform names", () => {
  assert.equal(platformTriple('linux', 'x64', false), 'linux-x64-gnu');
  assert.equal(platformTriple('linux', 'arm64', false), 'linux-arm64-gnu');
  assert.equal(platformTriple('linux', 'arm64', true), 'linux-arm64-musl');
  assert.equal(platformTriple('darwin', 'arm64'), 'darwin-arm64');
  assert.equal(platformTriple('win32', 'x64'), 'win32-x64-msvc');
});

test('the package holds the expected prebuilds, each built for the machine its name says', (t) => {
  const expected = (process.env.PROTEUS_EXPECT_PREBUILDS ?? '').split(/\s+/).filter(Boolean);
  for (const triple of expected) assert.ok(prebuilds.includes(triple), `proteus.${triple}.node is missing (found: ${prebuilds.join(', ')})`);
  assert.ok(prebuilds.length > 0, 'no prebuild in the package');
  for (const triple of prebuilds) {
    const arch = /^linux-(\w+)-gnu$/.exec(triple)?.[1];
    assert.ok(arch in ARCH_MACHINE, `a prebuild this package does not build: ${triple}`);
    assert.equal(elfMachine(`${packageDir}proteus.${triple}.node`), ARCH_MACHINE[arch], `proteus.${triple}.node`);
  }
  t.diagnostic(`prebuilds: ${prebuilds.join(', ')}`);
});

test("this process loads the prebuild of the machine it runs on, and it works", async (t) => {
  const before = new Set(Object.keys(require.cache));
  const addon = loadAddon();
  assert.notEqual(addon, undefined, `no addon loaded on ${platformTriple()}`);
  const loaded = Object.keys(require.cache).filter((k) => k.endsWith('.node') && !before.has(k));
  assert.deepEqual(loaded, [`${packageDir}proteus.${platformTriple()}.node`]);
  const own = UNAME_MACHINE[machine()];
  assert.ok(own !== undefined, `a machine the package has no prebuild for: ${machine()}`);
  assert.equal(elfMachine(loaded[0]), own, `the loaded addon is not for ${machine()}`);
  // It runs: an in-memory client, opened and closed.
  const raw = await addon.inMemory(null);
  assert.ok(!(raw instanceof addon.RawFailure), raw.message);
  await raw.close();
  t.diagnostic(`${machine()}: ${loaded[0]}`);
});

/**
 * Imports the package in one child Node once per scenario, with process.arch reading the
 * scenario's `arch` and PROTEUS_BACKEND its `backend`; returns what each import gave: the backend
 * the package chose, or `failed: ` and the error's message.
 */
function importAs(scenarios) {
  const index = new URL('../../index.js', import.meta.url).href;
  const code = `const out = [];
    for (const [i, { arch, backend }] of ${JSON.stringify(scenarios)}.entries()) {
      Object.defineProperty(process, 'arch', { value: arch, configurable: true });
      process.env.PROTEUS_BACKEND = backend ?? '';
      // A query string of its own: index.js runs again (load.js is the same module).
      try { out.push((await import(${JSON.stringify(index)} + '?' + i)).backend); }
      catch (e) { out.push('failed: ' + e.message); }
    }
    console.log(JSON.stringify(out));`;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' }));
}

test('the package chooses by platform: its own prebuild, the wasm build where it has none', () => {
  assert.equal(loadAddon('darwin-arm64'), undefined);
  assert.equal(loadAddon('linux-riscv64-gnu'), undefined);
  // The other Linux architecture's name picks the other prebuild, which the dynamic loader
  // refuses here (an ELF of another machine): the choice goes by process.arch.
  const other = process.arch === 'x64' ? 'arm64' : 'x64';
  const hasOther = prebuilds.includes(`linux-${other}-gnu`);
  const [own, wasm, riscv, riscvNative, otherArch] = importAs([
    { arch: process.arch },
    { arch: process.arch, backend: 'wasm' },
    { arch: 'riscv64' },
    { arch: 'riscv64', backend: 'native' },
    ...(hasOther ? [{ arch: other }] : []),
  ]);
  assert.equal(own, 'native');
  assert.equal(wasm, 'wasm');
  assert.equal(riscv, 'wasm');
  assert.match(riscvNative, /^failed: no native Proteus addon for linux-riscv64-gnu/);
  if (hasOther) {
    assert.match(otherArch, /^failed: /);
    assert.ok(otherArch.includes(`proteus.linux-${other}-gnu.node`), otherArch);
  }
});
