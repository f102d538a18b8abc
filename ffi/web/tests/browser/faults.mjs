// Storage faults in a real headless Chromium, on its IndexedDB (issue 36, item 4): a commit refused
// for quota (QuotaExceededError), a transaction aborted by the browser, the page closed in the
// middle of a commit, and the Worker of the Worker client terminated in the middle of a batch.
// Each fault is injected at EVERY point of a commit where it can occur, in two calls: a
// decryptBatch of a queue from peers (a PreKeyMessage of a new peer, messages of a known one out of
// order: a session created, a prekey deleted, message keys staged and used) and an encrypt (its
// chain advance stored before the envelope is returned). The points are counted in an unfaulted
// call first: faults-hook.js numbers the requests of the call's readwrite transactions (the
// reads of the commit counter, then the writes). After every injection:
//   * the call fails with a stable ProteusError code (StorageFailure 507), or succeeds (the fault
//     came too late to stop the commit), or, the page or worker being gone, never returns;
//   * a client opened on the store afterwards sees Bob's identity and every session, and every
//     message of a commit made before decrypts as already seen (lost: those that decrypt again);
//   * no message key is used twice: every envelope Bob handed out decrypts at the peer (reused:
//     those refused, DuplicateMessage 209 or another error), and a batch is committed all or
//     nothing;
//   * once the fault is gone, the same call succeeds: the same messages decrypt to the same
//     plaintexts under the same ids (or, if the faulted call's commit was made, are all already
//     seen under the same ids).
// The peers run in Node (the same package, in memory), so that they outlive a closed page. The
// quota is Chromium's devtools protocol's (Storage.overrideQuotaForOrigin); Chromium checks it
// once per transaction, at its commit, against the sum of its writes' sizes (and caches the space
// left for up to 30 s, which a refused large write of the test's own refreshes: drainQuotaCache).
// Chromium only (the devtools protocol). Run: node --test tests/browser/faults.mjs (after ./build.sh).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Client, STORAGE_FAILURE, messageId } from '../../pkg/index.js';
import { launch } from '../support/chromium.mjs';
import { serve } from '../support/serve.mjs';

const b64 = (bytes) => Buffer.from(bytes).toString('base64');
const unb64 = (s) => new Uint8Array(Buffer.from(s, 'base64'));
const text = (bytes) => new TextDecoder().decode(bytes);
/** Results per chunk of the Worker client (wire.js's CHUNK). */
const CHUNK = 256;

let server;
let browser;
/** What the page's blocked request (faults-hook.js, 'block') calls: closes its page. */
let onHit;

before(async () => {
  server = await serve();
  browser = await launch('proteus-faults-');
  await browser.context.route('**/__faults/hit', async (route) => {
    const page = route.request().frame().page();
    await onHit?.(page);
    await page.close().catch(() => {});
    await route.abort().catch(() => {});
  });
});

after(async () => {
  await browser?.close();
  await server?.close();
});

async function newPage(on = server) {
  const page = await browser.context.newPage();
  page.on('pageerror', (e) => console.error('page error:', e));
  await page.goto(`${on.url}/ffi/web/tests/browser/faults.html`);
  await page.waitForFunction(() => window.labReady === true);
  return page;
}

const labOf = (page) => (f, ...a) => page.evaluate(([f, a]) => window.lab[f](...a), [f, a]);

/**
 * Bob's store, its peers (in Node) and what was committed: `round(n)` makes the next queue, `check`
 * opens the store from another client and counts what was lost, `decrypted`/`encrypted` record
 * what a call gave.
 */
class Conversation {
  static async start(lab, name, prekeys = 24) {
    const c = new Conversation();
    c.name = name;
    c.fingerprint = await lab('open', name);
    c.bundles = await lab('prekeys', prekeys);
    c.alice = await Client.inMemory();
    await c.alice.createSession('bob', unb64(c.bundles.shift().bundle));
    c.sessions = 0;
    c.rounds = 0;
    c.sent = 0;
    c.held = [];
    c.committed = [];
    c.reused = 0;
    c.lost = 0;
    c.opens = true;
    return c;
  }

