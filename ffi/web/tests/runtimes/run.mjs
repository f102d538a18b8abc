// The web package's Node tests and its consumer check under Bun and under Deno (issue 37).
//
// Run from anywhere (Node runs this script; Bun and Deno run the tests):
//   node ffi/web/tests/runtimes/run.mjs          (scripts/suites/web.sh, after the package is built)
// Bun 1.4.5 and Deno 2.9.6 come from the npm registry, pinned in this directory's package-lock.json
// (`npm ci` here; this script runs it when they are missing). The platform packages' binaries are
// run directly (@oven/bun-linux-x64/bin/bun, @deno/linux-x64-glibc/deno): .npmrc turns off the
// `bun` and `deno` packages' install scripts, which only move or copy that binary.
//
// What runs, unchanged:
//   - every tests/*.test.mjs, one process per file as `node --test` does:
//       bun test --timeout=600000 ./tests/F.test.mjs   Bun's runner implements node:test
//       deno test -A tests/F.test.mjs                   Deno maps node:test onto Deno.test
//     (not `bun F` or `deno run F`: Bun refuses node:test outside its runner, and `deno run`
//     registers the tests and runs none, exiting 0.) Each file also runs under `node --test`, the
//     reference: every test Node runs must have run under Bun and Deno too, by the same name.
//   - the consumer project: the packed tarball installed by npm into a temporary project, and
//     tests/consumer/{use,worker,lanes}.mjs run there with `bun F` and `deno run -A F`, plus
//     refused.mjs (this directory) under all three.
//
// Everything must pass except what KNOWN lists below, each with the error it must fail with and
// why: a known failure that fails otherwise, or that passes, fails the run (so the list is kept
// exact). A runtime that cannot run a file at all would be listed the same way; none is.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const web = path.resolve(here, '../..'); // ffi/web
const modules = path.join(here, 'node_modules');

const FILE_TIMEOUT_MS = 300_000; // one test file under one runtime; Node's whole run takes ~11 s

/** The failures that are expected, and why. `test` is the leaf's full name (describe > test). */
const KNOWN = [
  // None: every test file and the consumer check pass under Bun and Deno.
];

// --- the runtimes ------------------------------------------------------------------------------

const platform = `${process.platform}-${process.arch}`;
const binaries = {
  'linux-x64': { bun: '@oven/bun-linux-x64/bin/bun', deno: '@deno/linux-x64-glibc/deno' },
  'linux-arm64': { bun: '@oven/bun-linux-aarch64/bin/bun', deno: '@deno/linux-arm64-glibc/deno' },
  'darwin-x64': { bun: '@oven/bun-darwin-x64/bin/bun', deno: '@deno/darwin-x64/deno' },
  'darwin-arm64': { bun: '@oven/bun-darwin-aarch64/bin/bun', deno: '@deno/darwin-arm64/deno' },
}[platform];
if (!binaries) throw new Error(`no Bun and Deno binaries are mapped for ${platform}`);
const BUN = path.join(modules, binaries.bun);
const DENO = path.join(modules, binaries.deno);
if (!fs.existsSync(BUN) || !fs.existsSync(DENO)) {
  console.log(`installing Bun and Deno (npm ci in ${path.relative(process.cwd(), here) || '.'})`);
  execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: here, stdio: 'inherit' });
}

const env = {
  ...process.env,
  NO_COLOR: '1',
  DENO_NO_UPDATE_CHECK: '1',
  DENO_NO_PROMPT: '1',
  DO_NOT_TRACK: '1', // Bun: no crash report is sent
  NODE_OPTIONS: '',
};
const version = (bin, args) => execFileSync(bin, args, { env, encoding: 'utf8' }).split('\n')[0].trim();
const versions = {
  node: process.version,
  bun: version(BUN, ['--version']),
  deno: version(DENO, ['--version']).replace(/^deno (\S+).*/, '$1'),
};

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'proteus-runtimes-'));
const run = (bin, args, opts = {}) => {
  const start = Date.now();
  const r = spawnSync(bin, args, { env, encoding: 'utf8', timeout: FILE_TIMEOUT_MS, maxBuffer: 64 << 20, ...opts });
  return { ...r, output: `${r.stdout ?? ''}${r.stderr ?? ''}`, seconds: (Date.now() - start) / 1000 };
};

// How each runtime runs one test file, writing JUnit XML to `xml`.
const runners = {
  node: (file, xml) => run(process.execPath, ['--test', '--test-reporter=junit', `--test-reporter-destination=${xml}`, file], { cwd: web }),
  bun: (file, xml) =>
    run(BUN, ['test', '--no-install', '--timeout=600000', '--reporter=junit', `--reporter-outfile=${xml}`, `./${file}`], { cwd: web }),
  deno: (file, xml) =>
    run(DENO, ['test', '-A', '--no-lock', '--cached-only', '--node-modules-dir=manual', `--junit-path=${xml}`, file], { cwd: web }),
};

// --- JUnit XML, as each runner writes it -------------------------------------------------------

