// Debian's Chromium for the browser tests, driven by playwright-core (which downloads nothing
// when given its executablePath): headless, as root, without a display, and without Chromium's
// background connections (this machine's network is closed); playwright adds --headless and a
// few of its own.

import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

/**
 * How long a page action or wait may take unless a test says otherwise (playwright's default is
 * 30 s): a bound against a hang, generous enough for a machine ten times slower than ours.
 */
export const DEFAULT_TIMEOUT_MS = 120_000;

const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

/**
 * A browser context with its own profile directory (so IndexedDB persists across its pages),
 * and `close()`, which also deletes the profile. With `profile`, that directory is used (and
 * kept by `close()`), so a browser can be started again on what another one left.
 */
export async function launch(prefix = 'proteus-chromium-', { profile } = {}) {
  const own = profile === undefined;
  const dir = own ? await mkdtemp(path.join(tmpdir(), prefix)) : profile;
  const context = await chromium.launchPersistentContext(dir, { executablePath: CHROMIUM, headless: true, args: ARGS });
  context.setDefaultTimeout(DEFAULT_TIMEOUT_MS);
  return {
    context,
    profile: dir,
    async close() {
      await context.close().catch(() => {});
      if (own) await rm(dir, { recursive: true, force: true });
    },
    /**
     * Ends the browser as a crash would (SIGKILL to its main process, found as this process's
     * child whose command line names the profile): nothing of it gets to flush or close.
     */
    async kill() {
      const pid = await browserPid(dir);
      process.kill(pid, 'SIGKILL');
      await context.close().catch(() => {});
    },
  };
}

/** The pid of the browser this process started on profile `dir`. */
async function browserPid(dir) {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.includes(dir)) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  throw new Error(`no browser of this process runs on ${dir}`);
}
