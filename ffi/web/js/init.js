// Loading the wasm module, once per JS realm.

import initWasm from './proteus_web.js';

let ready;
let initialised = false;
/** The module's exports once loaded (its `memory`, where toWasmInput writes a batch). */
let exports;

function isNode() {
  return typeof process === 'object' && typeof process.versions?.node === 'string' && typeof window === 'undefined';
}

/** The default module: the .wasm next to this one. */
const DEFAULT_WASM = new URL('./proteus_web_bg.wasm', import.meta.url);
/** The href of the file: or http(s): URL the module came from (undefined for bytes, a Response, ...). */
let loadedFrom;

/** A URL (or URL string) to read from disk in Node, where fetch cannot read file: URLs. */
function fileUrl(source) {
  if (source instanceof URL) return source.protocol === 'file:' ? source : undefined;
  return typeof source === 'string' && source.startsWith('file:') ? new URL(source) : undefined;
}

/**
 * Loads the wasm module (once). Optional: Client.open / Client.inMemory call it. `input` is what
 * wasm-bindgen's init takes (URL, Response, bytes, WebAssembly.Module); by default the .wasm
 * next to this module. In Node a file: URL (the default, or `lanesWasm` of ./lanes.js) is read
 * from disk. The first call in a realm decides which module loads.
 */
export function init(input) {
  ready ??= (async () => {
    let source = input;
    const file = isNode() ? fileUrl(source ?? DEFAULT_WASM) : undefined;
    if (file !== undefined) {
      // Not a literal: bundlers for the browser must not try to resolve a Node module (the
      // comments keep webpack and Vite from trying too). tests/bundler checks it with esbuild.
      const fsModule = 'node:fs/promises';
      const { readFile } = await import(/* webpackIgnore: true */ /* @vite-ignore */ fsModule);
      source = await readFile(file);
    }
    exports = await initWasm(source === undefined ? undefined : { module_or_path: source });
    const from = input ?? DEFAULT_WASM;
    loadedFrom = from instanceof URL || typeof from === 'string' ? String(from) : undefined;
    initialised = true;
  })().catch((e) => {
    ready = undefined;
    throw e;
  });
  return ready;
}

/** The href of the URL the loaded module came from, when it came from a URL (after init). */
export function loadedWasmUrl() {
  return loadedFrom;
}

/** The module's memory (after init). */
export function wasmMemory() {
  return exports.memory;
}

export function requireInit() {
  if (!initialised) throw new Error('call `await init()` first');
}

