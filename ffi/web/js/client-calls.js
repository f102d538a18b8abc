// The methods of `Client` that the web package (index.js, over the wasm client) and the Node
// package (ffi/node/native.js, over the addon; its build copies this file into wasm/) share: the
// same argument checks, the same call of the raw client, the same result. Each class keeps how a
// call runs (its queue, closed and busy states, commits) in its own private #run, and installs
// these with defineClientCalls(this, (client, fn) => client.#run(fn)) in a static block.
//
// They become own methods of Client.prototype, as if written in the class: the API-surface tests
// and the Worker client (remote.js) list Client.prototype's own names.

import { bytes, integer, sessionId, textOrBytes } from './args.js';
import { packCryptobox, readCryptoboxSource } from './cryptobox.js';

/** The id of the last-resort prekey, which is never used up (Proteus's). */
const LAST_RESORT_PREKEY_ID = 0xffff;

/** importCryptobox's options, checked. */
function importOptions(options) {
  if (options === null || typeof options !== 'object') throw new TypeError('options must be an object');
  const { onProgress, skipBadRecords = false } = options;
  if (onProgress !== undefined && typeof onProgress !== 'function') throw new TypeError('onProgress must be a function');
  if (typeof skipBadRecords !== 'boolean') throw new TypeError('skipBadRecords must be a boolean');
  const progress = onProgress && ((done, total) => onProgress({ done, total }));
  return { progress, skipBadRecords };
}

/**
 * Defines the shared methods on `Client.prototype`. `run(client, fn)` runs `fn(raw)` on the
 * client's raw client, in its turn, and returns a Promise of its result. `readsDirectories`:
 * the raw client reads a cryptobox directory itself (the Node addon).
 */
