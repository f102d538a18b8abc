// The scenarios of the native bench (benches/src/scenarios.rs), built with the web package:
// "decrypt 1000 queued messages" as 1x1000, 1x1000est, 50x20 and conv10, and fanout4000 (one
// 150-byte plaintext to 4000 established sessions, benches/src/fanout.rs). Building is setup and
// never timed. Both implementations start every run from the same serialised state (a seed) and
// decrypt the very same envelopes: the receiver's identity and prekeys are made by
// @wireapp/proteus, its sessions by this package, and each side loads the other's records.

import { Client } from '../pkg/index.js';
import { WireClient } from '../tests/support/wire.mjs';

export const QUEUE_LEN = 1000;
export const ALICE = 'alice:phone';
export const BOB = 'bob:laptop';
export const SCENARIOS = ['1x1000', '1x1000est', '50x20', 'conv10', 'fanout4000'];
export const RECIPIENTS = 4000;
/** Every this many recipients, one checks its envelopes after each run (as natively). */
const SAMPLE_EVERY = 499;

const WORDS = [
  'hey', 'are', 'we', 'still', 'on', 'for', 'lunch', 'tomorrow', 'I', 'think', 'the', 'train',
  'is', 'late', 'again', 'sounds', 'good', 'see', 'you', 'at', 'noon', 'thanks', 'so', 'much',
];
const M64 = (1n << 64n) - 1n;

/** The chat-like plaintext of 100 to 200 bytes of the native bench (benches/src/chat.rs). */
export function chatPlaintext(index) {
  const target = 100 + ((index * 37) % 101);
  let text = `#${index}: `;
  let state = ((BigInt(index) * 6364136223846793005n) & M64) ^ 0x9e3779b9n;
  while (text.length < target) {
    state = (state * 6364136223846793005n + 1442695040888963407n) & M64;
    text += WORDS[Number((state >> 33n) % BigInt(WORDS.length))];
    text += (state & 0xfn) === 0n ? '.' : ' ';
  }
  return new TextEncoder().encode(text).slice(0, target);
}

/** A receiver whose identity and prekeys (`ids`, plus the last resort) @wireapp/proteus made. */
async function party(ids = []) {
  const wire = new WireClient();
  const prekeys = wire.newPrekeys([...ids, 0xffff]);
  const ours = await Client.inMemory();
  await ours.importIdentity(wire.exportIdentity());
  for (const p of prekeys) await ours.importPrekey(p.prekey);
  return { ours, identity: wire.exportIdentity(), prekeys, bundles: prekeys.slice(0, -1).map((p) => p.bundle) };
}

/** The seed of a party now: identity, the prekeys it still has, every session. */
async function seed(p) {
  const prekeys = [];
  for (const { id, prekey } of p.prekeys) {
    try {
      await p.ours.prekeyBundle(id);
      prekeys.push(prekey);
    } catch {
      // used up by a PreKeyMessage during setup
    }
  }
  const sessions = [];
  for (const id of await p.ours.sessionIds()) sessions.push([id, await p.ours.exportSession(id)]);
  return { identity: p.identity, prekeys, sessions };
}

/** a starts a session with b from one of b's bundles; b decrypts it and replies; a decrypts. */
async function establish(a, aId, b, bId) {
  await a.ours.createSession(bId, b.bundles.shift());
  await b.ours.decrypt(aId, await a.ours.encrypt(bId, 'hello'));
  await a.ours.decrypt(bId, await b.ours.encrypt(aId, 'hi'));
}

async function queueFrom(sender, to, fromId, n, first = 0) {
  const messages = [];
  for (let i = 0; i < n; i++) {
    const plaintext = chatPlaintext(first + i);
    messages.push({ sessionId: fromId, envelope: await sender.encrypt(to, plaintext), plaintext });
  }
  return messages;
}

