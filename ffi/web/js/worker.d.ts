// Types of worker.js: clients of the package living in a dedicated Worker.
import type { OpenOptions } from './index.js';

/** Where serveClient listens: a worker's global scope, a MessagePort, or Node's parentPort. */
export type ClientPortTarget =
  | { postMessage(message: unknown, transfer: Transferable[]): void; addEventListener(type: 'message', listener: (event: MessageEvent) => void): void; start?(): void }
  | { postMessage(message: unknown, transfer: unknown[]): void; on(event: 'message', listener: (data: unknown) => void): void };

/**
 * Answers the requests of a page (connectWorker in '@proteus-engine/web/remote') arriving on
 * `scope` (default: the worker's global scope). `defaults` are options of Client.open,
 * inMemory and deleteStore that cannot be posted from the page (an IndexedDB factory, locks,
 * a compiled wasm module); the page's options win over them.
 */
export function serveClient(scope?: ClientPortTarget, defaults?: OpenOptions): void;
