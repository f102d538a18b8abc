// Types of remote.js: a page driving clients that live in a dedicated Worker (worker.js).
// A RemoteClient has the methods of Client and the connection its static calls, with the same
// types (they are Client's), so both follow Client as it grows.
import type { BatchResult, BatchResults, Client, LogLevel, OpenOptions, QueuedMessage } from './index.js';
import type { ClientPortTarget } from './worker.js';

/** The options of Client.open that can be posted to a worker. */
export type RemoteOpenOptions = Omit<OpenOptions, 'indexedDB' | 'locks'>;

/**
 * The page's end of a worker that called serveClient(): Client's static calls (deleteStore, …)
 * and the module functions, each answered by the worker.
 */
export interface WorkerConnection extends Omit<typeof Client, 'prototype' | 'open' | 'inMemory'> {
  /**
   * Opens (or creates, unless `create` is false) the client stored in IndexedDB under `name`,
   * in the worker. The page asks for persistent storage unless `persist` is false.
   */
  open(name: string, options?: RemoteOpenOptions): Promise<RemoteClient>;
  /** A client in the worker whose records live in memory only. */
  inMemory(options?: Pick<OpenOptions, 'wasm' | 'identityPinning'>): Promise<RemoteClient>;
  /** setLogger for the worker: its package's log lines come to `logger` on this side. */
  setLogger(logger: ((level: LogLevel, message: string) => void) | null, level?: LogLevel): Promise<void>;
  /** messageId(envelope), computed in the worker. */
  messageId(envelope: Uint8Array): Promise<string>;
  /** prekeyMessageFingerprint(envelope), computed in the worker. */
  prekeyMessageFingerprint(envelope: Uint8Array): Promise<string | undefined>;
  /** bundleFingerprint(bundle), computed in the worker. */
  bundleFingerprint(bundle: Uint8Array): Promise<string>;
}

/** Connects to a Worker (or a MessagePort) whose script called serveClient(). */
export function connectWorker(worker: Worker | MessagePort | ClientPortTarget): WorkerConnection;

/**
 * A client living in a worker, with Client's methods: same arguments, same Promises, same
 * errors (ProteusError with the native code and kind).
 */
export interface RemoteClient extends Omit<Client, 'decryptBatch' | 'close'> {}
export class RemoteClient {
  private constructor();
  /**
   * Client.decryptBatch, run in the worker. The results reach the page in chunks while the
   * worker decrypts (`done` of `total`: a progress bar can move during the batch). The batch
   * commits only once `onMessage` took every result and its promises resolved; a throw or a
   * rejection fails it with CallbackFailed (121, the page's error as `cause`), false with
   * BatchAborted (108), and nothing is committed. While it waits for them, other calls on the
   * client fail with ClientBusy (120).
   */
  decryptBatch(
    messages: QueuedMessage[],
    onMessage?: (result: BatchResult, done: number, total: number) => boolean | void | Promise<boolean | void>,
  ): Promise<BatchResults>;
  /** Closes the client in the worker (after its calls); the worker keeps running. */
  close(): Promise<void>;
}
