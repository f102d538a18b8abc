// libolm (@matrix-org/olm 3.2.x, its own wasm build) on the scenarios of bench/scenarios.mjs, for
// the web bench. Olm is not Proteus but has its shape: a first message is a PreKey message whose
// receiver runs three Diffie-Hellmans against a one-time key, then a hash ratchet, with a DH
// ratchet step when the direction flips. So the equivalents are: the same message counts, the
// same plaintexts (chatPlaintext, 100–200 bytes; 150 bytes for fanout4000), a new session from a
// one-time key where ours takes a prekey, an established one (a reply came back) where ours has one.
//
// Every run starts from the same pickled state (unpickled before the clock); the timed part is
// what bench.mjs times for ours: decrypting the queue, the conversation's encrypts and decrypts,
// or one encrypt per recipient. libolm's JS API takes and gives strings (UTF-8 inside its wasm);
// the plaintexts are checked after the clock.

import Olm from '@matrix-org/olm';
import { QUEUE_LEN, RECIPIENTS, chatPlaintext } from './scenarios.mjs';

const KEY = 'bench';
const utf8 = new TextDecoder();
let ready;

/** libolm's version, once its wasm is loaded. */
export async function olmVersion() {
  ready ??= Olm.init();
  await ready;
  return Olm.get_library_version().join('.');
}

const curve = (account) => JSON.parse(account.identity_keys()).curve25519;

function newAccount(oneTimeKeys = 0) {
  const a = new Olm.Account();
  a.create();
  if (oneTimeKeys > 0) a.generate_one_time_keys(oneTimeKeys);
  return a;
}

function takeOneTimeKeys(account) {
  const keys = Object.values(JSON.parse(account.one_time_keys()).curve25519);
  account.mark_keys_as_published();
  return keys;
}

function outbound(from, to, oneTimeKey) {
  const s = new Olm.Session();
  s.create_outbound(from, curve(to), oneTimeKey);
  return s;
}

function inbound(account, sender, message) {
  const s = new Olm.Session();
  s.create_inbound_from(account, sender, message.body);
  account.remove_one_time_keys(s);
  return s;
}

/** A pickled party: its account and sessions by id. */
function pickle(account, sessions) {
  return { account: account.pickle(KEY), sessions: [...sessions].map(([id, s]) => [id, s.pickle(KEY)]) };
}

function unpickle(p) {
  const account = new Olm.Account();
  account.unpickle(KEY, p.account);
  const sessions = new Map(
    p.sessions.map(([id, pickled]) => {
      const s = new Olm.Session();
      s.unpickle(KEY, pickled);
      return [id, s];
    }),
  );
  return {
    account,
    sessions,
    free() {
      for (const s of sessions.values()) s.free();
      account.free();
    },
  };
}

/** a and b, with a session each way confirmed: a sent, b replied, a decrypted the reply. */
function establish() {
  const a = newAccount();
  const b = newAccount(1);
  const ab = outbound(a, b, takeOneTimeKeys(b)[0]);
  const hello = ab.encrypt('hello');
  const ba = inbound(b, curve(a), hello);
  ba.decrypt(hello.type, hello.body);
  const hi = ba.encrypt('hi');
  ab.decrypt(hi.type, hi.body);
  return { a, b, ab, ba };
}

