// The scenarios of the vector generator (gen-vectors.mjs), one function each, and the lenient
// set: inputs @wireapp/proteus 9.13.0 accepts although their bytes differ from what it sends.

import { decodeEnvelope, unhex } from './common.mjs';
import { flip, spliceMessage } from './envelope-positions.mjs';
import { Scenario, SPARSE } from './scenario.mjs';

export const scenarios = {};

scenarios.long_chain = async () => {
  const s = new Scenario(
    'long_chain',
    'One long sending chain: Alice starts from Bob\'s one-time prekey 1, her first message is a PreKeyMessage and her session\'s pending_prekey is then cleared (cleared_pending_prekey, the benchmark shape), so messages 1..1499 are CipherMessages of the same chain (counters 0..1499: the CBOR counter grows from 1 to 2 and 3 bytes). Alice encrypts all 1500, then Bob decrypts all 1500 in order. Then Bob replies twice (DH ratchet on both sides), Alice answers once.',
    { snapshotEvery: 0, snapshotPolicyText: SPARSE(0) },
  );
  s.party('alice');
  s.party('bob', [1, 65535]);
  const b = s.bundle('bob', 1);
  await s.init('alice', 'bob', b);
  const ids = [];
  for (let i = 0; i < 1500; i++) ids.push(await s.enc('alice', 'bob', { size: s.rand.int(0, 40), clear: i === 0 }));
  for (const id of ids) await s.dec('bob', 'alice', id, { want: 'ok' });
  const r = await s.encMany('bob', 'alice', 2);
  for (const id of r) await s.dec('alice', 'bob', id, { want: 'ok' });
  const a = await s.enc('alice', 'bob');
  await s.dec('bob', 'alice', a, { want: 'ok' });
  return s;
};

scenarios.counter_gap = async () => {
  const s = new Scenario(
    'counter_gap',
    'The MAX_COUNTER_GAP (1000) limit, counted as message counter minus the receive chain\'s next index. ' +
      '(a) Within a used chain (Bob\'s chain for Alice\'s second ratchet key is at index 1): a message with gap 1001 is rejected (TooDistantFuture 212), then the message with gap exactly 1000 is accepted (1000 keys staged), a staged one (counter 501) decrypts late, and the gap-1001 message now decrypts in order. ' +
      '(b) At the start of a new receive chain (Alice receiving Bob\'s new ratchet key): counter 1001 is rejected (211; the failed decrypt still draws a key pair, on a copy), counter 1000 is accepted, counter 0 decrypts from the staged keys, then 1001. ' +
      '(c) At session creation (carol -> bob, init_from_message): PreKeyMessage counter 1001 is rejected (211) and neither creates a session nor consumes prekey 2; counter 1000 creates the session; then counters 0 and 1001. Then, still with PreKeyMessages (carol had no reply yet) on the existing session: gap 1001 rejected (212, not retried as a new session), gap 1000 accepted (the old staged keys are evicted, 1000 kept). ' +
      'Messages never delivered are encrypt_unrecorded events.',
    { snapshotEvery: 0, maxOptional: 4000, snapshotPolicyText: SPARSE(0) },
  );
  s.party('alice');
  s.party('bob', [1, 2, 65535]);
  s.party('carol');
  const b1 = s.bundle('bob', 1);
  const b2 = s.bundle('bob', 2);
  // (a)
  await s.init('alice', 'bob', b1);
  const m0 = await s.enc('alice', 'bob');
  await s.dec('bob', 'alice', m0, { want: 'ok' });
  const r0 = await s.enc('bob', 'alice');
  await s.dec('alice', 'bob', r0, { want: 'ok' });
  const a0 = await s.enc('alice', 'bob', { note: 'first message of Alice\'s second sending chain' });
  await s.dec('bob', 'alice', a0, { want: 'ok' }); // Bob's chain index now 1
  await s.unrecorded('alice', 'bob', 500, 'counters 1..500, never delivered');
  const a501 = await s.enc('alice', 'bob', { note: 'counter 501, delivered late' });
  await s.unrecorded('alice', 'bob', 499, 'counters 502..1000, never delivered');
  const a1001 = await s.enc('alice', 'bob', { note: 'counter 1001: gap 1000 from index 1' });
  const a1002 = await s.enc('alice', 'bob', { note: 'counter 1002: gap 1001 from index 1' });
  await s.dec('bob', 'alice', a1002, { want: 'TooDistantFuture/212', note: 'gap 1001 within a used chain' });
  await s.dec('bob', 'alice', a1001, { want: 'ok', note: 'gap exactly 1000: accepted, 1000 keys staged', snapshot: true });
  await s.dec('bob', 'alice', a501, { want: 'ok', note: 'staged key' });
  await s.dec('bob', 'alice', a1002, { want: 'ok', note: 'now in order' });
  // (b)
  const b0 = await s.enc('bob', 'alice', { note: 'Bob\'s new chain (he ratcheted on Alice\'s second key), counter 0, delivered late' });
  await s.unrecorded('bob', 'alice', 999, 'counters 1..999, never delivered');
  const b1000 = await s.enc('bob', 'alice', { note: 'counter 1000' });
  const b1001 = await s.enc('bob', 'alice', { note: 'counter 1001' });
  await s.dec('alice', 'bob', b1001, { want: 'TooDistantFuture/211', note: 'new ratchet key, gap 1001 at chain start' });
  await s.dec('alice', 'bob', b1000, { want: 'ok', note: 'new ratchet key, gap exactly 1000 at chain start' });
  await s.dec('alice', 'bob', b0, { want: 'ok', note: 'staged key for counter 0' });
  await s.dec('alice', 'bob', b1001, { want: 'ok' });
  const a2 = await s.enc('alice', 'bob');
  await s.dec('bob', 'alice', a2, { want: 'ok' });
  // (c)
  await s.init('carol', 'bob', b2);
  const c0 = await s.enc('carol', 'bob', { note: 'PreKeyMessage counter 0, delivered late' });
  await s.unrecorded('carol', 'bob', 999, 'PreKeyMessages 1..999, never delivered');
  const c1000 = await s.enc('carol', 'bob', { note: 'PreKeyMessage counter 1000' });
  const c1001 = await s.enc('carol', 'bob', { note: 'PreKeyMessage counter 1001' });
  await s.dec('bob', 'carol', c1001, { want: 'TooDistantFuture/211', note: 'no session yet: init_from_message fails, prekey 2 stays' });
  await s.dec('bob', 'carol', c1000, { want: 'ok', note: 'creates the session with gap exactly 1000' });
  await s.dec('bob', 'carol', c0, { want: 'ok', note: 'PreKeyMessage on the existing session, staged key' });
  await s.dec('bob', 'carol', c1001, { want: 'ok' });
  await s.unrecorded('carol', 'bob', 1000, 'PreKeyMessages 1002..2001, never delivered');
  const c2002 = await s.enc('carol', 'bob', { note: 'counter 2002: gap 1000 from index 1002' });
  const c2003 = await s.enc('carol', 'bob', { note: 'counter 2003: gap 1001' });
  await s.dec('bob', 'carol', c2003, { want: 'TooDistantFuture/212', note: 'PreKeyMessage, gap 1001 in the used chain: TooDistantFuture is not retried with a new session state' });
  await s.dec('bob', 'carol', c2002, { want: 'ok', note: 'gap 1000: the 999 older staged keys are evicted, 1000 kept' });
  await s.dec('bob', 'carol', c2003, { want: 'ok' });
  const cr = await s.enc('bob', 'carol');
  await s.dec('carol', 'bob', cr, { want: 'ok' });
  const c3 = await s.enc('carol', 'bob');
  await s.dec('bob', 'carol', c3, { want: 'ok' });
  return s;
};

