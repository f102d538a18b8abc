// Fault 6 of issue 36, memory exhaustion: a decryptBatch whose queue does not fit the wasm
// module's memory fails with Internal (599), stores nothing, fails the client's later calls with
// 599 too, and the store opens again; a client opened on it decrypts the same queue in smaller
// batches, under the same memory budget, with the same message ids, and never reuses a message key.
//
// How the fault is made: the package's own module (pkg/proteus_web_bg.wasm, byte for byte) with a
// maximum on its memory, written into the module's memory section here (the shipped module has
// none, so it may grow to 4 GiB). The allocator (talc) grows the memory by just the pages an
// allocation needs when its heap is full; with a maximum of P pages the first such growth past P
// fails, the allocation fails, and Rust aborts: a trap (RuntimeError: unreachable). In wasm that
// growth is the ONLY place an allocation can fail, so a sweep of P over every page count, from the
// module's initial 17 pages (too few to open the store) to the first at which the batch succeeds,
// makes every growth of the open and of the batch fail in turn: every point where the fault can
// occur, from this state. Each run starts from the same state (a fresh module instance, the same
// store), so the run up to the failing growth is the run without a maximum. The queue is shaped
// so that the growths fall in every phase of a batch: the input, the batch's loop (splitting,
// decoding, planning), the runs' decryption, the sessions back into the cache after a window,
// the commit staged in the journal, and takeCommit (the writes encoded for IndexedDB); with the
// module's function names (PROTEUS_WEB_NAMES=1 ./build.sh) each trap is named by its frames,
// without them by the call into wasm and the results delivered so far.
//
// Each maximum gets a fresh copy of the package (its JS files copied to a temporary directory and
// imported from there: a new module graph, a new wasm instance) on a copy of the same IndexedDB
// store (fake-indexeddb). Per maximum:
//   * the batch fails with 599 (cause: the RuntimeError), or succeeds (the end of the sweep);
//     the phase it was in is recorded (which call into wasm, how many results were delivered)
//     with the trap's wasm frames (function index and offset: the point);
//   * a later call of that client fails with 599; close() resolves; opening the store again in
//     the same instance (the same page) either works or fails with 599 (counted: the trapped
//     call's allocations stay in that instance's memory);
//   * the store is byte for byte what it was before the batch (nothing written, nothing lost);
//   * a fresh instance with the same maximum opens the store (same identity) and decrypts the
//     queue in smaller batches (half the queue, halved again after each 599 on a fresh instance),
//     every message with the id and plaintext of a run without a maximum, those delivered before
//     the trap included; what was committed before comes back as already seen;
//   * Alice's replies to a session she had sent on before the fault: none equals one sent before
//     (the same plaintexts: a reused message key would give the same bytes), and the peer, as it
//     was after receiving those, decrypts each as new.
// Once the fault is gone (no maximum), the same batch on the same store succeeds: that is the
// reference run, and the store after each fault is byte for byte the store it ran on.
//
// Run: node --test tests/faults/memory.mjs (after ./build.sh); scripts/suites/web.sh runs it.
// Prints one line per maximum, and the phases and points hit.
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path, { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { IDBFactory } from 'fake-indexeddb';

// The trap's wasm frames are deep in the stack.
Error.stackTraceLimit = 200;

const PKG = fileURLToPath(new URL('../../pkg/', import.meta.url));
const SHIPPED = readFileSync(join(PKG, 'proteus_web_bg.wasm'));
const PAGE = 65536;
/** Messages of the queue from Carol, whose session exists before (one window: a backlog). */
const BACKLOG = 100;
/**
 * New senders, one PreKeyMessage each to Alice's last-resort prekey (windows of 256; a large
 * commit, a session each, on a small store: the queue does not fit in the heap left after the
 * store opened, and the commit's writes outgrow what the batch frees).
 */
const SENDERS = 300;
const backlog = (i) => `backlog ${i} `.padEnd(100, '.');
const text = (bytes) => new TextDecoder().decode(bytes);
const hex = (bytes) => Buffer.from(bytes instanceof ArrayBuffer ? new Uint8Array(bytes) : bytes).toString('hex');

// --- the module with a maximum on its memory ------------------------------------------------------

function leb(bytes, at) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const b = bytes[at++];
    value += (b & 0x7f) * 2 ** shift;
    shift += 7;
    if ((b & 0x80) === 0) return [value, at];
  }
}

