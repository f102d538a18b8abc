// Encryption at rest for IndexedDB stores: every record sealed with WebCrypto AES-GCM under a key
// the application gives (the .wasm carries no cipher for it), and bound to the store and to the
// commit that wrote it, as natively (proteus-client's storage/sealed.rs, "sealed means bound").
//
// The store key is 32 bytes or a WebCrypto HKDF key (which may be non-extractable); HKDF-SHA256
// derives from it an AES-256-GCM key for the records, an HMAC-SHA256 key for session ids and one
// for the manifest's digest. A sealed value (format 2) is
//     2 ‖ commit (8, BE) ‖ nonce (12) ‖ AES-GCM(u16 BE key length ‖ key ‖ value) ‖ tag (16)
// with `2 ‖ store id (16) ‖ commit (8) ‖ table name ‖ 0 ‖ stored key` as associated data, so a
// record moved to another table or key, copied from another store or put back from an older
// commit fails to open as the one the store last committed. The record's key travels inside: in
// the sessions and staged-keys tables the session id in the stored key is replaced by its HMAC,
// so the contact list is not in the clear either. The store's manifest (beside the commit
// counter) seals the store id, the commit and a digest of the live set: the XOR of
// HMAC(table ‖ 0 ‖ u32 BE stored key length ‖ stored key ‖ commit) over every record, so a
// record deleted or put back changes it. Loading a store reads every record and checks the
// digest: a missing, older, moved or foreign record is refused (StoreTampered, 514), never
// treated as absent. Format 1 (no commit, no store id) is still read, and a store in it is
// re-sealed in format 2 in one transaction when first opened. Nonces are random: a store seals
// far fewer than 2^32 records with one key. A check value sealed with the key, kept beside the
// commit counter, marks a sealed store and tells a wrong key (508) from damage.

import { STORE_CORRUPT, STORE_KEY_REQUIRED, STORE_NOT_SEALED, STORE_TAMPERED, WRONG_STORE_KEY } from './codes.js';
import { failure } from './errors.js';

/** Format 1 of a sealed record (not bound to a commit): still read, never written. */
const SEALED_V1 = 1;
/** Format 2: bound to the store and the commit that wrote it. */
const SEALED_V2 = 2;
const NONCE = 12;
const TAG = 16;
/** Bytes of a commit number in a record's header and associated data. */
const COMMIT = 8;
/** Bytes of a store id (random, drawn when a store is sealed). */
export const STORE_ID = 16;
/** Bytes of the manifest's digest (one HMAC-SHA256). */
const DIGEST = 32;
const encoder = new TextEncoder();
// Part of the stored format: never change these.
const RECORDS_INFO = encoder.encode('proteus-web sealed records v1');
const IDS_INFO = encoder.encode('proteus-web sealed session ids v1');
const DIGEST_INFO = encoder.encode('proteus-web sealed manifest digest v1');
const MANIFEST_AAD = encoder.encode('manifest');
const CHECK_VALUE = encoder.encode('proteus-web sealed v1');
const CHECK_TABLE = 'check';

function subtle() {
  const s = globalThis.crypto?.subtle;
  if (!s) throw new Error('WebCrypto (crypto.subtle) is not available here: a sealed store needs a secure context');
  return s;
}

/** Whether a table's keys hold a session id, which is stored hashed. */
const hidesIds = (table) => table === 'sessions' || table === 'staged_keys';

/** The prefix of a pinned identity's key in the meta table: `pinned/` ‖ session id. */
const PIN_PREFIX = encoder.encode('pinned/');

const startsWith = (key, prefix) => key.length >= prefix.length && prefix.every((b, i) => key[i] === b);