scenarios.many_ratchet_turns = async () => {
  const s = new Scenario(
    'many_ratchet_turns',
    'Alice and Bob take 41 turns (40 direction changes): each turn one side sends 1-4 messages (delivered shuffled within the turn) and the other decrypts them, so every turn is a new DH ratchet step. ' +
      'Some messages are held back and delivered late: from a receive chain that is still kept (the 5th = MAX_RECV_CHAINS newest, both through a staged key and through the chain\'s in-order path), and from chains already dropped (6th and older), which the library treats as a new ratchet key on a copy of the state and rejects (the failed decrypt lists the key pair it drew). A late message delivered twice is a DuplicateMessage.',
    { snapshotEvery: 1 },
  );
  s.party('alice');
  s.party('bob', [1, 65535]);
  const b = s.bundle('bob', 1);
  await s.init('alice', 'bob', b);
  // holds: turn -> {index in turn, deliver after turn T (after that turn's messages were decrypted), want}
  const holds = [
    { turn: 10, idx: 0, after: 18, want: 'ok', note: 'held from Alice\'s turn-10 chain, now the 5th newest receive chain (kept), staged key' },
    { turn: 12, idx: 'last', after: 20, want: 'ok', note: 'held last message of Alice\'s turn-12 chain, 5th newest (kept): in-order path of an old chain' },
    { turn: 14, idx: 1, after: 24, want: ['InvalidSignature/206', 'InvalidSignature/207'], note: 'held from Alice\'s turn-14 chain, which is now the 6th newest and was dropped' },
    { turn: 21, idx: 0, after: 29, want: 'ok', note: 'held from Bob\'s turn-21 chain, 5th newest for Alice (kept)' },
    { turn: 23, idx: 'last', after: 33, want: ['InvalidSignature/206', 'InvalidSignature/207'], note: 'held from Bob\'s turn-23 chain, dropped (6th newest)' },
    { turn: 5, idx: 0, after: 40, want: ['InvalidSignature/206', 'InvalidSignature/207'], note: 'held from Bob\'s turn-5 chain, long dropped' },
  ];
  const late = new Map(); // after-turn -> [{id, receiver, sender, want, note}]
  const delivered = [];
  for (let t = 0; t <= 40; t++) {
    const [from, to] = t % 2 === 0 ? ['alice', 'bob'] : ['bob', 'alice'];
    const n = holds.some((h) => h.turn === t) ? 3 : s.rand.int(1, 4);
    const ids = await s.encMany(from, to, n);
    const hold = holds.find((h) => h.turn === t);
    let held = null;
    if (hold) {
      held = ids[hold.idx === 'last' ? ids.length - 1 : hold.idx];
      if (!late.has(hold.after)) late.set(hold.after, []);
      late.get(hold.after).push({ id: held, receiver: to, sender: from, want: hold.want, note: hold.note });
    }
    for (const id of s.rand.shuffle(ids.filter((x) => x !== held))) {
      await s.dec(to, from, id, { want: 'ok' });
      delivered.push({ id, receiver: to, sender: from });
    }
    for (const l of late.get(t) ?? []) {
      await s.dec(l.receiver, l.sender, l.id, { want: l.want, note: l.note });
      if (l.want === 'ok') await s.dec(l.receiver, l.sender, l.id, { want: 'DuplicateMessage/209', note: 'the same late message again' });
    }
  }
  return s;
};