function toLeb(n) {
  const out = [];
  do {
    let b = n & 0x7f;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    out.push(b);
  } while (n > 0);
  return out;
}

/** `module` with its memory's maximum set to `pages` (its one memory, defined, with no maximum). */
export function withMaxPages(module, pages) {
  let at = 8;
  while (at < module.length) {
    const sectionStart = at;
    const id = module[at++];
    let size;
    [size, at] = leb(module, at);
    const body = at;
    if (id === 5) {
      let count;
      [count, at] = leb(module, at);
      const flags = module[at++];
      assert.equal(count, 1, 'the module defines one memory');
      assert.equal(flags, 0, 'the shipped module sets no maximum on its memory');
      const [min] = leb(module, at);
      assert.ok(pages >= min, `at least the initial ${min} pages`);
      const limits = [1, 1, ...toLeb(min), ...toLeb(pages)];
      return Buffer.concat([
        module.subarray(0, sectionStart),
        Buffer.from([5, ...toLeb(limits.length), ...limits]),
        module.subarray(body + size),
      ]);
    }
    at = body + size;
  }
  throw new Error('no memory section');
}

/** `module` without its name section. */
function withoutNames(module) {
  const parts = [module.subarray(0, 8)];
  let at = 8;
  while (at < module.length) {
    const sectionStart = at;
    const id = module[at++];
    let size;
    [size, at] = leb(module, at);
    const body = at;
    let name;
    if (id === 0) {
      let length;
      [length, at] = leb(module, at);
      name = text(module.subarray(at, at + length));
    }
    if (name !== 'name') parts.push(module.subarray(sectionStart, body + size));
    at = body + size;
  }
  return Buffer.concat(parts);
}

/**
 * The module the sweep runs: the package's, or the same with its function names when the build
 * made it (PROTEUS_WEB_NAMES=1 ./build.sh, next to cargo's output) and it is the package's module
 * byte for byte once they are stripped. The names only name the frames of a trap.
 */
const MODULE = (() => {
  const target = path.resolve(fileURLToPath(new URL('../..', import.meta.url)), process.env.CARGO_TARGET_DIR ?? '../../target');
  const file = join(target, 'wasm32-unknown-unknown/release-wasm/proteus_web.names.wasm');
  if (!existsSync(file)) return { wasm: SHIPPED, note: 'without function names (PROTEUS_WEB_NAMES=1 ./build.sh names them)' };
  const named = readFileSync(file);
  if (!withoutNames(named).equals(SHIPPED)) return { wasm: SHIPPED, note: `without function names (${file} is not the package's module: stale)` };
  return { wasm: named, named: true, note: "with function names (the package's module byte for byte without them)" };
})();

// --- fresh instances of the package ---------------------------------------------------------------

const copies = mkdtempSync(join(tmpdir(), 'proteus-memory-'));
after(() => rmSync(copies, { recursive: true, force: true }));
let instances = 0;

/**
 * A fresh instance of the package (its own wasm instance), with at most `pages` pages of memory
 * (undefined: the shipped module as it is). `trap` records, at a trap, the call into wasm it
 * happened in (`phase`), its stack, and the memory's size.
 */
