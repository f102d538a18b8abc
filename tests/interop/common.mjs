// Shared plumbing of gen-vectors.mjs and verify-vectors.mjs: loads the real @wireapp/proteus,
// replaces its entropy source, and records (or injects) every random draw the library makes.
//
// Where the library draws randomness (9.13.0, compiled JS under node_modules/@wireapp/proteus/src):
//   * keys/KeyPair.js: `new KeyPair()` calls
//       sodium.crypto_sign_seed_keypair(RandomUtil.CSPRNG.get_instance().random_bytes(32))
//     -> every key pair is made from a 32-byte seed that CSPRNG.prototype.random_bytes returns.
//        CSPRNG.random_bytes has no other caller.
//   * message/SessionTag.js: `new SessionTag()` calls RandomUtil.random_bytes(16)
//     (read from the module's exports at call time).
//   * util/RandomUtil.js: the CSPRNG (an HMAC-DRBG) seeds itself and takes its per-call
//     additional input from exports.random_bytes(32), which is node's crypto.randomBytes.
// We wrap CSPRNG.prototype.random_bytes and exports.random_bytes. Calls of random_bytes made from
// inside the CSPRNG are entropy for the DRBG, not draws; all others are session tags.
import { createRequire } from 'node:module';
import { createHash, createHmac } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const here = path.dirname(fileURLToPath(import.meta.url));
export const require = createRequire(import.meta.url);

const nodeCrypto = require('crypto');
export const Proteus = require('@wireapp/proteus');
export const CBOR = require('@wireapp/cbor');
await Proteus.init();

export const { keys, message: messages, session: sessions } = Proteus;
export const RandomUtil = Proteus.util.RandomUtil;

const pkgVersion = (name) =>
  JSON.parse(fs.readFileSync(path.join(here, 'node_modules', name, 'package.json'), 'utf8')).version;
export const versions = {
  library: '@wireapp/proteus',
  version: pkgVersion('@wireapp/proteus'),
  dependencies: {
    '@wireapp/cbor': pkgVersion('@wireapp/cbor'),
    'libsodium-wrappers-sumo': pkgVersion('libsodium-wrappers-sumo'),
    'libsodium-sumo': pkgVersion('libsodium-sumo'),
  },
  node: process.version,
};
if (versions.version !== '9.13.0') {
  throw new Error(`expected @wireapp/proteus 9.13.0, found ${versions.version}`);
}

// ---------------------------------------------------------------------------------------------
// Entropy and draw hooks

export const hooks = {
  /** 'off' (plain), 'record' (collect draws into `draws`), 'inject' (serve draws from `queue`) */
  mode: 'off',
  draws: [],
  queue: [],
  /** a function n -> Buffer replacing crypto.randomBytes, or null for the OS */
  entropy: null,
  osCalls: 0,
};

const osRandomBytes = nodeCrypto.randomBytes;
nodeCrypto.randomBytes = function randomBytes(n, cb) {
  if (typeof cb === 'function') throw new Error('asynchronous randomBytes is not expected');
  if (hooks.entropy) return hooks.entropy(n);
  hooks.osCalls++;
  return osRandomBytes(n);
};

/** A deterministic stream: HMAC-SHA256(key = sha256("proteus-interop-gen entropy|" + label), counter). */
export function entropyStream(label) {
  const key = createHash('sha256').update(`proteus-interop-gen entropy|${label}`).digest();
  let counter = 0n;
  let pool = Buffer.alloc(0);
  return (n) => {
    while (pool.length < n) {
      const c = Buffer.alloc(8);
      c.writeBigUInt64BE(counter++);
      pool = Buffer.concat([pool, createHmac('sha256', key).update(c).digest()]);
    }
    const out = Buffer.from(pool.subarray(0, n));
    pool = pool.subarray(n);
    return out;
  };
}

/** Resets the library's CSPRNG singleton (it re-seeds itself from crypto.randomBytes on first use). */
export function resetCsprng() {
  RandomUtil.CSPRNG.instance = undefined;
}

let csprngDepth = 0;
const origCsprngRandom = RandomUtil.CSPRNG.prototype.random_bytes;
RandomUtil.CSPRNG.prototype.random_bytes = function random_bytes(length, additional) {
  if (hooks.mode === 'inject') {
    const d = hooks.queue.shift();
    if (!d || d.use !== 'keypair_seed' || length !== 32) {
      throw new Error(`injection: library wants a key-pair seed (${length} bytes), next recorded draw is ${JSON.stringify(d)}`);
    }
    return Uint8Array.from(Buffer.from(d.bytes, 'hex'));
  }
  csprngDepth++;
  let out;
  try {
    out = origCsprngRandom.call(this, length, additional);
  } finally {
    csprngDepth--;
  }
  if (hooks.mode === 'record') {
    if (length !== 32) throw new Error(`unexpected CSPRNG draw of ${length} bytes`);
    hooks.draws.push({ use: 'keypair_seed', bytes: hex(out) });
  }
  return out;
};

