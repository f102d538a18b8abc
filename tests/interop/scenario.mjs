// The scenario recorder of the vector generator (gen-vectors.mjs): parties, bundles, messages
// and events as @wireapp/proteus 9.13.0 produces them, with every random draw recorded, and the
// deterministic plaintexts it sends.

import { createHash } from 'node:crypto';
import {
  keys, messages, sessions, hooks, entropyStream, resetCsprng, recording, libraryDecrypt,
  decodeEnvelope, MemoryPreKeyStore, hex, unhex, toAB, identityPublicBytes, versions, CONSTANTS,
} from './common.mjs';
import { locate } from './envelope-positions.mjs';

/** The seed of every scenario's randomness: "<SEED>/<scenario>". */
export const SEED = 'proteus-interop-gen-v1';

// ---------------------------------------------------------------------------------------------
// Deterministic plaintexts (not library entropy)

const WORDS = (
  'the a and to of in is it you that he was for on are with as his they be at one have this from ' +
  'or had by hot word but what some we can out other were all there when up use your how said an ' +
  'each she which do their time if will way about many then them write would like so these her ' +
  'long make thing see him two has look more day could go come did number sound no most people ' +
  'my over know water than call first who may down side been now find meeting tomorrow slides ' +
  'invoice delivery build release train coffee ramen station review pull request settings page ' +
  'café naïve über straße ☕ 🎉 🚆 🙏 😀 — ß é ä #42 ? ! .'
).split(' ');

class Prng {
  constructor(label) {
    this.key = createHash('sha256').update(`plaintexts|${label}`).digest();
    this.n = 0;
    this.pool = [];
  }
  u32() {
    if (!this.pool.length) {
      const h = createHash('sha256').update(this.key).update(String(this.n++)).digest();
      for (let i = 0; i < 32; i += 4) this.pool.push(h.readUInt32BE(i));
    }
    return this.pool.shift();
  }
  int(lo, hi) { return lo + (this.u32() % (hi - lo + 1)); } // inclusive
  pick(a) { return a[this.u32() % a.length]; }
  shuffle(a) {
    const r = [...a];
    for (let i = r.length - 1; i > 0; i--) {
      const j = this.u32() % (i + 1);
      [r[i], r[j]] = [r[j], r[i]];
    }
    return r;
  }
}


// ---------------------------------------------------------------------------------------------
// Scenario recorder

export class Scenario {
  /**
   * @param opts.snapshotEvery  1: session_after on every event; N > 1: also on every N-th event;
   *                            0: only where required (init, successful events with rng, last)
   * @param opts.maxOptional    optional snapshots longer than this many hex chars are left out
   */
  constructor(name, description, opts = {}) {
    this.name = name;
    this.description = description;
    this.set = opts.set ?? 'generated';
    this.snapshotEvery = opts.snapshotEvery ?? 1;
    this.maxOptional = opts.maxOptional ?? Infinity;
    this.snapshotPolicy = opts.snapshotPolicyText;
    this.seed = `${SEED}/${name}`;
    resetCsprng();
    hooks.entropy = entropyStream(this.seed);
    this.rand = new Prng(this.seed);
    this.parties = new Map();
    this.bundles = [];
    this.messages = [];
    this.events = [];
    this.warnings = [];
  }

  party(name, prekeyIds = []) {
    const identity = new keys.IdentityKeyPair();
    const prekeys = prekeyIds.map((id) => new keys.PreKey(id));
    const p = { name, identity, prekeys, store: new MemoryPreKeyStore(prekeys), sessions: new Map() };
    this.parties.set(name, p);
    return p;
  }

  bundle(owner, prekeyId, signed = false) {
    const p = this.parties.get(owner);
    const pk = p.prekeys.find((k) => k.key_id === prekeyId);
    const b = signed ? keys.PreKeyBundle.signed(p.identity, pk) : new keys.PreKeyBundle(p.identity.public_key, pk);
    const index = this.bundles.length;
    this.bundles.push({ index, owner, prekey_id: prekeyId, signed, bytes: hex(b.serialise()) });
    return index;
  }

