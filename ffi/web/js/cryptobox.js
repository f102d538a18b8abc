// importCryptobox's sources, read into records: the I/O of where Wire's cryptobox libraries kept
// a store (an IndexedDB database, a directory; docs/migration.md, "Source layouts"). What a
// record means, whether it decodes, what is imported and how are the Rust client's
// (proteus_client::Client::import_cryptobox). The source is only read.

import { bytes, sessionId } from './args.js';
import { ProteusError } from './errors.js';
import { IMPORT_SOURCE_UNREADABLE } from './codes.js';

/** cryptobox's tables, and the key of its identity record. */
const TABLES = ['keys', 'prekeys', 'sessions'];
const LOCAL_IDENTITY = 'local_identity';

function unreadable(message, cause) {
  return new ProteusError(
    `the store to import cannot be read: ${message}`,
    IMPORT_SOURCE_UNREADABLE,
    'ImportSourceUnreadable',
    cause === undefined ? undefined : { cause },
  );
}

/**
 * `source` read into `{ identity, prekeys: [{id, bytes}], sessions: [{id, bytes}] }`:
 * `{ records }` as given, `{ indexedDB: name }` (cryptobox over @wireapp/store-engine-dexie),
 * `{ directory: path }` (Node: @wireapp/store-engine-fs, or Wire's Rust cryptobox).
 */
export async function readCryptoboxSource(source) {
  if (source === null || typeof source !== 'object') {
    throw new TypeError('source must be { records }, { indexedDB: name } or { directory: path }');
  }
  if (source.records !== undefined) return plainRecords(source.records);
  if (source.indexedDB !== undefined) return readIndexedDB(source.indexedDB);
  if (source.directory !== undefined) return readDirectory(source.directory);
  throw new TypeError('source must be { records }, { indexedDB: name } or { directory: path }');
}

function plainRecords(records) {
  if (records === null || typeof records !== 'object') throw new TypeError('records must be an object');
  const { identity, prekeys = [], sessions = [] } = records;
  if (!Array.isArray(prekeys)) throw new TypeError('records.prekeys must be an array of Uint8Array');
  if (!Array.isArray(sessions)) throw new TypeError('records.sessions must be an array of { id, bytes }');
  return {
    identity: bytes(identity, 'records.identity'),
    // No ids: the client names a bad one by its place in the list.
    prekeys: prekeys.map((p) => ({ id: '', bytes: bytes(p, 'a prekey') })),
    sessions: sessions.map((s) => ({ id: sessionId(s?.id), bytes: bytes(s?.bytes, 'a session') })),
  };
}

/** A record's `serialised`: base64 text, or (older cryptobox versions) the bytes themselves. */
function serialised(record) {
  const value = record?.serialised;
  if (typeof value === 'string') {
    try {
      const text = atob(value);
      const out = new Uint8Array(text.length);
      for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
      return out;
    } catch {
      return new Uint8Array(0);
    }
  }
  if (value instanceof Uint8Array || value instanceof ArrayBuffer || ArrayBuffer.isView(value)) {
    return bytes(value, 'serialised');
  }
  // Neither: no bytes, which the client reports as a record that does not decode.
  return new Uint8Array(0);
}

