// IndexedDB as the package lays a store out, for tests that write a store's database
// themselves (golden dumps, bare `sync` tables): one object store per table of proteus-client
// and `sync` (ffi/web/js/idb.js).

/** The tables of proteus-client, as js/records.js names them. */
export const TABLES = ['meta', 'prekeys', 'sessions', 'staged_keys'];

/** Opens (creating it, with the package's object stores) the database of store `name`. */
export function openStoreDatabase(indexedDB, name) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(`proteus:${name}`, 1);
    req.onupgradeneeded = () => {
      for (const table of [...TABLES, 'sync']) req.result.createObjectStore(table);
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}