export function defineClientCalls(Client, run, { readsDirectories = false } = {}) {
  const methods = {
    /** Our fingerprint: lowercase hex of the identity key (64 characters). */
    fingerprint() {
      return run(this, (raw) => raw.fingerprint());
    },

    /** Our identity's public key: the 32 bytes of the Ed25519 key (fingerprint() is its hex). */
    identityKey() {
      return run(this, (raw) => raw.identityKey());
    },

    /**
     * An Ed25519 signature (64 bytes) of `message` (bytes or a string, as UTF-8) by our identity
     * key, e.g. to authenticate to a server that knows identityKey().
     */
    sign(message) {
      const m = textOrBytes(message, 'message');
      return run(this, (raw) => raw.sign(m));
    },

    /** Generates `n` one-time prekeys; returns `[{id, bundle}]` for publishing. */
    generatePrekeys(n) {
      integer(n, 'n', 0xfffe);
      return run(this, (raw) => raw.generatePrekeys(n));
    },

    /**
     * Generates one-time prekeys until `target` are stored; resolves to the new ones' `[{id,
     * bundle}]`, for publishing (none if the stock is full). Ids go on from the last one handed
     * out, wrapping after 65534, so a message in flight to a used prekey never meets a new one.
     */
    topUpPrekeys(target) {
      integer(target, 'target', 0xffff);
      return run(this, (raw) => raw.topUpPrekeys(target));
    },

    /** The last-resort prekey (id 65535, never used up): `{ id, bundle }`, as generatePrekeys. */
    lastResortBundle() {
      return run(this, (raw) => raw.lastResortBundle()).then((bundle) => ({ id: LAST_RESORT_PREKEY_ID, bundle }));
    },

    /** A stored prekey: `{ id, bundle }`, as generatePrekeys. */
    prekeyBundle(id) {
      integer(id, 'id', 0xffff);
      return run(this, (raw) => raw.prekeyBundle(id)).then((bundle) => ({ id, bundle }));
    },

    /** How many one-time prekeys are left (the last-resort prekey is not counted). */
    prekeysRemaining() {
      return run(this, (raw) => raw.prekeysRemaining());
    },

    /** Starts a session with the owner of `bundle` under an id such as "user:device". */
    createSession(id, bundle) {
      sessionId(id);
      const b = bytes(bundle, 'bundle');
      return run(this, (raw) => raw.createSession(id, b));
    },

    /**
     * Replaces a session with a new one from the peer's fresh `bundle`, in one commit; resolves
     * to whether the peer's identity changed. Messages sent on the old session and not yet
     * decrypted then fail with UnknownSessionTag (205), or PreKeyNotFound (101).
     */
    resetSession(id, bundle) {
      sessionId(id);
      const b = bytes(bundle, 'bundle');
      return run(this, (raw) => raw.resetSession(id, b));
    },

    /** Whether a session with this id exists. */
    hasSession(id) {
      sessionId(id);
      return run(this, (raw) => raw.hasSession(id));
    },

    /** The ids of all sessions. */
    sessionIds() {
      return run(this, (raw) => raw.sessionIds());
    },

    /** The peer's fingerprint in a session. */
    remoteFingerprint(id) {
      sessionId(id);
      return run(this, (raw) => raw.remoteFingerprint(id));
    },

    /**
     * The fingerprint of the identity pinned for a session id (the `identityPinning` option of
     * open and inMemory), or undefined if none is.
     */
    pinnedIdentity(id) {
      sessionId(id);
      // The wasm client answers '' for none, the addon null.
      return run(this, (raw) => raw.pinnedIdentity(id)).then((fingerprint) => fingerprint || undefined);
    },

    /**
     * Pins the identity `fingerprint` names (64 hex digits, as remoteFingerprint and a batch
     * result's sender give it) for a session id, in one commit, deleting a session of another
     * identity under that id: a refused PreKeyMessage then decrypts (same message id), a refused
     * bundle makes the session with createSession. InvalidFingerprint (411) if malformed.
     */
    acceptIdentity(id, fingerprint) {
      sessionId(id);
      if (typeof fingerprint !== 'string') throw new TypeError('fingerprint must be a string');
      return run(this, (raw) => raw.acceptIdentity(id, fingerprint));
    },

    /** Deletes a session and its staged keys. */
    deleteSession(id) {
      sessionId(id);
      return run(this, (raw) => raw.deleteSession(id));
    },

    /** Encrypts for a session's peer; resolves once the advanced chain is stored. */
    encrypt(id, plaintext) {
      sessionId(id);
      const p = textOrBytes(plaintext);
      return run(this, (raw) => raw.encrypt(id, p));
    },

    /** Replaces the identity with one serialised by Wire's Proteus (only while there are no sessions). */
    importIdentity(identity) {
      const b = bytes(identity, 'identity');
      return run(this, (raw) => raw.importIdentity(b));
    },

    /** Stores a prekey serialised by Wire's Proteus; resolves to its id. */
    importPrekey(prekey) {
      const b = bytes(prekey, 'prekey');
      return run(this, (raw) => raw.importPrekey(b));
    },

    /** Stores a session serialised by Wire's Proteus under `id`. */
    importSession(id, session) {
      sessionId(id);
      const b = bytes(session, 'session');
      return run(this, (raw) => raw.importSession(id, b));
    },

    /**
     * Imports a store that Wire's cryptobox wrote — its identity, prekeys and sessions, every id
     * kept — in one commit. `source`: `{ indexedDB: name }`, `{ directory: path }` (Node) or
     * `{ records: { identity, prekeys, sessions: [{ id, bytes }] } }`. Options: `onProgress({
     * done, total })`, `skipBadRecords` (import what decodes and list the rest, rather than
     * nothing). Resolves to `{ fingerprint, prekeys, sessions, skipped, alreadyImported }`.
     */
    async importCryptobox(source, options = {}) {
      const { progress, skipBadRecords } = importOptions(options);
      if (readsDirectories && typeof source?.directory === 'string' && source.records === undefined) {
        const path = source.directory;
        return run(this, (raw) => raw.importCryptoboxDirectory(path, skipBadRecords, progress));
      }
      const packed = packCryptobox(await readCryptoboxSource(source));
      try {
        return await run(this, (raw) => raw.importCryptobox(...packed.args, skipBadRecords, progress));
      } finally {
        packed.wipe();
      }
    },

    /** The identity key pair as Wire's Proteus serialises it. It holds the secret key. */
    exportIdentity() {
      return run(this, (raw) => raw.exportIdentity());
    },

    /** A session as Wire's Proteus serialises it. It holds secret keys. */
    exportSession(id) {
      sessionId(id);
      return run(this, (raw) => raw.exportSession(id));
    },
  };
  // As a class defines its methods: writable, configurable, not enumerable.
  for (const [name, value] of Object.entries(methods)) {
    if (Object.hasOwn(Client.prototype, name)) throw new Error(`Client.prototype.${name} is defined twice`);
    Object.defineProperty(Client.prototype, name, { value, writable: true, configurable: true, enumerable: false });
  }
}
