// The Proteus client for Node.js and Electron's main process: the native addon (native.js over
// the Node-API addon, on a durable SQLite store) where a prebuilt binary exists for the
// platform, else the wasm build of the web package (wasm/, in memory, or IndexedDB when given
// one). Both have the web package's API and types, and raise the same ProteusError class.
// `backend` says which one runs; PROTEUS_BACKEND=wasm forces the wasm build.

import { webcrypto } from 'node:crypto';
import { loadAddon } from './load.js';
import * as wasm from './wasm/index.js';
import * as native from './native.js';

// The codes, ProteusError, the family guards and init: the web package's, for both backends.
export * from './wasm/index.js';

const addon = loadAddon();
if (addon !== undefined) native.useAddon(addon);
else {
  // The wasm build draws its randomness and seals stores through globalThis.crypto, which Node 18
  // defines only under --experimental-global-webcrypto (Node 19 and later always): without it
  // the module traps at its first client. Node's own Web Crypto object is what 19 puts there.
  if (globalThis.crypto === undefined) globalThis.crypto = webcrypto;
  // The wasm build's module functions need it loaded; the native ones need nothing.
  await wasm.init();
}

/** Which implementation runs: 'native' (the addon) or 'wasm'. */
export const backend = addon !== undefined ? 'native' : 'wasm';
const impl = addon !== undefined ? native : wasm;

export const Client = impl.Client;
export const messageId = impl.messageId;
export const bundleFingerprint = impl.bundleFingerprint;
export const prekeyMessageFingerprint = impl.prekeyMessageFingerprint;
export const setLogger = impl.setLogger;
