#!/usr/bin/env node
// The peers of the fixture store, driven by the REAL @wireapp/cryptobox.
//
// CLI:  node tests/cryptobox/peer.mjs [--fixtures DIR] [--state DIR]  < request.json  > response.json
//
// Request (stdin, JSON; every part optional):
//   { "decrypt": [ { "sessionId": "...", "envelope": "<base64>" } ],
//     "encrypt": [ { "sessionId": "...", "text": "..." } ],
//     "ops":     [ { "op": "decrypt", "sessionId", "envelope" } | { "op": "encrypt", "sessionId", "text" } ],
//     "info": true }
// "sessionId" is the id ALICE uses for the peer (as in expected.json). "decrypt" items run first,
// then "encrypt" items, then "ops" in their order.
// Response (stdout, JSON):
//   { "decrypt": [ { "sessionId", "plaintext" } | { "sessionId", "error" } ],
//     "encrypt": [ { "sessionId", "envelope": "<base64>" } | { "sessionId", "error" } ],
//     "ops":     [ ...the same shapes, with "op" ],
//     "info":    { "aliceSessionId", "peers": { sessionId: { "fingerprint" } } } }
// Exit status: 0 when the request was read (item failures are reported per item), 2 otherwise.
//
// State: without --state, the peers' stores are copied from <fixtures>/peers to a temporary
// directory that is deleted afterwards, so every call starts from the fixture state and the
// fixtures are never changed. With --state DIR, DIR is seeded from <fixtures>/peers the first
// time (when it does not exist) and every later call goes on from what the earlier ones left
// there: use one state directory per test that needs several calls.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Peers } from './stores.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

/** Opens the peers; returns { peers, close }. `close()` removes a temporary copy. */
export async function openPeers({ fixturesDir = path.join(here, 'fixtures'), stateDir } = {}) {
  const source = path.join(fixturesDir, 'peers');
  let dir = stateDir;
  let temporary = false;
  if (!dir) {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cryptobox-peers-'));
    temporary = true;
  }
  if (temporary || !fs.existsSync(dir)) {
    fs.cpSync(source, dir, { recursive: true });
  }
  const index = JSON.parse(fs.readFileSync(path.join(dir, 'index.json'), 'utf8'));
  const peers = await Peers.loadFs(dir, index.aliceSessionId, index.peers);
  return {
    peers,
    close() {
      if (temporary) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

const b64 = bytes => Buffer.from(bytes).toString('base64');

async function runOp(peers, op, item) {
  const { sessionId } = item;
  try {
    if (op === 'decrypt') {
      return { sessionId, plaintext: await peers.decrypt(sessionId, new Uint8Array(Buffer.from(item.envelope, 'base64'))) };
    }
    if (op === 'encrypt') {
      return { sessionId, envelope: b64(await peers.encrypt(sessionId, String(item.text))) };
    }
    return { sessionId, error: `unknown op "${op}"` };
  } catch (e) {
    return { sessionId, error: `${e?.constructor?.name ?? 'Error'}: ${e?.message ?? e}` };
  }
}

/** Runs one request (the stdin JSON) against open peers. */
export async function runRequest(peers, request) {
  const out = {};
  if (request.info) {
    out.info = {
      aliceSessionId: peers.aliceSessionId,
      peers: Object.fromEntries(peers.sessionIds.map(id => [id, { fingerprint: peers.fingerprint(id) }])),
    };
  }
  for (const op of ['decrypt', 'encrypt']) {
    if (!request[op]) continue;
    out[op] = [];
    for (const item of request[op]) out[op].push(await runOp(peers, op, item));
  }
  if (request.ops) {
    out.ops = [];
    for (const item of request.ops) out.ops.push({ op: item.op, ...(await runOp(peers, item.op, item)) });
  }
  return out;
}

async function main() {
  const argv = process.argv.slice(2);
  const opts = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (argv[i] === '--fixtures') opts.fixturesDir = path.resolve(argv[i + 1]);
    else if (argv[i] === '--state') opts.stateDir = path.resolve(argv[i + 1]);
    else throw new Error(`unknown option ${argv[i]}`);
  }
  const input = fs.readFileSync(0, 'utf8');
  const request = input.trim() ? JSON.parse(input) : {};
  // Keep stdout for the JSON answer alone.
  console.log = console.info = console.debug = console.warn = (...a) => process.stderr.write(a.join(' ') + '\n');
  const { peers, close } = await openPeers(opts);
  try {
    process.stdout.write(JSON.stringify(await runRequest(peers, request)) + '\n');
  } finally {
    close();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch(e => {
    process.stderr.write(`peer.mjs: ${e?.stack ?? e}\n`);
    process.exit(2);
  });
}