scenarios.last_resort = async () => {
  const s = new Scenario(
    'last_resort',
    'The last-resort prekey (65535) is never removed: Alice and, independently, Carol (from a signed bundle of the same prekey) create sessions from it (prekeys_removed empty). ' +
      'Alice re-initiates from it on her side (a new session tag; her old session is replaced), so Bob\'s session with her gets a second state and his replies follow the new tag; a message still in flight on the old tag decrypts and makes the old tag current again, so Bob\'s next reply uses it and Alice, whose session no longer has that state, rejects it (InvalidMessage 205) until her next message moves Bob back. ' +
      'Dave uses one-time prekey 1 (removed); Erin then uses the same bundle of prekey 1 and is rejected (ProteusError 101) and starts over from the last resort; Dave re-initiating with the consumed prekey 1 on his existing session is rejected too (101). ' +
      'Alice re-initiating with one-time prekey 2 removes it; replays of PreKeyMessages whose state exists are DuplicateMessage. A PreKeyMessage from the last resort with a broken MAC on an existing session is retried as a new state from prekey 65535 and still rejected (InvalidSignature), and nothing is removed.',
    { snapshotEvery: 1 },
  );
  s.party('alice');
  s.party('bob', [1, 2, 3, 65535]);
  s.party('carol');
  s.party('dave');
  s.party('erin');
  const lr = s.bundle('bob', 65535);
  const lrSigned = s.bundle('bob', 65535, true);
  const p1 = s.bundle('bob', 1);
  const p2 = s.bundle('bob', 2);

  await s.init('alice', 'bob', lr, 'from the last-resort prekey');
  const a0 = await s.enc('alice', 'bob');
  const a1 = await s.enc('alice', 'bob');
  await s.dec('bob', 'alice', a0, { want: 'ok', note: 'session from the last resort: nothing removed' });
  await s.dec('bob', 'alice', a1, { want: 'ok' });
  await s.init('carol', 'bob', lrSigned, 'a second sender, same last-resort prekey (signed bundle)');
  const c0 = await s.enc('carol', 'bob');
  const c1 = await s.enc('carol', 'bob');
  await s.dec('bob', 'carol', c1, { want: 'ok', note: 'Carol\'s second PreKeyMessage creates the session' });
  await s.dec('bob', 'carol', c0, { want: 'ok' });
  const r0 = await s.enc('bob', 'alice');
  await s.dec('alice', 'bob', r0, { want: 'ok' });
  const rc = await s.enc('bob', 'carol');
  await s.dec('carol', 'bob', rc, { want: 'ok' });
  const c2 = await s.enc('carol', 'bob');
  await s.dec('bob', 'carol', c2, { want: 'ok' });
  await s.dec('bob', 'alice', a0, { want: 'DuplicateMessage/209', note: 'replay of Alice\'s first last-resort PreKeyMessage' });

  const a2 = await s.enc('alice', 'bob', { note: 'old session, held (in flight)' });
  await s.init('alice', 'bob', lr, 'Alice re-initiates from the last resort: new session tag, her old session is replaced');
  const a3 = await s.enc('alice', 'bob');
  await s.dec('bob', 'alice', a3, { want: 'ok', note: 'unknown tag on an existing session: a second state from prekey 65535, still not removed' });
  const r1 = await s.enc('bob', 'alice', { note: 'uses the new tag' });
  await s.dec('alice', 'bob', r1, { want: 'ok' });
  await s.dec('bob', 'alice', a2, { want: 'ok', note: 'late message on the old tag still decrypts; the old tag becomes current' });
  const r2 = await s.enc('bob', 'alice', { note: 'uses the old tag again' });
  await s.dec('alice', 'bob', r2, { want: 'InvalidMessage/205', note: 'Alice\'s session has no state for the old tag' });
  const a4 = await s.enc('alice', 'bob');
  await s.dec('bob', 'alice', a4, { want: 'ok', note: 'the new tag is current again' });
  const r3 = await s.enc('bob', 'alice');
  await s.dec('alice', 'bob', r3, { want: 'ok' });

  await s.init('dave', 'bob', p1, 'one-time prekey 1');
  const d0 = await s.enc('dave', 'bob');
  await s.dec('bob', 'dave', d0, { want: 'ok', note: 'prekey 1 is removed' });
  await s.init('erin', 'bob', p1, 'the same bundle of prekey 1, already consumed');
  const e0 = await s.enc('erin', 'bob');
  await s.dec('bob', 'erin', e0, { want: 'ProteusError/101', note: 'one-time prekey reused after consumption' });
  await s.init('erin', 'bob', lr, 'Erin starts over from the last resort');
  const e1 = await s.enc('erin', 'bob');
  await s.dec('bob', 'erin', e1, { want: 'ok' });
  await s.dec('bob', 'erin', e0, { want: 'ProteusError/101', note: 'the stale PreKeyMessage of prekey 1 on the now existing session: unknown tag, prekey gone' });
  const re = await s.enc('bob', 'erin');
  await s.dec('erin', 'bob', re, { want: 'ok' });
  await s.init('dave', 'bob', p1, 'Dave re-initiates with the consumed prekey 1');
  const d1 = await s.enc('dave', 'bob');
  await s.dec('bob', 'dave', d1, { want: 'ProteusError/101', note: 'existing session, unknown tag, prekey 1 gone' });
  const rd = await s.enc('bob', 'dave');
  await s.dec('dave', 'bob', rd, { want: 'InvalidMessage/205', note: 'Dave replaced his session, Bob still answers on the first tag' });

  await s.init('alice', 'bob', p2, 'Alice re-initiates from one-time prekey 2');
  const a5 = await s.enc('alice', 'bob');
  await s.dec('bob', 'alice', a5, { want: 'ok', note: 'a third state; prekey 2 removed' });
  await s.dec('bob', 'alice', a5, { want: 'DuplicateMessage/209', note: 'replay of that PreKeyMessage' });
  const a6 = await s.enc('alice', 'bob');
  await s.init('alice', 'bob', lr, 'and once more from the last resort');
  const a7 = await s.enc('alice', 'bob');
  const bad = s.tamper(a7, 'flipped bit 0 of the last byte of the MAC', (b, L) => flip(b, L.mac[1] - 1));
  await s.dec('bob', 'alice', bad, { want: 'InvalidSignature/206', note: 'unknown tag -> new state from 65535 -> MAC fails; nothing removed' });
  await s.dec('bob', 'alice', a7, { want: 'ok', note: 'a fourth state from the last resort' });
  await s.dec('bob', 'alice', a6, { want: 'ok', note: 'late PreKeyMessage of the prekey-2 state' });
  const r4 = await s.enc('bob', 'alice');
  await s.dec('alice', 'bob', r4, { want: 'InvalidMessage/205', note: 'Bob follows the prekey-2 tag that Alice replaced' });
  const a8 = await s.enc('alice', 'bob');
  await s.dec('bob', 'alice', a8, { want: 'ok' });
  const r5 = await s.enc('bob', 'alice');
  await s.dec('alice', 'bob', r5, { want: 'ok' });
  return s;
};