export async function build(name) {
  switch (name) {
    case '1x1000': {
      const bob = await party([1]);
      const alice = await Client.inMemory();
      await alice.createSession(BOB, bob.bundles[0]);
      const messages = await queueFrom(alice, BOB, ALICE, QUEUE_LEN);
      return { name, kind: 'queue', receiver: await seed(bob), messages };
    }
    case '1x1000est': {
      const bob = await party([1]);
      const alice = await party([1]);
      await establish(alice, ALICE, bob, BOB);
      const messages = await queueFrom(alice.ours, BOB, ALICE, QUEUE_LEN);
      return { name, kind: 'queue', receiver: await seed(bob), messages };
    }
    case '50x20': {
      const senders = 50;
      const ids = Array.from({ length: senders }, (_, i) => i + 1);
      const bob = await party(ids);
      const clients = [];
      for (let i = 0; i < senders; i++) {
        const c = await Client.inMemory();
        await c.createSession(BOB, bob.bundles[i]);
        clients.push(c);
      }
      const messages = [];
      for (let round = 0; round < QUEUE_LEN / senders; round++) {
        for (let i = 0; i < senders; i++) {
          const plaintext = chatPlaintext(messages.length);
          const sessionId = `sender-${String(i).padStart(4, '0')}:device`;
          messages.push({ sessionId, envelope: await clients[i].encrypt(BOB, plaintext), plaintext });
        }
      }
      return { name, kind: 'queue', receiver: await seed(bob), messages };
    }
    case 'conv10': {
      const alice = await party([1]);
      const bob = await party([1]);
      await establish(alice, ALICE, bob, BOB);
      const plaintexts = Array.from({ length: QUEUE_LEN }, (_, i) => chatPlaintext(i));
      return { name, kind: 'conversation', alice: await seed(alice), bob: await seed(bob), plaintexts, flipEvery: 10 };
    }
    case 'fanout4000':
      return fanout(name);
    default:
      throw new Error(`unknown scenario ${name}`);
  }
}

/** The sender's session id of recipient `i`'s device, as natively. */
const recipientId = (i) => `member-${String(Math.floor(i / 8)).padStart(3, '0')}:device-${i % 8}`;

/**
 * A sender with RECIPIENTS established sessions (its peers replied, so every envelope is a
 * CipherMessage), and a receiver holding the peer side of every SAMPLE_EVERY-th of them. One
 * receiver identity serves all recipients (a session per prekey): setup takes seconds, not minutes.
 */
async function fanout(name) {
  const alice = await party();
  const bob = await party(Array.from({ length: RECIPIENTS }, (_, i) => i + 1));
  const ids = Array.from({ length: RECIPIENTS }, (_, i) => recipientId(i));
  for (let i = 0; i < RECIPIENTS; i++) await alice.ours.createSession(ids[i], bob.bundles[i]);
  const hello = await alice.ours.encryptFor(ids, 'hello');
  const back = ids.map((_, i) => `alice-${i}`);
  await bob.ours.decryptBatch(hello.map((r, i) => ({ sessionId: back[i], envelope: r.envelope })));
  const replies = await bob.ours.encryptBatch(back.map((sessionId) => ({ sessionId, plaintext: 'hi' })));
  await alice.ours.decryptBatch(replies.map((envelope, i) => ({ sessionId: ids[i], envelope })));
  const samples = [];
  for (let i = 0; i < RECIPIENTS; i += SAMPLE_EVERY) samples.push({ index: i, sessionId: back[i], session: await bob.ours.exportSession(back[i]) });
  const sender = await seed(alice);
  return {
    name,
    kind: 'fanout',
    sender,
    recipients: ids,
    plaintext: new Uint8Array(150).fill(0x78),
    receiver: { identity: bob.identity, prekeys: [], sessions: samples.map((s) => [s.sessionId, s.session]) },
    samples,
  };
}

/** A fresh in-memory client of this package holding a seed. */
export async function oursFrom(s) {
  const client = await Client.inMemory();
  await client.importIdentity(s.identity);
  for (const p of s.prekeys) await client.importPrekey(p);
  for (const [id, bytes] of s.sessions) await client.importSession(id, bytes);
  return client;
}

/**
 * conv10's timed part for two clients of ours: blocks of `sc.flipEvery` plaintexts, each
 * encryptBatch'd by one side and decryptBatch'd by the other, the sides taking turns;
 * `onTurn(block, results)` sees each block's decryptBatch results.
 */
export async function converse(sc, alice, bob, onTurn) {
  for (let b = 0; b * sc.flipEvery < sc.plaintexts.length; b++) {
    const block = sc.plaintexts.slice(b * sc.flipEvery, (b + 1) * sc.flipEvery);
    const [sender, to, receiver, from] = b % 2 === 0 ? [alice, BOB, bob, ALICE] : [bob, ALICE, alice, BOB];
    const envelopes = await sender.encryptBatch(block.map((plaintext) => ({ sessionId: to, plaintext })));
    onTurn(block, await receiver.decryptBatch(envelopes.map((envelope) => ({ sessionId: from, envelope }))));
  }
}

export function equal(a, b) {
  if (!a || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