function request(r) {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

/** The database `name` as cryptobox left it, opened read-only and never created. */
async function readIndexedDB(name) {
  if (typeof name !== 'string' || name === '') throw new TypeError('indexedDB must be a database name');
  if (typeof indexedDB === 'undefined') throw unreadable('there is no indexedDB here');
  const db = await new Promise((resolve, reject) => {
    const open = indexedDB.open(name);
    // The database does not exist: opening would create it. Abort, which leaves nothing behind.
    open.onupgradeneeded = () => open.transaction.abort();
    open.onsuccess = () => resolve(open.result);
    open.onerror = () => reject(unreadable(`there is no IndexedDB database of that name`, open.error));
    open.onblocked = () => reject(unreadable('the database is being upgraded by another tab'));
  });
  try {
    const missing = TABLES.filter((t) => !db.objectStoreNames.contains(t));
    if (missing.includes('keys')) throw unreadable('the database has no `keys` table: it is not a cryptobox store');
    const present = TABLES.filter((t) => !missing.includes(t));
    const tx = db.transaction(present, 'readonly');
    const read = async (table) => {
      if (!present.includes(table)) return [];
      const store = tx.objectStore(table);
      const [keys, values] = await Promise.all([request(store.getAllKeys()), request(store.getAll())]);
      return keys.map((key, i) => ({ id: String(key), bytes: serialised(values[i]) }));
    };
    const [keys, prekeys, sessions] = await Promise.all(TABLES.map(read));
    const identity = keys.find((r) => r.id === LOCAL_IDENTITY);
    if (identity === undefined) throw unreadable(`there is no identity (keys/${LOCAL_IDENTITY})`);
    return { identity: identity.bytes, prekeys, sessions };
  } finally {
    db.close();
  }
}

/**
 * A directory (Node): @wireapp/store-engine-fs's (`keys/`, `prekeys/`, `sessions/`, a JSON file
 * `<key>.dat` per record) or Wire's Rust cryptobox's (`identities/`, then a file per record;
 * `*.tmp` files are writes it never finished). The Node package's addon reads directories
 * natively; this is its WebAssembly fallback's reader.
 */
async function readDirectory(path) {
  if (typeof path !== 'string' || path === '') throw new TypeError('directory must be a path');
  let fs;
  let join;
  try {
    fs = await import('node:fs/promises');
    ({ join } = await import('node:path'));
  } catch (e) {
    throw unreadable('directories can be read in Node only', e);
  }
  const isDir = (p) => fs.stat(p).then((s) => s.isDirectory(), () => false);
  const files = async (dir, suffix, ignored) => {
    let names;
    try {
      names = await fs.readdir(dir);
    } catch {
      return [];
    }
    const out = [];
    for (const name of names.sort()) {
      if (name.startsWith('.') || (ignored && name.endsWith(ignored))) continue;
      if (suffix && !name.endsWith(suffix)) continue;
      const file = join(dir, name);
      if (!(await fs.stat(file)).isFile()) continue;
      out.push({ id: suffix ? name.slice(0, -suffix.length) : name, file });
    }
    return out;
  };
  const readAll = (list, decode) =>
    Promise.all(list.map(async ({ id, file }) => ({ id, bytes: decode(await fs.readFile(file)) })));
  const json = (buffer) => {
    try {
      return serialised(JSON.parse(new TextDecoder().decode(buffer)));
    } catch {
      return new Uint8Array(0);
    }
  };
  const raw = (buffer) => new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);

  if (await isDir(join(path, 'keys'))) {
    const identity = (await readAll(await files(join(path, 'keys'), '.dat'), json)).find((r) => r.id === LOCAL_IDENTITY);
    if (identity === undefined) throw unreadable(`there is no identity (keys/${LOCAL_IDENTITY}.dat)`);
    return {
      identity: identity.bytes,
      prekeys: await readAll(await files(join(path, 'prekeys'), '.dat'), json),
      sessions: await readAll(await files(join(path, 'sessions'), '.dat'), json),
    };
  }
  if (await isDir(join(path, 'identities'))) {
    // The client reads the identity file as cryptobox wrote it (`local`, or `local_identity`
    // before cryptobox 0.4).
    const identities = await readAll(await files(join(path, 'identities'), '', '.tmp'), raw);
    const identity = identities.find((r) => r.id === 'local') ?? identities.find((r) => r.id === LOCAL_IDENTITY);
    if (identity === undefined) throw unreadable('there is no identity (identities/local)');
    return {
      identity: identity.bytes,
      prekeys: await readAll(await files(join(path, 'prekeys'), '', '.tmp'), raw),
      sessions: await readAll(await files(join(path, 'sessions'), '', '.tmp'), raw),
    };
  }
  if (!(await isDir(path))) throw unreadable('it is not a directory');
  throw unreadable(
    'neither a `keys` directory (@wireapp/store-engine-fs) nor an `identities` directory (Wire\'s Rust cryptobox) is in it',
  );
}

/**
 * The records packed as the raw clients take them: ids, the bytes one after the other, their
 * lengths. `wipe()` overwrites the packed secrets once the call is over.
 */
export function packCryptobox({ identity, prekeys, sessions }) {
  const pack = (records) => {
    const lengths = new Uint32Array(records.length);
    let total = 0;
    records.forEach((r, i) => {
      lengths[i] = r.bytes.length;
      total += r.bytes.length;
    });
    const all = new Uint8Array(total);
    let at = 0;
    for (const r of records) {
      all.set(r.bytes, at);
      at += r.bytes.length;
    }
    return [records.map((r) => r.id), all, lengths];
  };
  const p = pack(prekeys);
  const s = pack(sessions);
  return {
    args: [identity, ...p, ...s],
    wipe() {
      p[1].fill(0);
      s[1].fill(0);
    },
  };
}
