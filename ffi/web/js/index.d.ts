// Types of the package's ES module (index.js). The wasm layer's own types are in proteus_web.d.ts.
// Symbol.asyncDispose and AsyncDisposable, for `await using` (TypeScript 5.2 or later):
/// <reference lib="esnext.disposable" />

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
import type {
  DecodeErrorKind,
  DecryptErrorKind,
  EngineErrorKind,
  ErrorCode,
  ErrorFamily,
  ErrorKind,
  InputErrorKind,
  SystemErrorKind,
} from './codes.js';

/**
 * Every failure of the client. `code` and `kind` are stable and the same as natively
 * (Rust `ClientError::code()`/`kind()`, Kotlin, Swift): 1xx engine, 2xx decryption,
 * 3xx decoding, 4xx input, 5xx system. Use of a closed client fails with ClientClosed (122);
 * bad argument types throw TypeError or RangeError.
 */
export class ProteusError extends Error {
  readonly name: 'ProteusError';
  /** The stable numeric code, e.g. 209 for DuplicateMessage. */
  readonly code: ErrorCode;
  /** The stable name of the condition, e.g. "DuplicateMessage", "SessionNotFound". */
  readonly kind: ErrorKind;
  /** The family of the code: Engine (1xx), Decrypt (2xx), Decode (3xx), Input (4xx), System (5xx). */
  readonly family: ErrorFamily;
}

/** A ProteusError of one family: its `kind` is one of the family's. */
export type FamilyError<F extends ErrorFamily, K extends ErrorKind> = ProteusError & {
  readonly family: F;
  readonly kind: K;
};
/** Whether `e` is a ProteusError of the Engine family (1xx: a call the engine refuses). */
export function isEngineError(e: unknown): e is FamilyError<'Engine', EngineErrorKind>;
/** Whether `e` is a ProteusError of the Decrypt family (2xx: a message was rejected). */
export function isDecryptError(e: unknown): e is FamilyError<'Decrypt', DecryptErrorKind>;
/** Whether `e` is a ProteusError of the Decode family (3xx: bytes did not decode). */
export function isDecodeError(e: unknown): e is FamilyError<'Decode', DecodeErrorKind>;
/** Whether `e` is a ProteusError of the Input family (4xx: an input is not acceptable). */
export function isInputError(e: unknown): e is FamilyError<'Input', InputErrorKind>;
/** Whether `e` is a ProteusError of the System family (5xx: the store, the system or a bug). */
export function isSystemError(e: unknown): e is FamilyError<'System', SystemErrorKind>;

