// Loaded by the pages of tests/browser/cryptobox.mjs (after harness.html): importCryptobox in a
// real page on real IndexedDB. The source side makes alice's store with the REAL @wireapp/cryptobox
// 12.8.0 (tests/cryptobox/stores.mjs, bundled by the test for the browser and served at
// ./cryptobox-bundle/stores.js) and keeps her peers; the target side is a durable Client. Bytes
// cross to the test as base64.
import { Client } from '../../pkg/index.js';
import { b64, text, unb64 } from './page-bytes.js';

const TABLES = ['keys', 'prekeys', 'sessions'];

function request(r) {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

function done(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new Error('transaction aborted'));
  });
}

async function sha256(string) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(string)));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** A digest of a list of session ids, in any order. */
const idsDigest = (ids) => sha256([...ids].sort().join('\n'));

/** Opens the existing IndexedDB database `name` (never creates it). */
async function openExisting(name) {
  const open = indexedDB.open(name);
  open.onupgradeneeded = () => open.transaction.abort();
  return request(open);
}

/** Every record of a cryptobox database: its version, each table's count and keys, a digest of all. */
export async function snapshot(name) {
  const db = await openExisting(name);
  try {
    const tx = db.transaction(TABLES, 'readonly');
    const tables = {};
    const all = [];
    for (const table of TABLES) {
      const store = tx.objectStore(table);
      const [keys, values] = await Promise.all([request(store.getAllKeys()), request(store.getAll())]);
      tables[table] = { count: keys.length, keys: keys.map(String) };
      all.push([keys, values]);
    }
    return { name: db.name, version: db.version, tables, digest: await sha256(JSON.stringify(all)) };
  } finally {
    db.close();
  }
}

// ---------------------------------------------------------------- the source: real cryptobox

let source;

/** alice's store, made by the real cryptobox on IndexedDB database `dbName`; her peers stay here. */
export async function makeSource(options) {
  const { makeStores } = await import('./cryptobox-bundle/stores.js');
  source = await makeStores({ engine: 'dexie', ...options });
  const { expected } = source;
  return {
    fingerprint: expected.fingerprint,
    prekeyIds: expected.prekeyIds,
    sessionIds: expected.sessionIds,
    peerIds: source.peers.sessionIds,
    queue: expected.queue.map((m) => ({ sessionId: m.sessionId, envelope: b64(m.envelope), plaintext: m.plaintext })),
  };
}

/** Each peer decrypts what alice sent it: `[[sessionId, envelope]]` → plaintexts. */
export async function peersDecrypt(messages) {
  const out = [];
  for (const [sessionId, envelope] of messages) out.push(await source.peers.decrypt(sessionId, unb64(envelope)));
  return out;
}

/** Each peer encrypts a text to alice: `[[sessionId, text]]` → envelopes. */
export async function peersEncrypt(messages) {
  const out = [];
  for (const [sessionId, plaintext] of messages) out.push(b64(await source.peers.encrypt(sessionId, plaintext)));
  return out;
}

/**
 * A large source in cryptobox's dexie layout, written directly with IndexedDB: the `keys` records
 * of the real store `seedDb`, its last-resort prekey and its first `prekeys` one-time prekeys,
 * and its one session record under `sessions` session ids. Resolves to the ids' digest.
 */