  /**
   * The next queue: a PreKeyMessage from a new peer, the two messages held back last time, then
   * `n` of Alice's with two of them held back (their keys staged). Expected: id and plaintext.
   */
  async round(n = 8) {
    const peer = await Client.inMemory();
    const bundle = this.bundles.shift();
    assert.ok(bundle, 'enough prekeys');
    await peer.createSession('bob', unb64(bundle.bundle));
    const first = `from peer ${bundle.id}`;
    const queue = [[`peer-${bundle.id}`, await peer.encrypt('bob', first), first]];
    queue.push(...this.held);
    const fresh = [];
    const texts = Array.from({ length: n }, () => `message ${this.sent++} ${'·'.repeat(this.sent % 40)}`);
    const envelopes = await this.alice.encryptBatch(texts.map((plaintext) => ({ sessionId: 'bob', plaintext })));
    envelopes.forEach((e, i) => fresh.push(['alice', e, texts[i]]));
    this.held = fresh.splice(2, 2);
    queue.push(...fresh);
    return {
      queue: queue.map(([s, e]) => [s, b64(e)]),
      expected: queue.map(([, e, p]) => ({ messageId: messageId(e), plaintext: p })),
      // The peer's session, and Alice's with the first round (her first message is a PreKeyMessage).
      newSessions: this.rounds++ === 0 ? 2 : 1,
    };
  }

  /** Every delivered or returned result of `round` is the expected one (same id, same plaintext). */
  static same(results, round, what) {
    results.forEach((r, i) => {
      assert.equal(r.messageId, round.expected[i].messageId, `${what}: message ${i} keeps its id`);
      assert.equal(r.plaintext, round.expected[i].plaintext, `${what}: message ${i} decrypts to its plaintext`);
    });
  }

  /**
   * The faulted decryptBatch `first` of `round`, then `again` (the same batch once the fault is
   * gone): all or nothing, the same ids and plaintexts. Resolves to whether the faulted call's
   * commit was made.
   */
  decrypted(round, first, again) {
    if (first?.delivered) Conversation.same(first.delivered, round, 'a result delivered before the fault');
    if (first?.ok) Conversation.same(first.results, round, 'the faulted call\'s results');
    assert.ok(again.ok, `the batch succeeds once the fault is gone: ${again.error}`);
    assert.equal(again.results.length, round.expected.length);
    const seen = again.results.filter((r) => r.errorCode === 208 || r.errorCode === 209).length;
    const kept = seen === round.expected.length;
    assert.ok(kept || seen === 0, `a commit is all or nothing: ${again.results.map((r) => r.errorCode).join(',')}`);
    if (first?.ok) assert.ok(kept, 'a batch that resolved is committed');
    again.results.forEach((r, i) => assert.equal(r.messageId, round.expected[i].messageId, `message ${i} keeps its id`));
    if (!kept) Conversation.same(again.results, round, 'the batch once the fault is gone');
    this.committed.push(...round.queue);
    this.sessions += round.newSessions;
    return kept;
  }

  /** An envelope Bob handed out: Alice decrypts it, or counts a reused (or broken) key. */
  async encrypted(envelope, plaintext) {
    try {
      assert.equal(text(await this.alice.decrypt('bob', unb64(envelope))), plaintext);
    } catch (e) {
      this.reused += 1;
      throw new Error(`an envelope Bob handed out does not decrypt at the peer (${e.code ?? e.message}): a message key used twice?`);
    }
  }

  /**
   * Opens the store from another client: Bob's identity, every session (and those of `pending`,
   * the faulted call's round, all or none), no commit made before lost.
   */
  async check(lab, pending) {
    let seen;
    try {
      seen = await lab('inspect', this.name, this.committed.slice(-60));
    } catch (e) {
      this.opens = false;
      throw e;
    }
    assert.equal(seen.fingerprint, this.fingerprint, 'the store opens with Bob\'s identity');
    const sessions = [this.sessions, this.sessions + (pending?.newSessions ?? 0)];
    assert.ok(sessions.includes(seen.sessions), `every session is there: ${seen.sessions}, not ${sessions.join(' or ')}`);
    const lost = seen.again.filter((r) => r.plaintext !== null || !r.alreadySeen).length;
    this.lost += lost;
    assert.equal(lost, 0, 'every message of a commit made before is already seen');
  }
}

/** Counts outcomes and prints the fault's line. */
class Tally {
  constructor(name) {
    this.name = name;
    this.points = 0;
    this.outcomes = new Map();
  }

  add(outcome) {
    this.points += 1;
    this.outcomes.set(outcome, (this.outcomes.get(outcome) ?? 0) + 1);
  }