async function instance(pages) {
  const dir = join(copies, String(instances++));
  cpSync(PKG, dir, { recursive: true, filter: (file) => !file.endsWith('.wasm') });
  const url = (file) => pathToFileURL(join(dir, file)).href;
  const pkg = await import(url('index.js'));
  const glue = await import(url('proteus_web.js'));
  const { wasmMemory } = await import(url('init.js'));
  await pkg.init(pages === undefined ? MODULE.wasm : withMaxPages(MODULE.wasm, pages));
  const trap = {};
  // The calls a batch makes into wasm, wrapped to name the one a trap happens in.
  for (const [cls, names] of [
    [glue.RawClient, ['input', 'decryptBatch', 'lastBatchCounts']],
    [glue.RawJournal, ['takeCommit', 'begin', 'handOut', 'committed', 'end']],
  ]) {
    for (const name of names) {
      const f = cls.prototype[name];
      cls.prototype[name] = function (...args) {
        try {
          return f.apply(this, args);
        } catch (e) {
          if (e instanceof WebAssembly.RuntimeError && trap.phase === undefined) {
            Object.assign(trap, { phase: name, stack: e.stack, pages: wasmMemory().buffer.byteLength / PAGE });
          }
          throw e;
        }
      };
    }
  }
  const open = (indexedDB) => pkg.Client.open('alice', { indexedDB, allowWithoutWebLocks: true, persist: false });
  return { pkg, trap, open, pages: () => wasmMemory().buffer.byteLength / PAGE };
}

// --- IndexedDB stores, copied and compared ---------------------------------------------------------

const req = (r) =>
  new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });

/** Every object store of database `name` in `factory`: name → [[key, value]] (keys in order). */
async function snapshot(factory, name) {
  const db = await req(factory.open(name));
  try {
    const tables = [...db.objectStoreNames];
    const tx = db.transaction(tables, 'readonly');
    const out = {};
    for (const table of tables) {
      const store = tx.objectStore(table);
      const [keys, values] = await Promise.all([req(store.getAllKeys()), req(store.getAll())]);
      out[table] = keys.map((k, i) => [k, values[i]]);
    }
    return out;
  } finally {
    db.close();
  }
}

/** A new IDBFactory holding database `name` as `snap` has it. */
async function restore(snap, name) {
  const factory = new IDBFactory();
  const open = factory.open(name, 1);
  open.onupgradeneeded = () => {
    for (const table of Object.keys(snap)) open.result.createObjectStore(table);
  };
  const db = await req(open);
  const tx = db.transaction(Object.keys(snap), 'readwrite');
  for (const [table, entries] of Object.entries(snap)) {
    for (const [k, v] of entries) tx.objectStore(table).put(v, k);
  }
  await new Promise((resolve, reject) => {
    tx.oncomplete = resolve;
    tx.onerror = () => reject(tx.error);
  });
  db.close();
  return factory;
}

/** A snapshot as comparable text: every key and value in hex (or as JSON). */
const flat = (snap) =>
  Object.entries(snap).map(([table, entries]) => [
    table,
    entries.map(([k, v]) => [hex(new Uint8Array(k)), typeof v === 'object' ? hex(new Uint8Array(v)) : JSON.stringify(v)]),
  ]);

const DB = 'proteus:alice';
const PEER_DB = 'proteus:carol';

// --- the scene ---------------------------------------------------------------------------------------

/**
 * Alice (on IndexedDB) and Carol have a session: an earlier batch of Carol's messages and three
 * replies of Alice's are committed, and Carol (on IndexedDB too) took the replies. The queue:
 * Carol's backlog of BACKLOG messages, then one PreKeyMessage from each of SENDERS new senders.
 */