scenarios.duplicates_and_outdated = async () => {
  const s = new Scenario(
    'duplicates_and_outdated',
    'Replays and too-old messages. Replays of delivered PreKeyMessages (after the session exists) and CipherMessages are DuplicateMessage 209 (in the current and in older kept chains). ' +
      'Alice\'s second chain: counters 0, 1 and 100 are held back, 500 arrives first (500 keys staged), 1 is delivered late, then 1101 arrives (600 more staged; the list is capped at 1000, so the 99 oldest, counters 0 and 2..99, are evicted and 100 is the oldest kept). Then 0 is OutdatedMessage 208, 100 (the oldest kept) decrypts, a replay of 100 or of 1 is now OutdatedMessage too (older than the new oldest, 101), and a replay of 1101 is DuplicateMessage. ' +
      'After six more turns the first chain is dropped: a replay of Alice\'s first PreKeyMessage is then no longer a duplicate; it fails as a new ratchet key, is retried as a new session state and fails because one-time prekey 1 is gone (ProteusError 101); a replay of an old CipherMessage fails with InvalidSignature.',
    { snapshotEvery: 1, maxOptional: 6000, snapshotPolicyText: 'session_after on every event where the session is small (no large staged-key lists), and where required.' },
  );
  s.party('alice');
  s.party('bob', [1, 65535]);
  const b = s.bundle('bob', 1);
  await s.init('alice', 'bob', b);
  const m = await s.encMany('alice', 'bob', 3);
  for (const id of m) await s.dec('bob', 'alice', id, { want: 'ok' });
  await s.dec('bob', 'alice', m[0], { want: 'DuplicateMessage/209', note: 'replay of the PreKeyMessage that created the session' });
  await s.dec('bob', 'alice', m[2], { want: 'DuplicateMessage/209', note: 'replay of the last delivered PreKeyMessage' });
  const r = await s.encMany('bob', 'alice', 2);
  for (const id of r) await s.dec('alice', 'bob', id, { want: 'ok' });
  await s.dec('alice', 'bob', r[0], { want: 'DuplicateMessage/209', note: 'replay of a CipherMessage' });

  const e0 = await s.enc('alice', 'bob', { note: 'counter 0, held' });
  const e1 = await s.enc('alice', 'bob', { note: 'counter 1, held' });
  await s.unrecorded('alice', 'bob', 98, 'counters 2..99');
  const e100 = await s.enc('alice', 'bob', { note: 'counter 100, held' });
  await s.unrecorded('alice', 'bob', 399, 'counters 101..499');
  const f = await s.enc('alice', 'bob', { note: 'counter 500' });
  await s.dec('bob', 'alice', f, { want: 'ok', note: 'new chain: 500 keys staged (0..499)' });
  await s.dec('bob', 'alice', e1, { want: 'ok', note: 'staged key' });
  await s.dec('bob', 'alice', e1, { want: 'DuplicateMessage/209', note: 'replay: its key is gone, the oldest staged (0) is older' });
  await s.dec('bob', 'alice', m[1], { want: 'DuplicateMessage/209', note: 'replay from the previous (kept) chain' });
  await s.unrecorded('alice', 'bob', 600, 'counters 501..1100');
  const g = await s.enc('alice', 'bob', { note: 'counter 1101' });
  await s.dec('bob', 'alice', g, { want: 'ok', note: '600 more staged; 99 oldest evicted (0 and 2..99); 1000 kept: 100 and 101..499 and 501..1100' });
  await s.dec('bob', 'alice', e0, { want: 'OutdatedMessage/208', note: 'its key was evicted' });
  await s.dec('bob', 'alice', e100, { want: 'ok', note: 'the oldest kept key' });
  await s.dec('bob', 'alice', e100, { want: 'OutdatedMessage/208', note: 'replay: now older than the oldest kept (101)' });
  await s.dec('bob', 'alice', e1, { want: 'OutdatedMessage/208', note: 'replay of 1: outdated now' });
  await s.dec('bob', 'alice', g, { want: 'DuplicateMessage/209', note: 'replay of the newest' });
  await s.dec('bob', 'alice', m[2], { want: 'DuplicateMessage/209', note: 'PreKeyMessage replay, first chain still kept' });

  const kept = [];
  for (let t = 0; t < 6; t++) {
    const x = await s.enc('bob', 'alice');
    await s.dec('alice', 'bob', x, { want: 'ok' });
    const y = await s.enc('alice', 'bob');
    await s.dec('bob', 'alice', y, { want: 'ok' });
    kept.push(y);
  }
  await s.dec('bob', 'alice', kept[1], { want: 'DuplicateMessage/209', note: 'replay from a kept older chain' });
  await s.dec('bob', 'alice', m[0], { want: 'ProteusError/101', note: 'first chain dropped: the PreKeyMessage replay fails as a new ratchet key, is retried as a new state and prekey 1 is gone' });
  await s.dec('bob', 'alice', f, { want: ['InvalidSignature/206', 'InvalidSignature/207'], note: 'second chain dropped: treated as a new ratchet key, MAC fails' });
  const z = await s.enc('alice', 'bob');
  await s.dec('bob', 'alice', z, { want: 'ok' });
  return s;
};

