// Types of the package's ES module (index.js). The wasm layer's own types are in proteus_web.d.ts.

/** What wasm-bindgen's init takes: a URL, a Response, bytes or a compiled module. */
export type WasmSource =
  | string
  | URL
  | Request
  | Response
  | BufferSource
  | WebAssembly.Module
  | Promise<Response | BufferSource | WebAssembly.Module>;

/** Loads the wasm module once (Client.open and Client.inMemory call it). */
export function init(input?: WasmSource): Promise<void>;

/**
 * Every error code as a named constant (`DUPLICATE_MESSAGE`, `CLIENT_BUSY`, `STORE_CONFLICT`, …),
 * `ERROR_KINDS` and `isAlreadySeen(code)`, generated from the native registry. The package raises
 * these itself: CLIENT_BUSY (120, a call while a decryptBatch delivers: call again once it
 * resolved), CALLBACK_FAILED (121), BATCH_ABORTED (108), STORE_NOT_FOUND (504, open with
 * `create: false`), STORAGE_FAILURE (507, IndexedDB; the client reloads on its next call),
 * STORE_CONFLICT (512: another tab committed first, nothing was stored, call again; a failed
 * decryptBatch's results come again with the same ids) and INTERNAL (599, a bug: close and
 * reopen).
 */
export * from './codes.js';
import type { ErrorKind } from './codes.js';

/**
 * Every failure of the client. `code` and `kind` are stable and the same as natively
 * (Rust `ClientError::code()`/`kind()`, Kotlin, Swift): 1xx engine, 2xx decryption,
 * 3xx decoding, 4xx input, 5xx system. Use of a closed client throws a plain Error named
 * "ClientClosedError" instead; bad argument types throw TypeError or RangeError.
 */
export class ProteusError extends Error {
  readonly name: 'ProteusError';
  /** The stable numeric code, e.g. 209 for DuplicateMessage. */
  readonly code: number;
  /** The stable name of the condition, e.g. "DuplicateMessage", "SessionNotFound". */
  readonly kind: ErrorKind;
}

/** A one-time prekey's bundle, to publish. */
export interface PrekeyBundle {
  id: number;
  /** The bundle's CBOR, as Wire's Proteus encodes it. */
  bundle: Uint8Array;
}

export interface QueuedMessage {
  sessionId: string;
  envelope: Uint8Array;
}

export interface OutgoingMessage {
  sessionId: string;
  /** Bytes, or a string (encoded as UTF-8). */
  plaintext: Uint8Array | string;
}

/** The result of one message of a batch: a plaintext, or why not. */
export interface BatchResult {
  /**
   * Lowercase hex of the envelope's MAC: the same envelope always has the same id. Once the
   * message decrypted its MAC is verified: record the ids of messages that decrypted.
   */
  messageId: string;
  sessionId: string;
  plaintext?: Uint8Array;
  errorCode?: number;
  errorKind?: ErrorKind;
  /**
   * The message was decrypted before (DuplicateMessage 209 or OutdatedMessage 208): drop it.
   * False for MessageKeyEvicted (214): that message's key was evicted and it was never decrypted.
   */
  alreadySeen: boolean;
  /**
   * For the first messages of a session (PreKeyMessages): the fingerprint of the identity they
   * carry, when the message decrypted, or was refused because the session has another identity
   * (RemoteIdentityChanged 204: then only what the message claims). Undefined otherwise: the
   * sender is the session's peer.
   */
  sender?: string;
}

export interface OpenOptions {
  /** The IDBFactory to use (default: the global indexedDB). */
  indexedDB?: IDBFactory;
  /** The LockManager to use (default: navigator.locks). */
  locks?: { request<T>(name: string, callback: () => Promise<T>): Promise<T> };
  /**
   * Open even without Web Locks (navigator.locks is missing on plain-http origins other than
   * localhost): tabs then do not take turns. No message key is reused (every commit is a
   * compare-and-swap), but calls racing another tab fail more often with StoreConflict (512)
   * and decryptBatch results may be delivered again. Default false: open refuses with an
   * Error named "WebLocksUnavailableError".
   */
  allowWithoutWebLocks?: boolean;
  /**
   * Whether to create the store, with a new identity, if there is none (default true). With
   * false, a missing store (never made, deleted, or evicted by the browser) fails with
   * StoreNotFound (504) and nothing is created.
   */
  create?: boolean;
  /** Whether to ask for persistent storage, navigator.storage.persist() (default true). */
  persist?: boolean;
  /** Where to load the wasm from (default: next to this module). */
  wasm?: WasmSource;
}

/**
 * A Proteus client: an identity, its prekeys and its sessions, kept in a store. Every method
 * returns a Promise; calls run one at a time, and a call that changes state resolves only once
 * the change is stored. A failed call changes nothing.
 */