  session(party, peer) {
    const s = this.parties.get(party).sessions.get(peer);
    if (!s) throw new Error(`${party} has no session with ${peer}`);
    return s;
  }
  /** The next counter of party's sending chain with peer. */
  sendCounter(party, peer) {
    const s = this.session(party, peer);
    return s.session_states[s.session_tag_name].state.send_chain.chain_key.idx;
  }

  plaintext(size) {
    const target = size ?? this.pickSize();
    if (target === 0) return new Uint8Array(0);
    let s = '';
    while (Buffer.byteLength(s) < target) s += (s ? ' ' : '') + this.rand.pick(WORDS);
    const b = Buffer.from(s);
    return Uint8Array.from(b.subarray(0, Buffer.byteLength(s)));
  }
  pickSize() {
    const r = this.rand.int(0, 99);
    if (r < 3) return this.rand.int(0, 1);
    if (r < 80) return this.rand.int(8, 90);
    if (r < 97) return this.rand.int(90, 300);
    return this.rand.int(300, 1100);
  }

  push(ev, snap) {
    const e = { seq: this.events.length, ...ev };
    for (const k of Object.keys(e)) if (e[k] === undefined) delete e[k];
    Object.defineProperty(e, '_snap', { value: snap, enumerable: false, writable: true });
    this.events.push(e);
    return e;
  }

  async init(party, peer, bundle, note) {
    const p = this.parties.get(party);
    const b = keys.PreKeyBundle.deserialise(toAB(unhex(this.bundles[bundle].bytes)));
    const [s, rng] = await recording(() => sessions.Session.init_from_prekey(p.identity, b));
    p.sessions.set(peer, s);
    return this.push(
      { type: 'init_from_prekey', party, peer, bundle, session_tag: s.session_tag.toString(), note, rng },
      hex(s.serialise()),
    );
  }

  /** Encrypts; returns the message id. opts: {plaintext, size, clear, note, snapshot} */
  async enc(party, peer, opts = {}) {
    const s = this.session(party, peer);
    const pt = opts.plaintext ?? this.plaintext(opts.size);
    const [env, rng] = await recording(() => sessions.Session.encrypt(s, pt));
    if (rng.length) throw new Error('encrypt drew randomness');
    if (opts.clear) s.pending_prekey = null;
    const bytes = new Uint8Array(env.serialise());
    const decoded = decodeEnvelope(bytes);
    if (hex(messages.Envelope.deserialise(toAB(bytes)).serialise()) !== hex(bytes)) throw new Error('envelope does not re-encode');
    const id = this.messages.length;
    this.messages.push({ id, from: party, to: peer, plaintext: hex(pt), envelope: hex(bytes), decoded });
    const e = this.push(
      { type: 'encrypt', party, peer, message: id, cleared_pending_prekey: opts.clear ? true : undefined, note: opts.note },
      hex(s.serialise()),
    );
    e._force = opts.snapshot;
    return id;
  }

  async encMany(party, peer, n, opts = {}) {
    const ids = [];
    for (let i = 0; i < n; i++) ids.push(await this.enc(party, peer, opts));
    return ids;
  }

  async unrecorded(party, peer, count, note) {
    const s = this.session(party, peer);
    const [, rng] = await recording(() => {
      for (let i = 0; i < count; i++) sessions.Session.encrypt(s, Buffer.from('unrecorded'));
    });
    if (rng.length) throw new Error('encrypt drew randomness');
    return this.push({ type: 'encrypt_unrecorded', party, peer, count, note }, hex(s.serialise()));
  }

