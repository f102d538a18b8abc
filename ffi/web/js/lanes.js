// `@proteus-engine/web/lanes`: the opt-in of the lanes module while it was a second, larger
// module. It is the package's only module now (README, "The module"), so this entry loads that
// module and is kept for code written against it.

import { init } from './init.js';

/** The package's module URL (a file: URL in Node), the one init() loads by default. */
export const lanesWasm = new URL('./proteus_web_bg.wasm', import.meta.url);

/** Loads the package's module in this realm (page, worker or Node thread): init(). */
export function initLanes() {
  return init();
}