  print(c) {
    const outcomes = [...this.outcomes].map(([o, n]) => `${o} ×${n}`).join(', ');
    console.log(`fault: ${this.name} · injection points: ${this.points} · outcomes: ${outcomes} · lost ${c.lost} · reused ${c.reused} · opens ${c.opens ? 'yes' : 'no'}`);
  }
}

const outcomeOf = (r) => (r.ok ? 'success' : r.code === undefined ? r.error.split(':')[0] : `code ${r.code}`);
/**
 * The requests of a call's last readwrite transaction (its commit): a call after a failed one
 * reloads the store first, in a transaction of its own.
 */
const describe = (log) => {
  const last = Math.max(...log.map((l) => l.tx));
  return log.filter((l) => l.tx === last).map((l) => `${l.op} ${l.store}`).join(', ');
};

/**
 * An unfaulted decryptBatch of a new round: its commit's requests (the injection points). The
 * first round (Alice's PreKeyMessage, no held messages) is made first, unfaulted: every round
 * after it has the same requests.
 */
async function referenceBatch(lab, c) {
  if (c.rounds === 0) {
    const warmUp = await c.round();
    c.decrypted(warmUp, undefined, await lab('decryptBatch', warmUp.queue, {}));
  }
  const round = await c.round();
  const r = await lab('decryptBatch', round.queue, {});
  c.decrypted(round, undefined, r);
  return r.log;
}

async function referenceEncrypt(lab, c) {
  const r = await lab('encrypt', 'alice', 'reference', {});
  assert.ok(r.ok, r.error);
  await c.encrypted(r.envelope, 'reference');
  return r.log;
}

test('Chromium: a transaction aborted at every request of a commit (decryptBatch, encrypt)', async () => {
  const page = await newPage();
  const lab = labOf(page);
  const c = await Conversation.start(lab, 'aborted', 40);
  try {
    const batchLog = await referenceBatch(lab, c);
    const batch = new Tally('transaction aborted, decryptBatch');
    for (const action of ['abort-before', 'abort-after']) {
      for (let at = 1; at <= batchLog.length; at++) {
        const round = await c.round();
        const first = await lab('decryptBatch', round.queue, { at, action });
        assert.equal(first.hits, 1, `the fault hit request ${at}`);
        assert.ok(!first.ok && first.code === STORAGE_FAILURE, `${action} at ${at}: StorageFailure, not ${outcomeOf(first)} ${first.error}`);
        batch.add(outcomeOf(first));
        await c.check(lab, round);
        const again = await lab('decryptBatch', round.queue, {});
        assert.equal(c.decrypted(round, first, again), false, 'an aborted commit is not there');
        assert.equal(describe(again.log), describe(batchLog), 'the same requests as the reference');
      }
    }
    batch.print(c);

    const encryptLog = await referenceEncrypt(lab, c);
    const enc = new Tally('transaction aborted, encrypt');
    for (const action of ['abort-before', 'abort-after']) {
      for (let at = 1; at <= encryptLog.length; at++) {
        const plaintext = `encrypt ${action} ${at}`;
        const first = await lab('encrypt', 'alice', plaintext, { at, action });
        assert.equal(first.hits, 1);
        assert.ok(!first.ok && first.code === STORAGE_FAILURE, `${action} at ${at}: StorageFailure, not ${outcomeOf(first)} ${first.error}`);
        enc.add(outcomeOf(first));
        await c.check(lab);
        const again = await lab('encrypt', 'alice', plaintext, {});
        assert.ok(again.ok, again.error);
        await c.encrypted(again.envelope, plaintext);
      }
    }
    enc.print(c);
  } finally {
    await page.close();
  }
});

/**
 * Chromium's quota for the test's origin: `quotaSize` bytes (undefined: the default), then the
 * space left that Chromium's IndexedDB cached refreshed by a write too large for any quota here
 * (refused), so that the next commit is checked against this quota.
 */
async function setOriginQuota(cdp, lab, origin, quotaSize) {
  await cdp.send('Storage.overrideQuotaForOrigin', quotaSize === undefined ? { origin } : { origin, quotaSize });
  if (quotaSize !== undefined) assert.equal(await lab('drainQuotaCache', 4 << 20), 'QuotaExceededError', 'the quota refuses 4 MB');
}

