// Types of `@proteus-engine/web/lanes` (lanes.js), kept for code written against the opt-in lanes
// module: the package's only module is that one now. The rest of the API is index.d.ts's.

/** The package's module URL (a file: URL in Node), the one init() loads by default. */
export declare const lanesWasm: URL;

/** Loads the package's module in this realm (page, worker or Node thread): init(). */
export function initLanes(): Promise<void>;
