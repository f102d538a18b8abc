// The package for browsers (the "browser" export condition, which bundlers use): the web
// package's wasm build, with `backend` as in index.js. No Node module is imported.

export * from './wasm/index.js';

/** Which implementation runs: always the wasm build in a browser. */
export const backend = 'wasm';
