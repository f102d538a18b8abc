// @wireapp/proteus 9.13.0 as an application uses it: an identity, prekeys kept serialised (and
// deserialised on every load, as a real store does), sessions by id in memory. Shared by the
// live interop test and the benchmark.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
export const Proteus = require('@wireapp/proteus');
await Proteus.init();
export const { keys, message, session } = Proteus;

export const wireVersion = require('@wireapp/proteus/package.json').version;
if (wireVersion !== '9.13.0') throw new Error(`expected @wireapp/proteus 9.13.0, found ${wireVersion}`);

/** A fresh ArrayBuffer with these bytes (the library's decoders take ArrayBuffers). */
export const toAB = (bytes) => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);

export class WirePreKeyStore extends session.PreKeyStore {
  constructor() {
    super();
    this.prekeys = new Map();
    this.deleted = [];
  }

  add(bytes) {
    const prekey = keys.PreKey.deserialise(toAB(bytes));
    this.prekeys.set(prekey.key_id, Uint8Array.from(bytes));
    return prekey.key_id;
  }

  async load_prekey(id) {
    const bytes = this.prekeys.get(id);
    return bytes ? keys.PreKey.deserialise(toAB(bytes)) : undefined;
  }

  async delete_prekey(id) {
    this.deleted.push(id);
    this.prekeys.delete(id);
    return id;
  }
}

/** A client made of @wireapp/proteus objects. */
export class WireClient {
  constructor(identity = new keys.IdentityKeyPair()) {
    this.identity = identity;
    this.store = new WirePreKeyStore();
    this.sessions = new Map();
  }

  /** A client holding serialised records: `{identity, prekeys: [bytes], sessions: [[id, bytes]]}`. */
  static fromRecords({ identity, prekeys = [], sessions = [] }) {
    const client = new WireClient(keys.IdentityKeyPair.deserialise(toAB(identity)));
    for (const p of prekeys) client.store.add(p);
    for (const [id, bytes] of sessions) client.importSession(id, bytes);
    return client;
  }

  fingerprint() {
    return this.identity.public_key.fingerprint();
  }

  /** New prekeys with these ids: their serialisations and bundles. */
  newPrekeys(ids) {
    return ids.map((id) => {
      const prekey = id === 0xffff ? keys.PreKey.last_resort() : new keys.PreKey(id);
      const bytes = new Uint8Array(prekey.serialise());
      this.store.add(bytes);
      const bundle = new Uint8Array(new keys.PreKeyBundle(this.identity.public_key, prekey).serialise());
      return { id, prekey: bytes, bundle };
    });
  }

  createSession(id, bundle) {
    const b = keys.PreKeyBundle.deserialise(toAB(bundle));
    this.sessions.set(id, session.Session.init_from_prekey(this.identity, b));
  }

  encrypt(id, plaintext) {
    const s = this.sessions.get(id);
    if (!s) throw new Error(`no session ${id}`);
    return new Uint8Array(session.Session.encrypt(s, plaintext).serialise());
  }

  async decrypt(id, envelope) {
    const env = message.Envelope.deserialise(toAB(envelope));
    const s = this.sessions.get(id);
    if (s) return s.decrypt(this.store, env);
    const [created, plaintext] = await session.Session.init_from_message(this.identity, this.store, env);
    this.sessions.set(id, created);
    return plaintext;
  }

  exportIdentity() {
    return new Uint8Array(this.identity.serialise());
  }

  exportSession(id) {
    return new Uint8Array(this.sessions.get(id).serialise());
  }

  importSession(id, bytes) {
    this.sessions.set(id, session.Session.deserialise(this.identity, toAB(bytes)));
  }
}