async function scene() {
  const { pkg, open } = await instance();
  const indexedDB = new IDBFactory();
  const peerDB = new IDBFactory();
  const alice = await open(indexedDB);
  const carol = await pkg.Client.open('carol', { indexedDB: peerDB, allowWithoutWebLocks: true, persist: false });
  const [prekey] = await alice.generatePrekeys(1);
  const lastResort = await alice.lastResortBundle();
  await carol.createSession('alice', prekey.bundle);
  const earlier = [];
  for (let i = 0; i < 3; i++) earlier.push({ sessionId: 'carol', envelope: await carol.encrypt('alice', `earlier ${i}`) });
  assert.ok((await alice.decryptBatch(earlier)).every((r) => r.errorCode === undefined));
  const replies = ['reply 0', 'reply 1', 'reply 2'];
  const sent = [];
  for (const r of replies) sent.push(await alice.encrypt('carol', r));
  for (let i = 0; i < sent.length; i++) assert.equal(text(await carol.decrypt('alice', sent[i])), replies[i]);
  const queue = [];
  for (let i = 0; i < BACKLOG; i++) queue.push({ sessionId: 'carol', envelope: await carol.encrypt('alice', backlog(i)) });
  for (let s = 0; s < SENDERS; s++) {
    const sender = await pkg.Client.inMemory();
    await sender.createSession('alice', lastResort.bundle);
    queue.push({ sessionId: `sender ${s}`, envelope: await sender.encrypt('alice', `hello from ${s}`) });
    await sender.close();
  }
  const fingerprint = await alice.fingerprint();
  await Promise.all([alice.close(), carol.close()]);
  const store = await snapshot(indexedDB, DB);
  const peer = await snapshot(peerDB, PEER_DB);

  // The fault gone: the batch on this store without a maximum, the reference of ids and plaintexts.
  const reference = await instance();
  reference.indexedDB = await restore(store, DB);
  const again = await reference.open(reference.indexedDB);
  const results = await again.decryptBatch(queue);
  const needed = reference.pages();
  assert.equal(results.length, queue.length);
  for (const [i, r] of results.entries()) {
    assert.equal(r.errorCode, undefined, `message ${i}: ${r.errorKind}`);
    assert.equal(text(r.plaintext), i < BACKLOG ? backlog(i) : `hello from ${i - BACKLOG}`);
  }
  await again.close();
  // The smallest maximum at which the store with the whole queue committed opens (a binary
  // search: opening takes more memory as the store grows). Below it the store outgrows the budget
  // whatever the batches: the recovery then runs at this maximum.
  const full = await snapshot(reference.indexedDB, DB);
  let [low, high] = [17, needed];
  while (low < high) {
    const mid = Math.floor((low + high) / 2);
    const probe = await instance(mid);
    try {
      await (await probe.open(await restore(full, DB))).close();
      high = mid;
    } catch (e) {
      await rejectsWithInternal(Promise.reject(e), probe.pkg);
      low = mid + 1;
    }
  }
  return { store, peer, queue, earlier, replies, sent, fingerprint, results, needed, opensAfter: low };
}

// --- one maximum ---------------------------------------------------------------------------------------

/** The phase of a trap: the call into wasm, and for the batch how far its delivery was. */
function phaseOf(trap, delivered, total) {
  if (trap.phase === 'input') return PHASES[1][1];
  if (trap.phase === 'takeCommit') return PHASES[2][1];
  if (trap.phase !== 'decryptBatch') return trap.phase ?? 'outside the wrapped calls';
  if (!/wasm-function/.test(trap.stack.split('\n')[1] ?? '')) return "decryptBatch's arguments copied into wasm memory";
  if (delivered === 0) return 'decrypting: decoding, planning and opening the first window, before any result';
  if (delivered < total) return 'between results: handing over chunks, decrypting the windows after';
  return "after the last result: the batch's commit staged in the journal";
}

