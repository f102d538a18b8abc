// `@proteus-engine/web/lanes`: the opt-in of the lanes module while it was a second, larger
// module. It is the package's only module now (README, "The module"), so this entry loads that
// module and is kept for code written against it.

import { init, loadedWasmUrl } from './init.js';

/** The package's module URL (a file: URL in Node), the one init() loads by default. */
export const lanesWasm = new URL('./proteus_web_bg.wasm', import.meta.url);

/**
 * Loads the package's module in this realm (page, worker or Node thread), as init() does.
 * Rejects when the realm already loaded another module (the first init in a realm decides).
 */
export async function initLanes() {
  await init(lanesWasm);
  if (loadedWasmUrl() !== lanesWasm.href) {
    throw new Error('another wasm module is already loaded in this realm: call initLanes() before any init() or Client');
  }
}
