// The package as an application bundles it: the packed tarball installed into a project outside
// the repository, bundled for the browser by esbuild (the .wasm copied next to the bundle, where
// the package looks for it), and run in headless Chromium against a peer in Node.
// Run: node --test tests/bundler/esbuild.mjs (after ./build.sh).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFile, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { Client } from '../../pkg/index.js';
import { launch } from '../support/browser.mjs';
import { serve } from '../support/serve.mjs';

const pkg = fileURLToPath(new URL('../../pkg/', import.meta.url));
let project;
let server;
let browser;

const ENTRY = `
import { Client } from '@proteus-engine/web';

// A page of the application: a client in IndexedDB that publishes a prekey and reads a message.
let me;
window.prekey = async () => {
  me = await Client.open('bundled');
  const [{ bundle }] = await me.generatePrekeys(1);
  return Array.from(bundle);
};
window.receive = async (envelope) => {
  const [result] = await me.decryptBatch([{ sessionId: 'peer', envelope: new Uint8Array(envelope) }]);
  return { text: new TextDecoder().decode(result.plaintext), sender: result.sender };
};
window.ready = true;
`;

before(async () => {
  project = await mkdtemp(path.join(tmpdir(), 'proteus-bundled-'));
  execFileSync('npm', ['pack', '--pack-destination', project, '--silent'], { cwd: pkg });
  const [tarball] = (await readdir(project)).filter((f) => f.endsWith('.tgz'));
  execFileSync('npm', ['init', '-y'], { cwd: project, stdio: 'ignore' });
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--silent', `./${tarball}`], { cwd: project, stdio: 'ignore' });
  await writeFile(path.join(project, 'entry.js'), ENTRY);
  await writeFile(path.join(project, 'index.html'), '<!doctype html><script type="module" src="dist/entry.js"></script>\n');
  server = await serve(project);
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
  if (project) await rm(project, { recursive: true, force: true });
});

test('esbuild bundles the package for the browser, and the bundle runs a session', async () => {
  const result = await esbuild.build({
    absWorkingDir: project,
    entryPoints: ['entry.js'],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    outdir: 'dist',
    logLevel: 'silent',
  });
  assert.deepEqual(result.errors, []);
  // esbuild leaves `new URL('proteus_web_bg.wasm', import.meta.url)` alone: the file goes next to
  // the bundle, as for any asset.
  await copyFile(
    path.join(project, 'node_modules/@proteus-engine/web/proteus_web_bg.wasm'),
    path.join(project, 'dist/proteus_web_bg.wasm'),
  );

  const page = await browser.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  await page.goto(`${server.url}/index.html`);
  await page.waitForFunction(() => window.ready === true);
  const bundle = await page.evaluate(() => window.prekey());
  const peer = await Client.inMemory();
  await peer.createSession('bundled', new Uint8Array(bundle));
  const envelope = await peer.encrypt('bundled', 'hello, bundle');
  const answer = await page.evaluate((e) => window.receive(e), Array.from(envelope));
  assert.deepEqual(answer, { text: 'hello, bundle', sender: await peer.fingerprint() });
  assert.deepEqual(errors, []);
  await page.close();
});
