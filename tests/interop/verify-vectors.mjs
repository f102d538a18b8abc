#!/usr/bin/env node
// Replays proteus-interop-vectors files with the real @wireapp/proteus, from the files alone.
//
//   node verify-vectors.mjs [--snapshots] DIR|FILE...
//
// Default (recorded) mode: every event's recorded `rng` draws are fed back into the library
// (key-pair seeds and session tags, in order, all of them used), and every envelope, session tag,
// decrypt result (plaintext, or error class/code/message), removed prekey, created session and
// `session_after` snapshot must be byte-identical.
// --snapshots: fresh OS randomness; each `session_after` is loaded after its event; every decrypt
// result and every envelope must still match.
import fs from 'node:fs';
import path from 'node:path';
import {
  keys, sessions, hooks, injecting, libraryDecrypt, MemoryPreKeyStore, hex, unhex, toAB,
  identityPublicBytes,
} from './common.mjs';

const args = process.argv.slice(2);
const snapshotsMode = args.includes('--snapshots');
const targets = args.filter((a) => a !== '--snapshots');
if (!targets.length) {
  console.error('usage: node verify-vectors.mjs [--snapshots] DIR|FILE...');
  process.exit(2);
}

function filesOf(t) {
  if (fs.statSync(t).isDirectory()) {
    return fs.readdirSync(t).filter((f) => f.endsWith('.json')).sort().map((f) => path.join(t, f))
      .filter((f) => JSON.parse(fs.readFileSync(f, 'utf8')).events);
  }
  return [t];
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

async function verify(file) {
  const v = JSON.parse(fs.readFileSync(file, 'utf8'));
  hooks.entropy = null; // OS randomness outside injected events
  const parties = new Map();
  for (const [name, p] of Object.entries(v.parties)) {
    const identity = keys.IdentityKeyPair.deserialise(toAB(unhex(p.identity_keypair)));
    if (hex(identity.serialise()) !== p.identity_keypair) throw new Error(`${name}: identity re-encoding differs`);
    if (hex(identityPublicBytes(identity.public_key)) !== p.identity_public) throw new Error(`${name}: identity_public`);
    if (identity.public_key.fingerprint() !== p.fingerprint) throw new Error(`${name}: fingerprint`);
    const store = MemoryPreKeyStore.fromBytes(p.prekeys ?? []);
    for (const pk of p.prekeys ?? []) {
      const k = keys.PreKey.deserialise(toAB(unhex(pk.bytes)));
      if (k.key_id !== pk.id || k.key_pair.public_key.fingerprint() !== pk.public_key) throw new Error(`${name}: prekey ${pk.id}`);
    }
    parties.set(name, { identity, store, sessions: new Map() });
  }
  const msgs = new Map(v.messages.map((m) => [m.id, m]));
  const stats = { events: 0, envelopes: 0, snapshots: 0, ok: 0, rejected: 0 };
  for (const e of v.events) {
    const where = `event ${e.seq} (${e.type} ${e.party}->${e.peer})`;
    const party = parties.get(e.party);
    const run = (fn) => (snapshotsMode ? fn() : injecting(e.rng ?? [], fn));
    try {
      if (e.type === 'init_from_prekey') {
        const b = v.bundles.find((x) => x.index === e.bundle) ?? v.bundles[e.bundle];
        const bundle = keys.PreKeyBundle.deserialise(toAB(unhex(b.bytes)));
        const s = await run(() => sessions.Session.init_from_prekey(party.identity, bundle));
        if (!snapshotsMode && e.session_tag && s.session_tag.toString() !== e.session_tag) throw new Error('session tag differs');
        party.sessions.set(e.peer, s);
      } else if (e.type === 'encrypt') {
        const m = msgs.get(e.message);
        const s = party.sessions.get(e.peer);
        const env = await run(() => sessions.Session.encrypt(s, unhex(m.plaintext)));
        if (e.cleared_pending_prekey) s.pending_prekey = null;
        if (hex(env.serialise()) !== m.envelope) throw new Error(`envelope of message ${m.id} differs`);
        stats.envelopes++;
      } else if (e.type === 'encrypt_unrecorded') {
        const s = party.sessions.get(e.peer);
        await run(() => {
          for (let i = 0; i < e.count; i++) sessions.Session.encrypt(s, unhex('756e7265636f72646564'));
        });
      } else if (e.type === 'decrypt') {
        const raw = e.envelope !== undefined ? unhex(e.envelope) : unhex(msgs.get(e.message).envelope);
        const before = party.sessions.get(e.peer);
        const beforeBytes = before ? hex(before.serialise()) : null;
        party.store.removed = [];
        const r = await run(() => libraryDecrypt(party, e.peer, raw));
        const want = e.expect;
        if (want.ok !== r.expect.ok) throw new Error(`expected ${JSON.stringify(want)}, got ${JSON.stringify(r.expect)}`);
        if (want.ok) {
          if (want.plaintext !== r.expect.plaintext) throw new Error('plaintext differs');
          stats.ok++;
        } else {
          const a = want.error, b = r.expect.error;
          if (a.class !== b.class || a.code !== b.code || a.message !== b.message) {
            throw new Error(`error ${JSON.stringify(b)} differs from recorded ${JSON.stringify(a)}`);
          }
          const now = party.sessions.get(e.peer);
          if ((now ? hex(now.serialise()) : null) !== beforeBytes) throw new Error('rejected decrypt changed the session');
          stats.rejected++;
        }
        if (!same(party.store.removed, e.prekeys_removed ?? [])) {
          throw new Error(`prekeys removed ${JSON.stringify(party.store.removed)}, recorded ${JSON.stringify(e.prekeys_removed ?? [])}`);
        }
        if ((e.session_created ?? false) !== r.created) throw new Error(`session_created ${r.created}`);
      } else {
        throw new Error(`unknown event type ${e.type}`);
      }
      if (e.session_after !== undefined) {
        const s = party.sessions.get(e.peer);
        if (snapshotsMode) {
          const loaded = sessions.Session.deserialise(party.identity, toAB(unhex(e.session_after)));
          if (hex(loaded.serialise()) !== e.session_after) throw new Error('session_after does not re-encode identically');
          party.sessions.set(e.peer, loaded);
        } else {
          if (!s || hex(s.serialise()) !== e.session_after) throw new Error('session_after differs');
          stats.snapshots++;
        }
      }
      stats.events++;
    } catch (err) {
      throw new Error(`${path.basename(file)}: ${where}: ${err.message}`);
    }
  }
  return stats;
}

let failed = 0;
for (const t of targets) {
  for (const f of filesOf(t)) {
    try {
      const s = await verify(f);
      console.log(`ok   ${f} [${snapshotsMode ? 'snapshots' : 'recorded'}]: ${s.events} events, ${s.ok} decrypted, ${s.rejected} rejected, ${s.envelopes} envelopes, ${s.snapshots} snapshots matched`);
    } catch (err) {
      failed++;
      console.log(`FAIL ${f}: ${err.message}`);
    }
  }
}
process.exit(failed ? 1 : 0);