/** A trap's wasm frames, innermost first: `{ name, at }` (name: undefined without names). */
function framesOf(stack) {
  const frames = [];
  for (const line of stack.split('\n')) {
    const m = /at (?:proteus_web\.wasm\.(.*) \()?wasm:\/\/wasm\/[^:]*:(wasm-function\[\d+\]:0x[0-9a-f]+)/.exec(line);
    if (m) frames.push({ name: m[1]?.replace(/\[[0-9a-f]{16}\]/g, ''), at: m[2] });
  }
  return frames;
}

/** The trap's point: its wasm frames (function index and offset), innermost first. */
const pointOf = (stack) => framesOf(stack).map((f) => f.at).join(' < ');

/** The phases of a batch by the names of the frames (the innermost frame that names one). */
const PHASES = [
  [/rawjournal_new|rawclient_new/, 'opening the store'],
  [/rawclient_input/, 'input: the queue copied into wasm memory (toWasmInput)'],
  [/rawjournal_takeCommit/, "takeCommit: the commit's writes encoded for IndexedDB"],
  [/commit_sessions|Storage>::commit/, "staging the commit: the sessions' records into the journal"],
  [/SessionCache>::put/, "the window's sessions back into the session cache"],
  [/new_session|Session>::|SessionState>::|apply_cipher|chain::|open_jobs|decrypt_run/, 'decrypting the runs'],
  [/OrderedIds>::add|hand_over|PackedResults|Chunk>::/, 'handing the results over'],
  [/split|decrypt_batch_chunked|plan_window|decode/, "the batch's loop: the queue split and decoded, the window planned (inlined)"],
];

function namedPhase(stack) {
  for (const { name } of framesOf(stack)) {
    for (const [pattern, phase] of PHASES) if (name !== undefined && pattern.test(name)) return phase;
  }
  return undefined;
}

/** A Rust function's name without crate paths and generic arguments: `Type::method`. */
function shortName(name) {
  let short = '';
  let depth = 0;
  for (let i = 0; i < name.length; i++) {
    const c = name[i];
    // Generic arguments (`Type<...>`, `f::<...>`) go; a qualified path's `<Type as Trait>` stays.
    if (depth === 0 && c === '<' && i > 0 && /[\w:]/.test(name[i - 1])) depth = 1;
    else if (depth > 0 && c === '<') depth++;
    else if (depth > 0 && c === '>') depth--;
    else if (depth === 0) short += c;
  }
  short = short.replace(/::(?=::|$)/g, '');
  const qualified = /^<(?:[\w:]*::)?(\w+)(?: as [^>]*)?>::(.*)$/.exec(short);
  return qualified ? `${qualified[1]}::${qualified[2]}` : short.split('::').slice(-2).join('::');
}

/** The innermost frames of a trap, for the log: names when the module has them. */
const namesOf = (stack) =>
  framesOf(stack)
    .slice(0, 3)
    .map((f) => (f.name === undefined ? f.at : shortName(f.name)))
    .join(' < ');

async function rejectsWithInternal(promise, pkg) {
  let error;
  await assert.rejects(promise, (e) => {
    error = e;
    return true;
  });
  assert.ok(error instanceof pkg.ProteusError, `expected a ProteusError, got ${error?.stack ?? error}`);
  assert.equal(error.code, pkg.INTERNAL, error.message);
  assert.equal(error.kind, 'Internal');
  assert.ok(error.cause instanceof WebAssembly.RuntimeError, `cause: ${error.cause}`);
  return error;
}

/**
 * Alice's store after the fault, at `pages`: opens with her identity, decrypts the queue in
 * smaller batches (halved after each 599, on a fresh instance), then replies to Carol.
 * Returns the results by queue index, the 599s met, and the replies.
 */
async function recover(s, pages, indexedDB) {
  const results = new Array(s.queue.length);
  let size = Math.ceil(s.queue.length / 2);
  let at = 0;
  let traps = 0;
  let replies;
  while (replies === undefined) {
    const { pkg, open } = await instance(pages);
    const alice = await open(indexedDB);
    try {
      assert.equal(await alice.fingerprint(), s.fingerprint);
      while (at < s.queue.length) {
        const part = await alice.decryptBatch(s.queue.slice(at, at + size));
        for (const r of part) results[at++] = r;
      }
      // What was committed before the fault is there: Carol's earlier messages were seen.
      assert.ok((await alice.decryptBatch(s.earlier)).every((r) => r.alreadySeen), 'the earlier batch is committed');
      replies = [];
      for (const r of s.replies) replies.push(await alice.encrypt('carol', r));
      await alice.close();
    } catch (e) {
      await rejectsWithInternal(Promise.reject(e), pkg);
      await rejectsWithInternal(alice.fingerprint(), pkg);
      await alice.close();
      traps++;
      assert.ok(size > 1, `at ${pages} pages not even one message decrypts after the store opened`);
      size = Math.ceil(size / 2);
    }
  }
  return { results, traps, size, replies };
}

async function atMaximum(s, pages) {
  const indexedDB = await restore(s.store, DB);
  const inst = await instance(pages);
  let alice;
  try {
    alice = await inst.open(indexedDB);
  } catch (e) {
    // Too little memory to open the store: Internal too, and nothing written.
    await rejectsWithInternal(Promise.reject(e), inst.pkg);
    assert.deepEqual(flat(await snapshot(indexedDB, DB)), flat(s.store), 'the store is unchanged');
    return { pages, outcome: 'open', phase: 'opening the store', point: pointOf(e.cause.stack), names: namesOf(e.cause.stack), delivered: 0 };
  }
  const delivered = new Map();
  let results;
  let error;
  try {
    results = await alice.decryptBatch(s.queue, (r, done) => {
      delivered.set(done - 1, r);
    });
  } catch (e) {
    error = e;
  }
  if (error === undefined) {
    // Enough memory: the sweep is over. The same results as the reference.
    assert.deepEqual(results.map((r) => r.messageId), s.results.map((r) => r.messageId));
    await alice.close();
    return { pages, outcome: 'ok', delivered: delivered.size };
  }
  await rejectsWithInternal(Promise.reject(error), inst.pkg);
  const jsPhase = phaseOf(inst.trap, delivered.size, s.queue.length);
  const phase = MODULE.named ? namedPhase(inst.trap.stack) ?? jsPhase : jsPhase;
  const point = pointOf(inst.trap.stack);
  assert.ok(inst.trap.pages <= pages);
  // The client is done for: its later calls fail with 599, and it closes.
  await rejectsWithInternal(alice.fingerprint(), inst.pkg);
  await rejectsWithInternal(alice.decryptBatch(s.queue.slice(0, 1)), inst.pkg);
  await alice.close();
  // Nothing of the batch was stored, nothing was lost.
  assert.deepEqual(flat(await snapshot(indexedDB, DB)), flat(s.store), `at ${pages} pages the store changed`);
  // As the error says: close it and open the store again, here in the same module instance (the
  // page goes on). A trap unwinds nothing: what the trapped call had allocated stays in the
  // instance's memory, so this open may fail too, and then with 599 (a fresh instance, below,
  // must open it).
  let sameInstance;
  try {
    const reopened = await inst.open(indexedDB);
    assert.equal(await reopened.fingerprint(), s.fingerprint);
    await reopened.close();
    sameInstance = 'opens';
  } catch (e) {
    await rejectsWithInternal(Promise.reject(e), inst.pkg);
    sameInstance = '599';
  }
  // What the callback received before the trap is the reference's.
  for (const [i, r] of delivered) {
    assert.equal(r.messageId, s.results[i].messageId);
    assert.equal(hex(r.plaintext), hex(s.results[i].plaintext));
  }

  // A fresh instance with the same maximum: the queue in smaller batches, the same ids.
  const recovered = await recover(s, Math.max(pages, s.opensAfter), indexedDB);
  for (const [i, r] of recovered.results.entries()) {
    assert.equal(r.errorCode, undefined, `message ${i} after recovery: ${r.errorKind}`);
    assert.equal(r.alreadySeen, false);
    assert.equal(r.messageId, s.results[i].messageId, `message ${i}: the same id`);
    assert.equal(hex(r.plaintext), hex(s.results[i].plaintext));
  }
  // No message key used twice: Alice's replies after the fault are not those before, and Carol,
  // as she was after the replies before, decrypts each as a new message.
  const sentBefore = new Set(s.sent.map(hex));
  for (const envelope of recovered.replies) assert.ok(!sentBefore.has(hex(envelope)), 'a reply reused a message key');
  const peer = await instance();
  const carol = await peer.pkg.Client.open('carol', { indexedDB: await restore(s.peer, PEER_DB), allowWithoutWebLocks: true, persist: false });
  const read = await carol.decryptBatch(recovered.replies.map((envelope) => ({ sessionId: 'alice', envelope })));
  assert.deepEqual(read.map((r) => (r.errorCode === undefined ? text(r.plaintext) : r.errorKind)), s.replies);
  await carol.close();
  return {
    pages,
    outcome: 'failed',
    phase,
    point,
    names: namesOf(inst.trap.stack),
    delivered: delivered.size,
    sameInstance,
    trapPages: inst.trap.pages,
    recoveryTraps: recovered.traps,
    recoveryBatch: recovered.size,
  };
}

test('memory exhaustion at every growth of a batch: 599, nothing stored, the same ids after', { timeout: 600_000 }, async () => {
  const started = performance.now();
  const s = await scene();
  console.log(`the module ${MODULE.note}; a queue of ${s.queue.length} (${BACKLOG} from Carol, ${SENDERS} new senders)`);
  const runs = [];
  // From the module's initial memory up (17 pages): the first maximums do not open the store.
  const first = 17;
  for (let pages = first; ; pages++) {
    const run = await atMaximum(s, pages);
    runs.push(run);
    let line;
    if (run.outcome === 'ok') line = `the batch succeeds (${run.delivered} results delivered)`;
    else if (run.outcome === 'open') line = `599 opening the store; ${run.names}`;
    else {
      line =
        `599 after ${run.delivered} results, trap at ${run.trapPages} pages: ${run.phase}; ${run.names}; ` +
        `same instance: ${run.sameInstance}; recovered in batches of ${run.recoveryBatch} after ${run.recoveryTraps} more 599`;
    }
    console.log(`max ${pages} pages: ${line}`);
    if (run.outcome === 'ok') break;
    assert.ok(pages < s.needed + 8, 'the batch still fails with more memory than the reference run took');
  }
  const faults = runs.filter((r) => r.outcome !== 'ok');
  const inBatch = faults.filter((r) => r.outcome === 'failed');
  const byPhase = new Map();
  for (const r of faults) byPhase.set(r.phase, (byPhase.get(r.phase) ?? 0) + 1);
  // A point is one growth of the memory: the page count at the trap and the frames.
  const points = new Set(faults.map((r) => `${r.trapPages} ${r.point}`));
  console.log(
    `${faults.length} maximums failed (${faults.length - inBatch.length} opening the store, ${inBatch.length} in the batch: ` +
      `${points.size} distinct growths); the batch succeeds at ${runs.at(-1).pages} pages, as far as the reference run grew (${s.needed})`,
  );
  for (const [phase, n] of byPhase) console.log(`  ${n} × ${phase}`);
  const reopens = inBatch.filter((r) => r.sameInstance === 'opens').length;
  console.log(`the store opened again in the same instance after ${reopens} of the ${inBatch.length} faults in the batch, 599 after the others`);
  console.log(
    `every fault: 599, later calls 599, the store unchanged; recovery at the same maximum (at least ${s.opensAfter} pages, where ` +
      `the store with the queue committed opens): ${inBatch.reduce((n, r) => n + r.recoveryTraps, 0)} more 599 on smaller batches, ` +
      `every message then decrypted with the reference's id, replies with fresh keys; ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  assert.equal(runs.at(-1).pages, s.needed, 'the batch succeeds exactly where the reference run grew to');
  // Every phase a batch allocates in was hit (a change of the batch's memory profile may move one
  // out of the sweep: then reshape the queue).
  const want = MODULE.named
    ? PHASES.map(([, phase]) => phase).filter((phase) => phase !== 'handing the results over')
    : [PHASES[0][1], PHASES[1][1], PHASES[2][1], /^decrypting/, /^between results/, /^after the last result/];
  for (const phase of want) {
    assert.ok([...byPhase.keys()].some((p) => (typeof phase === 'string' ? p === phase : phase.test(p))), `no fault in the phase ${phase}`);
  }
});