/** A prekey's id and bundle, to publish (the same record in Kotlin and Swift). */
export interface PreKeyBundle {
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

/** What a batch did, once committed: its outcomes counted and where its time went. */
export interface BatchSummary {
  total: number;
  decrypted: number;
  /** Duplicates (209) and outdated messages (208). */
  alreadySeen: number;
  /** MessageKeyEvicted (214). */
  keyEvicted: number;
  /** The other rejections: the sum of failedByCode. */
  failed: number;
  /** The other rejections by stable code: code to count. */
  failedByCode: Record<number, number>;
  /** Milliseconds decrypting (the wasm call less the delivery). */
  decryptMs: number;
  /** Milliseconds in onMessage and waiting for its promises. */
  deliveryMs: number;
  /** Milliseconds storing the commit. */
  commitMs: number;
}

/** The results of a batch, in queue order, and its summary. */
export type BatchResults = BatchResult[] & { summary: BatchSummary };

export type LogLevel = 'off' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * Sends the package's log lines up to `level` (default 'info') to `logger`; null or 'off' turns
 * the log off (the default). Lines hold no key, plaintext, session id or fingerprint.
 */
export function setLogger(logger: ((level: LogLevel, message: string) => void) | null, level?: LogLevel): void;

/** The result of one message of a batch: a plaintext, or why not. */
export interface BatchResult {
  /**
   * Lowercase hex of the envelope's MAC: the same envelope always has the same id. Once the
   * message decrypted its MAC is verified: record the ids of messages that decrypted.
   */
  messageId: string;
  sessionId: string;
  plaintext?: Uint8Array;
  errorCode?: ErrorCode;
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

/** The result of one recipient of `encryptFor`: its envelope, or why not. */
export type FanoutResult =
  | { sessionId: string; envelope: Uint8Array; errorCode?: undefined; errorKind?: undefined }
  | { sessionId: string; envelope?: undefined; errorCode: ErrorCode; errorKind: ErrorKind };

/**
 * The key a sealed store's records are sealed with: 32 bytes (e.g. from a key server, or
 * crypto.getRandomValues), or a WebCrypto HKDF key with usage 'deriveKey', which can be
 * non-extractable and kept in IndexedDB itself:
 * `crypto.subtle.importKey('raw', bytes, 'HKDF', false, ['deriveKey'])`.
 */
export type StoreKey = Uint8Array | CryptoKey;

/** Where a store is and how to take turns on it: for deleteStore, sealStore and rekeyStore. */
export type StoreOptions = Pick<OpenOptions, 'indexedDB' | 'locks' | 'allowWithoutWebLocks'>;

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
  /**
   * Seal every record in IndexedDB with this key (WebCrypto AES-GCM; a new store is created
   * sealed). A sealed store opened without its key fails with StoreKeyRequired (510), with
   * another key WrongStoreKey (508), a plain store with a key StoreNotSealed (509): nothing is
   * changed. Seal a plain store with Client.sealStore, change the key with Client.rekeyStore.
   */
  storeKey?: StoreKey;
  /**
   * The threads of one batch (decryptBatch, encryptFor): an integer from 1 to 256, checked
   * (RangeError otherwise). The same option as natively (the Node addon, Kotlin, Swift, Rust),
   * where a batch's independent work runs on that many threads; WebAssembly has no threads,
   * so here it has no effect.
   */
  batchThreads?: number;
  /**
   * Identity pinning (default false): the first identity seen for a session id is pinned (in
   * the commit that stores the session; it outlives the session), and a PreKeyMessage or a
   * bundle (createSession, resetSession) of another identity is refused with
   * RemoteIdentityChanged (204), changing nothing, until acceptIdentity. Not stored: give it
   * every time the store is opened. Not a boolean: TypeError.
   */
  identityPinning?: boolean;
}

/**
 * A Proteus client: an identity, its prekeys and its sessions, kept in a store. Every method
 * returns a Promise; calls run one at a time, and a call that changes state resolves only once
 * the change is stored. A failed call changes nothing.
 */
export class Client implements AsyncDisposable {
  private constructor();
  /**
   * Opens (or creates, with a new identity, unless `create` is false) the client stored in
   * IndexedDB under `name`; with `storeKey`, a sealed store (see OpenOptions.storeKey). In a
   * runtime without IndexedDB (Node.js) and no `indexedDB` option, it (and deleteStore,
   * sealStore, rekeyStore) fails with StoreUnavailable (513): there, the durable store is the
   * native addon of @proteus-engine/node.
   */
  static open(name: string, options?: OpenOptions): Promise<Client>;
  /** A client whose records live in memory only. */
  static inMemory(options?: Pick<OpenOptions, 'wasm' | 'batchThreads' | 'identityPinning'>): Promise<Client>;
  /** Deletes the IndexedDB database of store `name`. */
  static deleteStore(name: string, options?: Pick<OpenOptions, 'indexedDB'>): Promise<void>;
  /**
   * Seals every record of the existing plain store `name` with `storeKey`, in one transaction.
   * StoreCorrupt (503) if it is sealed already, StoreNotFound (504) if it does not exist. Close
   * the clients on it first: they fail with StoreKeyRequired (510) from their next call.
   */
  static sealStore(name: string, storeKey: StoreKey, options?: StoreOptions): Promise<void>;
  /**
   * Seals every record of store `name` with `newKey` instead of `oldKey`, in one transaction.
   * WrongStoreKey (508) for a wrong `oldKey`, StoreNotSealed (509) for a plain store; nothing
   * is changed then.
   */
  static rekeyStore(name: string, oldKey: StoreKey, newKey: StoreKey, options?: StoreOptions): Promise<void>;

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

  generatePrekeys(n: number): Promise<PreKeyBundle[]>;
  /** The last-resort prekey (id 65535, never used up), in the shape of generatePrekeys' items. */
  lastResortBundle(): Promise<PreKeyBundle>;
  prekeyBundle(id: number): Promise<PreKeyBundle>;
  /** One-time prekeys left (the last-resort prekey not counted). */
  prekeysRemaining(): Promise<number>;
  /**
   * Whether what earlier calls deleted (a consumed prekey, used message keys) is gone from the
   * disk now. Web package: true in memory; false on IndexedDB, which keeps deleted values until
   * the browser compacts (seal the store and rotate its key with rekeyStore). Node package, native
   * store: false while another connection reads an older snapshot; the store keeps trying, and
   * this can be called again.
   */
  eraseDeleted(): Promise<boolean>;

