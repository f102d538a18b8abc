// Browsers get the wasm build: a bundle of the package for the browser (esbuild, from the web
// package's devDependencies) holds the wasm client and none of the Node loader.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const pkg = fileURLToPath(new URL('../..', import.meta.url));
const esbuild = fileURLToPath(new URL('../../../web/node_modules/.bin/esbuild', import.meta.url));

test('a browser bundle of the package is the wasm build, without the Node loader', () => {
  const dir = mkdtempSync(join(tmpdir(), 'proteus-node-browser-'));
  try {
    // The package by name, as an application imports it.
    const modules = join(dir, 'node_modules', '@proteus-engine');
    execFileSync('mkdir', ['-p', modules]);
    execFileSync('ln', ['-s', pkg, join(modules, 'node')]);
    writeFileSync(join(dir, 'app.mjs'), "import { Client, backend } from '@proteus-engine/node';\nglobalThis.use = [Client, backend];\n");
    execFileSync(esbuild, ['app.mjs', '--bundle', '--platform=browser', '--format=esm', '--outfile=out.js', '--log-level=error'], { cwd: dir });
    const bundle = readFileSync(join(dir, 'out.js'), 'utf8');
    assert.match(bundle, /RawJournal/);
    assert.doesNotMatch(bundle, /createRequire|proteus-engine\/node-|\.node`/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
