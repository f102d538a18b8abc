// Types of remote.js: a page driving clients that live in a dedicated Worker (worker.js).
import type { BatchResult, OpenOptions, OutgoingMessage, PrekeyBundle, QueuedMessage } from './index.js';
import type { ClientPortTarget } from './worker.js';

/** The options of Client.open that can be posted to a worker. */
export type RemoteOpenOptions = Omit<OpenOptions, 'indexedDB' | 'locks'>;

/** The page's end of a worker that called serveClient(): Client's static methods, remotely. */
export interface WorkerConnection {
  /**
   * Opens (or creates, unless `create` is false) the client stored in IndexedDB under `name`,
   * in the worker. The page asks for persistent storage unless `persist` is false.
   */
  open(name: string, options?: RemoteOpenOptions): Promise<RemoteClient>;
  /** A client in the worker whose records live in memory only. */
  inMemory(options?: Pick<OpenOptions, 'wasm'>): Promise<RemoteClient>;
  /** Deletes the IndexedDB database of store `name` (clients on it must be closed). */
  deleteStore(name: string): Promise<void>;
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
export class RemoteClient {
  private constructor();
  readonly created: boolean;
  readonly persisted: Promise<boolean | undefined>;

  fingerprint(): Promise<string>;
  identityKey(): Promise<Uint8Array>;
  sign(message: Uint8Array | string): Promise<Uint8Array>;
  setMaxCounterGap(gap: number): Promise<void>;
  generatePrekeys(n: number): Promise<PrekeyBundle[]>;
  lastResortBundle(): Promise<Uint8Array>;
  prekeyBundle(id: number): Promise<Uint8Array>;
  prekeysRemaining(): Promise<number>;
  createSession(sessionId: string, bundle: Uint8Array): Promise<void>;
  hasSession(sessionId: string): Promise<boolean>;
  sessionIds(): Promise<string[]>;
  remoteFingerprint(sessionId: string): Promise<string>;
  deleteSession(sessionId: string): Promise<void>;
  encrypt(sessionId: string, plaintext: Uint8Array | string): Promise<Uint8Array>;
  encryptBatch(messages: OutgoingMessage[]): Promise<Uint8Array[]>;
  decrypt(sessionId: string, envelope: Uint8Array): Promise<Uint8Array>;
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
  ): Promise<BatchResult[]>;
  importIdentity(identity: Uint8Array): Promise<void>;
  importPrekey(prekey: Uint8Array): Promise<number>;
  importSession(sessionId: string, session: Uint8Array): Promise<void>;
  exportIdentity(): Promise<Uint8Array>;
  exportSession(sessionId: string): Promise<Uint8Array>;
  /** Closes the client in the worker (after its calls); the worker keeps running. */
  close(): Promise<void>;
}
