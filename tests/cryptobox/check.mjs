#!/usr/bin/env node
// Self-check of the fixtures with the REAL @wireapp/cryptobox, on copies (the fixtures are not changed):
//  1. fs-store records have the documented shape;
//  2. alice loads from a copy of fs-store: fingerprint, prekey ids, session ids as in expected.json;
//  3. she decrypts the whole queue, in order, to the expected plaintexts;
//  4. sessions continue both ways with every peer (peers loaded from a copy of fixtures/peers);
//  5. the same through `node peer.mjs --state DIR` as a subprocess, twice (state persists);
//  6. rust-cryptobox/ and rust-cryptobox-legacy/ hold the same bytes as fs-store;
//  7. the dexie engine (fake-indexeddb): a store made by makeStores reloads and decrypts its queue.
// Ends with "N passed, N failed"; exit status 1 on any failure.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Cryptobox, Proteus, fsEngine, dexieEngine, makeStores, toArrayBuffer, LAST_RESORT_PREKEY_ID } from './stores.mjs';
import { openPeers } from './peer.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = process.argv[2] ? path.resolve(process.argv[2]) : path.join(here, 'fixtures');
const expected = JSON.parse(fs.readFileSync(path.join(fixtures, 'expected.json'), 'utf8'));
const utf8 = new TextDecoder();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cryptobox-check-'));

