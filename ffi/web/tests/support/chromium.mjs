// Debian's Chromium for the browser tests, driven by playwright-core (which downloads nothing
// when given its executablePath): headless, as root, without a display, and without Chromium's
// background connections (this machine's network is closed); playwright adds --headless and a
// few of its own.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

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
 * and `close()`, which also deletes the profile.
 */
export async function launch(prefix = 'proteus-chromium-') {
  const profile = await mkdtemp(path.join(tmpdir(), prefix));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