  /**
   * Delivers a message (id) or a tampered envelope ({envelope, mutation}) to party's session with
   * peer and records what the library did. opts.want: 'ok' or 'Class/code', checked against the
   * library's result only to catch mistakes in the scenario script (a mismatch is printed; the
   * file always records the library's actual behaviour).
   */
  async dec(party, peer, src, opts = {}) {
    const p = this.parties.get(party);
    const tampered = typeof src === 'object';
    const raw = tampered ? src.envelope : unhex(this.messages[src].envelope);
    const before = p.sessions.get(peer);
    const beforeBytes = before ? hex(before.serialise()) : null;
    p.store.removed = [];
    const [r, rng] = await recording(() => libraryDecrypt(p, peer, raw));
    const removed = p.store.removed;
    const now = p.sessions.get(peer);
    const after = now ? hex(now.serialise()) : null;
    let isPkm = false;
    try {
      isPkm = decodeEnvelope(raw).type === 'prekey';
    } catch { /* undecodable */ }
    if (!r.expect.ok && after !== beforeBytes) this.warnings.push(`seq ${this.events.length}: rejected decrypt changed the session`);
    if (r.expect.ok && !tampered && r.expect.plaintext !== this.messages[src].plaintext) throw new Error('plaintext mismatch');
    const got = r.expect.ok ? 'ok' : `${r.expect.error.class}/${r.expect.error.code}`;
    if (opts.want && opts.want !== got && !(opts.want instanceof Array && opts.want.includes(got))) {
      this.warnings.push(`seq ${this.events.length}: wanted ${opts.want}, library says ${got} (${r.expect.error?.message ?? ''}) — ${opts.note ?? ''}`);
    }
    const e = this.push(
      {
        type: 'decrypt',
        party,
        peer,
        message: tampered ? undefined : src,
        envelope: tampered ? hex(raw) : undefined,
        mutation: tampered ? src.mutation : undefined,
        note: opts.note,
        expect: r.expect,
        session_created: r.created ? true : undefined,
        prekeys_removed: isPkm || removed.length ? removed : undefined,
        rng,
      },
      after,
    );
    e._force = opts.snapshot;
    e._ok = r.expect.ok;
    return r.expect;
  }

  /** A tampered copy of message id: fn(envelopeBytes, locate(envelopeBytes)) -> bytes. */
  tamper(id, mutation, fn) {
    const b = unhex(this.messages[id].envelope);
    return { envelope: fn(b, locate(b)), mutation: `message ${id}: ${mutation}` };
  }

  finish() {
    const last = this.events.length - 1;
    for (const e of this.events) {
      const required = e.type === 'init_from_prekey' || ((e.rng ?? []).length > 0 && (e.type !== 'decrypt' || e._ok)) || e.seq === last;
      const optional = e._force || this.snapshotEvery === 1 || (this.snapshotEvery > 1 && e.seq % this.snapshotEvery === 0);
      if (e._snap && (required || (optional && e._snap.length <= this.maxOptional))) e.session_after = e._snap;
      if (required && !e._snap) throw new Error(`${this.name}: event ${e.seq} needs a snapshot but has no session`);
      if (e.rng && !e.rng.length) delete e.rng;
    }
    const decrypts = this.events.filter((e) => e.type === 'decrypt');
    const errors = [...new Set(decrypts.filter((e) => !e.expect.ok).map((e) => `${e.expect.error.class}/${e.expect.error.code}`))].sort();
    const parties = {};
    for (const [name, p] of this.parties) {
      parties[name] = {
        identity_keypair: hex(p.identity.serialise()),
        identity_public: hex(identityPublicBytes(p.identity.public_key)),
        fingerprint: p.identity.public_key.fingerprint(),
      };
      if (p.prekeys.length) {
        parties[name].prekeys = p.prekeys.map((k) => ({
          id: k.key_id, bytes: hex(k.serialise()), public_key: k.key_pair.public_key.fingerprint(),
        }));
      }
    }
    const summary = {
      messages: this.messages.length,
      events: this.events.length,
      decrypts_ok: decrypts.filter((e) => e.expect.ok).length,
      decrypts_rejected: decrypts.filter((e) => !e.expect.ok).length,
      errors,
    };
    return {
      format: 'proteus-interop-vectors',
      format_version: 1,
      set: this.set,
      scenario: this.name,
      description: this.description + (this.snapshotPolicy ? ` Snapshots: ${this.snapshotPolicy}` : ''),
      generator: {
        ...versions,
        script: 'tests/interop/gen-vectors.mjs',
        entropy: `seeded: sha256("proteus-interop-gen entropy|${this.seed}") as HMAC-SHA256 counter-mode stream replacing crypto.randomBytes; CSPRNG singleton reset per scenario`,
        seed: this.seed,
      },
      encoding: 'all byte strings are lowercase hex',
      constants: CONSTANTS,
      parties,
      bundles: this.bundles,
      messages: this.messages,
      events: this.events,
      summary,
    };
  }
}

export const SPARSE = (n) => `session_after only where required (init_from_prekey, successful events that drew randomness, the last event)${n ? ` and on every ${n}th event` : ''}.`;