  createSession(sessionId: string, bundle: Uint8Array): Promise<void>;
  hasSession(sessionId: string): Promise<boolean>;
  sessionIds(): Promise<string[]>;
  remoteFingerprint(sessionId: string): Promise<string>;
  deleteSession(sessionId: string): Promise<void>;
  /**
   * Deletes a session, its staged keys and the identity pinned for its id, in one commit: for a
   * peer the app is done with (a contact removed, a device logged out). The id is then as one
   * never seen: with identityPinning, the next identity seen for it is pinned anew.
   */
  forgetSession(sessionId: string): Promise<void>;
  /** The fingerprint of the identity pinned for a session id (OpenOptions.identityPinning), if any. */
  pinnedIdentity(sessionId: string): Promise<string | undefined>;
  /**
   * Pins the identity `fingerprint` names (64 hex digits, as remoteFingerprint and a batch
   * result's sender give it) for a session id, in one commit, and deletes a session of another
   * identity under it: a refused PreKeyMessage then decrypts (same message id), a refused bundle
   * makes the session with createSession. InvalidFingerprint (411) if malformed; TypeError if
   * not a string.
   */
  acceptIdentity(sessionId: string, fingerprint: string): Promise<void>;

  /** Resolves to the envelope once the advanced sending chain is stored. */
  encrypt(sessionId: string, plaintext: Uint8Array | string): Promise<Uint8Array>;
  /** One commit for all; envelopes in the order of `messages`. */
  encryptBatch(messages: OutgoingMessage[]): Promise<Uint8Array[]>;
  /**
   * Encrypts one plaintext for each session (every device of a conversation) with one commit,
   * stored before any envelope is returned: a result per recipient, in order. A missing or
   * broken session is a result with its error, not a failure of the call.
   */
  encryptFor(sessionIds: string[], plaintext: Uint8Array | string): Promise<FanoutResult[]>;
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
  ): Promise<BatchResults>;

  /**
   * Generates one-time prekeys until `target` are stored; the new ones' bundles, to publish
   * (none if the stock is full). Ids wrap around after 65534 and never meet a prekey in flight.
   */
  topUpPrekeys(target: number): Promise<PreKeyBundle[]>;
  /**
   * Replaces a session with a new one from the peer's fresh bundle, in one commit; whether the
   * peer's identity changed. Messages on the old session then fail with UnknownSessionTag (205).
   */
  resetSession(sessionId: string, bundle: Uint8Array): Promise<boolean>;
  importIdentity(identity: Uint8Array): Promise<void>;
  /** Resolves to the prekey's id. */
  importPrekey(prekey: Uint8Array): Promise<number>;
  importSession(sessionId: string, session: Uint8Array): Promise<void>;
  /**
   * Imports a store that Wire's cryptobox wrote, in one commit, keeping every id (docs/migration.md).
   * Refused (ImportIdentityMismatch, 111) if this store has another identity in use; records that
   * do not decode fail it (ImportBadRecords, 112) unless `skipBadRecords`; an unreadable source is
   * ImportSourceUnreadable (515). Importing the same store again changes nothing
   * (`alreadyImported`).
   */
  importCryptobox(source: CryptoboxSource, options?: ImportOptions): Promise<ImportReport>;
  /** Holds the secret key. */
  exportIdentity(): Promise<Uint8Array>;
  /** Holds secret keys. */
  exportSession(sessionId: string): Promise<Uint8Array>;

  /** Waits for calls in progress, wipes the keys in wasm memory and closes the store. */
  close(): Promise<void>;
  /** close(), for `await using client = await Client.open(…)`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Where a cryptobox store is. */
export type CryptoboxSource =
  /** The IndexedDB database that cryptobox kept over @wireapp/store-engine-dexie. */
  | { indexedDB: string }
  /** Node: a directory of @wireapp/store-engine-fs, or of Wire's Rust cryptobox. */
  | { directory: string }
  /** Records the application read itself, as Wire's Proteus serialised them. */
  | {
      records: {
        identity: Uint8Array;
        prekeys?: Uint8Array[];
        sessions?: { id: string; bytes: Uint8Array }[];
      };
    };

export interface ImportOptions {
  /** How far the import is: records checked, of all. */
  onProgress?: (progress: { done: number; total: number }) => void;
  /** Import the records that decode and list the others in `skipped`, rather than import nothing. */
  skipBadRecords?: boolean;
}

/** A record that was not imported. */
export interface SkippedRecord {
  table: 'keys' | 'prekeys' | 'sessions';
  /** Its id in the source (`#N`: the N-th of a list of plain records). */
  id: string;
  /** The code of the error that reading or decoding it gave, and its message. */
  code: number;
  reason: string;
}

export interface ImportReport {
  /** The fingerprint of the identity the store now has (the source's). */
  fingerprint: string;
  /** Prekeys imported (the last-resort prekey included). */
  prekeys: number;
  /** Sessions imported. */
  sessions: number;
  skipped: SkippedRecord[];
  /** The store already had the source's identity and was in use: nothing was written. */
  alreadyImported: boolean;
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