const origRandomBytes = RandomUtil.random_bytes;
RandomUtil.random_bytes = function random_bytes(length) {
  if (csprngDepth > 0) return origRandomBytes(length); // DRBG entropy / additional input
  if (hooks.mode === 'inject') {
    const d = hooks.queue.shift();
    if (!d || d.use !== 'session_tag' || length !== 16) {
      throw new Error(`injection: library wants a session tag (${length} bytes), next recorded draw is ${JSON.stringify(d)}`);
    }
    return Uint8Array.from(Buffer.from(d.bytes, 'hex'));
  }
  const out = origRandomBytes(length);
  if (hooks.mode === 'record') {
    if (length !== 16) throw new Error(`unexpected direct random draw of ${length} bytes`);
    hooks.draws.push({ use: 'session_tag', bytes: hex(out) });
  }
  return out;
};

/** Runs fn (sync or async) while recording the library's draws; returns [result, draws]. */
export async function recording(fn) {
  hooks.mode = 'record';
  hooks.draws = [];
  try {
    const r = await fn();
    return [r, hooks.draws];
  } finally {
    hooks.mode = 'off';
  }
}

/** Runs fn while serving the library's draws from `draws`; throws if they are not all used. */
export async function injecting(draws, fn) {
  hooks.mode = 'inject';
  hooks.queue = [...(draws ?? [])];
  try {
    const r = await fn();
    if (hooks.queue.length) throw new Error(`${hooks.queue.length} recorded draws were not used`);
    return r;
  } finally {
    hooks.mode = 'off';
    hooks.queue = [];
  }
}

// ---------------------------------------------------------------------------------------------
// Bytes

export function hex(b) {
  if (b instanceof ArrayBuffer) return Buffer.from(new Uint8Array(b)).toString('hex');
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
}
export const unhex = (s) => Uint8Array.from(Buffer.from(s, 'hex'));
/** A fresh ArrayBuffer holding exactly these bytes (the library's decoders want ArrayBuffers). */
export const toAB = (bytes) => Uint8Array.from(bytes).buffer;

export function identityPublicBytes(identityKey) {
  const enc = new CBOR.Encoder();
  keys.IdentityKey.encode(enc, identityKey);
  return new Uint8Array(enc.get_buffer());
}

// ---------------------------------------------------------------------------------------------
// A prekey store like an app's: it keeps serialised prekeys and deserialises on every load, and
// it records which ids the library deletes.

export class MemoryPreKeyStore extends sessions.PreKeyStore {
  constructor(prekeys) {
    super();
    this.prekeys = new Map(prekeys.map((pk) => [pk.key_id, new Uint8Array(pk.serialise())]));
    this.removed = [];
  }
  static fromBytes(list) {
    const s = new MemoryPreKeyStore([]);
    for (const { id, bytes } of list) s.prekeys.set(id, unhex(bytes));
    return s;
  }
  async load_prekey(id) {
    const b = this.prekeys.get(id);
    return b ? keys.PreKey.deserialise(toAB(b)) : undefined;
  }
  async delete_prekey(id) {
    this.removed.push(id);
    this.prekeys.delete(id);
    return id;
  }
}

/**
 * One `decrypt` event as a consumer does it: deserialise the envelope; with no session for the
 * peer, Session.init_from_message; else session.decrypt. Returns {expect, created, plaintext}.
 */
export async function libraryDecrypt(party, peer, raw) {
  const existing = party.sessions.get(peer);
  let created = false;
  try {
    const env = messages.Envelope.deserialise(toAB(raw));
    let plain;
    if (existing) {
      plain = await existing.decrypt(party.store, env);
    } else {
      const [s, p] = await sessions.Session.init_from_message(party.identity, party.store, env);
      party.sessions.set(peer, s);
      created = true;
      plain = p;
    }
    return { expect: { ok: true, plaintext: hex(plain) }, created };
  } catch (e) {
    return {
      expect: {
        ok: false,
        error: { class: e?.constructor?.name ?? typeof e, code: e?.code ?? null, message: String(e?.message ?? e) },
      },
      created,
    };
  }
}

/** The library's own parse of an envelope, in the `decoded` shape of the format. */
export function decodeEnvelope(bytes) {
  const env = messages.Envelope.deserialise(toAB(bytes));
  const m = env.message;
  const d = { version: env.version };
  let cm = m;
  if (m instanceof messages.PreKeyMessage) {
    d.type = 'prekey';
    d.prekey_id = m.prekey_id;
    d.base_key = m.base_key.fingerprint();
    d.identity_key = m.identity_key.fingerprint();
    cm = m.message;
  } else {
    d.type = 'cipher';
  }
  d.session_tag = cm.session_tag.toString();
  d.counter = cm.counter;
  d.prev_counter = cm.prev_counter;
  d.ratchet_key = cm.ratchet_key.fingerprint();
  d.cipher_text_len = cm.cipher_text.length;
  return d;
}

export const CONSTANTS = {
  MAX_COUNTER_GAP: 1000,
  MAX_RECV_CHAINS: 5,
  MAX_SESSION_STATES: 100,
  LAST_RESORT_PREKEY_ID: 65535,
};
