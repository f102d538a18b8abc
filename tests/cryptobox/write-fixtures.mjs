#!/usr/bin/env node
// Writes tests/cryptobox/fixtures/ (see README.md):
//   fs-store/                 alice, exactly as @wireapp/cryptobox 12.8.0 + store-engine-fs wrote her
//   rust-cryptobox/           the same records in Wire's Rust cryptobox (v0.4+ / 1.x) directory layout
//   rust-cryptobox-legacy/    the same records in the pre-0.4 layout (identities/local_identity, no version file)
//   peers/<sessionId>/        each peer's own store-engine-fs cryptobox store; peers/index.json
//   expected.json             what an importer must find, and the undecrypted queue
//
// Usage: node write-fixtures.mjs [--out DIR] [--seed N] [--sessions N] [--prekeys N]

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeStores, LAST_RESORT_PREKEY_ID } from './stores.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

function args(argv) {
  const o = { out: path.join(here, 'fixtures'), seed: 34, sessions: 3, prekeys: 5 };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '');
    if (!(k in o)) throw new Error(`unknown option ${argv[i]}`);
    o[k] = k === 'out' ? path.resolve(argv[i + 1]) : Number(argv[i + 1]);
  }
  return o;
}

const b64 = bytes => Buffer.from(bytes).toString('base64');
const pkg = name => JSON.parse(fs.readFileSync(path.join(here, 'node_modules', name, 'package.json'), 'utf8')).version;

/** Reads a store-engine-fs table: { primaryKey: record } */
function readTable(storeDir, table) {
  const dir = path.join(storeDir, table);
  const out = {};
  for (const file of fs.readdirSync(dir)) {
    if (!file.endsWith('.dat')) continue;
    out[file.slice(0, -'.dat'.length)] = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
  }
  return out;
}

/** Writes the alice records in Wire's Rust cryptobox FileStore layout. */
export function writeRustLayout(fsStoreDir, outDir, { legacy = false } = {}) {
  const bytes = rec => Buffer.from(rec.serialised, 'base64');
  fs.mkdirSync(path.join(outDir, 'identities'), { recursive: true });
  fs.mkdirSync(path.join(outDir, 'prekeys'), { recursive: true });
  fs.mkdirSync(path.join(outDir, 'sessions'), { recursive: true });
  const identity = bytes(readTable(fsStoreDir, 'keys').local_identity);
  if (legacy) {
    // cryptobox <= 0.3.x: the bare IdentityKeyPair CBOR, no version file
    fs.writeFileSync(path.join(outDir, 'identities', 'local_identity'), identity);
  } else {
    // cryptobox >= 0.4.0: "version" = u16 big-endian 1; identities/local = Identity wrapper:
    // CBOR u8 1 (secret identity), then CBOR map(1) { 0: IdentityKeyPair }
    fs.writeFileSync(path.join(outDir, 'version'), Buffer.from([0x00, 0x01]));
    fs.writeFileSync(path.join(outDir, 'identities', 'local'), Buffer.concat([Buffer.from([0x01, 0xa1, 0x00]), identity]));
  }
  for (const [id, rec] of Object.entries(readTable(fsStoreDir, 'prekeys'))) {
    fs.writeFileSync(path.join(outDir, 'prekeys', String(Number(id))), bytes(rec));
  }
  for (const [id, rec] of Object.entries(readTable(fsStoreDir, 'sessions'))) {
    fs.writeFileSync(path.join(outDir, 'sessions', id), bytes(rec));
  }
}

async function main() {
  const o = args(process.argv.slice(2));
  fs.rmSync(o.out, { recursive: true, force: true });
  fs.mkdirSync(o.out, { recursive: true });
  const fsStore = path.join(o.out, 'fs-store');
  const peersDir = path.join(o.out, 'peers');

  const { expected } = await makeStores({
    engine: 'fs',
    dir: fsStore,
    sessions: o.sessions,
    prekeys: o.prekeys,
    seed: o.seed,
    peerEngine: 'fs',
    peersDir,
  });

  writeRustLayout(fsStore, path.join(o.out, 'rust-cryptobox'));
  writeRustLayout(fsStore, path.join(o.out, 'rust-cryptobox-legacy'), { legacy: true });

  fs.writeFileSync(
    path.join(peersDir, 'index.json'),
    JSON.stringify({ aliceSessionId: expected.alice.sessionId, peers: Object.keys(expected.peers) }, null, 2) + '\n',
  );

  const json = {
    generator: {
      '@wireapp/cryptobox': pkg('@wireapp/cryptobox'),
      '@wireapp/proteus': pkg('@wireapp/proteus'),
      '@wireapp/store-engine': pkg('@wireapp/store-engine'),
      '@wireapp/store-engine-fs': pkg('@wireapp/store-engine-fs'),
      seed: o.seed,
    },
    alice: expected.alice,
    fingerprint: expected.fingerprint,
    lastResortPrekeyId: LAST_RESORT_PREKEY_ID,
    prekeyIds: expected.prekeyIds,
    sessionIds: expected.sessionIds,
    queue: expected.queue.map(q => ({ sessionId: q.sessionId, envelope: b64(q.envelope), plaintext: q.plaintext })),
    peers: expected.peers,
  };
  fs.writeFileSync(path.join(o.out, 'expected.json'), JSON.stringify(json, null, 2) + '\n');
  console.log(
    `wrote ${path.relative(process.cwd(), o.out) || '.'}: ${json.sessionIds.length} sessions, ` +
      `prekeys [${json.prekeyIds.join(', ')}], ${json.queue.length} queued messages, ${json.peers ? Object.keys(json.peers).length : 0} peers`,
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch(e => {
    console.error(e);
    process.exit(1);
  });
}