scenarios.tampering = async () => {
  const s = new Scenario(
    'tampering',
    'Tampered envelopes, each a decrypt event with the bytes in `envelope` and a `mutation`, followed by the untampered message, which must still decrypt (a rejected message leaves the session unchanged). ' +
      'Before Bob has a session: truncations (DecodeError), a PreKeyMessage naming an absent prekey (ProteusError 101), flipped base key / identity key / MAC (rejected; nothing is created and prekey 1 stays). ' +
      'On the session: flipped bits in the MAC, the cipher text, the counter (ahead: InvalidSignature 207; behind with no staged key: DuplicateMessage 209), prev_counter, the session tag (InvalidMessage 205; on a PreKeyMessage the library retries with a new state and fails on the consumed prekey: ProteusError 101), the ratchet key; bad MACs in sync (206), ahead (207) and behind on a staged key (210); truncated envelopes and an inner message cut short (DecodeError); a wrong message-type byte (cipher read as prekey and vice versa: DecodeError; an unknown type: DecodeError.InvalidType 302); a 15-byte session tag (DecodeError.InvalidArrayLen 303); a wrong envelope map size; a genuine CipherMessage of another session (unknown tag, InvalidMessage 205); and a genuine PreKeyMessage of another identity sent to the session with alice (RemoteIdentityChanged 204).',
    { snapshotEvery: 1 },
  );
  s.party('alice');
  s.party('bob', [1, 2, 65535]);
  s.party('carol');
  const b1 = s.bundle('bob', 1);
  const b2 = s.bundle('bob', 2);
  await s.init('alice', 'bob', b1);
  const p0 = await s.enc('alice', 'bob');
  const p1 = await s.enc('alice', 'bob');
  const p2 = await s.enc('alice', 'bob');
  const len = unhex(s.messages[p0].envelope).length;
  for (const n of [0, 1, 2, 9, 40, Math.floor(len / 2), len - 1]) {
    await s.dec('bob', 'alice', s.tamper(p0, `truncated to ${n} of ${len} bytes`, (b) => b.slice(0, n)), { want: 'DecodeError/null', note: 'no session yet' });
  }
  await s.dec('bob', 'alice', s.tamper(p0, 'prekey_id changed from 1 to 9 (not in the store)', (b, L) => {
    if (L.prekeyId.hl !== 1 || L.prekeyId.val !== 1) throw new Error('prekey id layout');
    const c = Uint8Array.from(b);
    c[L.prekeyId.start] = 9;
    return c;
  }), { want: 'ProteusError/101' });
  for (const [what, field] of [['base key', 'baseKey'], ['identity key', 'identityKey']]) {
    // find a flip that still decodes as a curve point, so the failure is the handshake's
    let t = null;
    for (let i = 0; i < 32 * 8 && !t; i++) {
      const c = s.tamper(p0, `flipped bit ${i % 8} of byte ${i >> 3} of the ${what}`, (b, L) => flip(b, L[field][0] + (i >> 3), i % 8));
      try {
        decodeEnvelope(c.envelope);
        t = c;
      } catch { /* not a valid point, try the next bit */ }
    }
    await s.dec('bob', 'alice', t, { want: ['InvalidSignature/206', 'InvalidSignature/207'], note: `wrong ${what}: the handshake derives other keys` });
  }
  await s.dec('bob', 'alice', s.tamper(p0, 'flipped bit 7 of the first MAC byte', (b, L) => flip(b, L.mac[0], 7)), { want: 'InvalidSignature/206' });
  await s.dec('bob', 'alice', p0, { want: 'ok', note: 'the genuine PreKeyMessage creates the session; prekey 1 removed' });
  await s.dec('bob', 'alice', s.tamper(p1, 'flipped bit 0 of the last MAC byte', (b, L) => flip(b, L.mac[1] - 1)), { want: 'ProteusError/101', note: 'PreKeyMessage with a bad MAC on an existing session: retried as a new state, prekey 1 is gone' });
  await s.dec('bob', 'alice', s.tamper(p1, 'flipped bit 3 of the first session-tag byte', (b, L) => flip(b, L.sessionTag[0], 3)), { want: 'ProteusError/101', note: 'PreKeyMessage with an unknown tag: retried as a new state, prekey 1 is gone' });
  await s.dec('bob', 'alice', p1, { want: 'ok' });
  await s.dec('bob', 'alice', p2, { want: 'ok' });

  // Bob -> Alice
  const r0 = await s.enc('bob', 'alice');
  await s.dec('alice', 'bob', s.tamper(r0, 'flipped bit 1 of MAC byte 5', (b, L) => flip(b, L.mac[0] + 5, 1)), { want: 'InvalidSignature/206', note: 'new ratchet key: ratchet on a copy (a key pair is drawn), then the MAC fails' });
  await s.dec('alice', 'bob', s.tamper(r0, 'flipped bit 0 of the first cipher-text byte', (b, L) => flip(b, L.cipherText[0])), { want: 'InvalidSignature/206' });
  await s.dec('alice', 'bob', r0, { want: 'ok' });

  // Alice -> Bob, CipherMessages now (Alice received a reply)
  const c = await s.encMany('alice', 'bob', 8);
  await s.dec('bob', 'alice', s.tamper(c[0], 'flipped bit 0 of the first MAC byte', (b, L) => flip(b, L.mac[0])), { want: 'InvalidSignature/206', note: 'bad MAC, counter in sync (new chain: ratchet on a copy)' });
  await s.dec('bob', 'alice', s.tamper(c[0], 'flipped bit 5 of the last cipher-text byte', (b, L) => flip(b, L.cipherText[1] - 1, 5)), { want: 'InvalidSignature/206' });
  await s.dec('bob', 'alice', c[0], { want: 'ok' });
  await s.dec('bob', 'alice', s.tamper(c[1], 'flipped bit 2 of the last cipher-text byte', (b, L) => flip(b, L.cipherText[1] - 1, 2)), { want: 'InvalidSignature/206', note: 'cipher text, counter in sync' });
  await s.dec('bob', 'alice', s.tamper(c[1], 'prev_counter flipped (bit 0 of its value)', (b, L) => {
    if (L.prevCounter.hl !== 1) throw new Error('prev counter layout');
    return flip(b, L.prevCounter.start, 0);
  }), { want: 'InvalidSignature/206', note: 'prev_counter is covered by the MAC' });
  await s.dec('bob', 'alice', s.tamper(c[1], 'counter flipped from 1 to 0 (bit 0 of its value)', (b, L) => {
    if (L.counter.hl !== 1 || L.counter.val !== 1) throw new Error('counter layout');
    return flip(b, L.counter.start, 0);
  }), { want: 'DuplicateMessage/209', note: 'counter behind with no staged key: duplicate before any MAC check' });
  await s.dec('bob', 'alice', s.tamper(c[1], 'counter flipped from 1 to 3 (bit 1 of its value)', (b, L) => flip(b, L.counter.start, 1)), { want: 'InvalidSignature/207', note: 'counter ahead: MAC fails' });
  await s.dec('bob', 'alice', c[1], { want: 'ok' });
  await s.dec('bob', 'alice', s.tamper(c[3], 'flipped bit 4 of MAC byte 17', (b, L) => flip(b, L.mac[0] + 17, 4)), { want: 'InvalidSignature/207', note: 'bad MAC, counter ahead' });
  await s.dec('bob', 'alice', c[3], { want: 'ok', note: 'stages the key of counter 2' });
  await s.dec('bob', 'alice', s.tamper(c[2], 'flipped bit 6 of MAC byte 31', (b, L) => flip(b, L.mac[0] + 31, 6)), { want: 'InvalidSignature/210', note: 'bad MAC on a staged key: the key must survive' });
  await s.dec('bob', 'alice', s.tamper(c[2], 'flipped bit 0 of cipher-text byte 3', (b, L) => flip(b, L.cipherText[0] + 3)), { want: 'InvalidSignature/210' });
  await s.dec('bob', 'alice', c[2], { want: 'ok', note: 'the staged key is still there' });
  await s.dec('bob', 'alice', s.tamper(c[4], 'flipped bit 0 of session-tag byte 15', (b, L) => flip(b, L.sessionTag[1] - 1)), { want: 'InvalidMessage/205', note: 'unknown session tag' });
  // ratchet key: a flip that still decodes, and one that does not (if any)
  let okFlip = null, badFlip = null;
  for (let i = 0; i < 32 * 8 && !(okFlip && badFlip); i++) {
    const t = s.tamper(c[4], `flipped bit ${i % 8} of byte ${i >> 3} of the ratchet key`, (b, L) => flip(b, L.ratchetKey[0] + (i >> 3), i % 8));
    try {
      decodeEnvelope(t.envelope);
      okFlip ??= t;
    } catch {
      badFlip ??= t;
    }
  }
  await s.dec('bob', 'alice', okFlip, { want: ['InvalidSignature/206', 'InvalidSignature/207'], note: 'unknown ratchet key: ratchet on a copy (draws a key pair), MAC fails' });
  if (badFlip) await s.dec('bob', 'alice', badFlip, { note: 'ratchet key that is not a valid Ed25519 point: the library rejects it while decoding' });
  await s.dec('bob', 'alice', c[4], { want: 'ok' });
  const len5 = unhex(s.messages[c[5]].envelope).length;
  for (const n of [1, 3, 38, 41, len5 - 20, len5 - 1]) {
    await s.dec('bob', 'alice', s.tamper(c[5], `truncated to ${n} of ${len5} bytes`, (b) => b.slice(0, n)), { want: 'DecodeError/null' });
  }
  await s.dec('bob', 'alice', s.tamper(c[5], 'inner message cut to 60 bytes (envelope length fixed up)', (b, L) => spliceMessage(b, L.msg[0] + 60, L.msg[1], [])), { want: 'DecodeError/null', note: 'well-formed envelope, truncated message' });
  await s.dec('bob', 'alice', s.tamper(c[5], 'message type byte 1 (CipherMessage) changed to 2 (PreKeyMessage)', (b, L) => {
    const x = Uint8Array.from(b);
    x[L.type.start] = 2;
    return x;
  }), { want: 'DecodeError/3' });
  await s.dec('bob', 'alice', s.tamper(c[5], 'message type byte 1 changed to 3 (unknown)', (b, L) => {
    const x = Uint8Array.from(b);
    x[L.type.start] = 3;
    return x;
  }), { want: 'InvalidType/302' });
  await s.dec('bob', 'alice', s.tamper(c[5], 'message type byte 1 changed to 0 (unknown)', (b, L) => {
    const x = Uint8Array.from(b);
    x[L.type.start] = 0;
    return x;
  }), { want: 'InvalidType/302' });
  await s.dec('bob', 'alice', s.tamper(c[5], 'session tag shortened to 15 bytes (lengths fixed up)', (b, L) => {
    const tag = [...b.slice(L.sessionTag[0], L.sessionTag[1] - 1)];
    return spliceMessage(b, L.sessionTag[0] - 1, L.sessionTag[1], [0x40 | 15, ...tag]);
  }), { want: 'InvalidArrayLen/303' });
  await s.dec('bob', 'alice', s.tamper(c[5], 'envelope map size 3 changed to 2', (b) => {
    const x = Uint8Array.from(b);
    x[0] = 0xa2;
    return x;
  }), { want: 'DecodeError/3' });
  await s.dec('bob', 'alice', s.tamper(c[5], 'MAC bytes replaced by zeros', (b, L) => {
    const x = Uint8Array.from(b);
    x.fill(0, L.mac[0], L.mac[1]);
    return x;
  }), { want: 'InvalidSignature/206' });
  await s.dec('bob', 'alice', c[5], { want: 'ok' });

  // Carol's genuine messages sent to the wrong session
  await s.init('carol', 'bob', b2);
  const k0 = await s.enc('carol', 'bob');
  await s.dec('bob', 'alice', k0, { want: 'RemoteIdentityChanged/204', note: 'Carol\'s genuine PreKeyMessage arriving on Bob\'s session with Alice' });
  await s.dec('bob', 'carol', k0, { want: 'ok', note: 'the same message where it belongs: prekey 2 removed' });
  const kr = await s.enc('bob', 'carol');
  await s.dec('carol', 'bob', kr, { want: 'ok' });
  const k1 = await s.enc('carol', 'bob');
  await s.dec('bob', 'alice', k1, { want: 'InvalidMessage/205', note: 'a genuine CipherMessage of another session: unknown session tag' });
  await s.dec('bob', 'carol', k1, { want: 'ok' });
  // PreKeyMessage of Alice with a different identity key (Carol's) on Bob's session with Alice
  await s.dec('bob', 'alice', s.tamper(p2, 'identity key replaced by Carol\'s', (b, L) => {
    const x = Uint8Array.from(b);
    x.set(unhex(s.parties.get('carol').identity.public_key.fingerprint()), L.identityKey[0]);
    return x;
  }), { want: 'RemoteIdentityChanged/204' });
  await s.dec('bob', 'alice', c[6], { want: 'ok' });
  const r1 = await s.enc('bob', 'alice');
  await s.dec('alice', 'bob', r1, { want: 'ok' });
  const last = await s.enc('alice', 'bob');
  await s.dec('bob', 'alice', last, { want: 'ok' });
  return s;
};

