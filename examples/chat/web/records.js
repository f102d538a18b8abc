// The chat page's own records in IndexedDB (the engine keeps its state in its own database).

import { b64 } from './encoding.js';

/** The most envelopes held for one peer: past it, new ones are dropped (the held ones stay). */
export const MAX_HELD_PER_PEER = 100;

const request = (req) =>
  new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });

const finished = (tx) =>
  new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'));
  });

// Increasing numbers that order the records (milliseconds × 1000 + a counter).
let tick = 0;
const order = () => Date.now() * 1000 + (tick++ % 1000);

/**
 * `messages`: every message shown or sent, by message id (hex of the envelope's MAC); it is
 * also the log of seen ids that makes delivery exactly-once. `peers`: the pinned fingerprint of
 * each peer, kept by pages made before the engine pinned identities; moved into the engine and
 * emptied when such a page opens. `heldByPeer`: prekey messages the engine refused because they
 * carry an identity other than the pinned one (RemoteIdentityChanged), unread until it is accepted: keyed by peer and their whole
 * bytes (never by the MAC they claim, which nothing has verified yet, so a forgery with a copied
 * MAC cannot take a genuine message's place), at most MAX_HELD_PER_PEER per peer. (Version 1
 * kept them in `held`, by MAC, for all peers: its rows are moved over.) `outbox`: envelopes not
 * yet accepted by the relay, in order.
 */
export class Records {
  #db;

  constructor(db) {
    this.#db = db;
  }

  static async open(user) {
    const req = indexedDB.open(`proteus-chat:${user}`, 2);
    req.onupgradeneeded = (event) => {
      const db = req.result;
      if (event.oldVersion < 1) {
        db.createObjectStore('messages', { keyPath: 'id' }).createIndex('n', 'n');
        db.createObjectStore('peers', { keyPath: 'name' });
        db.createObjectStore('outbox', { autoIncrement: true });
      }
      const held = db.createObjectStore('heldByPeer', { keyPath: ['from', 'key'] });
      held.createIndex('n', 'n');
      held.createIndex('from', 'from');
      if (db.objectStoreNames.contains('held')) {
        // Version 1's rows: the identity they claim was not recorded (tried at accept).
        const old = req.transaction.objectStore('held').index('n').getAll();
        old.onsuccess = () => {
          for (const h of old.result) held.put({ from: h.from, key: b64(h.envelope), fingerprint: '', envelope: h.envelope, n: h.n });
          db.deleteObjectStore('held');
        };
      }
    };
    return new Records(await request(req));
  }

  #tx(stores, mode = 'readonly') {
    return this.#db.transaction(stores, mode);
  }

  /** The last `limit` messages, oldest first. */
  async messages(limit) {
    const all = await request(this.#tx('messages').objectStore('messages').index('n').getAll());
    return all.slice(-limit);
  }

  /**
   * Records received messages in one transaction; returns the ones not recorded before (a page
   * delivered again is dropped by id).
   */
  async recordBatch(received) {
    const tx = this.#tx(['messages'], 'readwrite');
    const messages = tx.objectStore('messages');
    const fresh = [];
    for (const m of received) {
      const seen = messages.getKey(m.id);
      seen.onsuccess = () => {
        if (seen.result !== undefined) return;
        messages.put({ ...m, n: order() });
        fresh.push(m);
      };
    }
    await finished(tx);
    return fresh;
  }

  /** A sent line, and its envelope in the outbox: one transaction. */
  async recordSent(id, to, text, envelope) {
    const tx = this.#tx(['messages', 'outbox'], 'readwrite');
    const m = { id, peer: to, outgoing: true, text, n: order() };
    tx.objectStore('messages').put(m);
    tx.objectStore('outbox').add({ peer: to, envelope });
    await finished(tx);
    return m;
  }

  async outbox() {
    const tx = this.#tx('outbox');
    const [keys, values] = await Promise.all([
      request(tx.objectStore('outbox').getAllKeys()),
      request(tx.objectStore('outbox').getAll()),
    ]);
    return values.map((v, i) => ({ key: keys[i], ...v }));
  }

  async outboxDone(key) {
    const tx = this.#tx('outbox', 'readwrite');
    tx.objectStore('outbox').delete(key);
    await finished(tx);
  }

  /** The pins of a page made before the engine pinned identities: `[{name, fingerprint}]`. */
  async legacyPins() {
    const all = await request(this.#tx('peers').objectStore('peers').getAll());
    return all.filter((p) => typeof p.fingerprint === 'string').map(({ name, fingerprint }) => ({ name, fingerprint }));
  }

  /** Drops those pins once the engine holds them. */
  async dropLegacyPins() {
    const tx = this.#tx('peers', 'readwrite');
    tx.objectStore('peers').clear();
    await finished(tx);
  }

  /**
   * Holds `[{from, fingerprint, envelope}]` (the same bytes are held once); returns how many
   * were dropped because their peer already has MAX_HELD_PER_PEER.
   */
  async hold(held) {
    const counts = new Map();
    for (const from of new Set(held.map((h) => h.from))) {
      counts.set(from, await request(this.#tx('heldByPeer').objectStore('heldByPeer').index('from').count(from)));
    }
    const tx = this.#tx('heldByPeer', 'readwrite');
    const store = tx.objectStore('heldByPeer');
    let dropped = 0;
    for (const h of held) {
      const key = b64(h.envelope);
      if (counts.get(h.from) >= MAX_HELD_PER_PEER) {
        dropped++;
        continue;
      }
      counts.set(h.from, counts.get(h.from) + 1);
      const seen = store.getKey([h.from, key]);
      seen.onsuccess = () => {
        if (seen.result === undefined) store.put({ ...h, key, n: order() });
      };
    }
    await finished(tx);
    return dropped;
  }

  /** What is held for `from`, oldest first. */
  async held(from) {
    const all = await request(this.#tx('heldByPeer').objectStore('heldByPeer').index('from').getAll(from));
    return all.sort((a, b) => a.n - b.n);
  }

  async dropHeld(held) {
    const tx = this.#tx('heldByPeer', 'readwrite');
    for (const h of held) tx.objectStore('heldByPeer').delete([h.from, h.key]);
    await finished(tx);
  }
}
