// Types of the Node package (index.js): the web package's API and types (wasm/index.d.ts), with
// Client.open on a file path and the native store's options.
/// <reference lib="esnext.disposable" />

import type { Client as WebClient } from './wasm/index.js';

// The codes, ProteusError, the family guards, BatchResult, FanoutResult, … as in the web package.
export * from './wasm/index.js';

/** Which implementation runs: the native addon, or the wasm build where no addon exists. */
export const backend: 'native' | 'wasm';

export interface OpenOptions {
  /**
   * Whether to create the store, with a new identity, if there is none (default true). With
   * false, a missing store fails with StoreNotFound (504) and nothing is created.
   */
  create?: boolean;
  /**
   * Seal every record with this key (32 bytes; a new store is created sealed). A sealed store
   * opened without its key fails with StoreKeyRequired (510), with another key WrongStoreKey
   * (508), a plain store with a key StoreNotSealed (509): nothing is changed.
   */
  storeKey?: Uint8Array;
  /**
   * The threads of one batch (decryptBatch, encryptFor), an integer from 1 to 256 (RangeError
   * otherwise): its independent work (different sessions, the opening of messages, a fan-out's
   * recipients) runs on that many, with the same results, order and single commit as one.
   * Default: the processor's parallelism, at most 4. No effect on the wasm fallback.
   */
  batchThreads?: number;
  /**
   * Identity pinning (default false): the first identity seen for a session id is pinned, and a
   * PreKeyMessage or a bundle of another identity is refused with RemoteIdentityChanged (204),
   * changing nothing, until acceptIdentity. Not stored: give it every time the store is opened,
   * in every process that opens it. Not a boolean: TypeError.
   */
  identityPinning?: boolean;
  /**
   * The app's count of the store's commits, kept where a restored copy of the store does not
   * roll it back. With it, a store restored from an older copy is refused with StoreRolledBack
   * (511), when it opens and at every later call, and never wiped. `load()` is awaited once, at
   * open; `store(count)` is called after each commit, without waiting for it. On one machine a
   * counter in another file only helps against a copy of the store alone: see the README.
   */
  commitCounter?: CommitCounter;
}

/** Where the app keeps its count of the store's commits (see OpenOptions.commitCounter). */
export interface CommitCounter {
  /** The count stored last, 0 if none. */
  load(): number | Promise<number>;
  store(count: number): void | Promise<void>;
}

/**
 * A Proteus client: the web package's Client (the same methods and types). Natively its store is
 * one SQLite file, which several processes may use at once.
 */
export type Client = WebClient;
export const Client: {
  /**
   * Opens (or creates, with a new identity, unless `create` is false) the store at `path` (a
   * file). Needs the native backend: the wasm fallback has no file store.
   */
  open(path: string, options?: OpenOptions): Promise<Client>;
  /** A client whose records live in memory only. */
  inMemory(options?: Pick<OpenOptions, 'batchThreads' | 'identityPinning'>): Promise<Client>;
  /** Deletes the store at `path` (its clients must be closed). */
  deleteStore(path: string): Promise<void>;
  /**
   * Seals every record of the existing plain store at `path` with `storeKey`, in one
   * transaction. StoreNotFound (504) if there is none.
   */
  sealStore(path: string, storeKey: Uint8Array): Promise<void>;
  /** Seals the store at `path` with `newKey` instead of `oldKey`, in one transaction. */
  rekeyStore(path: string, oldKey: Uint8Array, newKey: Uint8Array): Promise<void>;
};

/** The id batch results carry for an envelope: lowercase hex of its MAC. */
export function messageId(envelope: Uint8Array): string;
/** The identity fingerprint in a prekey bundle. */
export function bundleFingerprint(bundle: Uint8Array): string;
/** The sender's identity fingerprint in a PreKeyMessage envelope; undefined for other messages. */
export function prekeyMessageFingerprint(envelope: Uint8Array): string | undefined;