let passed = 0;
let failed = 0;
function check(name, ok, detail = '') {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? ` — ${detail}` : ''}`);
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

async function loadAlice(dir) {
  const box = new Cryptobox(await fsEngine(dir), 1); // 1: no prekey refill on load
  await box.load();
  return box;
}

async function decryptQueue(alice, queue, label) {
  let good = 0;
  for (const [i, q] of queue.entries()) {
    try {
      const env = typeof q.envelope === 'string' ? Buffer.from(q.envelope, 'base64') : q.envelope;
      const plain = utf8.decode(await alice.decrypt(q.sessionId, toArrayBuffer(new Uint8Array(env))));
      if (plain === q.plaintext) good++;
      else console.log(`  ${label} queue[${i}] plaintext ${JSON.stringify(plain)} != ${JSON.stringify(q.plaintext)}`);
    } catch (e) {
      console.log(`  ${label} queue[${i}] (${q.sessionId}): ${e.constructor.name}: ${e.message}`);
    }
  }
  check(`${label}: decrypts the queue in order`, good === queue.length, `${good}/${queue.length}`);
}

try {
  // 1. record shape
  const fsStore = path.join(fixtures, 'fs-store');
  let shapeOk = true;
  for (const table of ['keys', 'prekeys', 'sessions']) {
    for (const file of fs.readdirSync(path.join(fsStore, table))) {
      const rec = JSON.parse(fs.readFileSync(path.join(fsStore, table, file), 'utf8'));
      const ok =
        file === `${rec.id}.dat` &&
        typeof rec.serialised === 'string' &&
        /^[A-Za-z0-9+/]*={0,2}$/.test(rec.serialised) &&
        rec.version === expected.generator['@wireapp/cryptobox'] &&
        Number.isInteger(rec.created) &&
        same(Object.keys(rec).sort(), ['created', 'id', 'serialised', 'version']);
      if (!ok) console.log(`  bad record ${table}/${file}`);
      shapeOk &&= ok;
    }
  }
  check('fs-store: every record is {created,id,serialised(base64),version} in <table>/<id>.dat', shapeOk);

  // 2./3. alice from a copy
  const aliceDir = path.join(tmp, 'alice');
  fs.cpSync(fsStore, aliceDir, { recursive: true });
  const alice = await loadAlice(aliceDir);
  check('alice: fingerprint', alice.getIdentity().public_key.fingerprint() === expected.fingerprint, expected.fingerprint);
  const prekeyIds = (await alice.store.load_prekeys()).map(p => p.key_id).sort((a, b) => a - b);
  check('alice: prekey ids', same(prekeyIds, expected.prekeyIds), prekeyIds.join(','));
  check('alice: last-resort prekey present', prekeyIds.includes(LAST_RESORT_PREKEY_ID));
  const sessionIds = (await alice.store.engine.readAllPrimaryKeys('sessions')).sort();
  check('alice: session ids', same(sessionIds, expected.sessionIds), `${sessionIds.length} sessions`);
  await decryptQueue(alice, expected.queue, 'alice (fs-store copy)');
  const usedOneTime = [...new Set(expected.queue.map(q => q.plaintext.match(/\(prekey (\d+)\)/)?.[1]).filter(Boolean))]
    .map(Number)
    .filter(id => id !== LAST_RESORT_PREKEY_ID);
  const left = (await alice.store.load_prekeys()).map(p => p.key_id);
  check(
    'alice: one-time prekeys used by the queue are gone, last resort kept',
    usedOneTime.every(id => !left.includes(id)) && left.includes(LAST_RESORT_PREKEY_ID),
    `used ${usedOneTime.join(',')}`,
  );

  // 4. continue with peers (in-process, on a copy)
  const { peers, close } = await openPeers({ fixturesDir: fixtures });
  try {
    check('peers: fingerprints as in expected.json', peers.sessionIds.every(id => peers.fingerprint(id) === expected.peers[id].fingerprint));
    let both = 0;
    for (const id of peers.sessionIds) {
      const text = `after import, alice→${id}`;
      const env = new Uint8Array(await alice.encrypt(id, text));
      const got = await peers.decrypt(id, env);
      const reply = `after import, ${id}→alice`;
      const back = utf8.decode(await alice.decrypt(id, toArrayBuffer(await peers.encrypt(id, reply))));
      if (got === text && back === reply) both++;
    }
    check('peers: every session continues both ways (in-process)', both === peers.sessionIds.length, `${both}/${peers.sessionIds.length}`);
  } finally {
    close();
  }

  // 5. peer.mjs as a subprocess, with a state dir (fresh alice copy so the ratchets match the fixture peers)
  const alice2Dir = path.join(tmp, 'alice2');
  fs.cpSync(fsStore, alice2Dir, { recursive: true });
  const alice2 = await loadAlice(alice2Dir);
  await decryptQueue(alice2, expected.queue, 'alice (second copy)');
  const state = path.join(tmp, 'peer-state');
  const call = request => {
    const r = spawnSync(process.execPath, [path.join(here, 'peer.mjs'), '--fixtures', fixtures, '--state', state], {
      input: JSON.stringify(request),
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`peer.mjs exited ${r.status}: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  const ids = Object.keys(expected.peers);
  const sent = [];
  for (const id of ids) {
    const text = `subprocess: alice→${id}`;
    sent.push({ sessionId: id, text, envelope: Buffer.from(await alice2.encrypt(id, text)).toString('base64') });
  }
  const r1 = call({
    decrypt: sent.map(({ sessionId, envelope }) => ({ sessionId, envelope })),
    encrypt: ids.map(id => ({ sessionId: id, text: `subprocess: ${id}→alice 1` })),
  });
  check('peer.mjs: peers decrypt what alice sent', r1.decrypt.every((d, i) => d.plaintext === sent[i].text), JSON.stringify(r1.decrypt.find(d => d.error) ?? ''));
  let ok1 = 0;
  for (const e of r1.encrypt) {
    const t = utf8.decode(await alice2.decrypt(e.sessionId, toArrayBuffer(Buffer.from(e.envelope, 'base64'))));
    if (t === `subprocess: ${e.sessionId}→alice 1`) ok1++;
  }
  check('peer.mjs: alice decrypts what the peers sent', ok1 === ids.length, `${ok1}/${ids.length}`);
  const r2 = call({ ops: ids.map(id => ({ op: 'encrypt', sessionId: id, text: `subprocess: ${id}→alice 2` })) });
  let ok2 = 0;
  for (const e of r2.ops) {
    const t = utf8.decode(await alice2.decrypt(e.sessionId, toArrayBuffer(Buffer.from(e.envelope, 'base64'))));
    if (t === `subprocess: ${e.sessionId}→alice 2`) ok2++;
  }
  check('peer.mjs --state: a second call goes on from the first', ok2 === ids.length, `${ok2}/${ids.length}`);

  // 6. Rust cryptobox layouts
  const rec = (table, id) => Buffer.from(JSON.parse(fs.readFileSync(path.join(fsStore, table, `${id}.dat`), 'utf8')).serialised, 'base64');
  const rust = path.join(fixtures, 'rust-cryptobox');
  const legacy = path.join(fixtures, 'rust-cryptobox-legacy');
  const idFile = fs.readFileSync(path.join(rust, 'identities', 'local'));
  check('rust-cryptobox: version file = u16 BE 1', same([...fs.readFileSync(path.join(rust, 'version'))], [0, 1]));
  check(
    'rust-cryptobox: identities/local = 01 a1 00 + IdentityKeyPair',
    same([...idFile.subarray(0, 3)], [1, 0xa1, 0]) && idFile.subarray(3).equals(rec('keys', 'local_identity')) &&
      Proteus.keys.IdentityKeyPair.deserialise(toArrayBuffer(idFile.subarray(3))).public_key.fingerprint() === expected.fingerprint,
  );
  check('rust-cryptobox-legacy: identities/local_identity = IdentityKeyPair, no version file',
    fs.readFileSync(path.join(legacy, 'identities', 'local_identity')).equals(rec('keys', 'local_identity')) && !fs.existsSync(path.join(legacy, 'version')));
  for (const dir of [rust, legacy]) {
    const pk = fs.readdirSync(path.join(dir, 'prekeys')).map(Number).sort((a, b) => a - b);
    const ss = fs.readdirSync(path.join(dir, 'sessions')).sort();
    const bytesOk =
      pk.every(id => fs.readFileSync(path.join(dir, 'prekeys', String(id))).equals(rec('prekeys', id))) &&
      ss.every(id => fs.readFileSync(path.join(dir, 'sessions', id)).equals(rec('sessions', id)));
    check(`${path.basename(dir)}: prekeys/<id> and sessions/<id> = the fs-store bytes`, same(pk, expected.prekeyIds) && same(ss, expected.sessionIds) && bytesOk);
  }

  // 7. dexie engine on fake-indexeddb
  const dbName = 'cryptobox-check';
  const made = await makeStores({ engine: 'dexie', dbName, seed: 7 });
  const raw = await made.alice.store.engine.db.table('sessions').get(made.expected.sessionIds[0]);
  check('dexie: records stored with serialised as base64 text', typeof raw?.serialised === 'string' && raw.id === made.expected.sessionIds[0]);
  const reopened = new Cryptobox(await dexieEngine(dbName), 1);
  await reopened.load();
  check('dexie: reopened store has the fingerprint', reopened.getIdentity().public_key.fingerprint() === made.expected.fingerprint);
  await decryptQueue(reopened, made.expected.queue, 'dexie reopened');
  let dx = 0;
  for (const id of made.peers.sessionIds) {
    const env = new Uint8Array(await reopened.encrypt(id, 'dexie continues'));
    if ((await made.peers.decrypt(id, env)) === 'dexie continues') dx++;
  }
  check('dexie: peers decrypt the reopened store\'s messages', dx === made.peers.sessionIds.length, `${dx}/${made.peers.sessionIds.length}`);
} catch (e) {
  failed++;
  console.log(`FAIL unexpected: ${e.stack}`);
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