/** The scenario `name` for libolm (setup, untimed). */
export async function buildOlm(name) {
  await olmVersion();
  const text = (i) => utf8.decode(chatPlaintext(i));
  switch (name) {
    case '1x1000':
    case '50x20': {
      const senders = name === '1x1000' ? 1 : 50;
      const bob = newAccount(senders);
      const keys = takeOneTimeKeys(bob);
      const from = Array.from({ length: senders }, (_, i) => {
        const a = newAccount();
        return { id: curve(a), account: a, session: outbound(a, bob, keys[i]) };
      });
      const messages = [];
      while (messages.length < QUEUE_LEN) {
        for (const f of from) {
          const plaintext = text(messages.length);
          messages.push({ sender: f.id, message: f.session.encrypt(plaintext), plaintext });
        }
      }
      return { name, kind: 'queue', receiver: pickle(bob, []), messages };
    }
    case '1x1000est': {
      const { a, b, ab, ba } = establish();
      const sender = curve(a);
      const messages = Array.from({ length: QUEUE_LEN }, (_, i) => ({ sender, message: ab.encrypt(text(i)), plaintext: text(i) }));
      return { name, kind: 'queue', receiver: pickle(b, [[sender, ba]]), messages };
    }
    case 'conv10': {
      const { a, b, ab, ba } = establish();
      const plaintexts = Array.from({ length: QUEUE_LEN }, (_, i) => text(i));
      return { name, kind: 'conversation', alice: pickle(a, [['bob', ab]]), bob: pickle(b, [['alice', ba]]), plaintexts, flipEvery: 10 };
    }
    case 'fanout4000': {
      // One receiver account serves every recipient (a session per one-time key), as ours does.
      const alice = newAccount();
      const bob = newAccount();
      // libolm holds at most 100 one-time keys: 100 at a time, used before the next 100.
      const keys = [];
      const sessions = new Map();
      const back = [];
      for (let i = 0; i < RECIPIENTS; i++) {
        if (keys.length === 0) {
          bob.generate_one_time_keys(100);
          keys.push(...takeOneTimeKeys(bob));
        }
        const s = outbound(alice, bob, keys.pop());
        const hello = s.encrypt('hello');
        const r = inbound(bob, curve(alice), hello);
        r.decrypt(hello.type, hello.body);
        const hi = r.encrypt('hi');
        s.decrypt(hi.type, hi.body);
        sessions.set(`recipient-${i}`, s);
        back.push(r);
      }
      const samples = [];
      for (let i = 0; i < RECIPIENTS; i += 499) samples.push({ index: i, session: back[i].pickle(KEY) });
      for (const r of back) r.free();
      return { name, kind: 'fanout', sender: pickle(alice, sessions), plaintext: 'x'.repeat(150), samples };
    }
    default:
      throw new Error(`unknown scenario ${name}`);
  }
}

function check(expected, got, what) {
  for (let i = 0; i < expected.length; i++) {
    if (got[i] !== expected[i]) throw new Error(`libolm ${what}: message ${i} did not decrypt to what was sent`);
  }
}

/** The timed part of one run of `sc` (from buildOlm), in ms. */
export async function runOlm(sc) {
  if (sc.kind === 'queue') {
    const bob = unpickle(sc.receiver);
    const start = performance.now();
    const got = [];
    for (const { sender, message } of sc.messages) {
      let s = bob.sessions.get(sender);
      if (s === undefined) bob.sessions.set(sender, (s = inbound(bob.account, sender, message)));
      got.push(s.decrypt(message.type, message.body));
    }
    const ms = performance.now() - start;
    check(sc.messages.map((m) => m.plaintext), got, sc.name);
    bob.free();
    return ms;
  }
  if (sc.kind === 'conversation') {
    const alice = unpickle(sc.alice);
    const bob = unpickle(sc.bob);
    const [ab, ba] = [alice.sessions.get('bob'), bob.sessions.get('alice')];
    const start = performance.now();
    for (let b = 0; b * sc.flipEvery < sc.plaintexts.length; b++) {
      const block = sc.plaintexts.slice(b * sc.flipEvery, (b + 1) * sc.flipEvery);
      const [send, receive] = b % 2 === 0 ? [ab, ba] : [ba, ab];
      const sent = block.map((p) => send.encrypt(p));
      check(block, sent.map((m) => receive.decrypt(m.type, m.body)), sc.name);
    }
    const ms = performance.now() - start;
    alice.free();
    bob.free();
    return ms;
  }
  // fanout: an untimed send first (the sessions are then in use), then the timed one.
  const alice = unpickle(sc.sender);
  const sessions = [...alice.sessions.values()];
  const warm = sessions.map((s) => s.encrypt(sc.plaintext));
  const start = performance.now();
  const sent = sessions.map((s) => s.encrypt(sc.plaintext));
  const ms = performance.now() - start;
  for (const { index, session } of sc.samples) {
    const r = new Olm.Session();
    r.unpickle(KEY, session);
    for (const m of [warm[index], sent[index]]) {
      if (r.decrypt(m.type, m.body) !== sc.plaintext) throw new Error(`libolm fanout: recipient ${index} did not decrypt`);
    }
    r.free();
  }
  alice.free();
  return ms;
}
