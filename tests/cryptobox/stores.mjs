// Builds a Wire cryptobox store ("alice") with the REAL @wireapp/cryptobox 12.8.0,
// plus real cryptobox peers that can continue every session after an import.
//
// Only the public API of the npm packages is used; nothing here is taken from
// Wire's (GPL) sources.

// Plain ESM imports of the (CommonJS) packages, so that a bundler can take this
// module to a browser too; the fs and dexie engines are imported only when used.
import cryptoboxPkg from '@wireapp/cryptobox';
import storeEnginePkg from '@wireapp/store-engine';
import Proteus from '@wireapp/proteus';

const { Cryptobox } = cryptoboxPkg;
const { MemoryEngine } = storeEnginePkg;

export const LAST_RESORT_PREKEY_ID = 65535;
export const CRYPTOBOX_TABLES = { keys: '', prekeys: '', sessions: '' };

// ---------------------------------------------------------------- helpers

/** mulberry32: a tiny seeded PRNG, for ids and texts only (keys come from libsodium). */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function hex(rand, n) {
  let s = '';
  for (let i = 0; i < n; i++) s += Math.floor(rand() * 16).toString(16);
  return s;
}

/** A Wire user id (UUID v4 shape). */
function userId(rand) {
  const h = hex(rand, 32).split('');
  h[12] = '4';
  h[16] = '89ab'[Math.floor(rand() * 4)];
  const s = h.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
}

/** A Wire client id: 16 lower-case hex digits, leading zeros dropped as the backend does. */
function clientId(rand) {
  return hex(rand, 16).replace(/^0+(?=.)/, '');
}

export const toArrayBuffer = bytes => {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  return u8.buffer.slice(u8.byteOffset, u8.byteOffset + u8.byteLength);
};
export const toBytes = buf => new Uint8Array(buf instanceof ArrayBuffer ? buf : toArrayBuffer(buf));
const utf8 = new TextDecoder();

/** Opens a store-engine-fs engine whose store directory is exactly `dir`. */
export async function fsEngine(dir) {
  const { FileEngine } = (await import('@wireapp/store-engine-fs')).default;
  const path = await import('node:path');
  const abs = path.resolve(dir);
  const engine = new FileEngine(path.dirname(abs));
  await engine.init(path.basename(abs));
  return engine;
}

/**
 * Opens a store-engine-dexie engine on IndexedDB database `dbName`, with the
 * object stores cryptobox needs (out-of-line keys). Uses the global
 * `indexedDB` (a browser's, or fake-indexeddb's, loaded here if none exists).
 */
export async function dexieEngine(dbName) {
  if (typeof globalThis.indexedDB === 'undefined') {
    await import('fake-indexeddb/auto.js'); // Node: sets globalThis.indexedDB, IDBKeyRange, ...
  }
  const Dexie = (await import('dexie')).default;
  const { IndexedDBEngine } = (await import('@wireapp/store-engine-dexie')).default;
  const db = new Dexie(dbName, { indexedDB: globalThis.indexedDB, IDBKeyRange: globalThis.IDBKeyRange });
  db.version(1).stores(CRYPTOBOX_TABLES);
  const engine = new IndexedDBEngine();
  // initWithDb, not init: init() probes navigator.storage, which Node 20 lacks.
  await engine.initWithDb(db);
  return engine;
}

async function openEngine(kind, where) {
  if (kind === 'fs') return fsEngine(where);
  if (kind === 'dexie') return dexieEngine(where);
  if (kind === 'memory') {
    const engine = new MemoryEngine();
    await engine.init(where || 'memory');
    return engine;
  }
  throw new Error(`unknown engine "${kind}"`);
}

// ---------------------------------------------------------------- peers

/**
 * Peers: real cryptoboxes that each share one session with alice.
 * Keyed by the session id ALICE uses for the peer; each peer calls alice `aliceSessionId`.
 */
export class Peers {
  constructor(aliceSessionId) {
    this.aliceSessionId = aliceSessionId;
    this.boxes = new Map();
  }

  add(sessionId, box) {
    this.boxes.set(sessionId, box);
  }

  box(sessionId) {
    const box = this.boxes.get(sessionId);
    if (!box) throw new Error(`no peer for session "${sessionId}"`);
    return box;
  }

  get sessionIds() {
    return [...this.boxes.keys()];
  }

  fingerprint(sessionId) {
    return this.box(sessionId).getIdentity().public_key.fingerprint();
  }

  /** The peer decrypts an envelope alice sent it; returns the UTF-8 plaintext. */
  async decrypt(sessionId, envelope) {
    const plain = await this.box(sessionId).decrypt(this.aliceSessionId, toArrayBuffer(envelope));
    return utf8.decode(plain);
  }

  /** The peer encrypts `text` to alice; returns the serialised envelope. */
  async encrypt(sessionId, text) {
    return toBytes(await this.box(sessionId).encrypt(this.aliceSessionId, text));
  }

  /** Loads peers from fs stores `<peersDir>/<sessionId>/` (as write-fixtures.mjs leaves them). */
  static async loadFs(peersDir, aliceSessionId, sessionIds) {
    const peers = new Peers(aliceSessionId);
    for (const sessionId of sessionIds) {
      const box = new Cryptobox(await fsEngine(`${peersDir}/${sessionId}`), 1);
      await box.load();
      peers.add(sessionId, box);
    }
    return peers;
  }
}

async function newPeer(peerEngine, peersDir, sessionId) {
  const where = peerEngine === 'fs' ? `${peersDir}/${sessionId}` : `peer:${sessionId}`;
  const box = new Cryptobox(await openEngine(peerEngine, where), 2); // last resort + prekey 0
  await box.create();
  return box;
}

