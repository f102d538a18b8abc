// The web package's API surface against the one list every binding follows (ffi/api-surface.json):
// a method added here and not in the list (or the reverse) fails, in the JS and in its types.
// Run: node --test tests/ (after ./build.sh).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import * as pkg from '../pkg/index.js';

const surface = JSON.parse(readFileSync(new URL('../../api-surface.json', import.meta.url), 'utf8'));
const types = readFileSync(new URL('../pkg/index.d.ts', import.meta.url), 'utf8');
const codeTypes = readFileSync(new URL('../pkg/codes.d.ts', import.meta.url), 'utf8');
const codes = JSON.parse(readFileSync(new URL('../../error-codes.json', import.meta.url), 'utf8')).codes;

/**
 * The package's own plumbing, which the list leaves to each language: loading the wasm, the error
 * class and its family guards, the code constants and their helpers.
 */
const PLUMBING = ['init', 'isAlreadySeen', 'isEngineError', 'isDecryptError', 'isDecodeError', 'isInputError', 'isSystemError'];
const CLASSES = ['Client', 'ProteusError'];

const sorted = (names) => [...names].sort();
const functionsOf = (object) =>
  Object.getOwnPropertyNames(object).filter((n) => typeof Object.getOwnPropertyDescriptor(object, n).value === 'function');

/** The body of `class Client … { … }` in the types. */
function clientTypes() {
  const start = types.indexOf('export class Client ');
  assert.ok(start >= 0, 'index.d.ts declares class Client');
  return types.slice(start, types.indexOf('\n}\n', start));
}

test('Client: the constructors and statics of the list, and nothing else', () => {
  const statics = functionsOf(pkg.Client);
  assert.deepEqual(sorted(statics), sorted([...surface.client.constructors, ...surface.client.static]));
  const declared = [...clientTypes().matchAll(/^ {2}static (\w+)\(/gm)].map((m) => m[1]);
  assert.deepEqual(sorted(declared), sorted(statics), 'index.d.ts declares the same statics');
});

test('Client: the methods of the list, and nothing else (in the JS and in the types)', () => {
  const methods = functionsOf(pkg.Client.prototype).filter((n) => n !== 'constructor');
  assert.deepEqual(sorted(methods), sorted(surface.client.methods));
  const declared = [...clientTypes().matchAll(/^ {2}(\w+)\(/gm)].map((m) => m[1]);
  assert.deepEqual(sorted(declared), sorted(methods), 'index.d.ts declares the same methods');
  // The close protocol of the language: `await using`.
  assert.equal(typeof pkg.Client.prototype[Symbol.asyncDispose], 'function');
  assert.match(clientTypes(), /\[Symbol\.asyncDispose\]\(\): Promise<void>;/);
});

test('exported functions: those of the list, besides the plumbing named above', () => {
  const exported = Object.entries(pkg)
    .filter(([name, value]) => typeof value === 'function' && !CLASSES.includes(name))
    .map(([name]) => name);
  for (const p of PLUMBING) assert.ok(exported.includes(p), `${p} is exported (the plumbing list is current)`);
  assert.deepEqual(sorted(exported.filter((n) => !PLUMBING.includes(n))), sorted(surface.functions));
  for (const f of [...surface.functions, ...PLUMBING]) {
    const declaration = `export function ${f}(`;
    assert.ok(types.includes(declaration) || codeTypes.includes(declaration), `index.d.ts (or codes.d.ts) declares ${f}`);
  }
});

test('every code of the registry is exported with its number, in the JS and in the types', () => {
  assert.match(types, /^export \* from '\.\/codes\.js';$/m);
  const constant = (name) => name.replace(/(?!^)([A-Z])/g, '_$1').toUpperCase();
  for (const { code, name } of codes) {
    assert.equal(pkg[constant(name)], code, constant(name));
    assert.ok(codeTypes.includes(`export const ${constant(name)}: ${code};`), `codes.d.ts declares ${constant(name)}`);
  }
  assert.equal(pkg.BATCH_ABORTED, 108);
});
