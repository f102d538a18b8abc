// The methods of `Client` that the web package (index.js, over the wasm client) and the Node
// package (ffi/node/native.js, over the addon; its build copies this file into wasm/) share: the
// same argument checks, the same call of the raw client, the same result. Each class keeps how a
// call runs (its queue, closed and busy states, commits) in its own private #run, and installs
// these with defineClientCalls(this, (client, fn, options) => client.#run(fn, options)) in a
// static block. The Worker client (remote.js) checks its arguments with the same table
// (checkArguments) before it posts them.
//
// Most are a call of the raw client's method of the same name (declared once for every binding
// in ffi/surface): adding one is a line in CALLS. Their documentation is the package's types
// (index.d.ts). They become own methods of Client.prototype, as if written in the class: the
// API-surface tests and remote.js list Client.prototype's own names.

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

/** A check of one argument: it returns the value as the raw client takes it, or throws. */
const data = (what) => (value) => bytes(value, what);
const text = (what) => (value) => textOrBytes(value, what);
const upTo = (what, max) => (value) => integer(value, what, max);
const string = (what) => (value) => {
  if (typeof value !== 'string') throw new TypeError(`${what} must be a string`);
  return value;
};

/**
 * The calls that run the raw client's method of the same name on their checked arguments: the
 * checks of each one's arguments, in order.
 */
const CALLS = {
  fingerprint: [],
  identityKey: [],
  sign: [text('message')],
  generatePrekeys: [upTo('n', 0xfffe)],
  topUpPrekeys: [upTo('target', 0xffff)],
  lastResortBundle: [],
  prekeyBundle: [upTo('id', 0xffff)],
  prekeysRemaining: [],
  createSession: [sessionId, data('bundle')],
  resetSession: [sessionId, data('bundle')],
  hasSession: [sessionId],
  sessionIds: [],
  remoteFingerprint: [sessionId],
  pinnedIdentity: [sessionId],
  acceptIdentity: [sessionId, string('fingerprint')],
  deleteSession: [sessionId],
  forgetSession: [sessionId],
  encrypt: [sessionId, text('plaintext')],
  decrypt: [sessionId, data('envelope')],
  importIdentity: [data('identity')],
  importPrekey: [data('prekey')],
  importSession: [sessionId, data('session')],
  exportIdentity: [],
  exportSession: [sessionId],
};

/**
 * The options of a call's #run, where it has any: a message decrypted alone commits in an
 * IndexedDB transaction of 'relaxed' durability (commit-engine.js's run; the Node addon has no
 * such option).
 */
const OPTIONS = { decrypt: { durability: 'relaxed' } };

/** What a call's result becomes, where the raw client's is not the API's. */
const RESULTS = {
  lastResortBundle: (bundle) => ({ id: LAST_RESORT_PREKEY_ID, bundle }),
  prekeyBundle: (bundle, [id]) => ({ id, bundle }),
  // The wasm client answers '' for none, the addon null.
  pinnedIdentity: (fingerprint) => fingerprint || undefined,
};

/** `args` checked for the shared call `name` (as they are for any other name). */
export function checkArguments(name, args) {
  const checks = CALLS[name];
  return checks === undefined ? args : checks.map((check, i) => check(args[i]));
}

/**
 * Defines the shared methods on `Client.prototype`. `run(client, fn, options)` runs `fn(raw)`
 * on the client's raw client, in its turn, and returns a Promise of its result.
 * `readsDirectories`: the raw client reads a cryptobox directory itself (the Node addon).
 */
export function defineClientCalls(Client, run, { readsDirectories = false } = {}) {
  const methods = {
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
  };
  for (const name of Object.keys(CALLS)) {
    const result = RESULTS[name];
    const options = OPTIONS[name];
    methods[name] = {
      [name](...args) {
        const checked = checkArguments(name, args);
        const called = run(this, (raw) => raw[name](...checked), options);
        return result === undefined ? called : called.then((value) => result(value, checked));
      },
    }[name];
  }
  // As a class defines its methods: writable, configurable, not enumerable.
  for (const [name, value] of Object.entries(methods)) {
    if (Object.hasOwn(Client.prototype, name)) throw new Error(`Client.prototype.${name} is defined twice`);
    Object.defineProperty(Client.prototype, name, { value, writable: true, configurable: true, enumerable: false });
  }
}