scenarios.offline_queue = async () => {
  const s = new Scenario(
    'offline_queue',
    'Ten senders write to Bob while he is offline; their messages reach him interleaved, 30 per sender. Eight use their own one-time prekey of Bob\'s (1..8), two use the last-resort prekey 65535. Every sender\'s first message is a PreKeyMessage (they repeat the prekey header until they get a reply). ' +
      'Bob processes the first part of the queue (for one sender, his third PreKeyMessage arrives first and creates the session), then answers five senders; those decrypt the reply and continue with CipherMessages on a new chain, while the others keep sending PreKeyMessages. In the rest of the queue two of the answered senders\' new-chain messages overtake their own older ones, which then arrive late from the older chain. Finally Bob answers everyone and every sender decrypts.',
    { snapshotEvery: 3, snapshotPolicyText: SPARSE(3) },
  );
  const names = ['alice', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi', 'ivan', 'judy', 'mallory'];
  s.party('bob', [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 65535]);
  for (const n of names) s.party(n);
  const bundles = names.map((n, i) => s.bundle('bob', i < 8 ? i + 1 : 65535, i === 9));
  for (let i = 0; i < names.length; i++) await s.init(names[i], 'bob', bundles[i]);
  // phase 1: 12 each, encrypted in a random interleaving
  const q1 = new Map(names.map((n) => [n, []]));
  const order1 = s.rand.shuffle(names.flatMap((n) => Array(12).fill(n)));
  for (const n of order1) q1.get(n).push(await s.enc(n, 'bob', { size: s.rand.int(5, 80) }));
  // the queue keeps per-sender order, except that dave's third message comes first
  const queue = order1.map((n) => n);
  const cursor = new Map(names.map((n) => [n, 0]));
  let deliveries = queue.map((n) => q1.get(n)[cursor.set(n, cursor.get(n) + 1).get(n) - 1]);
  const d = q1.get('dave');
  deliveries = [d[2], ...deliveries.filter((x) => x !== d[2])];
  const half = 60;
  for (const id of deliveries.slice(0, half)) await s.dec('bob', s.messages[id].from, id, { want: 'ok' });
  const rest = deliveries.slice(half);
  const answered = names.filter((n) => s.parties.get('bob').sessions.has(n)).slice(0, 5);
  for (const n of answered) {
    const r = await s.enc('bob', n);
    await s.dec(n, 'bob', r, { want: 'ok' });
  }
  // phase 2: 18 more each
  const q2 = new Map(names.map((n) => [n, []]));
  const order2 = s.rand.shuffle(names.flatMap((n) => Array(18).fill(n)));
  for (const n of order2) q2.get(n).push(await s.enc(n, 'bob', { size: s.rand.int(5, 80) }));
  // interleave: rest of phase 1 (in order) and phase 2 (in order)
  let merged = [];
  const a = [...rest], b = order2.map((n) => n);
  const cur2 = new Map(names.map((n) => [n, 0]));
  const ids2 = b.map((n) => q2.get(n)[cur2.set(n, cur2.get(n) + 1).get(n) - 1]);
  while (a.length || ids2.length) {
    if (a.length && (!ids2.length || s.rand.int(0, 2) > 0)) merged.push(a.shift());
    else merged.push(ids2.shift());
  }
  // two answered senders: their first phase-2 messages overtake their remaining phase-1 ones
  for (const n of answered.slice(0, 2)) {
    const old = merged.filter((id) => s.messages[id].from === n && q1.get(n).includes(id));
    const fresh = q2.get(n).slice(0, 3);
    if (!old.length) continue;
    merged = merged.filter((id) => !fresh.includes(id));
    const at = merged.indexOf(old[0]);
    merged.splice(at, 0, ...fresh);
  }
  for (const id of merged) await s.dec('bob', s.messages[id].from, id, { want: 'ok' });
  for (const n of names) {
    const r = await s.enc('bob', n);
    await s.dec(n, 'bob', r, { want: 'ok' });
  }
  const fin = await s.enc('alice', 'bob');
  await s.dec('bob', 'alice', fin, { want: 'ok' });
  return s;
};

scenarios.wide_counters = async () => {
  const s = new Scenario(
    'wide_counters',
    'Counters beyond 16 bits. Alice encrypts 70000 messages on her second chain that are never delivered (encrypt_unrecorded), so her counter 70001 is CBOR-encoded in 4 bytes: Bob rejects it (TooDistantFuture 212, gap 70000). Bob then starts a new chain; when Alice ratchets, her prev_counter is 70002, also 4 bytes, in the next messages, which Bob decrypts.',
    { snapshotEvery: 1 },
  );
  s.party('alice');
  s.party('bob', [1, 65535]);
  const b = s.bundle('bob', 1);
  await s.init('alice', 'bob', b);
  const m0 = await s.enc('alice', 'bob');
  await s.dec('bob', 'alice', m0, { want: 'ok' });
  const r0 = await s.enc('bob', 'alice');
  await s.dec('alice', 'bob', r0, { want: 'ok' });
  const a0 = await s.enc('alice', 'bob');
  await s.unrecorded('alice', 'bob', 70000, 'counters 1..70000');
  const a70001 = await s.enc('alice', 'bob', { note: 'counter 70001 (4-byte CBOR integer)' });
  await s.dec('bob', 'alice', a0, { want: 'ok' });
  await s.dec('bob', 'alice', a70001, { want: 'TooDistantFuture/212' });
  const r1 = await s.enc('bob', 'alice');
  await s.dec('alice', 'bob', r1, { want: 'ok', note: 'Alice ratchets: prev_counter := 70002' });
  const x = await s.encMany('alice', 'bob', 2, { note: 'prev_counter 70002' });
  for (const id of x) await s.dec('bob', 'alice', id, { want: 'ok' });
  const r2 = await s.enc('bob', 'alice');
  await s.dec('alice', 'bob', r2, { want: 'ok' });
  return s;
};

// Inputs the library accepts although the bytes differ from what it would send (its decoders are
// positional and it re-encodes the message before checking the MAC). Kept apart, one file per
// case: an engine may legitimately be stricter here (see docs/protocol.md §13.1, §13.2).
export const LENIENT = {
  lenient_envelope_version: ['envelope version 1 changed to 2', (x, L) => { const y = Uint8Array.from(x); y[L.version.start] = 2; return y; }],
  lenient_trailing_byte: ['one zero byte appended after the envelope', (x) => Uint8Array.from([...x, 0])],
  lenient_map_key: ['CipherMessage map key 1 (counter) changed to 7', (x, L) => { const y = Uint8Array.from(x); y[L.cm.entries[1][0].start] = 7; return y; }],
  lenient_envelope_key: ['envelope map key 2 (message) changed to 9', (x, L) => { const y = Uint8Array.from(x); y[L.msgKey.start] = 9; return y; }],
  lenient_noncanonical_counter: ['counter re-encoded non-canonically as 0x18 NN (envelope length fixed up)', (x, L) => spliceMessage(x, L.counter.start, L.counter.end, [0x18, L.counter.val])],
  lenient_short_mac: ['MAC truncated to 31 bytes (length fixed up)', (x, L) => Uint8Array.from([...x.slice(0, L.macItem.start), 0x58, 31, ...x.slice(L.mac[0], L.mac[1] - 1), ...x.slice(L.mac[1])])],
};
for (const [name, [what, fn]] of Object.entries(LENIENT)) {
  scenarios[name] = async () => {
    const s = new Scenario(
      name,
      `Malformed-but-tolerated input, and what @wireapp/proteus 9.13.0 does with it: ${what}. The library's CBOR decoders are positional (map keys are read but not checked), it ignores bytes after the envelope, does not check the envelope version, verifies the MAC over its own re-encoding of the decoded message rather than the received bytes, and hands the MAC to libsodium without a length check. The mutated envelope is followed by the genuine one, which is a DuplicateMessage if the mutated one was accepted, and by more traffic.`,
      { set: 'generated-lenient', snapshotEvery: 1 },
    );
    s.party('alice');
    s.party('bob', [1, 65535]);
    const b = s.bundle('bob', 1);
    await s.init('alice', 'bob', b);
    const p0 = await s.enc('alice', 'bob');
    await s.dec('bob', 'alice', p0, { want: 'ok' });
    const r0 = await s.enc('bob', 'alice');
    await s.dec('alice', 'bob', r0, { want: 'ok' });
    const c = await s.encMany('alice', 'bob', 2);
    await s.dec('bob', 'alice', s.tamper(c[0], what, fn));
    await s.dec('bob', 'alice', c[0]);
    await s.dec('bob', 'alice', c[1], { want: 'ok' });
    const r1 = await s.enc('bob', 'alice');
    await s.dec('alice', 'bob', r1, { want: 'ok' });
    return s;
  };
}