function unescape(s) {
  // Node's reporter escapes some names twice (&amp;quot;): undo until nothing changes.
  for (;;) {
    const next = s
      .replace(/&#(\d+);/g, (_, n) => String.fromCodePoint(Number(n)))
      .replace(/&#x([0-9a-f]+);/gi, (_, n) => String.fromCodePoint(parseInt(n, 16)))
      .replace(/&(lt|gt|quot|apos);/g, (_, e) => ({ lt: '<', gt: '>', quot: '"', apos: "'" })[e])
      .replace(/&amp;/g, '&');
    if (next === s) return s;
    s = next;
  }
}
const attr = (tag, name) => {
  const m = tag.match(new RegExp(`\\s${name}="([^"]*)"`));
  return m ? unescape(m[1]) : undefined;
};

/** The leaf tests of a JUnit report: Map of full name ("describe > test") -> failure text or null. */
function leaves(runtime, xml) {
  const cases = []; // [name, failure]
  const suites = [];
  let current = null;
  for (const m of xml.matchAll(/<(\/?)(testsuites|testsuite|testcase|failure|skipped)\b([^>]*?)(\/?)>|<\/failure>/g)) {
    const [whole, close, tag, , selfClosing] = m;
    if (whole === '</failure>') continue;
    if (tag === 'testsuite') {
      if (close) suites.pop();
      else if (!selfClosing) suites.push(attr(whole, 'name'));
    } else if (tag === 'testcase' && !close) {
      // Bun: the outermost suite is the file; Deno: suites are files (names carry the path).
      const path = runtime === 'node' ? suites : runtime === 'bun' ? suites.slice(1) : [];
      current = [[...path, attr(whole, 'name')].join(' > '), null];
      cases.push(current);
      if (selfClosing) current = null;
    } else if (tag === 'testcase' && close) {
      current = null;
    } else if (tag === 'failure' && !close && current) {
      const end = xml.indexOf('</failure>', m.index);
      const body = selfClosing || end < 0 ? '' : xml.slice(m.index + whole.length, end);
      current[1] = unescape(`${attr(whole, 'message') ?? ''}\n${body}`);
    } else if (tag === 'skipped' && current) {
      current[1] ??= 'skipped';
    }
  }
  // Deno reports a describe as a test whose steps are the tests: keep the leaves only.
  const names = cases.map(([n]) => n);
  return new Map(cases.filter(([n]) => !names.some((o) => o.startsWith(`${n} > `))));
}

// --- the test files ----------------------------------------------------------------------------

// `node run.mjs client.test.mjs tabs.test.mjs` runs those files only (and the consumer check).
const only = process.argv.slice(2).map((f) => path.basename(f));
const files = fs
  .readdirSync(path.join(web, 'tests'))
  .filter((f) => f.endsWith('.test.mjs') && (only.length === 0 || only.includes(f)))
  .sort();
if (only.some((f) => !files.includes(f))) throw new Error(`no such test file: ${only.filter((f) => !files.includes(f))}`);
const problems = []; // unexpected outcomes
const rows = []; // the table printed at the end
const usedKnown = new Set();
const counts = { bun: { pass: 0, known: 0 }, deno: { pass: 0, known: 0 } };

console.log(`Node ${versions.node} (reference), Bun ${versions.bun}, Deno ${versions.deno}; ${files.length} test files`);
for (const file of files) {
  const results = {};
  for (const runtime of ['node', 'bun', 'deno']) {
    const xml = path.join(work, `${runtime}-${file}.xml`);
    const r = runners[runtime](`tests/${file}`, xml);
    const report = fs.existsSync(xml) ? fs.readFileSync(xml, 'utf8') : '';
    results[runtime] = { r, tests: report ? leaves(runtime, report) : new Map() };
  }
  const reference = results.node.tests;
  if (reference.size === 0 || results.node.r.status !== 0) {
    problems.push(`node --test ${file}: ${[...reference.values()].filter(Boolean).length} failed, exit ${results.node.r.status}` +
      ` (not a runtime difference: the file fails under Node)\n${results.node.r.output.slice(-3000)}`);
  }
  for (const runtime of ['bun', 'deno']) {
    const { r, tests } = results[runtime];
    const known = [];
    const unexpected = [];
    for (const [name, failure] of tests) {
      const k = KNOWN.find((k) => k.runtime === runtime && k.file === file && k.test === name);
      if (k) usedKnown.add(k);
      if (failure === null) {
        if (k) unexpected.push(`${name}: passes, but KNOWN says it fails (${k.why}); take it off the list`);
        else counts[runtime].pass++;
      } else if (k && k.error.test(failure)) {
        known.push(name);
        counts[runtime].known++;
      } else {
        unexpected.push(`${name}: ${failure.trim().split('\n').slice(0, 12).join('\n    ')}`);
      }
    }
    for (const name of reference.keys()) if (!tests.has(name)) unexpected.push(`${name}: ran under Node, not under ${runtime}`);
    for (const name of tests.keys()) if (!reference.has(name)) unexpected.push(`${name}: ran under ${runtime}, not under Node`);
    const failed = [...tests.values()].filter((f) => f !== null).length;
    if (r.error || (r.status !== 0) !== failed > 0 || tests.size === 0) {
      unexpected.push(`exit ${r.status ?? r.signal}${r.error ? ` (${r.error.message})` : ''} with ${tests.size} tests, ${failed} failed:\n${r.output.slice(-3000)}`);
    }
    const status = unexpected.length ? 'FAIL' : known.length ? `pass, ${known.length} known failure${known.length > 1 ? 's' : ''}` : 'pass';
    rows.push([runtime, file, `${tests.size - failed}/${reference.size}`, status, `${r.seconds.toFixed(1)} s`]);
    for (const u of unexpected) problems.push(`${runtime} ${file}: ${u}`);
  }
  const [b, d] = rows.slice(-2);
  console.log(`${file.padEnd(20)} node ${String(reference.size).padStart(2)} tests | bun ${b[2]} ${b[3]} (${b[4]}) | deno ${d[2]} ${d[3]} (${d[4]})`);
}

// --- the consumer project ----------------------------------------------------------------------

console.log('\nthe consumer project: the packed tarball installed by npm, used by name');
const consumer = path.join(work, 'consumer');
fs.mkdirSync(consumer);
execFileSync('npm', ['pack', '--pack-destination', consumer, '--silent'], { cwd: path.join(web, 'pkg'), env, stdio: ['ignore', 'ignore', 'inherit'] });
const tarball = fs.readdirSync(consumer).find((f) => f.endsWith('.tgz'));
fs.writeFileSync(path.join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
execFileSync('npm', ['install', '--no-audit', '--no-fund', '--silent', `./${tarball}`], { cwd: consumer, env, stdio: 'inherit' });
const scripts = { 'use.mjs': 'consumer ok', 'worker.mjs': 'consumer in a worker ok', 'lanes.mjs': 'consumer (lanes) ok' };
for (const f of Object.keys(scripts)) fs.copyFileSync(path.join(web, 'tests/consumer', f), path.join(consumer, f));
fs.copyFileSync(path.join(here, 'refused.mjs'), path.join(consumer, 'refused.mjs'));
scripts['refused.mjs'] = 'consumer (internal module refused) ok';
const consumerRunners = {
  node: (f) => run(process.execPath, [f], { cwd: consumer }),
  bun: (f) => run(BUN, ['--no-install', f], { cwd: consumer }),
  deno: (f) => run(DENO, ['run', '-A', '--no-lock', '--cached-only', '--node-modules-dir=manual', f], { cwd: consumer }),
};
for (const [f, ok] of Object.entries(scripts)) {
  const line = [f.padEnd(20)];
  for (const runtime of f === 'refused.mjs' ? ['node', 'bun', 'deno'] : ['bun', 'deno']) {
    const r = consumerRunners[runtime](f);
    const passed = r.status === 0 && r.stdout.split('\n').includes(ok);
    const k = KNOWN.find((k) => k.runtime === runtime && k.consumer === f);
    if (k) usedKnown.add(k);
    let status;
    if (passed && !k) {
      status = 'pass';
      if (runtime !== 'node') counts[runtime].pass++;
    } else if (!passed && k && k.error.test(r.output)) {
      status = 'known failure';
      counts[runtime].known++;
    } else {
      status = 'FAIL';
      problems.push(passed
        ? `${runtime} ${f} (consumer): passes, but KNOWN says it fails (${k.why}); take it off the list`
        : `${runtime} ${f} (consumer): exit ${r.status ?? r.signal}\n${r.output.slice(-3000)}`);
    }
    if (runtime !== 'node') rows.push([runtime, `consumer ${f}`, passed ? '1/1' : '0/1', status, `${r.seconds.toFixed(1)} s`]);
    line.push(`${runtime} ${status} (${r.seconds.toFixed(1)} s)`);
  }
  console.log(line.join(' | '));
}
fs.rmSync(work, { recursive: true, force: true });

// --- what was expected and what happened -------------------------------------------------------

for (const k of KNOWN) {
  if (!usedKnown.has(k) && (!k.file || files.includes(k.file))) problems.push(`KNOWN lists ${k.runtime} ${k.file ?? k.consumer} "${k.test ?? ''}", which did not run: update the list`);
}
console.log('\nknown failures (each failed with its expected error):');
for (const k of KNOWN) console.log(`  ${k.runtime} ${k.file ?? `consumer ${k.consumer}`}${k.test ? ` "${k.test}"` : ''}: ${k.why}`);
if (problems.length) {
  console.log(`\n${problems.length} unexpected outcome(s):`);
  for (const p of problems) console.log(`\n- ${p}`);
}
const pass = counts.bun.pass + counts.deno.pass;
console.log(`\nBun ${versions.bun}: ${counts.bun.pass} passed, ${counts.bun.known} known failures; Deno ${versions.deno}: ${counts.deno.pass} passed, ${counts.deno.known} known failures`);
console.log(`bun and deno: ${pass} passed, ${problems.length} failed`);
process.exitCode = problems.length ? 1 : 0;
