// The first sealed format (records not bound to a commit or a store, no manifest), written here
// with Web Crypto from the layouts of crates/proteus-client/src/storage/journal/web_sealed/format.rs,
// independently of the package: it reads format 1 but never writes it, so tests make such stores
// themselves from a store the package sealed (bound.test.mjs; golden/make.mjs made sealed-v1.json).
//
//   format 2  value := 2 ‖ commit (8) ‖ nonce (12) ‖ AES-256-GCM(body)
//             aad   := 2 ‖ store id (16) ‖ commit (8) ‖ table name ‖ 0 ‖ stored key
//   format 1  value := 1 ‖ nonce (12) ‖ AES-256-GCM(body)
//             aad   := 1 ‖ table name ‖ 0 ‖ stored key
//   manifest        := 2 ‖ nonce ‖ AES-256-GCM(store id ‖ commit ‖ count ‖ digest), aad 2 ‖ "manifest"
//
// The body (key length ‖ key ‖ value) and the stored key (session ids hashed) are the same in
// both formats.
const text = (s) => new TextEncoder().encode(s);
const concat = (...parts) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

/** The AES-256-GCM key of the records: HKDF-SHA256 of the store key, 32 zero bytes of salt. */
async function recordsKey(storeKey) {
  const s = crypto.subtle;
  const base = await s.importKey('raw', storeKey, 'HKDF', false, ['deriveKey']);
  const hkdf = { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(32), info: text('proteus-web sealed records v1') };
  return s.deriveKey(hkdf, base, { name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
}

const open = async (key, iv, additionalData, sealed) =>
  new Uint8Array(await crypto.subtle.decrypt({ name: 'AES-GCM', iv, additionalData }, key, sealed));

/**
 * A dump of a format 2 store (`{table: [[key, value]]}`, `sync` included) sealed with `storeKey`,
 * as the first format sealed it: every record re-sealed in format 1 under its stored key, the
 * manifest removed.
 */
export async function toFormat1(storeKey, tables) {
  const key = await recordsKey(storeKey);
  const manifest = new Uint8Array(tables.sync.find(([k]) => k === 'manifest')[1]);
  const storeId = (await open(key, manifest.subarray(1, 13), concat([2], text('manifest')), manifest.subarray(13))).subarray(0, 16);
  const out = { sync: tables.sync.filter(([k]) => k !== 'manifest') };
  for (const [table, rows] of Object.entries(tables)) {
    if (table === 'sync') continue;
    out[table] = await Promise.all(
      rows.map(async ([k, v]) => {
        const stored = new Uint8Array(k);
        const value = new Uint8Array(v);
        if (value[0] !== 2) throw new Error(`${table}: not a format 2 value`);
        const commit = value.subarray(1, 9);
        const aad = concat([2], storeId, commit, text(table), [0], stored);
        const body = await open(key, value.subarray(9, 21), aad, value.subarray(21));
        const nonce = crypto.getRandomValues(new Uint8Array(12));
        const additionalData = concat([1], text(table), [0], stored);
        const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv: nonce, additionalData }, key, body));
        body.fill(0);
        return [k, concat([1], nonce, sealed)];
      }),
    );
  }
  return out;
}
