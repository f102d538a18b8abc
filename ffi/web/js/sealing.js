// Encryption at rest for IndexedDB stores: Web Crypto runs what proteus-client's web sealed
// format asks (crates/proteus-client/src/storage/journal/web_sealed/, through RawSealer of
// ffi/web/src/sealing.rs). Every rule is there: the record and manifest layouts, the associated
// data, the nonces, which stored keys hold a hashed session id, the digest and what each
// failure means (StoreTampered 514, WrongStoreKey 508, StoreNotSealed 509, StoreKeyRequired
// 510, StoreCorrupt 503, StoreRolledBack 511). This module only holds the keys and runs the
// operations: the store key is 32 bytes or a Web Crypto HKDF key (which may be
// non-extractable); HKDF-SHA256 derives from it an AES-256-GCM key for the records, an
// HMAC-SHA256 key for session ids and one for the manifest's digest (with the salt and infos
// Rust gives), and each step of a job is a batch of AES-GCM and HMAC operations, run at once.

import { adopt } from './errors.js';
import { RawSealer, openStep as nextStep, sealChanged as changed, sealingKeyInfo } from './proteus_web.js';
import { concat } from './records.js';

/** The operations' kinds, as RawSealer numbers them (any other: an element's HMAC). */
const [SEAL, OPEN, HASH_ID] = [0, 1, 2];
/** An output length that says an open failed (RawSealer.resume). */
const FAILED = 0xffffffff;
const EMPTY = new Uint8Array(0);

function subtle() {
  const s = globalThis.crypto?.subtle;
  if (!s) throw new Error('WebCrypto (crypto.subtle) is not available here: a sealed store needs a secure context');
  return s;
}

/** The HKDF key of a store key: 32 bytes (imported non-extractable) or an HKDF CryptoKey. */
async function baseKey(storeKey) {
  if (storeKey instanceof Uint8Array || storeKey instanceof ArrayBuffer) {
    const bytes = new Uint8Array(storeKey);
    if (bytes.length !== 32) throw new TypeError(`a store key must be 32 bytes, not ${bytes.length}`);
    return subtle().importKey('raw', bytes, 'HKDF', false, ['deriveKey']);
  }
  if (typeof CryptoKey === 'function' && storeKey instanceof CryptoKey) {
    if (storeKey.algorithm?.name !== 'HKDF' || !storeKey.usages.includes('deriveKey')) {
      throw new TypeError(
        "a store key CryptoKey must be an HKDF key with usage 'deriveKey': " +
          "crypto.subtle.importKey('raw', keyBytes, 'HKDF', false, ['deriveKey'])",
      );
    }
    return storeKey;
  }
  throw new TypeError('a store key must be 32 bytes (a Uint8Array) or an HKDF CryptoKey');
}

