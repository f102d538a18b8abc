// The opt-in build: `@proteus-engine/web/lanes`. The same API and glue as the default, with a
// module (proteus_web_lanes_bg.wasm) that opens a batch's messages four at a time in SIMD lanes
// for SHA-256: less CPU per batch, more bytes (README, "Two builds").

import { init, loadedWasmUrl } from './init.js';

/** The lanes module's URL (a file: URL in Node): for init(), `wasm` options and bundlers. */
export const lanesWasm = new URL('./proteus_web_lanes_bg.wasm', import.meta.url);

/**
 * Loads the lanes module in this realm (page, worker or Node thread); call it before any Client.
 * Rejects when the realm already loaded another module (the first init in a realm decides).
 */
export async function initLanes() {
  await init(lanesWasm);
  if (loadedWasmUrl() !== lanesWasm.href) {
    throw new Error('another wasm module is already loaded in this realm: call initLanes() before any init() or Client');
  }
}