export async function makeLargeSource(seedDb, name, { sessions, prekeys }) {
  const seed = await openExisting(seedDb);
  const read = async (table) => {
    const store = seed.transaction(table, 'readonly').objectStore(table);
    const [keys, values] = await Promise.all([request(store.getAllKeys()), request(store.getAll())]);
    return keys.map((key, i) => ({ key, value: values[i] }));
  };
  const keys = await read('keys');
  const allPrekeys = (await read('prekeys')).sort((a, b) => Number(a.key) - Number(b.key));
  const [session] = await read('sessions');
  seed.close();
  const lastResort = allPrekeys.filter((p) => Number(p.key) === 65535);
  const oneTime = allPrekeys.filter((p) => Number(p.key) !== 65535).slice(0, prekeys);
  if (lastResort.length !== 1 || oneTime.length !== prekeys || session === undefined) {
    throw new Error(`the seed store has ${allPrekeys.length} prekeys and ${session ? 'a' : 'no'} session`);
  }
  const hex = (n, width) => n.toString(16).padStart(width, '0');
  const ids = Array.from({ length: sessions }, (_, i) => `${hex(i, 8)}-0000-4000-8000-${hex(i * 7919, 12)}@${hex(i + 1, 16).replace(/^0+/, '')}`);

  await new Promise((resolve, reject) => (indexedDB.deleteDatabase(name).onsuccess = resolve));
  const open = indexedDB.open(name, 10); // Dexie's schema version 1 is IndexedDB version 10
  open.onupgradeneeded = () => {
    for (const table of TABLES) open.result.createObjectStore(table);
  };
  const db = await request(open);
  const tx = db.transaction(TABLES, 'readwrite');
  for (const { key, value } of keys) tx.objectStore('keys').put(value, key);
  for (const { key, value } of [...oneTime, ...lastResort]) tx.objectStore('prekeys').put(value, key);
  const sessionStore = tx.objectStore('sessions');
  for (const id of ids) sessionStore.put({ ...session.value, id }, id);
  await done(tx);
  db.close();
  return { sessions: ids.length, prekeys: oneTime.length + 1, idsDigest: await idsDigest(ids) };
}

// ---------------------------------------------------------------- the target: a durable Client

let target;

/** Opens the durable client `name` as this page's target. */
export async function openTarget(name, options) {
  target = await Client.open(name, options);
  return target.fingerprint();
}

export async function closeTarget() {
  await target?.close();
  target = undefined;
}

/** The target's state: fingerprint, session ids (sorted) and their digest, one-time prekeys left. */
export async function targetState() {
  const ids = (await target.sessionIds()).sort();
  return {
    fingerprint: await target.fingerprint(),
    sessionIds: ids.length <= 100 ? ids : undefined,
    sessions: ids.length,
    idsDigest: await idsDigest(ids),
    prekeysRemaining: await target.prekeysRemaining(),
  };
}

/**
 * importCryptobox into the target. Resolves to its report, its wall time (performance.now()),
 * and what onProgress saw: how many calls, whether `done` never went down and `total` never
 * changed, and the last one.
 */
export async function importInto(sourceDb) {
  const progress = { calls: 0, ordered: true, last: null };
  const onProgress = (p) => {
    if (progress.last && (p.done < progress.last.done || p.total !== progress.last.total)) progress.ordered = false;
    progress.calls += 1;
    progress.last = { done: p.done, total: p.total };
  };
  const start = performance.now();
  const report = await target.importCryptobox({ indexedDB: sourceDb }, { onProgress });
  const ms = performance.now() - start;
  return { report, ms, progress };
}

/** Starts importCryptobox into the target and returns at once (the test reloads the page). */
export function startImport(sourceDb) {
  window.importOutcome = 'pending';
  target.importCryptobox({ indexedDB: sourceDb }).then(
    () => (window.importOutcome = 'done'),
    (e) => (window.importOutcome = `failed: ${e}`),
  );
}

/** decryptBatch of `[{sessionId, envelope}]`: `[sessionId, plaintext or error code]` each. */
export async function decryptQueue(queue) {
  const results = await target.decryptBatch(queue.map((m) => ({ sessionId: m.sessionId, envelope: unb64(m.envelope) })));
  return results.map((r) => [r.sessionId, r.plaintext ? text(r.plaintext) : r.errorCode]);
}

/** The target encrypts to each of `[[sessionId, text]]`: envelopes. */
export async function targetEncrypt(messages) {
  const out = [];
  for (const [sessionId, plaintext] of messages) out.push(b64(await target.encrypt(sessionId, plaintext)));
  return out;
}

/** The target decrypts each of `[[sessionId, envelope]]`: plaintexts. */
export async function targetDecrypt(messages) {
  const out = [];
  for (const [sessionId, envelope] of messages) out.push(text(await target.decrypt(sessionId, unb64(envelope))));
  return out;
}

export const deleteStore = (name) => Client.deleteStore(name);