/** A staged key's parts: `u16 BE length ‖ session id ‖ rest`, or undefined. */
function splitStaged(key) {
  if (key.length < 2) return undefined;
  const length = (key[0] << 8) | key[1];
  if (key.length < 2 + length) return undefined;
  return [key.subarray(2, 2 + length), key.subarray(2 + length)];
}

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function hex(bytes) {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

export function equalBytes(a, b) {
  if (a === b) return true;
  if (a === undefined || b === undefined || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
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

const hkdf = (info) => ({ name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(32), info });

/** Seals and opens the records of one store with the keys derived from its store key. */
export class Sealer {
  #aead;
  #ids;
  #digest;
  /** Session id (hex) -> its HMAC: ids are hashed once per store opened. */
  #hashes = new Map();

  constructor(aead, ids, digest) {
    this.#aead = aead;
    this.#ids = ids;
    this.#digest = digest;
  }

  /** The sealer of `storeKey` (see the module's comment); a TypeError for anything else. */
  static async of(storeKey) {
    const base = await baseKey(storeKey);
    const s = subtle();
    const hmac = { name: 'HMAC', hash: 'SHA-256', length: 256 };
    const [aead, ids, digest] = await Promise.all([
      s.deriveKey(hkdf(RECORDS_INFO), base, { name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']),
      s.deriveKey(hkdf(IDS_INFO), base, hmac, false, ['sign']),
      s.deriveKey(hkdf(DIGEST_INFO), base, hmac, false, ['sign']),
    ]);
    return new Sealer(aead, ids, digest);
  }

  /** The digest element of a live record (see the module's comment). */
  async element(table, stored, commit) {
    const name = encoder.encode(table);
    const data = new Uint8Array(name.length + 1 + 4 + stored.length + COMMIT);
    const view = new DataView(data.buffer);
    data.set(name, 0);
    view.setUint32(name.length + 1, stored.length);
    data.set(stored, name.length + 5);
    view.setBigUint64(name.length + 5 + stored.length, BigInt(commit));
    return new Uint8Array(await subtle().sign('HMAC', this.#digest, data));
  }

  /** `{stored, value}`: `(key, value)` sealed in format 2, written by `commit` of store `storeId`. */
  async sealBound(table, key, value, storeId, commit) {
    if (key.length > 0xffff) throw new RangeError('a record key is too long to seal');
    const stored = await this.storedKey(table, key);
    const body = concat(Uint8Array.of(key.length >> 8, key.length & 0xff), key, value);
    const nonce = globalThis.crypto.getRandomValues(new Uint8Array(NONCE));
    const sealed = await subtle().encrypt(
      { name: 'AES-GCM', iv: nonce, additionalData: boundAad(table, stored, storeId, commit) },
      this.#aead,
      body,
    );
    return { stored, value: concat(Uint8Array.of(SEALED_V2), commitBytes(commit), nonce, new Uint8Array(sealed)) };
  }

  /** `{key, value}` of a format 2 record written by `commit` of store `storeId`; undefined if it does not open so. */
  async openBound(table, stored, sealed, storeId, commit) {
    if (commitOf(sealed) !== commit || sealed.length < 1 + COMMIT + NONCE + TAG) return undefined;
    let body;
    try {
      body = new Uint8Array(
        await subtle().decrypt(
          { name: 'AES-GCM', iv: sealed.subarray(1 + COMMIT, 1 + COMMIT + NONCE), additionalData: boundAad(table, stored, storeId, commit) },
          this.#aead,
          sealed.subarray(1 + COMMIT + NONCE),
        ),
      );
    } catch {
      return undefined;
    }
    if (body.length < 2) return undefined;
    const length = (body[0] << 8) | body[1];
    if (body.length < 2 + length) return undefined;
    return { key: body.slice(2, 2 + length), value: body.subarray(2 + length) };
  }

  /** The sealed manifest `{storeId, commit, count, digest}`. */
  async sealManifest({ storeId, commit, count, digest }) {
    const body = concat(storeId, commitBytes(commit), commitBytes(count), digest);
    const nonce = globalThis.crypto.getRandomValues(new Uint8Array(NONCE));
    const sealed = await subtle().encrypt({ name: 'AES-GCM', iv: nonce, additionalData: concat(Uint8Array.of(SEALED_V2), MANIFEST_AAD) }, this.#aead, body);
    return concat(Uint8Array.of(SEALED_V2), nonce, new Uint8Array(sealed));
  }

  /** A manifest opened: `{storeId, commit, count, digest}`, or undefined. */
  async openManifest(sealed) {
    if (sealed === undefined || sealed.length < 1 + NONCE + TAG || sealed[0] !== SEALED_V2) return undefined;
    let body;
    try {
      body = new Uint8Array(
        await subtle().decrypt(
          { name: 'AES-GCM', iv: sealed.subarray(1, 1 + NONCE), additionalData: concat(Uint8Array.of(SEALED_V2), MANIFEST_AAD) },
          this.#aead,
          sealed.subarray(1 + NONCE),
        ),
      );
    } catch {
      return undefined;
    }
    if (body.length !== STORE_ID + 2 * COMMIT + DIGEST) return undefined;
    const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
    return {
      storeId: body.slice(0, STORE_ID),
      commit: Number(view.getBigUint64(STORE_ID)),
      count: Number(view.getBigUint64(STORE_ID + COMMIT)),
      digest: body.slice(STORE_ID + 2 * COMMIT),
    };
  }

  async #idHash(id) {
    const k = hex(id);
    let hash = this.#hashes.get(k);
    if (hash === undefined) {
      hash = new Uint8Array(await subtle().sign('HMAC', this.#ids, id));
      this.#hashes.set(k, hash);
    }
    return hash;
  }

  /**
   * The key a record of `table` is stored under: its own, or with the session id hashed (in the
   * sessions and staged-keys tables, and after the `pinned/` prefix of a pinned identity's key).
   */
  async storedKey(table, key) {
    if (table === 'meta' && startsWith(key, PIN_PREFIX)) {
      return concat(PIN_PREFIX, await this.#idHash(key.subarray(PIN_PREFIX.length)));
    }
    if (!hidesIds(table)) return key;
    const staged = table === 'staged_keys' ? splitStaged(key) : undefined;
    if (staged === undefined) return this.#idHash(key);
    return concat(await this.#idHash(staged[0]), staged[1]);
  }

  async #seal(table, stored, body) {
    const nonce = globalThis.crypto.getRandomValues(new Uint8Array(NONCE));
    const data = aad(table, stored);
    const sealed = await subtle().encrypt({ name: 'AES-GCM', iv: nonce, additionalData: data }, this.#aead, body);
    return concat(Uint8Array.of(SEALED_V1), nonce, new Uint8Array(sealed));
  }

  /** `{stored, value}`: the key to store `(key, value)` under and the sealed value. */
  async seal(table, key, value) {
    if (key.length > 0xffff) throw new RangeError('a record key is too long to seal');
    const stored = await this.storedKey(table, key);
    const body = concat(Uint8Array.of(key.length >> 8, key.length & 0xff), key, value);
    return { stored, value: await this.#seal(table, stored, body) };
  }

  /** `{key, value}` of a record stored under `stored`; undefined if it does not open. */
  async open(table, stored, sealed) {
    const body = await this.#open(table, stored, sealed);
    if (body === undefined || body.length < 2) return undefined;
    const length = (body[0] << 8) | body[1];
    if (body.length < 2 + length) return undefined;
    return { key: body.slice(2, 2 + length), value: body.subarray(2 + length) };
  }

  async #open(table, stored, sealed) {
    if (sealed.length < 1 + NONCE + TAG || sealed[0] !== SEALED_V1) return undefined;
    try {
      const body = await subtle().decrypt(
        { name: 'AES-GCM', iv: sealed.subarray(1, 1 + NONCE), additionalData: aad(table, stored) },
        this.#aead,
        sealed.subarray(1 + NONCE),
      );
      return new Uint8Array(body);
    } catch {
      return undefined;
    }
  }

  /** A new check value: sealed with this key, it marks the store as sealed with it. */
  check() {
    return this.#seal(CHECK_TABLE, new Uint8Array(0), CHECK_VALUE);
  }

  /** Whether `check` (a store's check value) was made with this key. */
  async verify(check) {
    return equalBytes(await this.#open(CHECK_TABLE, new Uint8Array(0), check), CHECK_VALUE);
  }
}

function aad(table, stored) {
  return concat(Uint8Array.of(SEALED_V1), encoder.encode(table), Uint8Array.of(0), stored);
}

function commitBytes(commit) {
  const out = new Uint8Array(COMMIT);
  new DataView(out.buffer).setBigUint64(0, BigInt(commit));
  return out;
}

function boundAad(table, stored, storeId, commit) {
  return concat(Uint8Array.of(SEALED_V2), storeId, commitBytes(commit), encoder.encode(table), Uint8Array.of(0), stored);
}

/** The commit a format 2 value says wrote it (authenticated when it is opened), or undefined. */
export function commitOf(sealed) {
  if (sealed.length < 1 + COMMIT || sealed[0] !== SEALED_V2) return undefined;
  return Number(new DataView(sealed.buffer, sealed.byteOffset + 1, COMMIT).getBigUint64(0));
}

/** The format of a sealed value (its first byte). */
export const formatOf = (sealed) => sealed[0];
export const LEGACY_FORMAT = SEALED_V1;

/** XORs `b` into `a` (both 32 bytes). */
export function xorInto(a, b) {
  for (let i = 0; i < a.length; i++) a[i] ^= b[i];
}

/** Whether two byte arrays are equal, in time that does not depend on where they differ. */
export function sameBytes(a, b) {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/** StoreTampered (514): a record missing, older, moved or from another store. */
export function tampered(what) {
  return failure(STORE_TAMPERED, `the sealed store was tampered with: ${what}; it is refused so that no message key is used twice`);
}

/**
 * Checks a store's check value (undefined: the store is not sealed) against the sealer it is
 * opened with (undefined: no key), with the native codes: StoreKeyRequired (510), WrongStoreKey
 * (508), StoreNotSealed (509, only if the store holds records: an empty one gets sealed).
 */
export async function admit(check, sealer, hasRecords) {
  if (check !== undefined && sealer === undefined) {
    throw failure(STORE_KEY_REQUIRED, 'the store is sealed: open it with its key ({ storeKey })');
  }
  if (check !== undefined && !(await sealer.verify(check))) {
    throw failure(WRONG_STORE_KEY, 'the store is sealed with another key than the one given; nothing was changed');
  }
  if (check === undefined && sealer !== undefined && hasRecords) {
    throw failure(STORE_NOT_SEALED, 'a key was given, but the store is not sealed (seal it with Client.sealStore)');
  }
}

/** The store's check value changed since it was opened: sealed, rekeyed or replaced meanwhile. */
export function sealChanged(nowSealed, sealer) {
  return nowSealed && sealer === undefined
    ? failure(STORE_KEY_REQUIRED, 'the store was sealed since this client opened it: open it again with its key')
    : failure(WRONG_STORE_KEY, 'the store was sealed with another key since this client opened it: open it again with the new key');
}

export function damaged(table) {
  return failure(STORE_CORRUPT, `a sealed record of ${table} does not open with the store's key: it was damaged or moved`);
}
