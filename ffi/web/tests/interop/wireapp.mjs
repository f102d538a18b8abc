// Live interop with @wireapp/proteus 9.13.0 in the same Node process: sessions started from
// either side, 1000-message queues each way, ratchet turns, out-of-order delivery, 1 MiB messages,
// and serialised identities, prekeys and sessions loaded across the two implementations.
// Run: node --test tests/interop/wireapp.mjs (after ./build.sh).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { Client, ProteusError, bundleFingerprint, init } from '../../pkg/index.js';
import { WireClient, keys, wireVersion } from '../support/wire.mjs';

await init();

const text = (bytes) => new TextDecoder().decode(bytes);

/** A deterministic permutation of 0..n-1 (so a failure can be replayed). */
function shuffled(n, seed) {
  const order = Array.from({ length: n }, (_, i) => i);
  let state = createHash('sha256').update(seed).digest().readUInt32BE(0) || 1;
  for (let i = n - 1; i > 0; i--) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    const j = state % (i + 1);
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

/** Ours and theirs with an established session: ours knows them as "wire", they know us as "ours". */
async function established(initiator) {
  const ours = await Client.inMemory();
  const wire = new WireClient();
  if (initiator === 'wire') {
    const [{ bundle }] = await ours.generatePrekeys(1);
    wire.createSession('ours', bundle);
    assert.equal(text(await ours.decrypt('wire', wire.encrypt('ours', 'hello from wire'))), 'hello from wire');
    assert.equal(text(await wire.decrypt('ours', await ours.encrypt('wire', 'hello back'))), 'hello back');
  } else {
    const [{ bundle }] = wire.newPrekeys([1]);
    await ours.createSession('wire', bundle);
    assert.equal(text(await wire.decrypt('ours', await ours.encrypt('wire', 'hello from ours'))), 'hello from ours');
    assert.equal(text(await ours.decrypt('wire', wire.encrypt('ours', 'hello back'))), 'hello back');
  }
  return { ours, wire };
}

/** Direction flips `turns` times, `perTurn` messages each, every message checked on arrival. */
async function ratchetTurns(ours, wire, turns, perTurn) {
  for (let turn = 0; turn < turns; turn++) {
    for (let i = 0; i < perTurn; i++) {
      const line = `turn ${turn} message ${i} ✓`;
      if (turn % 2 === 0) assert.equal(text(await wire.decrypt('ours', await ours.encrypt('wire', line))), line);
      else assert.equal(text(await ours.decrypt('wire', wire.encrypt('ours', line))), line);
    }
  }
}

describe(`live interop with @wireapp/proteus ${wireVersion}`, () => {
  test('@wireapp/proteus starts a session from our bundle; 20 ratchet turns', async () => {
    const { ours, wire } = await established('wire');
    assert.equal(await ours.remoteFingerprint('wire'), wire.fingerprint());
    assert.equal(await ours.prekeysRemaining(), 0, 'our one-time prekey was used up');
    await ratchetTurns(ours, wire, 20, 3);
  });

  test('we start a session from their bundle; 20 ratchet turns', async () => {
    const { ours, wire } = await established('ours');
    assert.equal(await ours.remoteFingerprint('wire'), wire.fingerprint());
    assert.deepEqual(wire.store.deleted, [1], 'their one-time prekey was used up');
    await ratchetTurns(ours, wire, 20, 3);
  });

  test('their bundles and ours carry the same fingerprints', async () => {
    const ours = await Client.inMemory();
    const wire = new WireClient();
    const [{ bundle: theirs }] = wire.newPrekeys([5]);
    assert.equal(bundleFingerprint(theirs), wire.fingerprint());
    const [{ bundle: mine }] = await ours.generatePrekeys(1);
    const parsed = keys.PreKeyBundle.deserialise(mine.buffer.slice(mine.byteOffset, mine.byteOffset + mine.byteLength));
    assert.equal(parsed.identity_key.fingerprint(), await ours.fingerprint());
  });

  test('a 1000-message queue each way (PreKeyMessages first, then an established session)', async () => {
    // They write 1000 messages before we ever answer: all are PreKeyMessages.
    const ours = await Client.inMemory();
    const wire = new WireClient();
    const [{ bundle }] = await ours.generatePrekeys(1);
    wire.createSession('ours', bundle);
    const lines = Array.from({ length: 1000 }, (_, i) => `wire → ours #${i}`);
    const queue = lines.map((l) => ({ sessionId: 'wire', envelope: wire.encrypt('ours', l) }));
    const results = await ours.decryptBatch(queue);
    assert.deepEqual(results.map((r) => text(r.plaintext)), lines);
    // And 1000 back, decrypted by them one by one.
    const back = Array.from({ length: 1000 }, (_, i) => `ours → wire #${i}`);
    const envelopes = await ours.encryptBatch(back.map((plaintext) => ({ sessionId: 'wire', plaintext })));
    const got = [];
    for (const e of envelopes) got.push(text(await wire.decrypt('ours', e)));
    assert.deepEqual(got, back);
    // And another 1000 to us on the established session.
    const more = Array.from({ length: 1000 }, (_, i) => `wire → ours again #${i}`);
    const again = await ours.decryptBatch(more.map((l) => ({ sessionId: 'wire', envelope: wire.encrypt('ours', l) })));
    assert.deepEqual(again.map((r) => text(r.plaintext)), more);
  });

  test('out-of-order delivery both ways, and duplicates refused', async () => {
    const { ours, wire } = await established('ours');
    const toOurs = Array.from({ length: 60 }, (_, i) => `w${i}`);
    const envs = toOurs.map((l) => wire.encrypt('ours', l));
    const order = shuffled(60, 'to ours');
    const results = await ours.decryptBatch(order.map((i) => ({ sessionId: 'wire', envelope: envs[i] })));
    assert.deepEqual(results.map((r) => text(r.plaintext)), order.map((i) => toOurs[i]));
    await assert.rejects(ours.decrypt('wire', envs[7]), (e) => e instanceof ProteusError && e.code === 209);

    const toWire = Array.from({ length: 60 }, (_, i) => `o${i}`);
    const outs = [];
    for (const l of toWire) outs.push(await ours.encrypt('wire', l));
    for (const i of shuffled(60, 'to wire')) assert.equal(text(await wire.decrypt('ours', outs[i])), toWire[i]);
    await ratchetTurns(ours, wire, 4, 2);
  });

  test('a 1 MiB message each way', async () => {
    const { ours, wire } = await established('wire');
    const big = new Uint8Array(1 << 20).map((_, i) => (i * 7 + (i >> 9)) & 255);
    const fromWire = wire.encrypt('ours', big);
    assert.ok(fromWire.length > 1 << 20);
    assert.deepEqual(await ours.decrypt('wire', fromWire), big);
    const reversed = big.slice().reverse();
    assert.deepEqual(new Uint8Array(await wire.decrypt('ours', await ours.encrypt('wire', reversed))), reversed);
  });

  test('we load their identity, prekeys and sessions', async () => {
    // Their client, with a session to a peer (also theirs) and a spare prekey.
    const theirs = new WireClient();
    const peer = new WireClient();
    const [{ bundle }] = theirs.newPrekeys([1]);
    peer.createSession('theirs', bundle);
    await theirs.decrypt('peer', peer.encrypt('theirs', 'hi'));
    assert.equal(text(await peer.decrypt('theirs', theirs.encrypt('peer', 'hi back'))), 'hi back');
    const [spare] = theirs.newPrekeys([2]);

    // We take over their identity, the spare prekey and the session.
    const ours = await Client.inMemory();
    await ours.importIdentity(theirs.exportIdentity());
    assert.equal(await ours.fingerprint(), theirs.fingerprint());
    assert.equal(await ours.importPrekey(spare.prekey), 2);
    assert.deepEqual((await ours.prekeyBundle(2)).bundle, spare.bundle);
    await ours.importSession('peer', theirs.exportSession('peer'));
    assert.equal(text(await ours.decrypt('peer', peer.encrypt('theirs', 'to the new client'))), 'to the new client');
    assert.equal(text(await peer.decrypt('theirs', await ours.encrypt('peer', 'from the new client'))), 'from the new client');

    // Someone else starts a session from the imported prekey's bundle.
    const newcomer = new WireClient();
    newcomer.createSession('ours', spare.bundle);
    assert.equal(text(await ours.decrypt('newcomer', newcomer.encrypt('ours', 'via the imported prekey'))), 'via the imported prekey');
    assert.equal(await ours.prekeysRemaining(), 0);
  });

  test('they load our identity and sessions', async () => {
    const { ours, wire: peer } = await established('ours');
    await ratchetTurns(ours, peer, 3, 2);
    const theirs = WireClient.fromRecords({
      identity: await ours.exportIdentity(),
      sessions: [['peer', await ours.exportSession('wire')]],
    });
    assert.equal(theirs.fingerprint(), await ours.fingerprint());
    assert.equal(text(await theirs.decrypt('peer', peer.encrypt('ours', 'to the wire copy'))), 'to the wire copy');
    assert.equal(text(await peer.decrypt('ours', theirs.encrypt('peer', 'from the wire copy'))), 'from the wire copy');
    // Their re-serialisation of our session loads back into a fresh client of ours.
    const back = await Client.inMemory();
    await back.importIdentity(theirs.exportIdentity());
    await back.importSession('wire', theirs.exportSession('peer'));
    assert.equal(text(await back.decrypt('wire', peer.encrypt('ours', 'round trip'))), 'round trip');
  });
});