export class Client {
  private constructor();
  /**
   * Opens (or creates, with a new identity, unless `create` is false) the client stored in
   * IndexedDB under `name`.
   */
  static open(name: string, options?: OpenOptions): Promise<Client>;
  /** A client whose records live in memory only. */
  static inMemory(options?: Pick<OpenOptions, 'wasm'>): Promise<Client>;
  /** Deletes the IndexedDB database of store `name`. */
  static deleteStore(name: string, options?: Pick<OpenOptions, 'indexedDB'>): Promise<void>;

  /**
   * Whether opening found no identity and made a new one (always true in memory). An app that
   * had an identity on this device and sees true lost its store: tell the user.
   */
  readonly created: boolean;
  /**
   * Whether the browser granted persistent storage when asked at open (it then does not evict
   * the store under storage pressure); undefined where unknown (Node, memory, not asked). Not
   * awaited by open: a browser may ask the user.
   */
  readonly persisted: Promise<boolean | undefined>;

  /** Our fingerprint: lowercase hex of the identity key. */
  fingerprint(): Promise<string>;
  /** Our identity's public key: the 32 bytes of the Ed25519 key. */
  identityKey(): Promise<Uint8Array>;
  /** An Ed25519 signature (64 bytes) of `message` (a string is signed as UTF-8) by our identity key. */
  sign(message: Uint8Array | string): Promise<Uint8Array>;
  /**
   * Raises how many skipped-message keys each chain keeps (default 1000, up to 10,000). A message
   * may skip up to 100,000 whatever this is; older skipped keys are evicted (MessageKeyEvicted 214).
   */
  setMaxCounterGap(gap: number): Promise<void>;

  generatePrekeys(n: number): Promise<PrekeyBundle[]>;
  /** The bundle of the last-resort prekey (id 65535). */
  lastResortBundle(): Promise<Uint8Array>;
  prekeyBundle(id: number): Promise<Uint8Array>;
  /** One-time prekeys left (the last-resort prekey not counted). */
  prekeysRemaining(): Promise<number>;

  createSession(sessionId: string, bundle: Uint8Array): Promise<void>;
  hasSession(sessionId: string): Promise<boolean>;
  sessionIds(): Promise<string[]>;
  remoteFingerprint(sessionId: string): Promise<string>;
  deleteSession(sessionId: string): Promise<void>;

  /** Resolves to the envelope once the advanced sending chain is stored. */
  encrypt(sessionId: string, plaintext: Uint8Array | string): Promise<Uint8Array>;
  /** One commit for all; envelopes in the order of `messages`. */
  encryptBatch(messages: OutgoingMessage[]): Promise<Uint8Array[]>;
  decrypt(sessionId: string, envelope: Uint8Array): Promise<Uint8Array>;
  /**
   * Decrypts a queue with one commit. `onMessage` gets each result before the commit (store
   * it there, keyed by messageId); returning false stops the batch (BatchAborted, 108) and a
   * throw stops it too (CallbackFailed, 121): then nothing is committed. It may return a
   * Promise (an IndexedDB write): the commit waits for all of them, and a rejection
   * (CallbackFailed) or a resolution to false (BatchAborted) means nothing is committed.
   * Until those promises settle the client is busy: calls on it fail with ClientBusy (120).
   * If another tab committed in the meantime, the batch fails with StoreConflict (512): nothing
   * is committed and the messages decrypt again later, with the same message ids.
   */
  decryptBatch(
    messages: QueuedMessage[],
    onMessage?: (
      result: BatchResult,
      done: number,
      total: number,
    ) => boolean | void | Promise<boolean | void>,
  ): Promise<BatchResult[]>;

  importIdentity(identity: Uint8Array): Promise<void>;
  /** Resolves to the prekey's id. */
  importPrekey(prekey: Uint8Array): Promise<number>;
  importSession(sessionId: string, session: Uint8Array): Promise<void>;
  /** Holds the secret key. */
  exportIdentity(): Promise<Uint8Array>;
  /** Holds secret keys. */
  exportSession(sessionId: string): Promise<Uint8Array>;

  /** Waits for calls in progress, wipes the keys in wasm memory and closes the store. */
  close(): Promise<void>;
}

/**
 * The id batch results carry for an envelope: lowercase hex of its MAC (of SHA-256 of the bytes
 * if they are not an envelope). Needs init().
 */
export function messageId(envelope: Uint8Array): string;
/** The identity fingerprint in a prekey bundle. Needs init(). */
export function bundleFingerprint(bundle: Uint8Array): string;
/** The sender's identity fingerprint in a PreKeyMessage envelope; undefined for other messages. */
export function prekeyMessageFingerprint(envelope: Uint8Array): string | undefined;
