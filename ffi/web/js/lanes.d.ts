// Types of the opt-in lanes build's entry point (lanes.js): the rest of the API is index.d.ts's.

/** The lanes module's URL (a file: URL in Node): for init(), `wasm` options and bundlers. */
export declare const lanesWasm: URL;

/**
 * Loads the lanes module in this realm (page, worker or Node thread); call it before any Client.
 * Rejects when the realm already loaded another module (the first init in a realm decides).
 */
export function initLanes(): Promise<void>;