// ---------------------------------------------------------------- the store

/**
 * Creates alice on `engine` ('fs' → directory `dir`; 'dexie' → IndexedDB `dbName`;
 * 'memory'), with `prekeys` one-time prekeys plus the last-resort prekey 65535,
 * `sessions` sessions whose ratchets have turned, and a queue of messages to
 * alice that she has not decrypted.
 *
 * Peers live in memory unless `peerEngine: 'fs'` and `peersDir` are given.
 * `seed` fixes the ids and texts (the keys are always fresh).
 */
export async function makeStores({
  engine,
  dir,
  dbName,
  sessions = 3,
  prekeys = 5,
  seed = 34,
  peerEngine = 'memory',
  peersDir,
}) {
  if (prekeys < 2) throw new Error('prekeys must be at least 2 (the queue uses two one-time prekeys)');
  const rand = prng(seed);
  const text = label => `${label} #${hex(rand, 6)} ✓`;

  const aliceUser = userId(rand);
  const aliceClient = clientId(rand);
  const aliceSessionId = `${aliceUser}@${aliceClient}`;
  const peers = new Peers(aliceSessionId);

  // minimumAmountOfPreKeys counts the last-resort prekey too.
  const alice = new Cryptobox(await openEngine(engine, engine === 'fs' ? dir : dbName), prekeys + 1);
  await alice.create();

  const peerSessionId = (qualified) => {
    const id = `${userId(rand)}@${clientId(rand)}`;
    return qualified ? `wire.example.com@${id}` : id;
  };

  // 1. Established sessions, with a few messages both ways.
  const established = [];
  for (let i = 0; i < sessions; i++) {
    const sessionId = peerSessionId(i === 2); // one federated-style (domain@user@client) id
    const peer = await newPeer(peerEngine, peersDir, sessionId);
    peers.add(sessionId, peer);
    if (i % 2 === 0) {
      // alice starts the session from the peer's prekey bundle (prekey 0)
      const bundle = await peer.get_prekey_bundle(0);
      const env = await alice.encrypt(sessionId, text(`alice→peer${i} hello`), bundle.serialise());
      await peer.decrypt(aliceSessionId, env);
    } else {
      // the peer starts from alice's bundle (her lowest one-time prekey)
      const ids = (await alice.store.load_prekeys()).map(p => p.key_id).filter(id => id !== LAST_RESORT_PREKEY_ID);
      const bundle = await alice.get_prekey_bundle(Math.min(...ids));
      const env = await peer.encrypt(aliceSessionId, text(`peer${i}→alice hello`), bundle.serialise());
      await alice.decrypt(sessionId, env); // consumes the prekey; cryptobox refills
    }
    for (let round = 0; round < 3; round++) {
      const a = await alice.encrypt(sessionId, text(`alice→peer${i} r${round}`));
      await peer.decrypt(aliceSessionId, a);
      const b = await peer.encrypt(aliceSessionId, text(`peer${i}→alice r${round}`));
      await alice.decrypt(sessionId, b);
    }
    established.push(sessionId);
  }

  // 2. The queue: messages to alice that she has not decrypted.
  const queue = [];
  const push = async (sessionId, env, plaintext) =>
    queue.push({ sessionId, envelope: toBytes(env), plaintext });

  for (const [i, sessionId] of established.entries()) {
    const peer = peers.box(sessionId);
    const msgs = [];
    for (let k = 0; k < 3; k++) {
      const plaintext = text(`peer${i}→alice queued ${k}`);
      msgs.push([await peer.encrypt(aliceSessionId, plaintext), plaintext]);
    }
    // session 0 arrives out of order (2, 0, 1): skipped message keys are needed
    const order = i === 0 ? [2, 0, 1] : [0, 1, 2];
    for (const k of order) await push(sessionId, ...msgs[k]);
  }

  // New peers whose PreKeyMessages alice has not seen: two to one-time prekeys, one to the last resort.
  const held = (await alice.store.load_prekeys()).map(p => p.key_id).sort((a, b) => a - b);
  const oneTime = held.filter(id => id !== LAST_RESORT_PREKEY_ID);
  const targets = [oneTime[0], oneTime[oneTime.length - 1], LAST_RESORT_PREKEY_ID];
  for (const [j, prekeyId] of targets.entries()) {
    const sessionId = peerSessionId(false);
    const peer = await newPeer(peerEngine, peersDir, sessionId);
    peers.add(sessionId, peer);
    const bundle = (await alice.get_prekey_bundle(prekeyId)).serialise();
    for (let k = 0; k < 2; k++) {
      const plaintext = text(`new peer${j} (prekey ${prekeyId})→alice ${k}`);
      await push(sessionId, await peer.encrypt(aliceSessionId, plaintext, k === 0 ? bundle : undefined), plaintext);
    }
  }

  const storedSessions = engine === 'fs' || engine === 'dexie' || engine === 'memory'
    ? await alice.store.engine.readAllPrimaryKeys('sessions')
    : established;

  const expected = {
    alice: { userId: aliceUser, clientId: aliceClient, sessionId: aliceSessionId },
    fingerprint: alice.getIdentity().public_key.fingerprint(),
    prekeyIds: held,
    sessionIds: [...storedSessions].sort(),
    queue,
    peers: Object.fromEntries(peers.sessionIds.map(id => [id, { fingerprint: peers.fingerprint(id) }])),
  };
  return { expected, peers, alice };
}

export { Cryptobox, Proteus };
