// The package in a module Worker, in a real headless Chromium: a 20,000-message backlog decrypts
// in one batch in the worker (pkg/worker.js, driven by pkg/remote.js) while the page's main thread
// keeps drawing frames, its progress bar moving. The page counts requestAnimationFrame ticks and
// the longest gap between two. PROTEUS_RAF_WHERE=main runs the same check with the batch on the
// main thread (pkg/index.js), which it fails: the frames stop while the batch runs.
// Run: node --test tests/browser/worker.mjs (after ./build.sh).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ENGINE, launch } from '../support/browser.mjs';
import { serve } from '../support/serve.mjs';

const BACKLOG = 20_000;
/**
 * The longest the page may go without a frame during the batch: this, or a quarter of the
 * batch's own time if that is longer. On the main thread the frames stop for the whole batch (a
 * gap of about its whole time); in a worker they stop only when the machine does not run the
 * page, which on a slow or busy machine can be this long but not a quarter of a batch that the
 * same machine runs (gapLimit).
 */
const LONGEST_GAP_MS = 200;
/** The gap limit of a batch that took `batchMs`: relative to the machine's own speed. */
const gapLimit = (batchMs) => Math.max(LONGEST_GAP_MS, Math.round(batchMs / 4));
const WHERE = process.env.PROTEUS_RAF_WHERE ?? 'worker';

let server;
let browser;

before(async () => {
  server = await serve();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

async function page() {
  const p = await browser.context.newPage();
  p.on('pageerror', (e) => console.error('page error:', e));
  p.on('console', (m) => m.type() === 'error' && !m.text().includes('404') && console.error('page console:', m.text()));
  await p.goto(`${server.url}/ffi/web/tests/browser/worker.html`);
  await p.waitForFunction(() => window.harnessReady === true);
  return p;
}

describe(`${ENGINE}: a client in a module Worker`, () => {
  test(`the page stays responsive during a ${BACKLOG}-message batch (${WHERE})`, async (t) => {
    const p = await page();
    const seen = await p.evaluate(([where, n]) => window.harness.backlog(where, `raf-${where}`, n), [WHERE, BACKLOG]);
    const intermediate = seen.progressSeen.filter((v) => v > 0 && v < BACKLOG).length;
    t.diagnostic(
      `${WHERE}: batch ${seen.ms} ms, ${seen.frames} frames, longest gap ${seen.longestGapMs} ms, ` +
        `${intermediate} frames drew the bar between 0 and ${BACKLOG}`,
    );
    assert.equal(seen.results, BACKLOG);
    assert.equal(seen.good, BACKLOG, 'every plaintext reached the page\'s callback, in order');
    assert.equal(seen.committed, true, 'the batch was committed');
    const limit = gapLimit(seen.ms);
    assert.ok(seen.longestGapMs < limit, `longest gap between frames ${seen.longestGapMs} ms (limit ${limit} for a ${seen.ms} ms batch)`);
    assert.ok(seen.frames >= 3, `frames kept ticking during the batch: ${seen.frames}`);
    assert.ok(intermediate >= 1, `the progress bar moved during the batch: ${JSON.stringify(seen.progressSeen)}`);
    await p.close();
  });

  test('a worker script that does not load fails the calls with WorkerError', async () => {
    const p = await page();
    assert.equal(await p.evaluate(() => window.harness.missingWorker()), 'WorkerError: the worker failed: it did not load');
    await p.close();
  });

  test('a throwing page callback aborts the batch as the direct API does: CallbackFailed, nothing committed', async () => {
    const p = await page();
    const outcome = await p.evaluate(() => window.harness.failing('raf-failing'));
    assert.deepEqual(outcome, {
      name: 'ProteusError',
      code: 121,
      kind: 'CallbackFailed',
      cause: 'the page could not store it',
      aborted: 108,
      afterwards: 600,
    });
    await p.close();
  });
});