test('Chromium: QuotaExceededError at every write of a commit (decryptBatch, encrypt)', async () => {
  // An origin of its own: the space left that the other tests' commits made Chromium cache (GBs,
  // for 30 s) would let any commit through.
  const own = await serve();
  const page = await newPage(own);
  const lab = labOf(page);
  const cdp = await browser.context.newCDPSession(page);
  const setQuota = (quotaSize) => setOriginQuota(cdp, lab, own.url, quotaSize);
  const usage = async () => (await lab('estimate')).usage;
  // From the start, never more than 1 MB free: Chromium's cache of the space left stays small.
  await setQuota((await usage()) + (1 << 20));
  const c = await Conversation.start(lab, 'quota', 40);
  try {
    for (const [name, reference, run] of [
      [
        'quota exceeded, decryptBatch',
        () => referenceBatch(lab, c),
        async (quota) => {
          const round = await c.round();
          await quota();
          const first = await lab('decryptBatch', round.queue, {});
          return {
            first,
            round,
            async after() {
              await setQuota((await usage()) + (1 << 20));
              const again = await lab('decryptBatch', round.queue, {});
              c.decrypted(round, first, again);
            },
          };
        },
      ],
      [
        'quota exceeded, encrypt',
        () => referenceEncrypt(lab, c),
        async (quota, i) => {
          const plaintext = `under quota ${i}`;
          await quota();
          const first = await lab('encrypt', 'alice', plaintext, {});
          if (first.ok) await c.encrypted(first.envelope, plaintext);
          return {
            first,
            async after() {
              await setQuota((await usage()) + (1 << 20));
              const again = await lab('encrypt', 'alice', plaintext, {});
              assert.ok(again.ok, again.error);
              await c.encrypted(again.envelope, plaintext);
            },
          };
        },
      ],
    ]) {
      const log = await reference();
      // The quota just below the store's usage, then at the usage plus the first k writes of the
      // commit (k = 0 .. all but one: write k + 1 is the one that does not fit), then the usage
      // plus all of them and room to spare.
      const sizes = log.map((l) => l.bytes);
      const total = sizes.reduce((a, b) => a + b, 0);
      const points = [-1];
      let sum = 0;
      for (const s of sizes) {
        if (s === 0) continue;
        points.push(sum);
        sum += s;
      }
      points.push(total + 4096);
      const tally = new Tally(name);
      for (const [i, extra] of points.entries()) {
        const { first, round, after } = await run(async () => setQuota((await usage()) + extra), i);
        if (!first.ok) {
          assert.equal(first.code, STORAGE_FAILURE, `${first.error}`);
          assert.match(first.error, /QuotaExceededError/);
        }
        tally.add(outcomeOf(first));
        // The store opens under the same quota, and nothing is lost.
        await c.check(lab, round);
        await after();
      }
      const refused = tally.outcomes.get(`code ${STORAGE_FAILURE}`) ?? 0;
      assert.ok(refused >= 1 && (tally.outcomes.get('success') ?? 0) >= 1, 'the sweep crosses the commit\'s size');
      tally.print(c);
    }
  } finally {
    await setQuota(undefined);
    await page.close();
    await own.close();
  }
});

/**
 * The call `start(lab, armed)` on `page` (Bob's client open on it), the page closed in the success
 * event of the call's `at`-th readwrite request (or in the complete event of its `complete`-th
 * transaction). Resolves once the page is closed (true), or to the call's outcome if it finished
 * first.
 */
async function closedMidCommit(page, armed, start) {
  let closed;
  const hit = new Promise((resolve) => {
    closed = resolve;
  });
  onHit = async () => closed(true);
  const call = start(labOf(page), armed).catch((e) => ({ gone: String(e.message).split('\n')[0] }));
  const outcome = await Promise.race([hit, call]);
  onHit = undefined;
  await page.close().catch(() => {});
  return outcome;
}

