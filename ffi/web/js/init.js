// Loading the wasm module, once per JS realm.

import initWasm from './proteus_web.js';

let ready;
let initialised = false;
/** The module's exports once loaded (its `memory`, where toWasmInput writes a batch). */
let exports;

function isNode() {
  return typeof process === 'object' && typeof process.versions?.node === 'string' && typeof window === 'undefined';
}

/**
 * Loads the wasm module (once). Optional: Client.open / Client.inMemory call it. `input` is what
 * wasm-bindgen's init takes (URL, Response, bytes, WebAssembly.Module); by default the .wasm
 * next to this module, read from disk in Node.
 */
export function init(input) {
  ready ??= (async () => {
    let source = input;
    if (source === undefined && isNode()) {
      // Not a literal: bundlers for the browser must not try to resolve a Node module (the
      // comments keep webpack and Vite from trying too). tests/bundler checks it with esbuild.
      const fsModule = 'node:fs/promises';
      const { readFile } = await import(/* webpackIgnore: true */ /* @vite-ignore */ fsModule);
      source = await readFile(new URL('./proteus_web_bg.wasm', import.meta.url));
    }
    exports = await initWasm(source === undefined ? undefined : { module_or_path: source });
    initialised = true;
  })().catch((e) => {
    ready = undefined;
    throw e;
  });
  return ready;
}

/** The module's memory (after init). */
export function wasmMemory() {
  return exports.memory;
}

export function requireInit() {
  if (!initialised) throw new Error('call `await init()` first');
}