/** The three keys of a store key (see the module's comment). */
async function derive(base) {
  const [salt, records, ids, digest] = sealingKeyInfo();
  const s = subtle();
  const hkdf = (info) => ({ name: 'HKDF', hash: 'SHA-256', salt, info });
  const hmac = { name: 'HMAC', hash: 'SHA-256', length: 256 };
  const [aead, idKey, digestKey] = await Promise.all([
    s.deriveKey(hkdf(records), base, { name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']),
    s.deriveKey(hkdf(ids), base, hmac, false, ['sign']),
    s.deriveKey(hkdf(digest), base, hmac, false, ['sign']),
  ]);
  return { aead, ids: idKey, digest: digestKey };
}

/**
 * Seals and opens the records of one open store with the keys derived from its store key: the
 * sealing of that store (RawSealer: the session ids it hashed, the manifest it loaded). The
 * wasm module must be loaded before a job runs (the keys are derived then, too).
 */
export class Sealer {
  #base;
  #keys;
  #raw;
  #queue = Promise.resolve();

  constructor(base) {
    this.#base = base;
  }

  /** The sealer of `storeKey` (see the module's comment); a TypeError for anything else. */
  static async of(storeKey) {
    return new Sealer(await baseKey(storeKey));
  }

  get #rawSealer() {
    this.#raw ??= new RawSealer();
    return this.#raw;
  }

  /**
   * Runs a job that `start(raw)` begins to its outcome (or undefined, if it begins none). The
   * sealer runs one job at a time: jobs asked for meanwhile wait their turn.
   */
  #run(start) {
    const run = this.#queue.then(() => this.#runNow(start));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #runNow(start) {
    this.#keys ??= derive(this.#base);
    const keys = await this.#keys;
    const raw = this.#rawSealer;
    let step = wasmCall(() => start(raw));
    while (step !== undefined && step.done !== true) {
      const outputs = await execute(keys, step);
      const [bytes, lengths] = concat(outputs.map((o) => o ?? EMPTY));
      outputs.forEach((o, i) => {
        if (o === undefined) lengths[i] = FAILED;
      });
      step = wasmCall(() => raw.resume(bytes, lengths));
      // The opened bodies hold keys: not left in these copies.
      bytes.fill(0);
      for (const o of outputs) o?.fill(0);
    }
    return step;
  }

  /** Loads a sealed store's records read from IndexedDB: `{records}`, a record buffer. */
  load(tables, bytes, lengths, commits, manifest, legacy) {
    return this.#run((raw) => raw.load(tables, bytes, lengths, commits, manifest, legacy));
  }

  /** Seals a commit's writes: `{bytes, bounds, manifest, commit}`, or undefined (reload first). */
  persist(writes, expected, next) {
    return this.#run((raw) => raw.persist(writes, expected, next));
  }

  /** Seals a whole store's records (a record buffer): `{bytes, bounds, replaceAll, manifest, check, commit}`. */
  reseal(records, commits) {
    return this.#run((raw) => raw.reseal(records, commits));
  }

  /** Frees what this sealer keeps in wasm memory, once the jobs under way are over. */
  close() {
    this.#queue = this.#queue.then(() => {
      this.#raw?.free();
      this.#raw = undefined;
    });
  }

  /** The commit `persist` sealed last is stored. */
  committed() {
    this.#rawSealer.committed();
  }

  /** The commit of the manifest loaded or stored last (undefined: none). */
  get commit() {
    return this.#raw?.commit;
  }

  /** A new check value: sealed with this key, it marks the store as sealed with it. */
  async check() {
    return (await this.#run((raw) => raw.check())).check;
  }

  /** Whether `check` (a store's check value) was made with this key. */
  async verify(check) {
    return (await this.#run((raw) => raw.verify(check))).verified;
  }
}

/** A call into the wasm module; its errors are ProteusErrors. */
function wasmCall(f) {
  try {
    return f();
  } catch (e) {
    throw adopt(e);
  }
}

/** Runs a batch of operations (`{kinds, bytes, bounds}`: see ffi/web/src/sealing.rs): their outputs. */
async function execute(keys, { kinds, bytes, bounds }) {
  const s = subtle();
  const part = (i, j) => bytes.subarray(bounds[6 * i + 2 * j], bounds[6 * i + 2 * j + 1]);
  try {
    const outputs = await Promise.all(
      Array.from(kinds, (kind, i) => {
        const data = part(i, 0);
        if (kind === SEAL) return s.encrypt({ name: 'AES-GCM', iv: part(i, 1), additionalData: part(i, 2) }, keys.aead, data);
        if (kind === OPEN) {
          return s.decrypt({ name: 'AES-GCM', iv: part(i, 1), additionalData: part(i, 2) }, keys.aead, data).catch(() => undefined);
        }
        return s.sign('HMAC', kind === HASH_ID ? keys.ids : keys.digest, data);
      }),
    );
    return outputs.map((o) => (o === undefined ? undefined : new Uint8Array(o)));
  } finally {
    // The plaintexts of the records sealed (keys) are not left in this copy.
    bytes.fill(0);
  }
}

/**
 * The next step of opening a store (`convert`: of re-sealing it) in state `{check, commits,
 * manifest}` (as read of its `sync` table), with a key or not (to convert: the old key) and
 * `verified`, the key's verification of that check value (undefined: not asked); proteus-client
 * decides (web_sealed::open_step), and throws the refusals: StoreKeyRequired (510),
 * WrongStoreKey (508), StoreNotSealed (509), StoreCorrupt (503). The steps are numbered as in
 * idb.js: ready, verify, seal the empty store, re-seal (reading with or without a manifest).
 */
export function openStep(convert, { check, commits, manifest }, keyGiven, verified) {
  return wasmCall(() => nextStep(convert, check !== undefined, commits, manifest !== undefined, keyGiven, verified));
}

/** The store's check value changed since it was opened: sealed, rekeyed or replaced meanwhile. */
export function sealChanged(nowSealed, sealer) {
  return adopt(changed(nowSealed, sealer !== undefined));
}