test('Chromium: the page closed at every request of a commit, and after it (decryptBatch, encrypt)', async () => {
  let page = await newPage();
  let lab = labOf(page);
  const c = await Conversation.start(lab, 'closed', 40);
  const batchLog = await referenceBatch(lab, c);
  const encryptLog = await referenceEncrypt(lab, c);
  const points = (log) => [...log.map((l) => ({ at: l.n, action: 'block' })), { complete: Math.max(...log.map((l) => l.tx)), action: 'block' }];
  /** A new page on the store: it opens, nothing is lost. */
  const reopen = async (pending) => {
    page = await newPage();
    lab = labOf(page);
    assert.equal(await lab('open', c.name), c.fingerprint);
    await c.check(lab, pending);
  };
  try {
    const batch = new Tally('page closed mid-commit, decryptBatch');
    for (const armed of points(batchLog)) {
      const round = await c.round();
      const outcome = await closedMidCommit(page, armed, (l, a) => l('decryptBatch', round.queue, a));
      assert.equal(outcome, true, `the page was closed at ${JSON.stringify(armed)}: ${JSON.stringify(outcome)}`);
      await reopen(round);
      const again = await lab('decryptBatch', round.queue, {});
      const kept = c.decrypted(round, undefined, again);
      batch.add(kept ? 'closed, commit kept' : 'closed, not committed');
      if (armed.complete === undefined) assert.equal(kept, false, 'a commit the page did not finish is not there');
    }
    batch.print(c);

    const enc = new Tally('page closed mid-commit, encrypt');
    for (const armed of points(encryptLog)) {
      const plaintext = `closed at ${JSON.stringify(armed)}`;
      const outcome = await closedMidCommit(page, armed, (l, a) => l('encrypt', 'alice', plaintext, a));
      assert.equal(outcome, true);
      await reopen();
      const again = await lab('encrypt', 'alice', plaintext, {});
      assert.ok(again.ok, again.error);
      await c.encrypted(again.envelope, plaintext);
      enc.add('closed, no envelope handed out');
    }
    enc.print(c);
  } finally {
    await page.close();
  }
});

/** Whether a Worker client's call settles after its worker was terminated (see the last test). */
let terminatedCallsSettle;

test('Chromium: the Worker terminated after every chunk of a batch and at every request of its commit', async () => {
  const page = await newPage();
  const lab = labOf(page);
  const c = await Conversation.start(lab, 'worker-owner', 40);
  await lab('close');
  const n = 2 * CHUNK + 50;
  const tally = new Tally('Worker terminated mid-batch, decryptBatch');
  const settled = [];
  try {
    assert.equal(await lab('workerOpen', c.name), c.fingerprint);
    // A first round (Alice's PreKeyMessage), then the reference: the batch's readwrite requests in
    // the worker, counted there.
    let round = await c.round(n);
    c.decrypted(round, undefined, await lab('workerBatch', round.queue));
    await lab('workerHook', {});
    round = await c.round(n);
    c.decrypted(round, undefined, { ...(await lab('workerBatch', round.queue)) });
    const { log } = await lab('workerHook', undefined);
    const chunks = Math.ceil(round.expected.length / CHUNK);
    const points = [
      ...Array.from({ length: chunks }, (_, k) => ({ afterChunk: k + 1 })),
      ...log.map((l) => ({ arm: { at: l.n, action: 'block' } })),
      { arm: { complete: Math.max(...log.map((l) => l.tx)), action: 'block' } },
    ];
    for (const point of points) {
      round = await c.round(n);
      if (point.arm) await lab('workerHook', point.arm);
      const first = await lab('workerBatch', round.queue, { afterChunk: point.afterChunk, waitMs: 300 });
      assert.ok(first.terminated, `the worker was terminated at ${JSON.stringify(point)}`);
      Conversation.same(first.delivered, round, 'a result delivered before the worker ended');
      settled.push(!first.pending);
      if (!first.pending) assert.match(first.error, /^WorkerError: .*terminated/, 'the call fails with WorkerError');
      const outcome = first.pending ? 'no answer' : outcomeOf(first);
      // A new worker on the same store: it opens, nothing is lost, the batch decrypts again.
      assert.equal(await lab('workerOpen', c.name), c.fingerprint, 'a new worker opens the store');
      await c.check(lab, round);
      const again = await lab('workerBatch', round.queue);
      const kept = c.decrypted(round, first.ok ? first : { delivered: first.delivered }, again);
      if (point.afterChunk !== undefined) assert.equal(kept, false, 'nothing is committed before the page took every chunk');
      tally.add(`${outcome} (${point.afterChunk ? `after chunk ${point.afterChunk}` : 'in the commit'}, ${kept ? 'commit kept' : 'not committed'})`);
    }
    tally.print(c);
  } finally {
    await page.close();
  }
  terminatedCallsSettle = settled;
});

test('Chromium: a Worker client\'s call settles with an error when its worker is terminated', () => {
  assert.ok(terminatedCallsSettle?.length, 'the Worker test ran');
  assert.ok(terminatedCallsSettle.every(Boolean), `calls that never settled: ${terminatedCallsSettle.filter((s) => !s).length} of ${terminatedCallsSettle.length}`);
});
